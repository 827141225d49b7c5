package sqslambda_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/worker"
	"github.com/sqsworker/sqsworker/worker/sqslambda"
)

func TestRecordsBecomeFaithfulMessages(t *testing.T) {
	ev := fixture(t, "standard.json")
	var mu sync.Mutex
	got := map[string]*worker.Message{}
	h := mustNew(t, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
		mu.Lock()
		defer mu.Unlock()
		got[m.ID] = m
		return nil
	}), func(o *sqslambda.Options) { o.Logger = quiet })
	if _, err := h.Handle(t.Context(), ev); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("handler saw %d messages, want 3", len(got))
	}

	m := got["3f1c1b7e-5a44-4c55-9d0e-1a2b3c4d5e01"]
	if m.Body != `{"order":"A-1001","total":"19.90"}` || m.ReceiptHandle != "AQEBz1fSAkxFQzT0mJ3EXAMPLEhandle01" {
		t.Errorf("body/handle = %q / %q", m.Body, m.ReceiptHandle)
	}
	if m.QueueURL != "https://sqs.us-east-2.amazonaws.com/123456789012/orders" {
		t.Errorf("QueueURL = %q", m.QueueURL)
	}
	if m.ReceiveCount != 1 || m.Attempt != 1 {
		t.Errorf("ReceiveCount/Attempt = %d/%d, want 1/1", m.ReceiveCount, m.Attempt)
	}
	if want := time.UnixMilli(1767225600000); !m.SentAt.Equal(want) {
		t.Errorf("SentAt = %v, want %v", m.SentAt, want)
	}
	if want := time.UnixMilli(1767225600250); !m.FirstReceivedAt.Equal(want) {
		t.Errorf("FirstReceivedAt = %v, want %v", m.FirstReceivedAt, want)
	}
	if m.GroupID != "" {
		t.Errorf("GroupID = %q on a standard queue", m.GroupID)
	}
	attr := func(name string) (string, string, []byte) {
		v, ok := m.MessageAttributes[name]
		if !ok {
			t.Fatalf("message attribute %s missing: %+v", name, m.MessageAttributes)
		}
		return aws.ToString(v.DataType), aws.ToString(v.StringValue), v.BinaryValue
	}
	if dt, s, _ := attr("tenant"); dt != "String" || s != "acme" {
		t.Errorf("tenant = %s %q", dt, s)
	}
	if dt, s, _ := attr("priority"); dt != "Number" || s != "7" {
		t.Errorf("priority = %s %q", dt, s)
	}
	if dt, s, _ := attr("ratio"); dt != "Number.float" || s != "0.25" {
		t.Errorf("ratio = %s %q", dt, s)
	}
	if dt, _, b := attr("signature"); dt != "Binary" || string(b) != "sqslambda" {
		t.Errorf("signature = %s %q", dt, b)
	}
	for name, v := range m.MessageAttributes {
		if v.StringListValues != nil || v.BinaryListValues != nil {
			t.Errorf("attribute %s keeps empty list values, which SQS refuses on send", name)
		}
	}
	raw := m.Raw
	if aws.ToString(raw.MessageId) != m.ID || aws.ToString(raw.ReceiptHandle) != m.ReceiptHandle || aws.ToString(raw.Body) != m.Body {
		t.Errorf("Raw = %+v", raw)
	}
	if aws.ToString(raw.MD5OfBody) != "8be9b48bcd21c41d9d2a6e0c2129d959" || aws.ToString(raw.MD5OfMessageAttributes) != "44072a5cd825264c46f587a51c35bdc6" {
		t.Errorf("Raw MD5s = %q / %q", aws.ToString(raw.MD5OfBody), aws.ToString(raw.MD5OfMessageAttributes))
	}
	if raw.Attributes["SenderId"] != "AIDAEXAMPLESENDER01" || raw.Attributes["ApproximateReceiveCount"] != "1" {
		t.Errorf("Raw.Attributes = %v", raw.Attributes)
	}

	m2 := got["3f1c1b7e-5a44-4c55-9d0e-1a2b3c4d5e02"]
	if m2.ReceiveCount != 3 || m2.Attempt != 3 {
		t.Errorf("second record ReceiveCount/Attempt = %d/%d, want 3/3", m2.ReceiveCount, m2.Attempt)
	}
	if m2.Attributes["AWSTraceHeader"] == "" || len(m2.MessageAttributes) != 0 {
		t.Errorf("second record attributes = %v / %v", m2.Attributes, m2.MessageAttributes)
	}
}

