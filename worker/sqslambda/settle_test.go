package sqslambda_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/sqsworker/sqsworker/harness/sqsfake"
	"github.com/sqsworker/sqsworker/producer"
	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/sqstest"
	"github.com/sqsworker/sqsworker/worker"
	"github.com/sqsworker/sqsworker/worker/sqslambda"
)

// When GetQueueUrl fails (a role without sqs:GetQueueUrl), one batch of
// 2,000 records from one queue costs one GetQueueUrl call, every record
// runs, and Handle returns well before the deadline; the next invocation
// asks once more.
func TestFailingQueueLookupOncePerInvocation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, _ := newFakeQueue(t, "orders")
		f.InjectFault(sqstest.Fault{API: "GetQueueUrl", Err: &smithy.GenericAPIError{Code: "AccessDenied", Message: "not allowed", Fault: smithy.FaultClient}})
		msgs := make([]types.Message, 2000)
		for i := range msgs {
			msgs[i] = types.Message{MessageId: aws.String(fmt.Sprint(i)), ReceiptHandle: aws.String(fmt.Sprint("h", i)), Body: aws.String(fmt.Sprint(i)),
				Attributes: map[string]string{"ApproximateReceiveCount": "1"}}
		}
		ev, err := sqslambda.NewEvent(sqsfake.ARN(src), msgs...)
		if err != nil {
			t.Fatal(err)
		}
		var ran atomic.Int64
		h := mustNew(t, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			ran.Add(1)
			return nil
		}), func(o *sqslambda.Options) { o.Logger = quiet; o.Client = f; o.Concurrency = 10 })
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		start := time.Now()
		resp, err := h.Handle(ctx, ev)
		if err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("Handle = %v, %v; want every record done", resp, err)
		}
		if ran.Load() != 2000 || f.Requests()["GetQueueUrl"] != 1 || time.Since(start) > time.Second {
			t.Fatalf("%d records ran, %d GetQueueUrl calls, %v; want 2000, 1, well within the deadline", ran.Load(), f.Requests()["GetQueueUrl"], time.Since(start))
		}
		if _, err := h.Handle(ctx, ev); err != nil {
			t.Fatal(err)
		}
		if n := f.Requests()["GetQueueUrl"]; n != 2 {
			t.Fatalf("%d GetQueueUrl calls after a second invocation, want 2 (one per invocation while it fails)", n)
		}
	})
}

// The worker and the Lambda adapter settle through the same code, so the
// same jobs under the same faults end in the same place: successes gone,
// transient failures back after the policy's delay, poison in the DLQ with
// provenance — with throttled batch calls on the way.
func TestWorkerAndLambdaSameFaultsSameResult(t *testing.T) {
	jobs := []string{"ok-1", "ok-2", "flaky-1", "poison-1", "ok-3", "flaky-2", "poison-2"}
	handler := func(attempts *sync.Map) worker.Handler {
		return worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			n, _ := attempts.LoadOrStore(m.Body, new(atomic.Int64))
			k := n.(*atomic.Int64).Add(1)
			switch {
			case strings.HasPrefix(m.Body, "poison"):
				return retry.Permanent(errors.New("cannot decode " + m.Body))
			case strings.HasPrefix(m.Body, "flaky") && k == 1:
				return errors.New("busy")
			}
			return nil
		})
	}
	// Faults on the calls the settlement path makes. (Deletes of successes
	// are Lambda's own in the adapter — RunLocal's here — so they are left
	// alone; the worker's delete retries are tested in package worker.)
	faults := func(f *sqstest.Fake) {
		f.InjectFault(sqstest.Fault{API: "ChangeMessageVisibilityBatch", Code: "RequestThrottled", Times: 1})
		f.InjectFault(sqstest.Fault{API: "SendMessageBatch", Code: "InternalError", Times: 1})
		f.InjectFault(sqstest.Fault{API: "SendMessageBatch", Code: "RequestThrottled", Entries: true, Times: 1})
	}
	type result struct {
		dlq      []string
		left     int
		attempts map[string]int64
	}
	collect := func(f *sqstest.Fake, src, dlqURL string, attempts *sync.Map) result {
		var r result
		for _, m := range f.Messages(dlqURL) {
			r.dlq = append(r.dlq, m.Body)
		}
		slices.Sort(r.dlq)
		r.left = len(f.Messages(src))
		r.attempts = map[string]int64{}
		attempts.Range(func(k, v any) bool { r.attempts[k.(string)] = v.(*atomic.Int64).Load(); return true })
		return r
	}
	var viaWorker, viaLambda result
	synctest.Test(t, func(t *testing.T) {
		f, src, dlqURL := newFakeQueue(t, "orders")
		for _, b := range jobs {
			f.MustSend(t, src, b)
		}
		faults(f)
		var attempts sync.Map
		w, err := worker.New(f, src, handler(&attempts), func(o *worker.Options) { o.Logger = quiet; o.RetryPolicy = fixedPolicy(2, time.Second) })
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- w.Run(ctx) }()
		time.Sleep(time.Minute)
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		viaWorker = collect(f, src, dlqURL, &attempts)
	})
	synctest.Test(t, func(t *testing.T) {
		f, src, dlqURL := newFakeQueue(t, "orders")
		for _, b := range jobs {
			f.MustSend(t, src, b)
		}
		faults(f)
		var attempts sync.Map
		h := mustNew(t, handler(&attempts), func(o *sqslambda.Options) {
			o.Logger = quiet
			o.Client = f
			o.RetryPolicy = fixedPolicy(2, time.Second)
		})
		stop := startLocal(t, f, src, h.Handle, reportFailures)
		time.Sleep(time.Minute)
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		viaLambda = collect(f, src, dlqURL, &attempts)
	})
	if fmt.Sprint(viaWorker) != fmt.Sprint(viaLambda) {
		t.Fatalf("worker ended with %+v, Lambda adapter with %+v", viaWorker, viaLambda)
	}
	want := result{dlq: []string{"poison-1", "poison-2"}, left: 0,
		attempts: map[string]int64{"ok-1": 1, "ok-2": 1, "ok-3": 1, "flaky-1": 2, "flaky-2": 2, "poison-1": 1, "poison-2": 1}}
	if fmt.Sprint(viaWorker) != fmt.Sprint(want) {
		t.Fatalf("both ended with %+v, want %+v", viaWorker, want)
	}
}

