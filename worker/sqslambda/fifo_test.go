package sqslambda_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/harness/sqsfake"
	"github.com/sqsworker/sqsworker/sqstest"
	"github.com/sqsworker/sqsworker/worker"
	"github.com/sqsworker/sqsworker/worker/sqslambda"
)

// fifoRun runs the fifo.json batch (A1 B1 A2 B2 A3, groups A and B) with a
// handler that fails A2, and returns what ran and what was reported.
func fifoRun(t *testing.T, optFns ...func(*sqslambda.Options)) (ran, failed []string) {
	t.Helper()
	ev := fixture(t, "fifo.json")
	var mu sync.Mutex
	h := mustNew(t, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
		time.Sleep(time.Second)
		mu.Lock()
		ran = append(ran, m.Body)
		mu.Unlock()
		if m.Body == "A2" {
			return errors.New("card declined")
		}
		return nil
	}), append([]func(*sqslambda.Options){func(o *sqslambda.Options) { o.Logger = quiet }}, optFns...)...)
	resp, err := h.Handle(t.Context(), ev)
	if err != nil {
		t.Fatal(err)
	}
	return ran, bodiesOf(ev, failedIDs(resp))
}

func TestFIFOStopsAtTheFirstFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ran, failed := fifoRun(t)
		if want := []string{"A1", "B1", "A2"}; !slices.Equal(ran, want) {
			t.Errorf("ran %v, want %v", ran, want)
		}
		if want := []string{"A2", "B2", "A3"}; !slices.Equal(failed, want) {
			t.Errorf("failures %v, want %v: the failed record and every one after it", failed, want)
		}
	})
}

func TestFIFOSkipGroupOnFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ran, failed := fifoRun(t, func(o *sqslambda.Options) { o.SkipGroupOnFailure = true })
		if want := []string{"A1", "B1", "A2", "B2"}; !slices.Equal(ran, want) {
			t.Errorf("ran %v, want %v", ran, want)
		}
		if want := []string{"A2", "A3"}; !slices.Equal(failed, want) {
			t.Errorf("failures %v, want %v: only the rest of the failed group", failed, want)
		}
	})
}

func TestFIFOGroupsRunInParallelInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		ran, failed := fifoRun(t, func(o *sqslambda.Options) {
			o.SkipGroupOnFailure = true
			o.Concurrency = 4
		})
		// A1 ∥ B1, then A2 ∥ B2; A3 is skipped after A2 failed.
		if took := time.Since(start); took != 2*time.Second {
			t.Errorf("took %v, want 2s (groups in parallel, each in order)", took)
		}
		if len(ran) != 4 || slices.Index(ran, "A1") > slices.Index(ran, "A2") || slices.Index(ran, "B1") > slices.Index(ran, "B2") {
			t.Errorf("ran %v: a group ran out of order", ran)
		}
		if want := []string{"A2", "A3"}; !slices.Equal(failed, want) {
			t.Errorf("failures %v, want %v", failed, want)
		}
	})
}

func TestFIFOStopWithConcurrencyStartsNothingAfterAFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ran, failed := fifoRun(t, func(o *sqslambda.Options) { o.Concurrency = 4 })
		// A2 and B2 run together; once A2 fails nothing else starts. B2,
		// already done, is not reported: it succeeded.
		if slices.Contains(ran, "A3") {
			t.Errorf("ran %v: A3 started after A2 failed", ran)
		}
		if want := []string{"A2", "A3"}; !slices.Equal(failed, want) {
			t.Errorf("failures %v, want %v", failed, want)
		}
	})
}

// TestFIFOBackoffKeepsGroupOrder runs a FIFO batch against the fake: the
// failed record waits for its retry delay, the records after it are
// released at once, and SQS's group lock keeps the group in order.
func TestFIFOBackoffKeepsGroupOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := sqstest.For(t)
		src, _ := f.MustCreateQueueWithDLQ(t, "payments.fifo", 10, map[string]string{"VisibilityTimeout": "30"})
		for _, b := range []struct{ g, body string }{{"A", "A1"}, {"A", "A2"}, {"A", "A3"}, {"B", "B1"}} {
			f.MustSend(t, src, b.body, sqsfake.Group(b.g, b.body))
		}
		ev := receiveEvent(t, f, src, 10)
		if len(ev.Records) != 4 {
			t.Fatalf("received %d records, want 4", len(ev.Records))
		}
		h := mustNew(t, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			if m.Body == "A2" {
				return errors.New("card declined")
			}
			return nil
		}), func(o *sqslambda.Options) {
			o.Logger = quiet
			o.Client = f
			o.RetryPolicy = fixedPolicy(3, 10*time.Second)
		})
		resp, err := h.Handle(t.Context(), ev)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := bodiesOf(ev, failedIDs(resp)), []string{"A2", "A3", "B1"}; !slices.Equal(got, want) {
			t.Fatalf("failures %v, want %v", got, want)
		}
		if m := messageByBody(t, f, src, "A2"); m.State != "inflight" || time.Until(m.VisibleAt) != 10*time.Second {
			t.Errorf("A2 = %s, visible in %v; want in flight for the 10s retry delay", m.State, time.Until(m.VisibleAt))
		}
		for _, b := range []string{"A3", "B1"} {
			if m := messageByBody(t, f, src, b); m.State != "visible" {
				t.Errorf("%s = %s; a record that did not run is released at once", b, m.State)
			}
		}
		// Lambda deletes what was not reported: A1.
		a1 := ev.Records[0]
		if _, err := f.DeleteMessage(t.Context(), &sqs.DeleteMessageInput{QueueUrl: aws.String(src), ReceiptHandle: aws.String(a1.ReceiptHandle)}); err != nil {
			t.Fatal(err)
		}
		if next := receiveEvent(t, f, src, 10); len(next.Records) != 1 || next.Records[0].Body != "B1" {
			t.Fatalf("next receive = %v; want only B1 (group A waits behind A2)", bodiesOf(next, idsOf(next)))
		}
		time.Sleep(10 * time.Second)
		if next := receiveEvent(t, f, src, 10); !slices.Equal(bodiesOf(next, idsOf(next)), []string{"A2", "A3"}) {
			t.Fatalf("after the delay = %v; want A2, A3 in order", bodiesOf(next, idsOf(next)))
		}
	})
}
