// Package sqserr is sqsworker's one table of SQS error codes: which errors
// retrying can fix, which mean a receipt handle no longer names a message
// the caller holds, and which need a person (credentials, permissions, a
// deleted queue). The worker, the Lambda adapter and the heartbeat all
// classify errors here, in the spirit of go-cloud's errorCodeMap. The
// table also knows the codes SNS's PublishBatch answers with that SQS does
// not use (AuthorizationError, NotFound, the KMS… spellings), for the
// fan-out publisher; the rest (Throttled, InternalError, InvalidParameter)
// fall under the same rules. internal/awscall retries every AWS call the
// library makes by this table, so it also knows the throttling and timeout
// codes of DynamoDB and S3 whose names do not say "Throttl"; their other
// errors fall under the same rules (a sender fault is not retried, a
// server fault is).
package sqserr

import (
	"context"
	"errors"
	"net"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
)

// Class is what an error means to the caller of an SQS call.
type Class int

const (
	// Transient: throttling, a server fault, the network, a timeout; the
	// same call may succeed later.
	Transient Class = iota
	// Throttled: SQS refused the call because of the request rate; retry
	// later, more slowly. It is transient too.
	Throttled
	// Stale: the receipt handle no longer names a message this caller holds
	// (it was deleted, received again by another consumer, or is not in
	// flight): leave the message alone.
	Stale
	// MaxedOut: a visibility change would reach past SQS's 12-hour limit
	// counted from the receive.
	MaxedOut
	// Fatal: retrying cannot help (access denied, bad credentials, a deleted
	// queue, a KMS key the caller cannot use); a person must act.
	Fatal
	// Invalid: the request itself is wrong (a sender fault not listed above).
	Invalid
	// Canceled: the caller's context ended.
	Canceled
)

var classNames = [...]string{"transient", "throttled", "stale", "maxed-out", "fatal", "invalid", "canceled"}

// String returns the class's name.
func (c Class) String() string {
	if int(c) < len(classNames) {
		return classNames[c]
	}
	return "unknown"
}

// Retryable reports whether a call that failed with c may succeed later.
func (c Class) Retryable() bool { return c == Transient || c == Throttled }

// codes maps SQS error codes, with any "AWS.SimpleQueueService." prefix
// removed, to their class.
var codes = map[string]Class{
	"RequestThrottled":       Throttled,
	"ThrottlingException":    Throttled,
	"Throttling":             Throttled,
	"KmsThrottled":           Throttled,
	"InternalError":          Transient,
	"InternalFailure":        Transient,
	"ServiceUnavailable":     Transient,
	"RequestTimeout":         Transient,
	"ReceiptHandleIsInvalid": Stale,
	"MessageNotInflight":     Stale,
	"InvalidIdFormat":        Stale,

	"AccessDenied":                Fatal,
	"AccessDeniedException":       Fatal,
	"InvalidClientTokenId":        Fatal,
	"UnrecognizedClientException": Fatal,
	"SignatureDoesNotMatch":       Fatal,
	"IncompleteSignature":         Fatal,
	"MissingAuthenticationToken":  Fatal,
	"InvalidSecurity":             Fatal,
	"ExpiredToken":                Fatal,
	"ExpiredTokenException":       Fatal,
	"NonExistentQueue":            Fatal,
	"QueueDoesNotExist":           Fatal,
	"InvalidAddress":              Fatal,
	"KmsAccessDenied":             Fatal,
	"KmsDisabled":                 Fatal,
	"KmsNotFound":                 Fatal,
	"KmsInvalidState":             Fatal,
	"KmsInvalidKeyUsage":          Fatal,
	"KmsOptInRequired":            Fatal,

	// DynamoDB's and S3's codes (internal/awscall): those the SDK's own
	// retryer retries, and the request errors it does not.
	"ProvisionedThroughputExceededException": Throttled,
	"RequestLimitExceeded":                   Throttled,
	"TooManyRequestsException":               Throttled,
	"TransactionInProgressException":         Throttled,
	"BandwidthLimitExceeded":                 Throttled,
	"LimitExceededException":                 Throttled,
	"PriorRequestNotComplete":                Throttled,
	"SlowDown":                               Throttled,
	"RequestTimeoutException":                Transient,
	"TransactionConflictException":           Transient,
	"ValidationException":                    Invalid,
	"SerializationException":                 Invalid,

	// SNS's own codes (PublishBatch).
	"AuthorizationError": Fatal,
	"NotFound":           Fatal, // the topic does not exist
	"KMSAccessDenied":    Fatal,
	"KMSDisabled":        Fatal,
	"KMSNotFound":        Fatal,
	"KMSInvalidState":    Fatal,
	"KMSOptInRequired":   Fatal,
}

// Code returns err's SQS error code without the query-compatible prefix, or
// "" when err carries none.
func Code(err error) string {
	var api smithy.APIError
	if !errors.As(err, &api) {
		return ""
	}
	return trim(api.ErrorCode())
}

func trim(code string) string { return strings.TrimPrefix(code, "AWS.SimpleQueueService.") }

