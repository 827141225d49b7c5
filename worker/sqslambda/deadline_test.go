package sqslambda_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/sqstest"
	"github.com/sqsworker/sqsworker/worker"
	"github.com/sqsworker/sqsworker/worker/sqslambda"
)

// slow takes 4 s per record unless its context ends first.
func slow(causes chan<- error) worker.Handler {
	return worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
		select {
		case <-time.After(4 * time.Second):
			return nil
		case <-ctx.Done():
			causes <- context.Cause(ctx)
			return ctx.Err()
		}
	})
}

func TestDeadlineStopsStartingRecords(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, _ := newFakeQueue(t, "orders")
		for i := 1; i <= 5; i++ {
			f.MustSend(t, src, fmt.Sprintf("slow-%d", i))
		}
		ev := receiveEvent(t, f, src, 10)
		causes := make(chan error, 5)
		h := mustNew(t, slow(causes), func(o *sqslambda.Options) {
			o.Logger = quiet
			o.Client = f
			o.RetryPolicy = fixedPolicy(3, 3*time.Second)
		})
		// A 10 s function timeout: records start at 0 s and 4 s and
		// finish; the third starts at 8 s and is cut at 9 s (10 s minus
		// the 1 s margin); the last two never start.
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		start := time.Now()
		resp, err := h.Handle(ctx, ev)
		if err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took != 9*time.Second {
			t.Errorf("Handle returned after %v, want 9s (deadline minus DeadlineMargin)", took)
		}
		if got, want := bodiesOf(ev, failedIDs(resp)), []string{"slow-3", "slow-4", "slow-5"}; !slices.Equal(got, want) {
			t.Fatalf("failures %v, want %v", got, want)
		}
		if c := <-causes; !errors.Is(c, sqslambda.ErrDeadline) {
			t.Errorf("the running handler's context ended with %v, want ErrDeadline", c)
		}
		if m := messageByBody(t, f, src, "slow-3"); time.Until(m.VisibleAt) != 3*time.Second {
			t.Errorf("slow-3 (cut by the deadline) visible in %v, want the policy's 3s", time.Until(m.VisibleAt))
		}
		for _, b := range []string{"slow-4", "slow-5"} {
			if m := messageByBody(t, f, src, b); m.State != "visible" {
				t.Errorf("%s = %s; a record that never started is released at once", b, m.State)
			}
		}
		for _, b := range []string{"slow-1", "slow-2"} {
			if m := messageByBody(t, f, src, b); m.State != "inflight" {
				t.Errorf("%s = %s; a success stays for Lambda to delete", b, m.State)
			}
		}
	})
}

func TestDeadlineWithConcurrency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ev := fixture(t, "standard.json")
		for i := range 5 {
			r := ev.Records[0]
			r.MessageId = fmt.Sprintf("extra-%d", i)
			ev.Records = append(ev.Records, r)
		}
		var mu sync.Mutex
		started := 0
		h := mustNew(t, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			mu.Lock()
			started++
			mu.Unlock()
			select {
			case <-time.After(3 * time.Second):
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}), func(o *sqslambda.Options) {
			o.Logger = quiet
			o.Concurrency = 2
			o.DeadlineMargin = 2 * time.Second
		})
		// 8 records, 2 at a time, 3 s each, 5 s usable: two rounds start
		// (0 s, 3 s); the second is cut at 5 s; four never start.
		ctx, cancel := context.WithTimeout(t.Context(), 7*time.Second)
		defer cancel()
		resp, err := h.Handle(ctx, ev)
		if err != nil {
			t.Fatal(err)
		}
		if started != 4 || len(resp.BatchItemFailures) != 6 {
			t.Fatalf("started %d, reported %d; want 4 started and 6 reported (2 cut, 4 not started)", started, len(resp.BatchItemFailures))
		}
	})
}

func TestTooLittleTimeStartsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, _ := newFakeQueue(t, "orders")
		f.MustSend(t, src, "ok-1")
		f.MustSend(t, src, "ok-2")
		ev := receiveEvent(t, f, src, 10)
		ran := false
		h := mustNew(t, worker.HandlerFunc(func(context.Context, *worker.Message) error {
			ran = true
			return nil
		}), func(o *sqslambda.Options) { o.Logger = quiet; o.Client = f })
		ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
		defer cancel()
		resp, err := h.Handle(ctx, ev)
		if err != nil {
			t.Fatal(err)
		}
		if ran || len(resp.BatchItemFailures) != 2 {
			t.Fatalf("ran=%v, %d reported; with less than DeadlineMargin left nothing runs and all are reported", ran, len(resp.BatchItemFailures))
		}
		if v := len(f.Messages(src, "visible")); v != 2 {
			t.Errorf("%d visible; the records must be released at once", v)
		}
	})
}

// hangingChanges is a Fake whose ChangeMessageVisibilityBatch never
// answers: it ends only with its context.
type hangingChanges struct{ *sqstest.Fake }

func (h hangingChanges) ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, o ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestHungSettlementReturnsBeforeTheDeadline: a visibility change that
// hangs until the settlement's time is up still lets Handle return before
// the invocation's deadline. The chaos suite's lambda variant saw Handle
// return 1 ms after it (the settlement ran until the deadline itself):
// on Lambda that invocation times out, so its whole batch comes back,
// succeeded records included, and the settlement it reported is lost.
func TestHungSettlementReturnsBeforeTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, _ := newFakeQueue(t, "orders")
		f.MustSend(t, src, "fails")
		ev := receiveEvent(t, f, src, 10)
		h := mustNew(t, worker.HandlerFunc(func(context.Context, *worker.Message) error { return errors.New("transient") }), func(o *sqslambda.Options) {
			o.Logger = quiet
			o.Client = hangingChanges{f}
			o.RetryPolicy = fixedPolicy(3, time.Second)
			o.CallTimeout = time.Minute
		})
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		deadline, _ := ctx.Deadline()
		resp, err := h.Handle(ctx, ev)
		if err != nil {
			t.Fatal(err)
		}
		if !time.Now().Before(deadline) {
			t.Fatalf("Handle returned %v after the invocation's deadline; Lambda would have timed it out", time.Since(deadline))
		}
		if len(resp.BatchItemFailures) != 1 {
			t.Errorf("%d reported; want the failed record", len(resp.BatchItemFailures))
		}
	})
}
