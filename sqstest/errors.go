package sqstest

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// opError wraps err as the SDK does: an *smithy.OperationError around an
// *awshttp.ResponseError (with the HTTP status SQS would use) around the API
// error, so errors.As finds the typed error and the status alike.
func opError(op string, err error) error {
	if _, ok := err.(*smithy.CanceledError); !ok {
		status := http.StatusBadRequest
		if api, ok := err.(smithy.APIError); ok && api.ErrorFault() == smithy.FaultServer {
			status = http.StatusInternalServerError
		}
		if _, ok := err.(*awshttp.ResponseError); !ok {
			err = &awshttp.ResponseError{
				ResponseError: &smithyhttp.ResponseError{
					Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status, Header: http.Header{}}},
					Err:      err,
				},
				RequestID: "sqstest",
			}
		}
	}
	return &smithy.OperationError{ServiceID: "SQS", OperationName: op, Err: err}
}

// SQS answers in the AWS JSON protocol with query-compatible error codes; the
// SDK exposes those through ErrorCodeOverride, so ErrorCode() of a typed error
// returns, for example, "AWS.SimpleQueueService.NonExistentQueue". The Fake
// does the same.

func errQueueDoesNotExist() error {
	return &types.QueueDoesNotExist{
		Message:           aws.String("The specified queue does not exist."),
		ErrorCodeOverride: aws.String("AWS.SimpleQueueService.NonExistentQueue"),
	}
}

func invalidParameter(format string, args ...any) error {
	return &smithy.GenericAPIError{Code: "InvalidParameterValue", Message: fmt.Sprintf(format, args...), Fault: smithy.FaultClient}
}

func missingParameter(name string) error {
	return &smithy.GenericAPIError{
		Code:    "MissingParameter",
		Message: fmt.Sprintf("The request must contain the parameter %s.", name),
		Fault:   smithy.FaultClient,
	}
}

func invalidAttributeName(name string) error {
	return &types.InvalidAttributeName{
		Message:           aws.String(fmt.Sprintf("Unknown Attribute %s.", name)),
		ErrorCodeOverride: aws.String("InvalidAttributeName"),
	}
}

func invalidAttributeValue(name, reason string) error {
	return &types.InvalidAttributeValue{
		Message:           aws.String(fmt.Sprintf("Invalid value for the parameter %s. Reason: %s", name, reason)),
		ErrorCodeOverride: aws.String("InvalidAttributeValue"),
	}
}

func errReceiptHandleIsInvalid(handle string) error {
	return &types.ReceiptHandleIsInvalid{
		Message:           aws.String(fmt.Sprintf("The input receipt handle %q is not a valid receipt handle.", handle)),
		ErrorCodeOverride: aws.String("ReceiptHandleIsInvalid"),
	}
}

func errEmptyBatch() error {
	return &types.EmptyBatchRequest{
		Message:           aws.String("There should be at least one entry in the request."),
		ErrorCodeOverride: aws.String("AWS.SimpleQueueService.EmptyBatchRequest"),
	}
}

func errTooManyEntries(n int) error {
	return &types.TooManyEntriesInBatchRequest{
		Message:           aws.String(fmt.Sprintf("Maximum number of entries per request are 10. You have sent %d.", n)),
		ErrorCodeOverride: aws.String("AWS.SimpleQueueService.TooManyEntriesInBatchRequest"),
	}
}

func errIDsNotDistinct(id string) error {
	return &types.BatchEntryIdsNotDistinct{
		Message:           aws.String(fmt.Sprintf("Id %s repeated.", id)),
		ErrorCodeOverride: aws.String("AWS.SimpleQueueService.BatchEntryIdsNotDistinct"),
	}
}