func TestFIFORecordsCarryTheirGroup(t *testing.T) {
	ev := fixture(t, "fifo.json")
	var groups []string
	h := mustNew(t, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
		groups = append(groups, m.GroupID+"/"+m.Body)
		return nil
	}), func(o *sqslambda.Options) { o.Logger = quiet })
	if _, err := h.Handle(t.Context(), ev); err != nil {
		t.Fatal(err)
	}
	want := []string{"customer-A/A1", "customer-B/B1", "customer-A/A2", "customer-B/B2", "customer-A/A3"}
	if !slices.Equal(groups, want) {
		t.Fatalf("ran %v, want %v (batch order)", groups, want)
	}
}

func TestResponseMarshalsAsLambdaExpects(t *testing.T) {
	ev := fixture(t, "standard.json")
	failOn := ""
	h := mustNew(t, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
		if m.Body == failOn {
			return errors.New("downstream unavailable")
		}
		return nil
	}), func(o *sqslambda.Options) { o.Logger = quiet })

	resp, err := h.Handle(t.Context(), ev)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(resp)
	if string(data) != `{"batchItemFailures":[]}` {
		t.Errorf("full success marshals to %s, want {\"batchItemFailures\":[]}", data)
	}
	// aws-lambda-go's zero value would say null, which Lambda also reads as
	// success; the Handler always answers with an empty list.
	if zero, _ := json.Marshal(events.SQSEventResponse{}); string(zero) != `{"batchItemFailures":null}` {
		t.Logf("note: aws-lambda-go's zero response now marshals to %s", zero)
	}

	failOn = "not json at all"
	resp, err = h.Handle(t.Context(), ev)
	if err != nil {
		t.Fatal(err)
	}
	data, _ = json.Marshal(resp)
	if want := `{"batchItemFailures":[{"itemIdentifier":"3f1c1b7e-5a44-4c55-9d0e-1a2b3c4d5e03"}]}`; string(data) != want {
		t.Errorf("one failure marshals to %s, want %s", data, want)
	}
}

func TestFailuresReportedInBatchOrder(t *testing.T) {
	ev := fixture(t, "standard.json")
	h := mustNew(t, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
		if m.Body != `{"order":"A-1002","total":"5.00"}` {
			return errors.New("fails")
		}
		return nil
	}), func(o *sqslambda.Options) { o.Logger = quiet; o.Concurrency = 3 })
	resp, err := h.Handle(t.Context(), ev)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"3f1c1b7e-5a44-4c55-9d0e-1a2b3c4d5e01", "3f1c1b7e-5a44-4c55-9d0e-1a2b3c4d5e03"}
	if got := failedIDs(resp); !slices.Equal(got, want) {
		t.Fatalf("failures = %v, want %v", got, want)
	}
}

func TestEmptyEvent(t *testing.T) {
	h := mustNew(t, worker.HandlerFunc(func(context.Context, *worker.Message) error { return nil }))
	resp, err := h.Handle(t.Context(), events.SQSEvent{})
	if err != nil || resp.BatchItemFailures == nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("Handle(empty) = %+v, %v; want an empty list", resp, err)
	}
}

func TestWithoutClientEveryFailureIsReported(t *testing.T) {
	ev := fixture(t, "standard.json")
	h := mustNew(t, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
		switch m.Body {
		case "not json at all":
			return retry.Permanent(errors.New("cannot decode"))
		case `{"order":"A-1002","total":"5.00"}`:
			return retry.After(time.Minute, errors.New("rate limited"))
		}
		return nil
	}), func(o *sqslambda.Options) { o.Logger = quiet })
	resp, err := h.Handle(t.Context(), ev)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`{"order":"A-1002","total":"5.00"}`, "not json at all"}
	if got := bodiesOf(ev, failedIDs(resp)); !slices.Equal(got, want) {
		t.Fatalf("failures = %v, want %v: without a client a permanent failure is reported (SQS's redrive moves it)", got, want)
	}
}

