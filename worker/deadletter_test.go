package worker_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/sqstest"
	"github.com/sqsworker/sqsworker/worker"
)

// permanentCopyFaults are dead-letter copies that fail for good: the
// source message must stay (Retrying, with the reason) and come back.
var permanentCopyFaults = []struct {
	name string
	ft   sqstest.Fault
}{
	{"AccessDenied", sqstest.Fault{API: "SendMessageBatch", Err: &smithy.GenericAPIError{Code: "AccessDenied", Message: "not allowed", Fault: smithy.FaultClient}}},
	{"AccessDenied entries", sqstest.Fault{API: "SendMessageBatch", Entries: true, Err: &smithy.GenericAPIError{Code: "AccessDenied", Message: "not allowed", Fault: smithy.FaultClient}}},
	{"KMS.AccessDeniedException", sqstest.Fault{API: "SendMessageBatch", Err: &smithy.GenericAPIError{Code: "KMS.AccessDeniedException", Message: "the key's policy does not allow kms:GenerateDataKey", Fault: smithy.FaultClient}}},
	{"KmsAccessDenied entries", sqstest.Fault{API: "SendMessageBatch", Entries: true, Err: &smithy.GenericAPIError{Code: "KmsAccessDenied", Message: "kms", Fault: smithy.FaultClient}}},
	{"QueueDoesNotExist", sqstest.Fault{API: "SendMessageBatch", Err: &types.QueueDoesNotExist{Message: aws.String("The specified queue does not exist.")}}},
}

// A dead-letter copy that fails for good (access denied, a KMS key the
// role cannot use, the DLQ deleted) leaves the source message in place:
// it is settled as Retrying with the reason it was not dead-lettered, and
// comes back after the visibility timeout. It is never deleted without a
// confirmed copy.
func TestPermanentDLQCopyFailureKeepsTheSource(t *testing.T) {
	for _, tc := range permanentCopyFaults {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f, src, dlqURL := newQueue(t, 10, "30")
				f.MustSend(t, src, "poison")
				f.InjectFault(tc.ft)
				var mu sync.Mutex
				var runs int
				var settled []worker.Settlement
				h := start(t, f, src, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
					mu.Lock()
					runs++
					mu.Unlock()
					return retry.Permanent(errors.New("cannot decode"))
				}), func(o *worker.Options) {
					o.OnSettled = func(s worker.Settlement) {
						mu.Lock()
						settled = append(settled, s)
						mu.Unlock()
					}
				})
				time.Sleep(45 * time.Second)
				if err := h.stop(); err != nil {
					t.Fatal(err)
				}
				mu.Lock()
				defer mu.Unlock()
				if runs < 2 {
					t.Errorf("the handler ran %d times in 45 s with a 30 s visibility timeout; the message must come back", runs)
				}
				if n := len(f.Messages(dlqURL)); n != 0 {
					t.Fatalf("%d messages in the DLQ; every copy failed", n)
				}
				if n := len(f.Messages(src)); n != 1 {
					t.Fatalf("%d messages in the source, want 1: a message whose DLQ copy failed must not be deleted", n)
				}
				if len(settled) == 0 {
					t.Fatal("no settlement reported")
				}
				s := settled[0]
				if s.Outcome != worker.Retrying || !strings.Contains(s.Reason, "not dead-lettered") || !strings.Contains(s.Reason, "permanent failure") {
					t.Fatalf("settlement %v %q; want Retrying with the reason it was not dead-lettered", s.Outcome, s.Reason)
				}
				if st := h.w.Stats(); st.DeadLettered != 0 || st.Deleted != 0 {
					t.Fatalf("stats: DeadLettered %d, Deleted %d; want 0 and 0", st.DeadLettered, st.Deleted)
				}
			})
		})
	}
}

// attributeFixture is a message's attributes, with every kind of value a
// handler could write through.
func attributeFixture(in *sqs.SendMessageInput) {
	in.MessageAttributes = map[string]types.MessageAttributeValue{
		"tenant": {DataType: aws.String("String"), StringValue: aws.String("acme")},
		"blob":   {DataType: aws.String("Binary"), BinaryValue: []byte("original")},
		"count":  {DataType: aws.String("Number"), StringValue: aws.String("7")},
	}
}

