package worker_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sqsworker/sqsworker/sqstest"
	"github.com/sqsworker/sqsworker/worker"
)

// Prefetched messages are held like running ones: leased from their
// receipt, so while they wait for a handler longer than the visibility
// timeout nobody else receives them; never more than MaxPrefetch ahead;
// released at once on shutdown.
func TestPrefetchedMessagesAreLeasedCappedAndReleased(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := sqstest.For(t, func(o *sqstest.Options) { o.Latency = 15 * time.Millisecond })
		src, _ := f.MustCreateQueueWithDLQ(t, "jobs", 10, map[string]string{"VisibilityTimeout": "2"})
		sendMany(t, f, src, 600)
		release := make(chan struct{})
		var started atomic.Int64
		// Fast jobs first, so the prefetch target grows to its cap; then
		// jobs that wait until released, so the buffer stays full.
		h := start(t, f, src, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			if started.Add(1) <= 300 {
				time.Sleep(time.Millisecond)
				return nil
			}
			select {
			case <-release:
			case <-ctx.Done():
			}
			return nil
		}), func(o *worker.Options) { o.Concurrency = 2; o.MaxPrefetch = 12; o.ShutdownTimeout = time.Second })
		var peakHeld, peakAhead int64
		for range 100 { // 10 s, longer than the 2 s visibility timeout
			time.Sleep(100 * time.Millisecond)
			s := h.w.Stats()
			peakHeld = max(peakHeld, s.InFlight-s.Settling) // running or waiting for a handler
			peakAhead = max(peakAhead, int64(s.Prefetched))
		}
		s := h.w.Stats()
		if peakAhead > 12 || peakHeld > 2+12 || s.Prefetched < 10 || s.PrefetchTarget != 12 {
			t.Fatalf("peak prefetched %d, peak held %d, Stats %+v; want the target at its cap, at most MaxPrefetch (12) ahead", peakAhead, peakHeld, s)
		}
		if s.Lost != 0 || s.Extensions == 0 {
			t.Fatalf("Stats = %+v; prefetched messages must be kept invisible by the heartbeat, none lost", s)
		}
		// Nobody else can receive the held messages.
		if inflight := len(f.Messages(src, "inflight")); int64(inflight) != s.InFlight {
			t.Fatalf("%d messages in flight at SQS, the worker holds %d", inflight, s.InFlight)
		}
		held := s.InFlight
		begin := time.Now()
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		// The prefetched ones go back at once, while the running handlers
		// get their ShutdownTimeout.
		if s := h.w.Stats(); s.Released < held-2 || s.InFlight != 0 {
			t.Fatalf("Stats = %+v; want the %d held messages released on shutdown (but the 2 running)", s, held)
		}
		if d := time.Since(begin); d > 3*time.Second {
			t.Fatalf("shutdown took %v", d)
		}
	})
}

// Receives carry full batches at steady state, whatever the number of
// pollers, and handlers never wait for a receive's round trip.
func TestFullBatchesAndBusyHandlers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const jobs = 5000
		f := sqstest.For(t, func(o *sqstest.Options) { o.Latency = 15 * time.Millisecond })
		src, _ := f.MustCreateQueueWithDLQ(t, "jobs", 5, map[string]string{"VisibilityTimeout": "30"})
		sendMany(t, f, src, jobs)
		h := start(t, f, src, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			time.Sleep(50 * time.Millisecond)
			return nil
		}), func(o *worker.Options) { o.Concurrency = 50; o.Pollers = 8 })
		begin := time.Now()
		waitFor(t, time.Hour, func() bool { return h.w.Stats().Deleted == jobs })
		elapsed := time.Since(begin)
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		s := h.w.Stats()
		ideal := time.Duration(jobs/50) * 50 * time.Millisecond // 5 s
		if elapsed > ideal*100/97 {
			t.Errorf("%d jobs of 50 ms at Concurrency 50 took %v; want within 97%% of the ideal %v", jobs, elapsed, ideal)
		}
		full := s.ReceiveSizes[10]
		if full < jobs/10-2 {
			t.Errorf("receive sizes %v: want full batches at steady state", s.ReceiveSizes)
		}
		if rpm := float64(s.Requests["ReceiveMessage"]+s.Requests["DeleteMessageBatch"]) / jobs; rpm > 0.21 {
			t.Errorf("%.3f receive+delete requests per message, want ≤ 0.21", rpm)
		}
	})
}

// With the queue empty, the worker keeps one long poll open, not one per
// poller.
func TestOneLongPollWhileEmpty(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, _ := newQueue(t, 10, "30")
		h := start(t, f, src, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error { return nil }),
			func(o *worker.Options) { o.Concurrency = 50 })
		time.Sleep(time.Minute)
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		// 20 s long polls for a minute: 3 (and the one aborted at the end).
		if n := f.Requests()["ReceiveMessage"]; n > 4 {
			t.Fatalf("%d receives in a minute on an empty queue", n)
		}
	})
}
