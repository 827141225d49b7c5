package sqserr_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/sqsworker/sqsworker/internal/sqserr"
)

// serverError is an HTTP 500 InternalError, as SQS returns when it fails on
// its side.
func serverError() error {
	return &awshttp.ResponseError{
		ResponseError: &smithyhttp.ResponseError{
			Response: &smithyhttp.Response{Response: &http.Response{StatusCode: http.StatusInternalServerError, Header: http.Header{}}},
			Err:      &smithy.GenericAPIError{Code: "InternalError", Message: "We encountered an internal error. Please try again.", Fault: smithy.FaultServer},
		},
		RequestID: "test",
	}
}

func TestOf(t *testing.T) {
	op := func(err error) error { return &smithy.OperationError{ServiceID: "SQS", OperationName: "X", Err: err} }
	cases := []struct {
		err  error
		want sqserr.Class
	}{
		{op(&types.RequestThrottled{Message: aws.String("Rate exceeded"), ErrorCodeOverride: aws.String("RequestThrottled")}), sqserr.Throttled},
		{op(serverError()), sqserr.Transient},
		{op(&types.QueueDoesNotExist{}), sqserr.Fatal},
		{op(&smithy.GenericAPIError{Code: "AWS.SimpleQueueService.NonExistentQueue", Fault: smithy.FaultClient}), sqserr.Fatal},
		{op(&smithy.GenericAPIError{Code: "AccessDenied", Fault: smithy.FaultClient}), sqserr.Fatal},
		{op(&smithy.GenericAPIError{Code: "KmsAccessDenied", Fault: smithy.FaultClient}), sqserr.Fatal},
		{op(&smithy.GenericAPIError{Code: "ReceiptHandleIsInvalid", Fault: smithy.FaultClient}), sqserr.Stale},
		{op(&smithy.GenericAPIError{Code: "InvalidParameterValue", Message: "Value x for parameter ReceiptHandle is invalid. Reason: Message does not exist or is not available for visibility timeout change.", Fault: smithy.FaultClient}), sqserr.Stale},
		{op(&smithy.GenericAPIError{Code: "InvalidParameterValue", Message: "Total VisibilityTimeout for the message is beyond the limit [43200 seconds]", Fault: smithy.FaultClient}), sqserr.MaxedOut},
		{op(&smithy.GenericAPIError{Code: "InvalidParameterValue", Message: "MaxNumberOfMessages", Fault: smithy.FaultClient}), sqserr.Invalid},
		{op(&smithy.CanceledError{Err: context.Canceled}), sqserr.Canceled},
		{fmt.Errorf("dial: %w", context.DeadlineExceeded), sqserr.Transient},
		{errors.New("connection reset by peer"), sqserr.Transient},
	}
	for _, c := range cases {
		if got := sqserr.Of(c.err); got != c.want {
			t.Errorf("Of(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

func TestOfEntry(t *testing.T) {
	e := func(code, msg string, sender bool) types.BatchResultErrorEntry {
		return types.BatchResultErrorEntry{Id: aws.String("0"), Code: aws.String(code), Message: aws.String(msg), SenderFault: sender}
	}
	cases := []struct {
		e    types.BatchResultErrorEntry
		want sqserr.Class
	}{
		{e("RequestThrottled", "Rate exceeded", false), sqserr.Throttled},
		{e("InternalError", "oops", false), sqserr.Transient},
		{e("ReceiptHandleIsInvalid", "", true), sqserr.Stale},
		{e("AWS.SimpleQueueService.MessageNotInflight", "", true), sqserr.Stale},
		{e("InvalidParameterValue", "Total VisibilityTimeout for the message is beyond the limit [43200 seconds]", true), sqserr.MaxedOut},
		{e("SomethingElse", "", true), sqserr.Invalid},
	}
	for _, c := range cases {
		if got := sqserr.OfEntry(c.e); got != c.want {
			t.Errorf("OfEntry(%s %q sender=%v) = %v, want %v", *c.e.Code, *c.e.Message, c.e.SenderFault, got, c.want)
		}
		if err := sqserr.EntryError(c.e); sqserr.Code(err) != strings.TrimPrefix(*c.e.Code, "AWS.SimpleQueueService.") {
			t.Errorf("EntryError code %q", sqserr.Code(err))
		}
	}
}

// NotExist and Unsupported recognise the codes SQS and local emulators
// use, with or without the query-compatible prefix, through the SDK's
// wrapping.
func TestNotExistAndUnsupported(t *testing.T) {
	op := func(err error) error { return &smithy.OperationError{ServiceID: "SQS", OperationName: "X", Err: err} }
	api := func(code string) error { return op(&smithy.GenericAPIError{Code: code, Fault: smithy.FaultClient}) }
	for _, err := range []error{op(&types.QueueDoesNotExist{}), api("AWS.SimpleQueueService.NonExistentQueue"), api("QueueDoesNotExist"), api("NonExistentQueue")} {
		if !sqserr.NotExist(err) || sqserr.Unsupported(err) {
			t.Errorf("%v: NotExist %v, Unsupported %v; want a missing queue", err, sqserr.NotExist(err), sqserr.Unsupported(err))
		}
	}
	for _, err := range []error{op(&types.UnsupportedOperation{}), api("InvalidAction"), api("AWS.SimpleQueueService.UnsupportedOperation"), api("UnknownOperationException"), api("NotImplemented")} {
		if !sqserr.Unsupported(err) || sqserr.NotExist(err) {
			t.Errorf("%v: Unsupported %v, NotExist %v; want an unsupported call", err, sqserr.Unsupported(err), sqserr.NotExist(err))
		}
	}
	for _, err := range []error{nil, errors.New("network"), api("AccessDenied"), op(serverError())} {
		if sqserr.NotExist(err) || sqserr.Unsupported(err) {
			t.Errorf("%v taken for a missing queue or an unsupported call", err)
		}
	}
}

func TestNotSent(t *testing.T) {
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
	read := &net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset by peer")}
	for _, c := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("operation error SQS: ReceiveMessage: %w", dial), true},
		{errors.New(`Post "http://127.0.0.1:9324/": http: server closed idle connection`), true},
		{fmt.Errorf("operation error SQS: ReceiveMessage: %w", read), false},
		{context.DeadlineExceeded, false},
		{nil, false},
	} {
		if got := sqserr.NotSent(c.err); got != c.want {
			t.Errorf("NotSent(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// SNS's PublishBatch answers with codes of its own; the table classifies
// them like SQS's: throttling and internal errors are retried, a missing
// topic, an authorization or KMS error needs a person, a bad parameter is
// the request's fault.
func TestOfSNSCodes(t *testing.T) {
	cases := []struct {
		code   string
		sender bool
		want   sqserr.Class
	}{
		{"Throttled", false, sqserr.Throttled},
		{"KMSThrottling", false, sqserr.Throttled},
		{"InternalError", false, sqserr.Transient},
		{"AuthorizationError", true, sqserr.Fatal},
		{"NotFound", true, sqserr.Fatal},
		{"KMSAccessDenied", true, sqserr.Fatal},
		{"KMSDisabled", true, sqserr.Fatal},
		{"InvalidParameter", true, sqserr.Invalid},
	}
	for _, c := range cases {
		e := types.BatchResultErrorEntry{Id: aws.String("0"), Code: aws.String(c.code), SenderFault: c.sender}
		if got := sqserr.OfEntry(e); got != c.want {
			t.Errorf("OfEntry(%s) = %v, want %v", c.code, got, c.want)
		}
		fault := smithy.FaultServer
		if c.sender {
			fault = smithy.FaultClient
		}
		if got := sqserr.Of(&smithy.GenericAPIError{Code: c.code, Fault: fault}); got != c.want {
			t.Errorf("Of(%s) = %v, want %v", c.code, got, c.want)
		}
	}
}