// The settlement hook works the same in the Lambda adapter.
func TestLambdaSettlementHook(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, _ := newFakeQueue(t, "orders")
		for _, b := range []string{"ok-1", "flaky-1", "poison-1"} {
			f.MustSend(t, src, b)
		}
		var mu sync.Mutex
		got := map[string]worker.Settlement{}
		h := mustNew(t, jobs, func(o *sqslambda.Options) {
			o.Logger = quiet
			o.Client = f
			o.OnSettled = func(s worker.Settlement) {
				mu.Lock()
				defer mu.Unlock()
				got[s.Message.Body] = s
			}
		})
		if _, err := h.Handle(t.Context(), receiveEvent(t, f, src, 10)); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		for body, want := range map[string]worker.Outcome{"ok-1": worker.Deleted, "flaky-1": worker.Retrying, "poison-1": worker.DeadLettered} {
			if s := got[body]; s.Outcome != want || s.Attempt != 1 || s.HandlerEnd.IsZero() {
				t.Errorf("%s: %+v, want %v after attempt 1", body, s, want)
			}
		}
	})
}

// A job sent with a 30-day delay waits in the Lambda adapter as in the
// worker: run once, on time, as attempt 1, never dead-lettered.
func TestThirtyDayDelayInLambda(t *testing.T) {
	// With a batching window, the poller receives a record up to the
	// window before the invocation: SQS's 12-hour visibility limit counts
	// from that receive, not from the invocation. (The window stays below
	// the queue's 30 s visibility timeout, as AWS advises.)
	for _, window := range []time.Duration{0, 20 * time.Second} {
		t.Run(fmt.Sprint("window-", window), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f, src, dlqURL := newFakeQueue(t, "orders")
				p, err := producer.New(f, src)
				if err != nil {
					t.Fatal(err)
				}
				due := time.Now().Add(30 * 24 * time.Hour)
				if _, err := p.SendBatch(context.Background(), []producer.Message{{Body: "invoice", Delay: time.Until(due)}}); err != nil {
					t.Fatal(err)
				}
				var mu sync.Mutex
				var runs []time.Time
				var attempts []int
				h := mustNew(t, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
					mu.Lock()
					defer mu.Unlock()
					runs = append(runs, time.Now())
					attempts = append(attempts, m.Attempt)
					return nil
				}), func(o *sqslambda.Options) { o.Logger = quiet; o.Client = f })
				stop := startLocal(t, f, src, h.Handle, reportFailures, func(o *sqslambda.LocalOptions) { o.MaximumBatchingWindow = window })
				time.Sleep(31 * 24 * time.Hour)
				if err := stop(); err != nil {
					t.Fatal(err)
				}
				mu.Lock()
				defer mu.Unlock()
				if len(runs) != 1 || runs[0].Before(due) || runs[0].Sub(due) > window+time.Second || attempts[0] != 1 {
					first := time.Time{}
					if len(runs) > 0 {
						first = runs[0]
					}
					t.Fatalf("ran %d times, first %v after the due time; want once, on time (within the batching window), as attempt 1", len(runs), first.Sub(due))
				}
				if n := len(f.Messages(dlqURL)); n != 0 {
					t.Fatalf("%d messages dead-lettered", n)
				}
				// Each hide holds the job for up to 12 hours: about 60 over
				// 30 days. A hide SQS refuses (beyond 12 hours from the
				// receive) brings the job back every visibility timeout.
				if n := f.Requests()["ChangeMessageVisibilityBatch"]; n == 0 || n > 70 {
					t.Fatalf("%d visibility changes over 30 days; want about 60 (one hide per 12 hours)", n)
				}
			})
		})
	}
}
