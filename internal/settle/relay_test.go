package settle_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/internal/schedule"
	"github.com/sqsworker/sqsworker/internal/settle"
	"github.com/sqsworker/sqsworker/internal/sqserr"
	"github.com/sqsworker/sqsworker/retry"
)

// exactCounter is an attempt counter that can take a snoozed attempt back
// (as retry/dynamocounter does).
type exactCounter struct{ attempt int }

func (c exactCounter) Attempt(context.Context, string, int) (int, error) { return c.attempt, nil }
func (exactCounter) Uncount(context.Context, string) error               { return nil }

// A snooze never spends the queue's receive budget: it is relayed as a
// fresh copy (carrying the job's first message ID and the attempts it
// spent) whenever attempts are counted by receives, or the next receive
// would come near maxReceiveCount; otherwise it is one visibility change.
func TestSnoozeRelay(t *testing.T) {
	for _, tc := range []struct {
		name     string
		counter  retry.AttemptCounter
		queue    settle.Queue
		receives int
		attrs    int
		answer   func(string) settle.Outcome
		calls    string
	}{
		{name: "receive count: always relayed", queue: settle.Queue{MaxReceiveCount: 100}, receives: 1, calls: "resend delete"},
		{name: "receive count, no redrive policy: relayed", receives: 1, calls: "resend delete"},
		{name: "exact counter, budget left: hidden", counter: exactCounter{attempt: 2}, queue: settle.Queue{MaxReceiveCount: 10}, receives: 8, calls: "change 3"},
		{name: "exact counter, next receive near maxReceiveCount: relayed", counter: exactCounter{attempt: 2}, queue: settle.Queue{MaxReceiveCount: 10}, receives: 9, calls: "resend delete"},
		{name: "exact counter, redrive policy unknown: relayed", counter: exactCounter{attempt: 2}, queue: settle.Queue{RedriveUnknown: true}, receives: 1, calls: "resend delete"},
		{name: "FIFO: hidden", queue: settle.Queue{FIFO: true, MaxReceiveCount: 10}, receives: 9, calls: "change 3"},
		{name: "no calls (Lambda without a client): hidden", queue: settle.Queue{NoCalls: true}, receives: 1, calls: "change 3"},
		{name: "no room for the attributes: hidden", queue: settle.Queue{MaxReceiveCount: 10}, receives: 1, attrs: 9, calls: "change 3"},
		{name: "relay refused: hidden, never deleted", queue: settle.Queue{MaxReceiveCount: 10}, receives: 1,
			answer: func(call string) settle.Outcome {
				if call == "resend" {
					return settle.Outcome{Class: sqserr.Fatal, Err: errors.New("denied")}
				}
				return settle.Outcome{OK: true}
			}, calls: "resend change 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &settle.Engine{Name: "test", Policy: fixedPolicy(5, 7*time.Second), Visibility: 30 * time.Second, Counter: tc.counter}
			p := &port{queue: tc.queue, answer: tc.answer}
			attrs := map[string]types.MessageAttributeValue{}
			for i := range tc.attrs {
				attrs[fmt.Sprintf("user%d", i)] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String("v")}
			}
			j := new(settle.Job)
			e.Track(j, p, types.Message{
				MessageId: aws.String("m1"), Body: aws.String("b"), ReceiptHandle: aws.String("h1"), MessageAttributes: attrs,
				Attributes: map[string]string{string(types.MessageSystemAttributeNameApproximateReceiveCount): fmt.Sprint(tc.receives)},
			}, "https://sqs.example/1/src", time.Now())
			if tc.counter != nil {
				settle.CountAttempt(context.Background(), 0, tc.counter, &j.Msg, slog.New(slog.DiscardHandler))
			}
			e.Handled(context.Background(), j, retry.Snooze(3*time.Second, "wait"))
			if got := strings.Join(p.calls, " "); got != tc.calls {
				t.Fatalf("calls %q, want %q", got, tc.calls)
			}
			if p.final == nil || p.final.Result != settle.Snoozed || !p.final.Confirmed {
				t.Fatalf("settled %+v, want a confirmed Snoozed", p.final)
			}
			if !strings.HasPrefix(tc.calls, "resend delete") {
				return
			}
			if aws.ToString(p.sent.MessageBody) != "b" || p.sent.DelaySeconds != 3 {
				t.Errorf("relayed copy: body %q, delay %d s; want the body and the snooze's 3 s", aws.ToString(p.sent.MessageBody), p.sent.DelaySeconds)
			}
			if got := schedule.Origin(p.sent.MessageAttributes); got != "m1" {
				t.Errorf("relayed copy's origin %q, want m1", got)
			}
			if got, want := schedule.Attempts(p.sent.MessageAttributes), j.Msg.Attempt-1; got != want {
				t.Errorf("relayed copy carries %d spent attempts, want %d (the snoozed receive not among them)", got, want)
			}
		})
	}
}

// A relayed copy goes on as the same job: its ID is the first message's,
// its attempt count adds the attempts spent before (counted by receives),
// and a snooze longer than SQS's 15-minute delay waits as a due time.
func TestRelayedCopyIsTheSameJob(t *testing.T) {
	e := &settle.Engine{Name: "test", Policy: fixedPolicy(5, time.Second)}
	p := &port{queue: settle.Queue{MaxReceiveCount: 10}}
	// First copy: failed twice (receives 1 and 2), snoozed on its third receive.
	j := new(settle.Job)
	e.Track(j, p, types.Message{MessageId: aws.String("first"), Body: aws.String("b"), ReceiptHandle: aws.String("h1"),
		Attributes: map[string]string{string(types.MessageSystemAttributeNameApproximateReceiveCount): "3"}}, "https://sqs.example/1/src", time.Now())
	e.Handled(context.Background(), j, retry.Snooze(2*time.Hour, "later"))
	if p.sent == nil {
		t.Fatal("not relayed")
	}
	if p.sent.DelaySeconds != 900 {
		t.Errorf("a 2 h snooze is sent with DelaySeconds %d, want 900 (SQS's longest)", p.sent.DelaySeconds)
	}
	due, ok, err := schedule.Parse(p.sent.MessageAttributes)
	if err != nil || !ok || time.Until(due) < 119*time.Minute {
		t.Errorf("a 2 h snooze's copy has due time %v (%v, %v), want about 2 h from now", due, ok, err)
	}
	// The relayed copy, received for the first time.
	second := settle.Parse(types.Message{MessageId: aws.String("second"), Body: aws.String("b"), ReceiptHandle: aws.String("h2"),
		MessageAttributes: p.sent.MessageAttributes,
		Attributes:        map[string]string{string(types.MessageSystemAttributeNameApproximateReceiveCount): "1"}}, "https://sqs.example/1/src", time.Now())
	if second.ID != "first" || second.Attempt != 3 || aws.ToString(second.Raw.MessageId) != "second" {
		t.Errorf("relayed copy: ID %q attempt %d raw ID %q; want the job's ID first, attempt 3 (2 failures + this one), raw ID second",
			second.ID, second.Attempt, aws.ToString(second.Raw.MessageId))
	}
}