func TestPanicIsAFailure(t *testing.T) {
	ev := fixture(t, "standard.json")
	var seen error
	h := mustNew(t, worker.Chain(worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
		if m.Body == "not json at all" {
			panic("boom")
		}
		return nil
	}), func(next worker.Handler) worker.Handler {
		return worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			defer func() {
				if p := recover(); p != nil {
					seen = fmt.Errorf("middleware saw panic %v", p)
					panic(p)
				}
			}()
			return next.Handle(ctx, m)
		})
	}), func(o *sqslambda.Options) { o.Logger = quiet })
	resp, err := h.Handle(t.Context(), ev)
	if err != nil {
		t.Fatal(err)
	}
	if got := bodiesOf(ev, failedIDs(resp)); !slices.Equal(got, []string{"not json at all"}) {
		t.Fatalf("failures = %v", got)
	}
	if seen == nil {
		t.Error("the middleware did not run around the handler")
	}
}

func TestFailedRecordWithoutMessageIDFailsTheBatch(t *testing.T) {
	ev := fixture(t, "standard.json")
	ev.Records[2].MessageId = ""
	h := mustNew(t, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
		if m.Body == "not json at all" {
			return errors.New("fails")
		}
		return nil
	}), func(o *sqslambda.Options) { o.Logger = quiet })
	if _, err := h.Handle(t.Context(), ev); err == nil {
		t.Fatal("Handle reported no error for a failed record Lambda cannot identify")
	}
}

func TestAttemptCounterFeedsThePolicy(t *testing.T) {
	ev := fixture(t, "standard.json")
	ev.Records = ev.Records[:1]
	var counted atomic.Int64
	var asked atomic.Int64
	h := mustNew(t, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
		if m.Attempt != 7 {
			t.Errorf("Attempt = %d, want the counter's 7", m.Attempt)
		}
		return errors.New("fails")
	}), func(o *sqslambda.Options) {
		o.Logger = quiet
		o.AttemptCounter = attemptFunc(func(ctx context.Context, id string, receives int) (int, error) {
			counted.Add(1)
			return 7, nil
		})
		o.RetryPolicy = retry.PolicyFunc(func(attempt int) (time.Duration, bool) {
			asked.Store(int64(attempt))
			return time.Second, true
		})
	})
	if _, err := h.Handle(t.Context(), ev); err != nil {
		t.Fatal(err)
	}
	if counted.Load() != 1 || asked.Load() != 7 {
		t.Fatalf("counter called %d times, policy asked about attempt %d; want 1 and 7", counted.Load(), asked.Load())
	}
}

func TestConcurrencyWithinABatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ev := fixture(t, "standard.json")
		for i := range 7 {
			r := ev.Records[0]
			r.MessageId = fmt.Sprintf("extra-%d", i)
			ev.Records = append(ev.Records, r)
		}
		var running, peak atomic.Int64
		h := mustNew(t, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			n := running.Add(1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			time.Sleep(time.Second)
			running.Add(-1)
			return nil
		}), func(o *sqslambda.Options) { o.Logger = quiet; o.Concurrency = 4 })
		start := time.Now()
		if _, err := h.Handle(t.Context(), ev); err != nil {
			t.Fatal(err)
		}
		if peak.Load() != 4 {
			t.Errorf("peak concurrency %d, want 4", peak.Load())
		}
		if took := time.Since(start); took != 3*time.Second {
			t.Errorf("10 one-second records at concurrency 4 took %v, want 3s", took)
		}
	})
}

func TestNewRejectsBadOptions(t *testing.T) {
	h := worker.HandlerFunc(func(context.Context, *worker.Message) error { return nil })
	if l, err := sqslambda.New(nil); err == nil || l != nil {
		t.Fatalf("New(nil) = %v, %v; want an error", l, err)
	}
	for name, fn := range map[string]func(*sqslambda.Options){
		"negative call timeout": func(o *sqslambda.Options) { o.CallTimeout = -time.Second },
		"negative concurrency":  func(o *sqslambda.Options) { o.Concurrency = -1 },
		"negative margin":       func(o *sqslambda.Options) { o.DeadlineMargin = -time.Second },
	} {
		t.Run(name, func(t *testing.T) {
			if l, err := sqslambda.New(h, fn); err == nil || l != nil {
				t.Fatalf("New accepted the option: %v, %v", l, err)
			}
		})
	}
}

// attemptFunc is an attempt counter that numbers attempts with a function
// and takes none back.
type attemptFunc func(ctx context.Context, messageID string, receiveCount int) (int, error)

func (f attemptFunc) Attempt(ctx context.Context, messageID string, receiveCount int) (int, error) {
	return f(ctx, messageID, receiveCount)
}

func (attemptFunc) Uncount(context.Context, string) error { return nil }
