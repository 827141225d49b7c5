package worker_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sqsworker/sqsworker/harness/sqsfake"
	"github.com/sqsworker/sqsworker/sqstest"
	"github.com/sqsworker/sqsworker/visibility"
	"github.com/sqsworker/sqsworker/worker"
)

func newFIFO(t *testing.T) (*sqstest.Fake, string, string) {
	f := sqstest.For(t)
	src, dlq := f.MustCreateQueueWithDLQ(t, "orders.fifo", 10, map[string]string{"VisibilityTimeout": "30"})
	return f, src, dlq
}

func TestFIFOGroupsInOrderAndInParallel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, _ := newFIFO(t)
		for i := range 4 {
			for _, g := range []string{"a", "b"} {
				f.MustSend(t, src, fmt.Sprintf("%s%d", g, i), sqsfake.Group(g, fmt.Sprintf("%s%d", g, i)))
			}
		}
		var mu sync.Mutex
		order := map[string][]string{}
		var running, peak atomic.Int64
		h := start(t, f, src, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			n := running.Add(1)
			if n > peak.Load() {
				peak.Store(n)
			}
			time.Sleep(time.Second)
			running.Add(-1)
			mu.Lock()
			order[m.GroupID] = append(order[m.GroupID], m.Body)
			mu.Unlock()
			return nil
		}))
		time.Sleep(30 * time.Second)
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		for _, g := range []string{"a", "b"} {
			want := fmt.Sprintf("[%s0 %s1 %s2 %s3]", g, g, g, g)
			if got := fmt.Sprint(order[g]); got != want {
				t.Errorf("group %s ran %s, want %s", g, got, want)
			}
		}
		if peak.Load() != 2 {
			t.Errorf("peak concurrency %d, want 2 (one per group)", peak.Load())
		}
	})
}

func TestFIFOFailureReleasesRestOfGroup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, _ := newFIFO(t)
		for i := range 3 {
			f.MustSend(t, src, fmt.Sprintf("m%d", i), sqsfake.Group("g", fmt.Sprint(i)))
		}
		var mu sync.Mutex
		var ran []string
		failed := false
		h := start(t, f, src, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			mu.Lock()
			defer mu.Unlock()
			ran = append(ran, m.Body)
			if m.Body == "m0" && !failed {
				failed = true
				return errors.New("first try fails")
			}
			return nil
		}), func(o *worker.Options) { o.RetryPolicy = fixedPolicy(3, 5*time.Second) })
		time.Sleep(time.Minute)
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(ran); got != "[m0 m0 m1 m2]" {
			t.Fatalf("ran %s, want [m0 m0 m1 m2]: the rest of the group waits for the failed message", got)
		}
		if s := h.w.Stats(); s.Released < 2 {
			t.Errorf("Stats.Released = %d, want the 2 later messages released", s.Released)
		}
		if len(f.Messages(src)) != 0 {
			t.Fatal("messages left in the queue")
		}
	})
}

func TestShutdownLetsInFlightFinishAndDeletes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, _ := newQueue(t, 5, "60")
		for i := range 5 {
			f.MustSend(t, src, fmt.Sprint(i))
		}
		started := make(chan struct{}, 5)
		h := start(t, f, src, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			started <- struct{}{}
			time.Sleep(10 * time.Second) // ignores ctx on purpose: finishes within ShutdownTimeout
			return nil
		}), func(o *worker.Options) { o.ShutdownTimeout = 30 * time.Second })
		for range 5 {
			<-started
		}
		t0 := time.Now()
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(t0); d < 9*time.Second || d > 11*time.Second {
			t.Errorf("Run returned %v after cancel, want about 10s (handlers finishing)", d)
		}
		if n := len(f.Messages(src)); n != 0 {
			t.Fatalf("%d messages left; finished handlers' deletes must be flushed on shutdown", n)
		}
	})
}

func TestShutdownDeadlineCancelsAndReleases(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, _ := newQueue(t, 5, "600")
		f.MustSend(t, src, "slow")
		causes := make(chan error, 1)
		started := make(chan struct{})
		h := start(t, f, src, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			close(started)
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return ctx.Err()
		}), func(o *worker.Options) { o.ShutdownTimeout = 5 * time.Second })
		<-started
		t0 := time.Now()
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(t0); d != 5*time.Second {
			t.Errorf("Run returned after %v, want the 5s ShutdownTimeout", d)
		}
		if c := <-causes; !errors.Is(c, worker.ErrShutdown) {
			t.Fatalf("cause = %v, want ErrShutdown", c)
		}
		msgs := f.Messages(src)
		if len(msgs) != 1 || msgs[0].State != "visible" {
			t.Fatalf("message = %+v, want released (visible at once), not deleted, not hidden for 600s", msgs)
		}
		if s := h.w.Stats(); s.Released != 1 || s.Failed != 0 {
			t.Errorf("Stats = %+v, want 1 released and no failure counted", s)
		}
	})
}

func TestShutdownReleasesUnstartedAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, _ := newFIFO(t)
		for i := range 4 {
			f.MustSend(t, src, fmt.Sprint(i), sqsfake.Group("g", fmt.Sprint(i)))
		}
		started := make(chan struct{}, 4)
		h := start(t, f, src, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			started <- struct{}{}
			time.Sleep(20 * time.Second)
			return nil
		}), func(o *worker.Options) { o.ShutdownTimeout = time.Minute })
		<-started
		h.cancel()
		time.Sleep(time.Second)
		// The first message still runs; the three behind it were released at once.
		var visible int
		for _, m := range f.Messages(src) {
			if m.State == "visible" {
				visible++
			}
		}
		if visible != 3 {
			t.Fatalf("%d messages visible 1s into shutdown, want the 3 unstarted ones", visible)
		}
		if err := <-h.done; err != nil {
			t.Fatal(err)
		}
		if n := len(started); n != 0 {
			t.Fatalf("%d unstarted messages were started during shutdown", n)
		}
		if msgs := f.Messages(src); len(msgs) != 3 {
			t.Fatalf("%d messages left, want the 3 released (the first one deleted)", len(msgs))
		}
	})
}

func TestAllowNoDLQPermanentIsKept(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := sqstest.For(t)
		src := f.MustCreateQueue(t, "nodlq", map[string]string{"VisibilityTimeout": "30"})
		f.MustSend(t, src, "poison")
		var mu sync.Mutex
		var got []worker.Settlement
		h := start(t, f, src, worker.HandlerFunc(func(context.Context, *worker.Message) error {
			return errors.New("x")
		}), func(o *worker.Options) {
			o.AllowNoDLQ = true
			o.RetryPolicy = fixedPolicy(0, 0)
			o.OnSettled = func(s worker.Settlement) { mu.Lock(); got = append(got, s); mu.Unlock() }
		})
		time.Sleep(10 * time.Second)
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		if n := len(f.Messages(src)); n != 1 {
			t.Fatalf("without a DLQ the message must stay in the queue, found %d", n)
		}
		// The settlement says why it was kept rather than dead-lettered.
		mu.Lock()
		defer mu.Unlock()
		if len(got) == 0 {
			t.Fatal("no settlement reported")
		}
		if s := got[0]; s.Outcome != worker.Retrying || !strings.Contains(s.Reason, "not dead-lettered") || !strings.Contains(s.Reason, "no dead-letter queue") {
			t.Fatalf("settlement %v %q; want Retrying with the reason it was not dead-lettered", s.Outcome, s.Reason)
		}
	})
}

func TestTwelveHourCapAsksHandlerToStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, _ := newQueue(t, 10, "3600")
		f.MustSend(t, src, "endless")
		causes := make(chan error, 1)
		h := start(t, f, src, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return nil // stops cleanly, work saved
		}))
		time.Sleep(13 * time.Hour)
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		c := <-causes
		if !errors.Is(c, visibility.ErrMaxVisibility) {
			t.Fatalf("cause = %v, want visibility.ErrMaxVisibility", c)
		}
		if s := h.w.Stats(); s.Lost != 0 || s.Succeeded != 1 {
			t.Fatalf("Stats = %+v: at the 12h cap the message is still ours; its outcome (success) must apply", s)
		}
		if n := len(f.Messages(src)); n != 0 {
			t.Fatalf("%d messages left", n)
		}
	})
}

func TestZeroVisibilityQueueRefused(t *testing.T) {
	f := sqstest.For(t)
	src, _ := f.MustCreateQueueWithDLQ(t, "zero", 5, map[string]string{"VisibilityTimeout": "0"})
	_, err := worker.New(f, src, worker.HandlerFunc(func(context.Context, *worker.Message) error { return nil }),
		func(o *worker.Options) { o.Logger = quiet })
	if err == nil || !strings.Contains(err.Error(), "VisibilityTimeout") {
		t.Fatalf("err = %v, want a VisibilityTimeout explanation", err)
	}
	if _, err := worker.New(f, src, worker.HandlerFunc(func(context.Context, *worker.Message) error { return nil }),
		func(o *worker.Options) { o.Logger = quiet; o.VisibilityTimeout = time.Minute }); err != nil {
		t.Fatalf("with Options.VisibilityTimeout: %v", err)
	}
}
