package settle_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sqsworker/sqsworker/internal/settle"
)

var quiet = slog.New(slog.DiscardHandler)

func TestNotifierNeverBlocksAndDropsWhenBehind(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var mu sync.Mutex
		var got []int
		n := &settle.Notifier{Hook: func(ev *settle.Event) {
			<-release // a hook stuck until released
			mu.Lock()
			got = append(got, ev.Attempt)
			mu.Unlock()
		}, Log: quiet, Warn: &settle.Warner{Log: quiet}}
		start := time.Now()
		for i := range 5000 {
			n.Notify(&settle.Event{Attempt: i})
		}
		if time.Since(start) != 0 {
			t.Fatal("Notify waited for the hook")
		}
		// At most one event in the hook and 4,096 queued; the rest dropped.
		dropped := n.Dropped()
		if dropped < 5000-4096-1 {
			t.Fatalf("dropped %d, want at least %d", dropped, 5000-4096-1)
		}
		close(release)
		n.Close(context.Background())
		if int64(len(got))+dropped != 5000 {
			t.Fatalf("delivered %d + dropped %d, want 5,000 in all", len(got), dropped)
		}
		for i := 1; i < len(got); i++ {
			if got[i] <= got[i-1] {
				t.Fatalf("events out of order: %d after %d", got[i], got[i-1])
			}
		}
		n.Notify(&settle.Event{})
		if d := n.Dropped(); d != dropped+1 {
			t.Fatalf("an event after Close was not counted as dropped (%d)", d)
		}
	})
}

func TestNotifierSurvivesPanicsAndFlushes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var seen []int
		n := &settle.Notifier{Hook: func(ev *settle.Event) {
			if ev.Attempt == 1 {
				panic("hook bug")
			}
			seen = append(seen, ev.Attempt)
		}, Log: quiet, Warn: &settle.Warner{Log: quiet}}
		for i := range 3 {
			n.Notify(&settle.Event{Attempt: i})
		}
		if !n.Flush(context.Background()) {
			t.Fatal("Flush did not complete")
		}
		if len(seen) != 2 || seen[0] != 0 || seen[1] != 2 {
			t.Fatalf("seen %v, want [0 2] (the panicking event skipped)", seen)
		}
		n.Close(context.Background())
	})
}

func TestNotifierFlushBoundedByContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		block := make(chan struct{})
		n := &settle.Notifier{Hook: func(ev *settle.Event) { <-block }, Log: quiet, Warn: &settle.Warner{Log: quiet}}
		n.Notify(&settle.Event{})
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if n.Flush(ctx) {
			t.Fatal("Flush reported success while the hook was stuck")
		}
		close(block)
		n.Close(context.Background())
	})
}

func TestWarnerOncePerInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var lines []string
		h := &recordHandler{lines: &lines}
		w := &settle.Warner{Log: slog.New(h)}
		for range 100 {
			w.Warn("a", "cause a")
		}
		w.Warn("b", "cause b")
		time.Sleep(settle.WarnInterval)
		w.Warn("a", "cause a")
		if len(lines) != 3 || lines[2] != "cause a alsoSinceLastLog=99" {
			t.Fatalf("lines %q", lines)
		}
	})
}

type recordHandler struct {
	slog.Handler
	lines *[]string
}

func (h *recordHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordHandler) Handle(_ context.Context, r slog.Record) error {
	s := r.Message
	r.Attrs(func(a slog.Attr) bool { s += " " + a.String(); return true })
	*h.lines = append(*h.lines, s)
	return nil
}

// When Close's budget ends, what is still queued is dropped and counted,
// not delivered later (after Run returned, into a closed exporter): only
// the hook call in progress finishes.
func TestNotifierCloseDropsWhatItCouldNotDeliver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		delivered := 0
		n := &settle.Notifier{Hook: func(*settle.Event) {
			time.Sleep(time.Second)
			mu.Lock()
			delivered++
			mu.Unlock()
		}, Log: quiet, Warn: &settle.Warner{Log: quiet}}
		for range 5 {
			n.Notify(&settle.Event{})
		}
		ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		defer cancel()
		n.Close(ctx)
		time.Sleep(time.Minute)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		if delivered != 2 || n.Dropped() != 3 {
			t.Fatalf("delivered %d, dropped %d; want 2 delivered (one before the budget ended, one in progress then) and 3 dropped", delivered, n.Dropped())
		}
	})
}
