package visibility

import (
	"errors"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
)

// entryKind is what a failed batch entry means for its message.
type entryKind int

const (
	entryTransient entryKind = iota // retry before the deadline
	entryLost                       // ownership is gone
	entryMaxedOut                   // the 12-hour limit is reached
)

// classify reads a failed ChangeMessageVisibilityBatch entry.
//
// SQS reports a message that is gone, or whose receipt handle was replaced
// by a later receive, as InvalidParameterValue ("Message does not exist or is
// not available for visibility timeout change"), a malformed or foreign
// handle as ReceiptHandleIsInvalid, a message whose visibility timeout ended
// as MessageNotInflight, and an extension past 12 hours from receipt as
// InvalidParameterValue ("Total VisibilityTimeout for the message is beyond
// the limit [43200 seconds]"). Other sender faults would fail the same way
// again, so they count as lost too; server faults are retried.
func classify(f *types.BatchResultErrorEntry) entryKind {
	code, msg := aws.ToString(f.Code), aws.ToString(f.Message)
	switch {
	case strings.Contains(msg, "Total VisibilityTimeout") || strings.Contains(msg, "beyond the limit"):
		return entryMaxedOut
	case strings.HasSuffix(code, "ReceiptHandleIsInvalid"),
		strings.HasSuffix(code, "MessageNotInflight"),
		code == "InvalidParameterValue",
		f.SenderFault:
		return entryLost
	default:
		return entryTransient
	}
}

// entryError turns a failed entry into an error that errors.As finds as a
// smithy.APIError.
func entryError(f *types.BatchResultErrorEntry) error {
	fault := smithy.FaultServer
	if f.SenderFault {
		fault = smithy.FaultClient
	}
	return &smithy.GenericAPIError{Code: aws.ToString(f.Code), Message: aws.ToString(f.Message), Fault: fault}
}

// hint says what to do about a call error that retrying will not fix.
func hint(err error) string {
	var api smithy.APIError
	if !errors.As(err, &api) {
		return ""
	}
	code := api.ErrorCode()
	switch {
	case strings.Contains(code, "AccessDenied"):
		return "; grant the IAM action sqs:ChangeMessageVisibility on the queue to the consumer's role"
	case strings.Contains(code, "NonExistentQueue"), strings.Contains(code, "QueueDoesNotExist"):
		return "; the queue does not exist (deleted, or a wrong queue URL passed to visibility.New)"
	case strings.Contains(code, "Throttl"), strings.Contains(code, "RequestThrottled"):
		return "; SQS is throttling the consumer: lower its concurrency or raise Options.Threshold to leave more time for retries"
	}
	return ""
}
