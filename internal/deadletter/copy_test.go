package deadletter

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/sqsworker/sqsworker/harness/sqsfake"
	"github.com/sqsworker/sqsworker/harness/sqsmsg"
	"github.com/sqsworker/sqsworker/internal/awscall"
	"github.com/sqsworker/sqsworker/internal/sqslimit"
	"github.com/sqsworker/sqsworker/sqstest"
)

// fakePair creates a queue and its DLQ in a fresh Fake and discovers them.
func fakePair(t *testing.T, name string) (*sqstest.Fake, Target) {
	t.Helper()
	f := sqstest.For(t)
	src, _ := f.MustCreateQueueWithDLQ(t, name, 5, nil)
	target, err := Discover(context.Background(), f, src)
	if err != nil {
		t.Fatalf("Discover: %v", err)
	}
	return f, target
}

func TestMoveCopiesMessageWithProvenanceThenDeletes(t *testing.T) {
	f, target := fakePair(t, "orders")
	f.MustSend(t, target.SourceURL, `{"order":42}`, sqsmsg.WithAttributes(sqsmsg.UserAttributes(2)))
	msg := sqsmsg.ReceiveOne(t, f, target.SourceURL)
	failedAt := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

	err := mustMover(t, f, target).Move(context.Background(), msg, Provenance{Error: "boom", Handler: "charge", Attempt: 3, FailedAt: failedAt})
	if err != nil {
		t.Fatalf("Move: %v", err)
	}
	if got := f.Messages(target.SourceURL); len(got) != 0 {
		t.Fatalf("source still holds %d messages", len(got))
	}
	dlq := f.Messages(target.DLQURL)
	if len(dlq) != 1 {
		t.Fatalf("DLQ holds %d messages, want 1", len(dlq))
	}
	m := dlq[0]
	if m.Body != `{"order":42}` {
		t.Errorf("body = %q", m.Body)
	}
	for name, want := range sqsmsg.UserAttributes(2) {
		if got := aws.ToString(m.Attributes[name].StringValue); got != *want.StringValue {
			t.Errorf("user attribute %s = %q, want %q", name, got, *want.StringValue)
		}
	}
	for _, name := range []string{AttrSourceQueue, AttrError, AttrAttempt, AttrFirstReceived, AttrFailedAt, AttrHandler} {
		if _, ok := m.Attributes[name]; !ok {
			t.Errorf("provenance attribute %s missing; got %v", name, keys(m.Attributes))
		}
	}
	p, ok := ParseProvenance(m.Attributes)
	if !ok {
		t.Fatal("ParseProvenance found nothing")
	}
	if p.SourceQueue != target.SourceURL || p.Error != "boom" || p.Handler != "charge" || p.Attempt != 3 || !p.FailedAt.Equal(failedAt) || p.FirstReceived.IsZero() {
		t.Errorf("provenance = %+v", p)
	}
}

func TestMoveDefaultsAttemptFromReceiveCount(t *testing.T) {
	f, target := fakePair(t, "orders")
	f.MustSend(t, target.SourceURL, "x")
	msg := sqsmsg.ReceiveOne(t, f, target.SourceURL)
	if err := mustMover(t, f, target).Move(context.Background(), msg, Provenance{Error: "e"}); err != nil {
		t.Fatal(err)
	}
	p, _ := ParseProvenance(f.Messages(target.DLQURL)[0].Attributes)
	if p.Attempt != 1 || p.FailedAt.IsZero() {
		t.Errorf("provenance = %+v, want attempt 1 and a FailedAt", p)
	}
}

