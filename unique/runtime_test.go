package unique_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/unique"
	"github.com/sqsworker/sqsworker/worker"
	"github.com/sqsworker/sqsworker/worker/sqslambda"
)

func fixedPolicy(n int, d time.Duration) retry.Policy {
	return retry.PolicyFunc(func(attempt int) (time.Duration, bool) { return d, attempt <= n })
}

// runWorker runs a worker on e's queue, its settlements going to the
// Store, until a settlement of outcome last.
func runWorker(t *testing.T, e *env, h worker.HandlerFunc, last worker.Outcome) []worker.Outcome {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var outcomes []worker.Outcome
	w, err := worker.New(e.sqs, e.url, h, func(o *worker.Options) {
		o.Logger, o.RetryPolicy, o.Concurrency = quiet, fixedPolicy(3, time.Second), 1
		o.OnSettled = func(s worker.Settlement) {
			e.store.Settled(s)
			outcomes = append(outcomes, s.Outcome)
			if s.Outcome == last {
				cancel()
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Run(ctx); err != nil {
		t.Fatal(err)
	}
	return outcomes
}

// The worker keeps a job's key through its retries and frees it once the
// job succeeds.
func TestWorkerKeepsKeyThroughRetriesAndFreesOnSuccess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, func(o *unique.Options) { o.Now = time.Now })
		k := unique.Key{Name: "nightly/42"}
		if _, err := e.send(t, k, "job"); err != nil {
			t.Fatal(err)
		}
		var runs atomic.Int32
		var refused atomic.Int32
		outcomes := runWorker(t, e, func(ctx context.Context, m *worker.Message) error {
			if _, err := e.send(t, k, "again"); errors.Is(err, unique.ErrDuplicate) {
				refused.Add(1)
			}
			if runs.Add(1) <= 2 {
				return errors.New("flaky")
			}
			return nil
		}, worker.Deleted)
		if fmt.Sprint(outcomes) != fmt.Sprint([]worker.Outcome{worker.Retrying, worker.Retrying, worker.Deleted}) {
			t.Fatalf("outcomes %v", outcomes)
		}
		if refused.Load() != 3 {
			t.Errorf("%d of 3 sends while the job was held were refused", refused.Load())
		}
		if _, err := e.send(t, k, "next"); err != nil {
			t.Fatalf("after success the key is still held: %v", err)
		}
	})
}

// A job the worker dead-letters frees its key.
func TestWorkerDeadLetterFreesKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, func(o *unique.Options) { o.Now = time.Now })
		k := unique.Key{Name: "poison"}
		if _, err := e.send(t, k, "job"); err != nil {
			t.Fatal(err)
		}
		runWorker(t, e, func(ctx context.Context, m *worker.Message) error {
			return retry.Permanent(errors.New("bad input"))
		}, worker.DeadLettered)
		if n := len(e.sqs.Messages(e.dlq)); n != 1 {
			t.Fatalf("DLQ holds %d", n)
		}
		if _, err := e.send(t, k, "next"); err != nil {
			t.Fatalf("after the dead-letter move the key is still held: %v", err)
		}
	})
}

// A snoozed job keeps its key, also when it is relayed as a fresh copy
// (standard queue, attempts counted by receives).
func TestWorkerSnoozeKeepsKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, func(o *unique.Options) { o.Now = time.Now })
		k := unique.Key{Name: "snoozy"}
		if _, err := e.send(t, k, "job"); err != nil {
			t.Fatal(err)
		}
		var runs atomic.Int32
		var refused atomic.Int32
		outcomes := runWorker(t, e, func(ctx context.Context, m *worker.Message) error {
			if _, err := e.send(t, k, "again"); errors.Is(err, unique.ErrDuplicate) {
				refused.Add(1)
			}
			if runs.Add(1) == 1 {
				return retry.Snooze(time.Minute, "waiting")
			}
			return nil
		}, worker.Deleted)
		if len(outcomes) != 2 || outcomes[0] != worker.Snoozed || refused.Load() != 2 {
			t.Fatalf("outcomes %v, %d refused", outcomes, refused.Load())
		}
		if st := e.store.Stats(); st.Refreshed != 1 || st.Released != 1 {
			t.Errorf("Stats %+v", st)
		}
		if _, err := e.send(t, k, "next"); err != nil {
			t.Fatalf("after success the key is still held: %v", err)
		}
	})
}

// The Lambda adapter settles through the same engine: a record that fails
// keeps its key, one dead-lettered or deleted frees it.
func TestLambdaAdapterReleases(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, func(o *unique.Options) { o.Now = time.Now })
		fail := unique.Key{Name: "fails"}
		poison := unique.Key{Name: "poison"}
		ok := unique.Key{Name: "ok"}
		for _, k := range []unique.Key{fail, poison, ok} {
			if _, err := e.send(t, k, k.Name); err != nil {
				t.Fatal(err)
			}
		}
		h, err := sqslambda.New(worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			switch m.Body {
			case "fails":
				return errors.New("flaky")
			case "poison":
				return retry.Permanent(errors.New("bad"))
			}
			return nil
		}), func(o *sqslambda.Options) {
			o.Logger, o.Client, o.RetryPolicy, o.OnSettled = quiet, e.sqs, fixedPolicy(3, time.Second), e.store.Settled
		})
		if err != nil {
			t.Fatal(err)
		}
		out, err := e.sqs.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{
			QueueUrl: &e.url, MaxNumberOfMessages: 10, MessageAttributeNames: []string{"All"},
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		})
		if err != nil || len(out.Messages) != 3 {
			t.Fatalf("receive: %d messages, %v", len(out.Messages), err)
		}
		ev, err := sqslambda.NewEvent("arn:aws:sqs:us-east-1:000000000000:jobs", out.Messages...)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.Handle(t.Context(), ev); err != nil {
			t.Fatal(err)
		}
		if _, err := e.send(t, fail, "x"); !errors.Is(err, unique.ErrDuplicate) {
			t.Errorf("a failed record's key was freed: %v", err)
		}
		for _, k := range []unique.Key{poison, ok} {
			if _, err := e.send(t, k, "x"); err != nil {
				t.Errorf("key %s still held: %v", k.Name, err)
			}
		}
	})
}