// Of classifies the error a whole SQS call returned.
func Of(err error) Class {
	if err == nil {
		return Transient
	}
	var missing *types.QueueDoesNotExist
	if errors.As(err, &missing) {
		return Fatal
	}
	// A call's own timeout is transient; the caller's cancellation is not.
	if errors.Is(err, context.DeadlineExceeded) {
		return Transient
	}
	var canceled *smithy.CanceledError
	if errors.Is(err, context.Canceled) || errors.As(err, &canceled) {
		return Canceled
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		class := ofCode(trim(api.ErrorCode()), api.ErrorMessage(), api.ErrorFault() == smithy.FaultClient)
		if _, known := codes[trim(api.ErrorCode())]; !known && class == Transient && api.ErrorFault() == smithy.FaultUnknown {
			// A code the table does not know, without a fault (the JSON
			// protocols' unmodelled errors): the HTTP status tells, as it
			// tells the SDK's retryer: a 4xx other than 429 is the request's.
			var resp interface{ HTTPStatusCode() int }
			if errors.As(err, &resp) {
				if st := resp.HTTPStatusCode(); st >= 400 && st < 500 && st != 429 && st != 408 {
					return Invalid
				}
			}
		}
		return class
	}
	// No API error: the network, a timeout, the SDK's retry quota. All of
	// them may go away.
	return Transient
}

// OfEntry classifies one failed entry of a batch response.
func OfEntry(e types.BatchResultErrorEntry) Class {
	code, msg := "", ""
	if e.Code != nil {
		code = trim(*e.Code)
	}
	if e.Message != nil {
		msg = *e.Message
	}
	return ofCode(code, msg, e.SenderFault)
}

func ofCode(code, msg string, senderFault bool) Class {
	if strings.Contains(msg, "Total VisibilityTimeout") || strings.Contains(msg, "beyond the limit") {
		return MaxedOut
	}
	if c, ok := codes[code]; ok {
		return c
	}
	switch {
	case strings.Contains(code, "Throttl"):
		return Throttled
	case code == "InvalidParameterValue" && (strings.Contains(msg, "ReceiptHandle") || strings.Contains(msg, "receipt handle") || strings.Contains(msg, "not available for visibility")):
		return Stale
	case senderFault:
		return Invalid
	}
	return Transient
}

// EntryError turns a failed batch entry into an error that errors.As finds
// as a smithy.APIError.
func EntryError(e types.BatchResultErrorEntry) error {
	fault := smithy.FaultServer
	if e.SenderFault {
		fault = smithy.FaultClient
	}
	code, msg := "", ""
	if e.Code != nil {
		code = *e.Code
	}
	if e.Message != nil {
		msg = *e.Message
	}
	return &smithy.GenericAPIError{Code: code, Message: msg, Fault: fault}
}

// Hint says what a person should do about an error of class Fatal, for the
// given SQS action (e.g. "sqs:DeleteMessage"); "" when there is nothing to add.
func Hint(err error, action string) string {
	code := Code(err)
	switch {
	case strings.Contains(code, "AccessDenied"):
		return "grant the IAM action " + action + " on the queue to this role"
	case strings.Contains(code, "NonExistentQueue"), strings.Contains(code, "QueueDoesNotExist"):
		return "the queue does not exist (deleted, or a wrong queue URL)"
	case strings.HasPrefix(code, "Kms"):
		return "the queue's KMS key cannot be used by this role (grant kms:Decrypt and kms:GenerateDataKey, or check the key's state)"
	case strings.Contains(code, "Token"), strings.Contains(code, "Signature"), strings.Contains(code, "Security"), strings.Contains(code, "Authentication"):
		return "check the AWS credentials (expired, wrong account, or missing)"
	case strings.Contains(code, "Throttl"):
		return "SQS is throttling this consumer: lower its concurrency or receive rate"
	}
	return ""
}

// NotExist reports whether err says the queue does not exist (deleted, or
// a wrong URL).
func NotExist(err error) bool {
	var missing *types.QueueDoesNotExist
	if errors.As(err, &missing) {
		return true
	}
	switch Code(err) {
	case "NonExistentQueue", "QueueDoesNotExist":
		return true
	}
	return false
}

// Unsupported reports whether err says the endpoint does not offer the
// call (local emulators answer InvalidAction) or does not support it for
// this queue (SQS: UnsupportedOperation, for example a message move task on
// a FIFO queue).
func Unsupported(err error) bool {
	var uo *types.UnsupportedOperation
	if errors.As(err, &uo) {
		return true
	}
	switch Code(err) {
	case "InvalidAction", "UnsupportedOperation", "UnknownOperationException", "NotImplemented":
		return true
	}
	return false
}

// NotSent reports whether err says the request never reached SQS, so it
// cannot have taken effect: the connection could not be made (a dial
// error), or the client found its pooled connection closed by the server
// before writing anything ("server closed idle connection"). Any other
// error of a call that was sent — a timeout, a reset while reading, a 5xx —
// leaves open whether SQS acted on it.
func NotSent(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	return err != nil && strings.Contains(err.Error(), "server closed idle connection")
}
