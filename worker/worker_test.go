package worker_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/sqstest"
	"github.com/sqsworker/sqsworker/visibility"
	"github.com/sqsworker/sqsworker/worker"
)

var quiet = slog.New(slog.DiscardHandler)

// fixedPolicy retries n times after d each.
func fixedPolicy(n int, d time.Duration) retry.Policy {
	return retry.PolicyFunc(func(attempt int) (time.Duration, bool) { return d, attempt <= n })
}

// harness runs a worker inside a synctest bubble.
type harness struct {
	t      *testing.T
	f      *sqstest.Fake
	src    string
	w      *worker.Worker
	cancel context.CancelFunc
	done   chan error
}

func start(t *testing.T, f *sqstest.Fake, src string, h worker.Handler, optFns ...func(*worker.Options)) *harness {
	t.Helper()
	opts := append([]func(*worker.Options){func(o *worker.Options) { o.Logger = quiet }}, optFns...)
	w, err := worker.New(f, src, h, opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	hs := &harness{t: t, f: f, src: src, w: w, cancel: cancel, done: make(chan error, 1)}
	go func() { hs.done <- w.Run(ctx) }()
	return hs
}

// stop cancels Run and returns its error.
func (h *harness) stop() error {
	h.cancel()
	return <-h.done
}

func newQueue(t *testing.T, maxReceive int, visibility string) (*sqstest.Fake, string, string) {
	f := sqstest.For(t)
	src, dlq := f.MustCreateQueueWithDLQ(t, "jobs", maxReceive, map[string]string{"VisibilityTimeout": visibility})
	return f, src, dlq
}

func TestSuccessDeletesInBatches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, _ := newQueue(t, 5, "30")
		for i := range 25 {
			f.MustSend(t, src, fmt.Sprint(i))
		}
		var handled atomic.Int64
		h := start(t, f, src, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			handled.Add(1)
			return nil
		}), func(o *worker.Options) { o.Concurrency = 10 })
		time.Sleep(time.Second)
		if err := h.stop(); err != nil {
			t.Fatalf("Run: %v", err)
		}
		if handled.Load() != 25 {
			t.Fatalf("handled %d, want 25", handled.Load())
		}
		if n := len(f.Messages(src)); n != 0 {
			t.Fatalf("%d messages left in the queue, want 0", n)
		}
		if n := f.Requests()["DeleteMessage"]; n != 0 {
			t.Errorf("DeleteMessage called %d times; deletes must be batched", n)
		}
		if n := f.Requests()["DeleteMessageBatch"]; n > 5 {
			t.Errorf("DeleteMessageBatch called %d times for 25 messages, want at most 5", n)
		}
		s := h.w.Stats()
		if s.Received != 25 || s.Succeeded != 25 || s.InFlight != 0 {
			t.Errorf("Stats = %+v", s)
		}
		if s.Requests["DeleteMessageBatch"] != int64(f.Requests()["DeleteMessageBatch"]) {
			t.Errorf("Stats.Requests %v disagrees with the fake's counts %v", s.Requests, f.Requests())
		}
	})
}

func TestFailureSetsPolicyDelayThenRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, _ := newQueue(t, 10, "30")
		f.MustSend(t, src, "job")
		var mu sync.Mutex
		var seen []time.Time
		var attempts []int
		h := start(t, f, src, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, time.Now())
			attempts = append(attempts, m.Attempt)
			if len(seen) < 3 {
				return errors.New("boom")
			}
			return nil
		}), func(o *worker.Options) { o.RetryPolicy = fixedPolicy(5, 7*time.Second) })
		time.Sleep(30 * time.Second)
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		if len(seen) != 3 {
			t.Fatalf("handled %d times, want 3", len(seen))
		}
		for i := 1; i < 3; i++ {
			gap := seen[i].Sub(seen[i-1])
			if gap < 7*time.Second || gap > 8*time.Second {
				t.Errorf("retry %d came after %v, want the policy's 7s (not the 30s visibility timeout)", i, gap)
			}
		}
		if attempts[0] != 1 || attempts[1] != 2 || attempts[2] != 3 {
			t.Errorf("attempts = %v, want 1 2 3", attempts)
		}
		if len(f.Messages(src)) != 0 {
			t.Error("message not deleted after success")
		}
		if s := h.w.Stats(); s.Failed != 2 || s.Retried != 2 || s.Succeeded != 1 {
			t.Errorf("Stats = %+v", s)
		}
	})
}