func TestMoveSendFailsDeletesNothing(t *testing.T) {
	f, target := fakePair(t, "orders")
	f.MustSend(t, target.SourceURL, "x")
	msg := sqsmsg.ReceiveOne(t, f, target.SourceURL)
	// The send fails for every request of the library's retry rule.
	f.InjectFault(sqstest.Fault{API: "SendMessage", Code: "InternalError", Times: awscall.DefaultAttempts})

	err := mustMover(t, f, target).Move(context.Background(), msg, Provenance{Error: "boom"})
	if !errors.Is(err, ErrNotSent) {
		t.Fatalf("Move error = %v, want ErrNotSent", err)
	}
	if !strings.Contains(err.Error(), "nothing was deleted") {
		t.Errorf("error does not say the message stays: %v", err)
	}
	if n := f.Requests()["DeleteMessage"]; n != 0 {
		t.Errorf("DeleteMessage called %d times after a failed send", n)
	}
	if got := f.Messages(target.SourceURL); len(got) != 1 {
		t.Errorf("source holds %d messages, want 1", len(got))
	}
	if got := f.Messages(target.DLQURL); len(got) != 0 {
		t.Errorf("DLQ holds %d messages, want 0", len(got))
	}
}

func TestMoveDeleteFailsKeepsSourceAndSaysSo(t *testing.T) {
	f, target := fakePair(t, "orders")
	f.MustSend(t, target.SourceURL, "x")
	msg := sqsmsg.ReceiveOne(t, f, target.SourceURL)
	f.InjectFault(sqstest.Fault{API: "DeleteMessage", Code: "InternalError", Times: awscall.DefaultAttempts})

	err := mustMover(t, f, target).Move(context.Background(), msg, Provenance{Error: "boom"})
	if !errors.Is(err, ErrNotDeleted) {
		t.Fatalf("Move error = %v, want ErrNotDeleted", err)
	}
	for _, want := range []string{"could not be deleted", "delivered again", "duplicate"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if got := f.Messages(target.SourceURL); len(got) != 1 {
		t.Errorf("source holds %d messages, want 1 (never lose it)", len(got))
	}
	if got := f.Messages(target.DLQURL); len(got) != 1 {
		t.Errorf("DLQ holds %d messages, want 1", len(got))
	}
}

func TestMoveWithoutReceiptHandleSendsNothing(t *testing.T) {
	f, target := fakePair(t, "orders")
	err := mustMover(t, f, target).Move(context.Background(), types.Message{MessageId: aws.String("m1"), Body: aws.String("x")}, Provenance{})
	if err == nil || !strings.Contains(err.Error(), "receipt handle") {
		t.Fatalf("Move error = %v, want a receipt-handle error", err)
	}
	if n := f.Requests()["SendMessage"]; n != 0 {
		t.Errorf("SendMessage called %d times", n)
	}
}

func TestMoveFIFOKeepsGroupAndDeduplicatesRetries(t *testing.T) {
	f, target := fakePair(t, "orders.fifo")
	if !target.FIFO {
		t.Fatal("Target.FIFO = false for a FIFO queue")
	}
	f.MustSend(t, target.SourceURL, "x", sqsfake.Group("customer-7", "d1"))
	msg := sqsmsg.ReceiveOne(t, f, target.SourceURL)
	mover := mustMover(t, f, target)

	// The first move sends but cannot delete; the retry sends the same
	// message again, which SQS must deduplicate.
	f.InjectFault(sqstest.Fault{API: "DeleteMessage", Code: "InternalError", Times: awscall.DefaultAttempts})
	if err := mover.Move(context.Background(), msg, Provenance{Error: "boom"}); !errors.Is(err, ErrNotDeleted) {
		t.Fatalf("first Move error = %v, want ErrNotDeleted", err)
	}
	if err := mover.Move(context.Background(), msg, Provenance{Error: "boom again"}); err != nil {
		t.Fatalf("retried Move: %v", err)
	}
	dlq := f.Messages(target.DLQURL)
	if len(dlq) != 1 {
		t.Fatalf("DLQ holds %d messages after a retried move, want 1 (deduplicated)", len(dlq))
	}
	if dlq[0].GroupID != "customer-7" {
		t.Errorf("group = %q, want customer-7", dlq[0].GroupID)
	}
	if got := f.Messages(target.SourceURL); len(got) != 0 {
		t.Errorf("source holds %d messages", len(got))
	}

	a := moveDeduplicationID(target.SourceARN, "m-1")
	if b := moveDeduplicationID(target.SourceARN, "m-1"); a != b {
		t.Errorf("deduplication ID not deterministic: %s vs %s", a, b)
	}
	if b := moveDeduplicationID(target.SourceARN, "m-2"); a == b {
		t.Error("two messages share a deduplication ID")
	}
	if len(a) > 128 {
		t.Errorf("deduplication ID has %d characters; SQS allows 128", len(a))
	}
}

func TestMoveFIFOWithoutGroupIDFails(t *testing.T) {
	f, target := fakePair(t, "orders.fifo")
	f.MustSend(t, target.SourceURL, "x", sqsfake.Group("g", "d"))
	msg := sqsmsg.ReceiveOne(t, f, target.SourceURL)
	delete(msg.Attributes, "MessageGroupId")
	err := mustMover(t, f, target).Move(context.Background(), msg, Provenance{})
	if err == nil || !strings.Contains(err.Error(), "MessageGroupId") {
		t.Fatalf("Move error = %v, want one naming MessageGroupId", err)
	}
	if got := f.Messages(target.SourceURL); len(got) != 1 {
		t.Errorf("source holds %d messages, want 1", len(got))
	}
}

// TestMoveAttributeLimit checks the ten-attribute rule: the user's
// attributes always survive, and provenance takes what room is left.
func TestMoveAttributeLimit(t *testing.T) {
	for _, tc := range []struct {
		user     int
		wantMode string // "separate", "json" or "none"
	}{
		{0, "separate"},
		{4, "separate"},
		{5, "json"},
		{9, "json"},
		{10, "none"},
	} {
		t.Run(strings.Repeat("u", tc.user), func(t *testing.T) {
			f, target := fakePair(t, "orders")
			f.MustSend(t, target.SourceURL, "x", sqsmsg.WithAttributes(sqsmsg.UserAttributes(tc.user)))
			msg := sqsmsg.ReceiveOne(t, f, target.SourceURL)
			logger, logs := logBuffer()
			err := mustMover(t, f, target, func(o *Options) { o.Logger = logger }).
				Move(context.Background(), msg, Provenance{Error: "boom", Handler: "h", Attempt: 2})
			if err != nil {
				t.Fatalf("Move: %v", err)
			}
			dlq := f.Messages(target.DLQURL)
			if len(dlq) != 1 {
				t.Fatalf("DLQ holds %d messages", len(dlq))
			}
			attrs := dlq[0].Attributes
			if len(attrs) > sqslimit.MaxMessageAttributes {
				t.Fatalf("%d attributes, more than SQS allows", len(attrs))
			}
			for name := range sqsmsg.UserAttributes(tc.user) {
				if _, ok := attrs[name]; !ok {
					t.Errorf("user attribute %s dropped", name)
				}
			}
			_, hasJSON := attrs[AttrProvenance]
			_, hasSeparate := attrs[AttrError]
			p, found := ParseProvenance(attrs)
			switch tc.wantMode {
			case "separate":
				if !hasSeparate || hasJSON {
					t.Errorf("want separate attributes, got %v", keys(attrs))
				}
			case "json":
				if !hasJSON || hasSeparate {
					t.Errorf("want the JSON attribute, got %v", keys(attrs))
				}
			case "none":
				if found {
					t.Errorf("want no provenance, got %+v", p)
				}
				if !strings.Contains(logs.String(), "without provenance") || !strings.Contains(logs.String(), "boom") {
					t.Errorf("the provenance was not logged: %s", logs)
				}
				return
			}
			if !found || p.Error != "boom" || p.Handler != "h" || p.Attempt != 2 || p.SourceQueue != target.SourceURL {
				t.Errorf("provenance = %+v, found %v", p, found)
			}
		})
	}
}

func TestMoveReplacesEarlierProvenance(t *testing.T) {
	f, target := fakePair(t, "orders")
	old := sqsmsg.UserAttributes(4)
	old[AttrError] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String("old failure")}
	old[AttrHandler] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String("old")}
	f.MustSend(t, target.SourceURL, "x", sqsmsg.WithAttributes(old))
	msg := sqsmsg.ReceiveOne(t, f, target.SourceURL)
	if err := mustMover(t, f, target).Move(context.Background(), msg, Provenance{Error: "new failure"}); err != nil {
		t.Fatal(err)
	}
	attrs := f.Messages(target.DLQURL)[0].Attributes
	p, _ := ParseProvenance(attrs)
	if p.Error != "new failure" || p.Handler != "" {
		t.Errorf("provenance = %+v, want only the new failure", p)
	}
	if _, ok := attrs[AttrProvenance]; ok {
		t.Errorf("4 user attributes should leave room for separate attributes; got %v", keys(attrs))
	}
}