func errInvalidBatchEntryID(id string) error {
	return &types.InvalidBatchEntryId{
		Message:           aws.String(fmt.Sprintf("A batch entry id can only contain alphanumeric characters, hyphens and underscores. It can be at most 80 letters long. Got %q.", id)),
		ErrorCodeOverride: aws.String("AWS.SimpleQueueService.InvalidBatchEntryId"),
	}
}

func errBatchTooLong(size, limit int) error {
	return &types.BatchRequestTooLong{
		Message:           aws.String(fmt.Sprintf("Batch requests cannot be longer than %d bytes. You have sent %d bytes.", limit, size)),
		ErrorCodeOverride: aws.String("AWS.SimpleQueueService.BatchRequestTooLong"),
	}
}

func errQueueNameExists(attr string) error {
	return &types.QueueNameExists{
		Message:           aws.String(fmt.Sprintf("A queue already exists with the same name and a different value for attribute %s", attr)),
		ErrorCodeOverride: aws.String("QueueAlreadyExists"),
	}
}

func errPurgeInProgress(name string) error {
	return &types.PurgeQueueInProgress{
		Message:           aws.String(fmt.Sprintf("Only one PurgeQueue operation on %s is allowed every 60 seconds.", name)),
		ErrorCodeOverride: aws.String("AWS.SimpleQueueService.PurgeQueueInProgress"),
	}
}

func errInvalidMessageContents() error {
	return &types.InvalidMessageContents{
		Message:           aws.String("Invalid characters found. Valid unicode characters are #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF"),
		ErrorCodeOverride: aws.String("InvalidMessageContents"),
	}
}

func errResourceNotFound(msg string) error {
	return &types.ResourceNotFoundException{Message: aws.String(msg), ErrorCodeOverride: aws.String("ResourceNotFoundException")}
}

func errUnsupported(msg string) error {
	return &types.UnsupportedOperation{Message: aws.String(msg), ErrorCodeOverride: aws.String("AWS.SimpleQueueService.UnsupportedOperation")}
}

// batchEntryError turns a per-entry failure into a BatchResultErrorEntry.
func batchEntryError(id string, err error) types.BatchResultErrorEntry {
	code, msg, sender := "InternalError", err.Error(), false
	var api smithy.APIError
	if errors.As(err, &api) {
		code, msg = api.ErrorCode(), api.ErrorMessage()
		// Throttling is not the sender's fault: the entry may succeed later.
		sender = api.ErrorFault() != smithy.FaultServer && !strings.Contains(code, "Throttl")
	}
	return types.BatchResultErrorEntry{Id: aws.String(id), Code: aws.String(code), Message: aws.String(msg), SenderFault: sender}
}

// codeError is the error SQS answers with under code, for Fault.Code:
// RequestThrottled (and ThrottlingException) as *types.RequestThrottled, a
// client error; InternalError, InternalFailure and ServiceUnavailable as
// server errors (HTTP 500, or 503 for ServiceUnavailable); any other code
// as a client error (HTTP 400) with that code.
func codeError(code string) error {
	switch code {
	case "RequestThrottled", "ThrottlingException":
		return &types.RequestThrottled{Message: aws.String("Rate exceeded"), ErrorCodeOverride: aws.String(code)}
	case "InternalError", "InternalFailure":
		return serverError(http.StatusInternalServerError, code, "We encountered an internal error. Please try again.")
	case "ServiceUnavailable":
		return serverError(http.StatusServiceUnavailable, code, "The request has failed due to a temporary failure of the server.")
	}
	return &smithy.GenericAPIError{Code: code, Message: "injected by sqstest", Fault: smithy.FaultClient}
}

// serverError is a server-side failure with the HTTP status SQS gives it.
func serverError(status int, code, msg string) error {
	return &awshttp.ResponseError{
		ResponseError: &smithyhttp.ResponseError{
			Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status, Header: http.Header{}}},
			Err:      &smithy.GenericAPIError{Code: code, Message: msg, Fault: smithy.FaultServer},
		},
		RequestID: "sqstest",
	}
}