func TestPanicIsAFailureAndLogged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, _ := newQueue(t, 10, "30")
		f.MustSend(t, src, "job")
		var buf syncBuffer
		var calls atomic.Int64
		h := start(t, f, src, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			if calls.Add(1) == 1 {
				panic("kaboom")
			}
			return nil
		}), func(o *worker.Options) {
			o.Logger = slog.New(slog.NewTextHandler(&buf, nil))
			o.RetryPolicy = fixedPolicy(3, time.Second)
		})
		time.Sleep(5 * time.Second)
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		if calls.Load() != 2 {
			t.Fatalf("handler ran %d times, want 2 (panic, then retry)", calls.Load())
		}
		if out := buf.String(); !strings.Contains(out, "kaboom") || !strings.Contains(out, "worker_test.go") {
			t.Errorf("panic and its stack not logged:\n%s", out)
		}
	})
}

func TestHandlerTimeoutCancelsAndRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, _ := newQueue(t, 10, "30")
		f.MustSend(t, src, "job")
		causes := make(chan error, 4)
		h := start(t, f, src, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			if m.Attempt == 1 {
				<-ctx.Done()
				causes <- context.Cause(ctx)
				return ctx.Err()
			}
			return nil
		}), func(o *worker.Options) {
			o.HandlerTimeout = 5 * time.Second
			o.RetryPolicy = fixedPolicy(3, 2*time.Second)
		})
		time.Sleep(20 * time.Second)
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		if c := <-causes; !errors.Is(c, worker.ErrHandlerTimeout) {
			t.Fatalf("cause = %v, want ErrHandlerTimeout", c)
		}
		if s := h.w.Stats(); s.Failed != 1 || s.Succeeded != 1 {
			t.Errorf("Stats = %+v, want one timeout failure then success", s)
		}
	})
}

func TestExhaustedRetriesGoToDLQWithProvenance(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, dlqURL := newQueue(t, 10, "30")
		f.MustSend(t, src, "doomed")
		var calls atomic.Int64
		h := start(t, f, src, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			calls.Add(1)
			return errors.New("still broken")
		}), func(o *worker.Options) { o.RetryPolicy = fixedPolicy(2, time.Second) })
		time.Sleep(10 * time.Second)
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		if calls.Load() != 3 {
			t.Fatalf("handler ran %d times, want 3 (1 + 2 retries)", calls.Load())
		}
		if n := len(f.Messages(src)); n != 0 {
			t.Fatalf("%d messages left in the source", n)
		}
		dead := f.Messages(dlqURL)
		if len(dead) != 1 || dead[0].Body != "doomed" {
			t.Fatalf("DLQ = %+v, want the doomed message", dead)
		}
		if !attrContains(dead[0], "still broken") || !attrContains(dead[0], "retries exhausted") {
			t.Errorf("DLQ message lacks its reason: %+v", dead[0].Attributes)
		}
		if s := h.w.Stats(); s.DeadLettered != 1 || s.Failed != 3 || s.Retried != 2 {
			t.Errorf("Stats = %+v", s)
		}
	})
}

func TestPermanentGoesToDLQAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, dlqURL := newQueue(t, 10, "30")
		f.MustSend(t, src, "not json")
		var calls atomic.Int64
		h := start(t, f, src, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			calls.Add(1)
			return retry.Permanent(errors.New("cannot decode body"))
		}))
		time.Sleep(5 * time.Second)
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		if calls.Load() != 1 {
			t.Fatalf("handler ran %d times; a permanent failure must not be retried", calls.Load())
		}
		dead := f.Messages(dlqURL)
		if len(dead) != 1 || !attrContains(dead[0], "cannot decode body") {
			t.Fatalf("DLQ = %+v", dead)
		}
		if len(f.Messages(src)) != 0 {
			t.Fatal("source still holds the message after the move")
		}
	})
}

func TestPermanentMoveFailureKeepsMessage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, dlqURL := newQueue(t, 10, "30")
		f.MustSend(t, src, "poison")
		f.InjectFault(sqstest.Fault{API: "SendMessageBatch", Code: "InternalError"})
		h := start(t, f, src, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			return retry.Permanent(errors.New("bad"))
		}))
		time.Sleep(5 * time.Second)
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		if len(f.Messages(dlqURL)) != 0 {
			t.Fatal("nothing should have reached the DLQ")
		}
		msgs := f.Messages(src)
		if len(msgs) != 1 {
			t.Fatalf("source holds %d messages; a failed move must keep the message", len(msgs))
		}
	})
}

func TestAfterSetsExactDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, _ := newQueue(t, 10, "30")
		f.MustSend(t, src, "job")
		var mu sync.Mutex
		var seen []time.Time
		h := start(t, f, src, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, time.Now())
			if len(seen) == 1 {
				return retry.After(90*time.Second, errors.New("rate limited upstream"))
			}
			return nil
		}), func(o *worker.Options) { o.RetryPolicy = fixedPolicy(5, time.Second) })
		time.Sleep(2 * time.Minute)
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		if len(seen) != 2 {
			t.Fatalf("handled %d times, want 2", len(seen))
		}
		if gap := seen[1].Sub(seen[0]); gap < 90*time.Second || gap > 91*time.Second {
			t.Fatalf("retry came after %v, want 90s", gap)
		}
	})
}

func TestRetryDelayCappedAt12HoursFromReceipt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, _ := newQueue(t, 10, "30")
		f.MustSend(t, src, "job")
		var calls atomic.Int64
		h := start(t, f, src, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			if calls.Add(1) == 1 {
				return retry.After(48*time.Hour, errors.New("much later"))
			}
			return nil
		}))
		time.Sleep(time.Minute)
		msgs := f.Messages(src)
		if len(msgs) != 1 || msgs[0].State != "inflight" {
			t.Fatalf("message = %+v, want in flight with a capped delay", msgs)
		}
		if until := time.Until(msgs[0].VisibleAt); until > 12*time.Hour || until < 11*time.Hour {
			t.Fatalf("visible again in %v, want just under 12h", until)
		}
		time.Sleep(12 * time.Hour)
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		if calls.Load() != 2 {
			t.Fatalf("handler ran %d times, want 2", calls.Load())
		}
	})
}

func TestHeartbeatKeepsLongJobInvisible(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, _ := newQueue(t, 10, "10")
		f.MustSend(t, src, "long")
		var calls atomic.Int64
		h := start(t, f, src, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			calls.Add(1)
			select {
			case <-time.After(2 * time.Minute):
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}), func(o *worker.Options) { o.Concurrency = 2 })
		time.Sleep(3 * time.Minute)
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		if calls.Load() != 1 {
			t.Fatalf("handler ran %d times; the heartbeat must keep the message from another delivery", calls.Load())
		}
		if len(f.Messages(src)) != 0 {
			t.Fatal("long job not deleted")
		}
		if f.Requests()["ChangeMessageVisibilityBatch"] == 0 {
			t.Fatal("no heartbeat extensions were sent")
		}
	})
}

func TestLostOwnershipCancelsHandlerWithCause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, _ := newQueue(t, 10, "10")
		f.MustSend(t, src, "stolen")
		causes := make(chan error, 1)
		h := start(t, f, src, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			// Someone deletes the message behind the worker's back.
			if _, err := f.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(src), ReceiptHandle: aws.String(m.ReceiptHandle)}); err != nil {
				return err
			}
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return ctx.Err()
		}))
		time.Sleep(time.Minute)
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		if c := <-causes; !errors.Is(c, visibility.ErrLost) {
			t.Fatalf("cause = %v, want visibility.ErrLost", c)
		}
		if s := h.w.Stats(); s.Lost != 1 {
			t.Errorf("Stats.Lost = %d, want 1", s.Lost)
		}
	})
}

func TestNoRedrivePolicyRefused(t *testing.T) {
	f := sqstest.For(t)
	url := f.MustCreateQueue(t, "orders", nil)
	h := worker.HandlerFunc(func(context.Context, *worker.Message) error { return nil })
	_, err := worker.New(f, url, h, func(o *worker.Options) { o.Logger = quiet })
	if err == nil {
		t.Fatal("New accepted a queue without a RedrivePolicy")
	}
	for _, want := range []string{"RedrivePolicy", "AllowNoDLQ"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
	if _, err := worker.New(f, url, h, func(o *worker.Options) { o.Logger = quiet; o.AllowNoDLQ = true }); err != nil {
		t.Fatalf("AllowNoDLQ: %v", err)
	}
}

func TestUnknownQueueRefused(t *testing.T) {
	f := sqstest.For(t)
	_, err := worker.New(f, "https://sqs.us-east-1.amazonaws.com/000000000000/nope",
		worker.HandlerFunc(func(context.Context, *worker.Message) error { return nil }),
		func(o *worker.Options) { o.Logger = quiet })
	if err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("err = %v, want a clear 'does not exist'", err)
	}
}