func TestMoveTruncatesAndCleansErrorText(t *testing.T) {
	f, target := fakePair(t, "orders")
	f.MustSend(t, target.SourceURL, "x")
	msg := sqsmsg.ReceiveOne(t, f, target.SourceURL)
	long := "bad\x00byte " + strings.Repeat("é", 2000)
	if err := mustMover(t, f, target).Move(context.Background(), msg, Provenance{Error: long}); err != nil {
		t.Fatalf("Move: %v", err)
	}
	p, _ := ParseProvenance(f.Messages(target.DLQURL)[0].Attributes)
	if len(p.Error) > defaultMaxErrorBytes {
		t.Errorf("error text is %d bytes, want at most %d", len(p.Error), defaultMaxErrorBytes)
	}
	if !strings.HasPrefix(p.Error, "bad\uFFFDbyte é") || !strings.HasSuffix(p.Error, truncMarker) {
		t.Errorf("error text = %.40q…%q", p.Error, p.Error[len(p.Error)-20:])
	}
}

// TestMoveNearSizeLimit moves a message that leaves almost no bytes for
// provenance: the move must succeed, shortening or dropping provenance.
func TestMoveNearSizeLimit(t *testing.T) {
	for _, tc := range []struct {
		name     string
		spare    int // bytes left under the limit before provenance
		wantProv bool
	}{
		{"room for a short error", 400, true},
		{"no room at all", 10, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, target := fakePair(t, "orders")
			body := strings.Repeat("b", target.MaxMessageSize-tc.spare)
			f.MustSend(t, target.SourceURL, body)
			msg := sqsmsg.ReceiveOne(t, f, target.SourceURL)
			logger, logs := logBuffer()
			err := mustMover(t, f, target, func(o *Options) { o.Logger = logger }).
				Move(context.Background(), msg, Provenance{Error: strings.Repeat("e", 1000), Handler: "h"})
			if err != nil {
				t.Fatalf("Move: %v", err)
			}
			dlq := f.Messages(target.DLQURL)
			if len(dlq) != 1 || dlq[0].Body != body {
				t.Fatalf("DLQ holds %d messages (or the body changed)", len(dlq))
			}
			p, found := ParseProvenance(dlq[0].Attributes)
			if found != tc.wantProv {
				t.Fatalf("provenance found = %v, want %v (%+v)", found, tc.wantProv, p)
			}
			if found && (len(p.Error) >= 1000 || p.Handler != "h") {
				t.Errorf("provenance = %+v, want a shortened error", p)
			}
			if logs.Len() == 0 {
				t.Error("nothing logged about the lost provenance")
			}
		})
	}
}

func keys(m map[string]types.MessageAttributeValue) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// mustMover returns a Mover, failing t on error.
func mustMover(t testing.TB, client MoveAPI, target Target, optFns ...func(*Options)) *Mover {
	t.Helper()
	m, err := NewMover(client, target, optFns...)
	if err != nil {
		t.Fatalf("NewMover: %v", err)
	}
	return m
}

func TestNewMoverRefusesIncompleteTargets(t *testing.T) {
	if _, err := NewMover(nil, Target{DLQURL: "d", SourceURL: "s"}); err == nil {
		t.Error("NewMover(nil client) succeeded")
	}
	if _, err := NewMover(sqstest.For(t), Target{}); err == nil || !strings.Contains(err.Error(), "Discover") {
		t.Errorf("NewMover(empty target) = %v, want an error pointing at Discover", err)
	}
}
