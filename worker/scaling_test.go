package worker_test

import (
	"context"
	"fmt"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/sqstest"
	"github.com/sqsworker/sqsworker/worker"
)

// The scaling signals match a run whose handler time is known: 4 slots of
// 100 ms take 40 messages a second; messages sent 5 s before the worker
// started are at least that old when received; the age leaves its window while the capacity stays.
func TestScalingSignalsMatchKnownHandlerTimes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := sqstest.For(t, func(o *sqstest.Options) { o.Latency = 5 * time.Millisecond })
		src, _ := f.MustCreateQueueWithDLQ(t, "jobs", 5, map[string]string{"VisibilityTimeout": "30"})
		const jobs = 400
		for i := range jobs {
			f.MustSend(t, src, fmt.Sprint(i))
		}
		time.Sleep(5 * time.Second)
		h := start(t, f, src, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			time.Sleep(100 * time.Millisecond)
			return nil
		}), func(o *worker.Options) { o.Concurrency = 4 })
		if s := h.w.Stats(); s.Concurrency != 4 || s.Capacity != 0 || s.HandlerRuns != 0 {
			t.Fatalf("Stats before any handler returned = %+v; want Concurrency 4 and no capacity yet", s)
		}
		for h.w.Stats().Deleted < jobs {
			time.Sleep(100 * time.Millisecond)
		}
		s := h.w.Stats()
		if math.Abs(s.Capacity-40)/40 > 0.10 {
			t.Errorf("Capacity = %.2f messages/s, want 40 (4 slots / 100 ms) within 10%%", s.Capacity)
		}
		if d := s.MeanHandlerTime - 100*time.Millisecond; d < 0 || d > 10*time.Millisecond {
			t.Errorf("MeanHandlerTime = %v, want 100 ms", s.MeanHandlerTime)
		}
		if s.HandlerRuns != jobs || s.HandlerTime < jobs*100*time.Millisecond {
			t.Errorf("HandlerRuns = %d, HandlerTime = %v; want %d runs of at least 100 ms", s.HandlerRuns, s.HandlerTime, jobs)
		}
		// The last of 400 messages at 40/s waited about 10 s more.
		if s.OldestAge < 14*time.Second || s.OldestAge > 16*time.Second {
			t.Errorf("OldestAge = %v, want about 15 s (5 s before the start, 10 s in the queue behind the others)", s.OldestAge)
		}
		// Two idle minutes later the age has left its window; the
		// capacity stays (the whole run's mean).
		time.Sleep(2*signalWindowForTest + time.Second)
		if s := h.w.Stats(); s.OldestAge != 0 || math.Abs(s.Capacity-40)/40 > 0.10 {
			t.Errorf("Stats after two idle minutes = %+v; want OldestAge 0 and the capacity kept", s)
		}
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
	})
}

// signalWindowForTest is the span of the signals' buckets (worker's
// signalWindow).
const signalWindowForTest = time.Minute

// With Options.BacklogInterval the worker reads the queue's depth into
// Stats.Backlog at Run's start and at every interval; without it, never.
func TestBacklogSampled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := sqstest.For(t)
		src, _ := f.MustCreateQueueWithDLQ(t, "jobs", 5, map[string]string{"VisibilityTimeout": "30"})
		for i := range 50 {
			f.MustSend(t, src, fmt.Sprint(i))
		}
		f.MustSend(t, src, "later", func(in *sqs.SendMessageInput) { in.DelaySeconds = 900 })
		release := make(chan struct{})
		h := start(t, f, src, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			<-release
			return nil
		}), func(o *worker.Options) { o.Concurrency = 2; o.MaxPrefetch = -1; o.BacklogInterval = time.Minute })
		time.Sleep(time.Second)
		s := h.w.Stats()
		if s.Backlog.At.IsZero() || s.Backlog.Delayed != 1 || s.Backlog.Visible+s.Backlog.InFlight != 50 {
			t.Fatalf("Backlog = %+v at the start; want the 50 messages (visible or in flight) and the delayed one", s.Backlog)
		}
		reads := s.Requests["GetQueueAttributes"]
		close(release)
		for h.w.Stats().Deleted < 50 {
			time.Sleep(100 * time.Millisecond)
		}
		time.Sleep(time.Minute)
		s = h.w.Stats()
		if s.Backlog.Visible != 0 || s.Backlog.InFlight != 0 || s.Backlog.Delayed != 1 || s.Requests["GetQueueAttributes"] <= reads {
			t.Fatalf("Backlog = %+v a minute later (%d reads); want the queue empty but for the delayed message", s.Backlog, s.Requests["GetQueueAttributes"])
		}
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}

		// Off by default: no read beyond New's.
		f.MustSend(t, src, "one")
		h = start(t, f, src, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error { return nil }))
		byNew := h.w.Stats().Requests["GetQueueAttributes"]
		time.Sleep(2 * time.Minute)
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		if s := h.w.Stats(); !s.Backlog.At.IsZero() || s.Requests["GetQueueAttributes"] != byNew {
			t.Fatalf("Backlog = %+v, %d GetQueueAttributes (%d by New); want no read without BacklogInterval", s.Backlog, s.Requests["GetQueueAttributes"], byNew)
		}
	})
}

// Fast handlers do not claim more than the worker can receive and delete
// (issue 37: a no-op handler reported 1.3 M messages/s on the emulator,
// where the worker handled about 5,000, and the KEDA template turned that
// into a queueLength no backlog reaches). With 2 pollers and SQS answering
// in 20 ms, at most 2 × 10 / 20 ms = 1,000 messages a second come in, and
// Capacity says so although 10 slots of 1 ms could take 10,000.
func TestCapacityBoundedByTheReceiveAndDeletePaths(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := sqstest.For(t, func(o *sqstest.Options) { o.Latency = 20 * time.Millisecond })
		src, _ := f.MustCreateQueueWithDLQ(t, "jobs", 5, map[string]string{"VisibilityTimeout": "30"})
		const jobs = 3000
		for i := range jobs {
			f.MustSend(t, src, fmt.Sprint(i))
		}
		h := start(t, f, src, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			time.Sleep(time.Millisecond)
			return nil
		}), func(o *worker.Options) { o.Concurrency = 10; o.Pollers = 2 })
		for h.w.Stats().Deleted < jobs {
			time.Sleep(100 * time.Millisecond)
		}
		s := h.w.Stats()
		if s.MeanHandlerTime > 2*time.Millisecond {
			t.Fatalf("MeanHandlerTime = %v; the test wants fast handlers", s.MeanHandlerTime)
		}
		if s.Capacity > 1000*1.05 || s.Capacity < 500 {
			t.Errorf("Capacity = %.0f messages/s; want it bounded by the receive and delete paths, 1,000 (the slots alone: %.0f)", s.Capacity, float64(s.Concurrency)/s.MeanHandlerTime.Seconds())
		}
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
	})
}