// scribble writes through everything a handler's Message reaches.
func scribble(m *worker.Message) {
	for _, v := range m.MessageAttributes {
		if v.StringValue != nil && aws.ToString(v.DataType) == "String" {
			*v.StringValue = "forged"
			*v.DataType = "String.forged" // a custom type: still valid
		}
		for i := range v.BinaryValue {
			v.BinaryValue[i] = 'X'
		}
	}
	for k := range m.Attributes {
		m.Attributes[k] = "forged"
	}
	if m.Raw.MD5OfBody != nil {
		*m.Raw.MD5OfBody = "forged"
	}
	if m.Raw.MD5OfMessageAttributes != nil {
		*m.Raw.MD5OfMessageAttributes = "forged"
	}
	m.MessageAttributes["added"] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String("forged")}
}

// checkUnforged fails when a dead-letter copy's or a settlement's
// attributes show a handler's writes.
func checkUnforged(t *testing.T, what string, attrs map[string]types.MessageAttributeValue) {
	t.Helper()
	if _, ok := attrs["added"]; ok {
		t.Errorf("%s: holds the attribute the handler added", what)
	}
	want := map[string]string{"tenant": "acme", "count": "7"}
	for k, v := range want {
		a := attrs[k]
		if aws.ToString(a.StringValue) != v || strings.Contains(aws.ToString(a.DataType), "forged") {
			t.Errorf("%s: attribute %s = %q (%s), want %q", what, k, aws.ToString(a.StringValue), aws.ToString(a.DataType), v)
		}
	}
	if b := attrs["blob"]; !bytes.Equal(b.BinaryValue, []byte("original")) || aws.ToString(b.DataType) != "Binary" {
		t.Errorf("%s: attribute blob = %q (%s), want \"original\"", what, b.BinaryValue, aws.ToString(b.DataType))
	}
}

// A handler that writes through its message's attribute values (the
// strings they point to, the bytes of binary values, the Raw message) and
// then fails for good changes neither the dead-letter copy nor the
// settlement event: both are built from the runtime's own copy.
func TestHandlerWritesThroughAttributesDoNotChangeTheDLQCopy(t *testing.T) {
	for _, hook := range []bool{false, true} {
		name := "without hook"
		if hook {
			name = "with hook"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f, src, dlqURL := newQueue(t, 10, "30")
				f.MustSend(t, src, "poison", attributeFixture)
				var mu sync.Mutex
				var settled []worker.Settlement
				h := start(t, f, src, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
					scribble(m)
					return retry.Permanent(errors.New("cannot decode"))
				}), func(o *worker.Options) {
					if hook {
						o.OnSettled = func(s worker.Settlement) {
							mu.Lock()
							settled = append(settled, s)
							mu.Unlock()
						}
					}
				})
				time.Sleep(5 * time.Second)
				if err := h.stop(); err != nil {
					t.Fatal(err)
				}
				dead := f.Messages(dlqURL)
				if len(dead) != 1 {
					t.Fatalf("%d messages in the DLQ, want 1", len(dead))
				}
				checkUnforged(t, "DLQ copy", dead[0].Attributes)
				if !hook {
					return
				}
				mu.Lock()
				defer mu.Unlock()
				if len(settled) != 1 || settled[0].Outcome != worker.DeadLettered {
					t.Fatalf("settlements %+v, want one DeadLettered", settled)
				}
				m := settled[0].Message
				checkUnforged(t, "settlement", m.MessageAttributes)
				checkUnforged(t, "settlement's Raw", m.Raw.MessageAttributes)
				for k, v := range m.Attributes {
					if v == "forged" {
						t.Errorf("settlement: system attribute %s shows the handler's write", k)
					}
				}
				if strings.Contains(aws.ToString(m.Raw.MD5OfBody), "forged") || strings.Contains(aws.ToString(m.Raw.MD5OfMessageAttributes), "forged") {
					t.Error("settlement: Raw's MD5s show the handler's writes")
				}
			})
		})
	}
}
