package sqslambda_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/sqstest"
	"github.com/sqsworker/sqsworker/worker"
	"github.com/sqsworker/sqsworker/worker/sqslambda"
)

// A dead-letter copy that fails for good (access denied, a KMS key the
// function's role cannot use, the DLQ deleted) leaves the record in the
// source: it is reported as failed, settled as Retrying with the reason,
// and never deleted — by the adapter or, not being reported, by Lambda.
func TestPermanentDLQCopyFailureIsReportedAndKept(t *testing.T) {
	for _, tc := range []struct {
		name, code string
		ft         sqstest.Fault
	}{
		{"AccessDenied", "AccessDenied", sqstest.Fault{API: "SendMessageBatch", Err: &smithy.GenericAPIError{Code: "AccessDenied", Message: "not allowed", Fault: smithy.FaultClient}}},
		{"AccessDenied entries", "AccessDenied", sqstest.Fault{API: "SendMessageBatch", Entries: true, Err: &smithy.GenericAPIError{Code: "AccessDenied", Message: "not allowed", Fault: smithy.FaultClient}}},
		{"KMS.AccessDeniedException", "KMS.AccessDeniedException", sqstest.Fault{API: "SendMessageBatch", Err: &smithy.GenericAPIError{Code: "KMS.AccessDeniedException", Message: "kms", Fault: smithy.FaultClient}}},
		{"QueueDoesNotExist", "QueueDoesNotExist", sqstest.Fault{API: "SendMessageBatch", Err: &types.QueueDoesNotExist{Message: aws.String("The specified queue does not exist.")}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f, src, dlqURL := newFakeQueue(t, "orders")
				f.MustSend(t, src, "poison-1")
				f.InjectFault(tc.ft)
				var settled []worker.Settlement
				h := mustNew(t, jobs, func(o *sqslambda.Options) {
					o.Logger = quiet
					o.Client = f
					o.OnSettled = func(s worker.Settlement) { settled = append(settled, s) }
				})
				ev := receiveEvent(t, f, src, 10)
				resp, err := h.Handle(t.Context(), ev)
				if err != nil {
					t.Fatal(err)
				}
				if got := bodiesOf(ev, failedIDs(resp)); !slices.Equal(got, []string{"poison-1"}) {
					t.Fatalf("failures %v; a record whose move failed must be reported", got)
				}
				if n := len(f.Messages(dlqURL)); n != 0 {
					t.Fatalf("%d messages in the DLQ; every copy failed", n)
				}
				if n := len(f.Messages(src)); n != 1 {
					t.Fatalf("%d messages in the source, want 1: a record whose DLQ copy failed must not be deleted", n)
				}
				if len(settled) != 1 || settled[0].Outcome != worker.Retrying || !strings.Contains(settled[0].Reason, "permanent failure") || !strings.Contains(settled[0].Reason, tc.code) {
					t.Fatalf("settlements %+v; want Retrying with the reason and the copy's error", settled)
				}
			})
		})
	}
}

// A handler that writes through its message's attribute values and then
// fails for good changes neither the dead-letter copy nor the settlement
// event, as in the worker.
func TestHandlerWritesThroughAttributesDoNotChangeTheDLQCopy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, dlqURL := newFakeQueue(t, "orders")
		f.MustSend(t, src, "poison-1", func(in *sqs.SendMessageInput) {
			in.MessageAttributes = map[string]types.MessageAttributeValue{
				"tenant": {DataType: aws.String("String"), StringValue: aws.String("acme")},
				"blob":   {DataType: aws.String("Binary"), BinaryValue: []byte("original")},
			}
		})
		var mu sync.Mutex
		var settled []worker.Settlement
		h := mustNew(t, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			for _, v := range m.MessageAttributes {
				if v.StringValue != nil {
					*v.StringValue = "forged"
					*v.DataType = "String.forged"
				}
				for i := range v.BinaryValue {
					v.BinaryValue[i] = 'X'
				}
			}
			for k := range m.Attributes {
				m.Attributes[k] = "forged"
			}
			m.MessageAttributes["added"] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String("forged")}
			return retry.Permanent(errors.New("cannot decode"))
		}), func(o *sqslambda.Options) {
			o.Logger = quiet
			o.Client = f
			o.OnSettled = func(s worker.Settlement) {
				mu.Lock()
				settled = append(settled, s)
				mu.Unlock()
			}
		})
		if _, err := h.Handle(t.Context(), receiveEvent(t, f, src, 10)); err != nil {
			t.Fatal(err)
		}
		check := func(what string, attrs map[string]types.MessageAttributeValue) {
			t.Helper()
			if _, ok := attrs["added"]; ok {
				t.Errorf("%s: holds the attribute the handler added", what)
			}
			if a := attrs["tenant"]; aws.ToString(a.StringValue) != "acme" || aws.ToString(a.DataType) != "String" {
				t.Errorf("%s: tenant = %q (%s), want \"acme\" (String)", what, aws.ToString(a.StringValue), aws.ToString(a.DataType))
			}
			if b := attrs["blob"]; !bytes.Equal(b.BinaryValue, []byte("original")) {
				t.Errorf("%s: blob = %q, want \"original\"", what, b.BinaryValue)
			}
		}
		dead := f.Messages(dlqURL)
		if len(dead) != 1 {
			t.Fatalf("%d messages in the DLQ, want 1", len(dead))
		}
		check("DLQ copy", dead[0].Attributes)
		mu.Lock()
		defer mu.Unlock()
		if len(settled) != 1 || settled[0].Outcome != worker.DeadLettered {
			t.Fatalf("settlements %+v, want one DeadLettered", settled)
		}
		check("settlement", settled[0].Message.MessageAttributes)
		for k, v := range settled[0].Message.Attributes {
			if v == "forged" {
				t.Errorf("settlement: system attribute %s shows the handler's write", k)
			}
		}
	})
}