func TestBadOptionsRefused(t *testing.T) {
	f, src, _ := newQueue(t, 5, "30")
	h := worker.HandlerFunc(func(context.Context, *worker.Message) error { return nil })
	for name, fn := range map[string]func(*worker.Options){
		"negative concurrency": func(o *worker.Options) { o.Concurrency = -1 },
		"wait time too long":   func(o *worker.Options) { o.WaitTime = time.Minute },
		"visibility over 12h":  func(o *worker.Options) { o.VisibilityTimeout = 13 * time.Hour },
		"unknown attribute":    func(o *worker.Options) { o.SystemAttributes = []types.MessageSystemAttributeName{"SentTime"} },
	} {
		if _, err := worker.New(f, src, h, fn); err == nil {
			t.Errorf("%s: New accepted it", name)
		}
	}
	if _, err := worker.New(nil, src, h); err == nil {
		t.Error("nil client accepted")
	}
	if _, err := worker.New(f, src, nil); err == nil {
		t.Error("nil handler accepted")
	}
}

// With prefetch off (MaxPrefetch < 0), a receive never asks for more
// messages than there are free handlers.
func TestNeverReceivesMoreThanFreeSlots(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, _ := newQueue(t, 5, "60")
		for i := range 100 {
			f.MustSend(t, src, fmt.Sprint(i))
		}
		var running, peak atomic.Int64
		spy := &receiveSpy{API: f, inFlight: &running}
		h := worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			n := running.Add(1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			time.Sleep(time.Duration(len(m.Body)) * 100 * time.Millisecond)
			running.Add(-1)
			return nil
		})
		w, err := worker.New(spy, src, h, func(o *worker.Options) { o.Logger = quiet; o.Concurrency = 7; o.MaxPrefetch = -1 })
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
		if peak.Load() > 7 {
			t.Fatalf("%d handlers ran at once, Concurrency is 7", peak.Load())
		}
		if spy.maxAsk.Load() > 7 {
			t.Fatalf("a receive asked for %d messages with 7 slots", spy.maxAsk.Load())
		}
		if s := w.Stats(); s.Received != 100 || s.Succeeded != 100 {
			t.Fatalf("Stats = %+v", s)
		}
	})
}

// receiveSpy records how many messages receives ask for.
type receiveSpy struct {
	worker.API
	inFlight *atomic.Int64
	maxAsk   atomic.Int64
}

func (s *receiveSpy) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	ask := int64(in.MaxNumberOfMessages)
	for {
		m := s.maxAsk.Load()
		if ask <= m || s.maxAsk.CompareAndSwap(m, ask) {
			break
		}
	}
	return s.API.ReceiveMessage(ctx, in, optFns...)
}

func TestTransientReceiveErrorsBackOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, _ := newQueue(t, 5, "30")
		f.MustSend(t, src, "x")
		f.InjectFault(sqstest.Fault{API: "ReceiveMessage", Code: "RequestThrottled", Times: 4})
		var handled atomic.Int64
		h := start(t, f, src, worker.HandlerFunc(func(context.Context, *worker.Message) error {
			handled.Add(1)
			return nil
		}))
		time.Sleep(30 * time.Second)
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		if handled.Load() != 1 {
			t.Fatalf("handled %d after throttling, want 1", handled.Load())
		}
	})
}

func TestFatalReceiveErrorEndsRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, _ := newQueue(t, 5, "30")
		h := start(t, f, src, worker.HandlerFunc(func(context.Context, *worker.Message) error { return nil }))
		time.Sleep(time.Second)
		if _, err := f.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(src)}); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-h.done:
			if err == nil || !strings.Contains(err.Error(), "does not exist") {
				t.Fatalf("Run = %v, want 'does not exist'", err)
			}
		case <-time.After(time.Minute):
			t.Fatal("Run kept going after its queue was deleted")
		}
		h.cancel()
	})
}

func TestDeleteBatchFailuresRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, _ := newQueue(t, 5, "30")
		for i := range 5 {
			f.MustSend(t, src, fmt.Sprint(i))
		}
		f.InjectFault(sqstest.Fault{API: "DeleteMessageBatch", Code: "InternalError", Times: 2})
		h := start(t, f, src, worker.HandlerFunc(func(context.Context, *worker.Message) error { return nil }))
		time.Sleep(10 * time.Second)
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		if n := len(f.Messages(src)); n != 0 {
			t.Fatalf("%d messages left after delete retries", n)
		}
	})
}

func TestMiddlewareChainOrder(t *testing.T) {
	var order []string
	mw := func(name string) worker.Middleware {
		return func(next worker.Handler) worker.Handler {
			return worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
				order = append(order, name)
				return next.Handle(ctx, m)
			})
		}
	}
	h := worker.Chain(worker.HandlerFunc(func(context.Context, *worker.Message) error {
		order = append(order, "handler")
		return nil
	}), mw("a"), mw("b"))
	if err := h.Handle(context.Background(), &worker.Message{}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(order, ","); got != "a,b,handler" {
		t.Fatalf("order = %s, want a,b,handler", got)
	}
}

func TestRunTwiceRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, _ := newQueue(t, 5, "30")
		h := start(t, f, src, worker.HandlerFunc(func(context.Context, *worker.Message) error { return nil }))
		time.Sleep(time.Second)
		if err := h.w.Run(context.Background()); !errors.Is(err, worker.ErrAlreadyRunning) {
			t.Fatalf("second Run = %v, want ErrAlreadyRunning", err)
		}
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
	})
}

func TestMaxReceivesPerSecond(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, _ := newQueue(t, 5, "30")
		for i := range 50 {
			f.MustSend(t, src, fmt.Sprint(i))
		}
		h := start(t, f, src, worker.HandlerFunc(func(context.Context, *worker.Message) error { return nil }),
			func(o *worker.Options) { o.MaxReceivesPerSecond = 5; o.Concurrency = 20 })
		time.Sleep(4*time.Second + 500*time.Millisecond)
		got := h.w.Stats().Received
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		// One second's burst (5) plus 5 per second for 4.5 s.
		if got < 20 || got > 28 {
			t.Fatalf("received %d messages in 4.5s at 5/s, want about 27", got)
		}
	})
}

func attrContains(m sqstest.MessageInfo, s string) bool {
	for _, v := range m.Attributes {
		if v.StringValue != nil && strings.Contains(*v.StringValue, s) {
			return true
		}
	}
	return false
}

// syncBuffer is a bytes.Buffer safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestDeliveryPolicyThrottleLimitsReceives(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, _ := newQueue(t, 5, "30")
		for i := range 40 {
			f.MustSend(t, src, fmt.Sprint(i))
		}
		p, err := retry.ParseDeliveryPolicy([]byte(`{"healthyRetryPolicy":{"numRetries":3},"throttlePolicy":{"maxReceivesPerSecond":4}}`))
		if err != nil {
			t.Fatal(err)
		}
		h := start(t, f, src, worker.HandlerFunc(func(context.Context, *worker.Message) error { return nil }),
			func(o *worker.Options) { o.RetryPolicy = p; o.Concurrency = 20 })
		time.Sleep(4*time.Second + 500*time.Millisecond)
		got := h.w.Stats().Received
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		// One second's burst (4) plus 4 per second for 4.5 s.
		if got < 16 || got > 23 {
			t.Fatalf("received %d messages in 4.5s under throttlePolicy 4/s, want about 22", got)
		}
	})
}

// TestReceiveAsksForTheAttributesRead checks that a receive asks SQS for
// the system attributes the worker reads (the Message fields filled from
// them are set) and for those Options.SystemAttributes adds, not for
// every one.
func TestReceiveAsksForTheAttributesRead(t *testing.T) {
	for name, c := range map[string]struct {
		extra      []types.MessageSystemAttributeName
		wantSender bool
	}{
		"default":  {nil, false},
		"SenderId": {[]types.MessageSystemAttributeName{types.MessageSystemAttributeNameSenderId}, true},
		"All":      {[]types.MessageSystemAttributeName{types.MessageSystemAttributeNameSenderId, types.MessageSystemAttributeNameAll}, true},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f, src, _ := newQueue(t, 5, "30")
				f.MustSend(t, src, "a")
				got := make(chan *worker.Message, 1)
				h := start(t, f, src, worker.HandlerFunc(func(_ context.Context, m *worker.Message) error {
					got <- m
					return nil
				}), func(o *worker.Options) { o.SystemAttributes = c.extra })
				m := <-got
				if err := h.stop(); err != nil {
					t.Fatalf("Run: %v", err)
				}
				if m.ReceiveCount != 1 || m.SentAt.IsZero() || m.FirstReceivedAt.IsZero() {
					t.Errorf("ReceiveCount %d, SentAt %v, FirstReceivedAt %v: want 1 and both set", m.ReceiveCount, m.SentAt, m.FirstReceivedAt)
				}
				for _, a := range []string{"ApproximateReceiveCount", "SentTimestamp", "ApproximateFirstReceiveTimestamp"} {
					if m.Attributes[a] == "" {
						t.Errorf("Attributes lack %s: %v", a, m.Attributes)
					}
				}
				if _, has := m.Attributes["SenderId"]; has != c.wantSender {
					t.Errorf("Attributes %v: SenderId there = %v, want %v", m.Attributes, has, c.wantSender)
				}
			})
		})
	}
}
