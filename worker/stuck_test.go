package worker_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sqsworker/sqsworker/worker"
)

// A handler that ignores its context must not keep Run from returning: Run
// returns within ShutdownTimeout + FlushTimeout with an error that counts
// the handlers left running, leaves their messages to SQS (neither released
// under a running handler nor deleted), reports them as abandoned, and
// applies nothing the handler returns afterwards.
func TestHandlerIgnoringContextDoesNotHoldRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, _ := newQueue(t, 5, "12")
		f.MustSend(t, src, "stubborn")
		f.MustSend(t, src, "polite")
		release := make(chan struct{})
		started := make(chan struct{}, 2)
		var mu sync.Mutex
		var events []worker.Settlement
		h := start(t, f, src, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			started <- struct{}{}
			if m.Body == "polite" {
				<-ctx.Done()
				return ctx.Err()
			}
			<-release // ignores ctx
			return nil
		}), func(o *worker.Options) {
			o.ShutdownTimeout = time.Second
			o.FlushTimeout = time.Second
			o.OnSettled = func(s worker.Settlement) { mu.Lock(); events = append(events, s); mu.Unlock() }
		})
		<-started
		<-started
		t0 := time.Now()
		h.cancel()
		var err error
		select {
		case err = <-h.done:
		case <-time.After(8 * time.Second):
			close(release)
			<-h.done
			t.Fatal("Run has not returned 8s after its context ended (ShutdownTimeout 1s, FlushTimeout 1s)")
		}
		if d := time.Since(t0); d > 2*time.Second {
			t.Errorf("Run returned %v after its context ended, want within ShutdownTimeout + FlushTimeout (2s)", d)
		}
		if !errors.Is(err, worker.ErrHandlersNotStopped) || !strings.Contains(err.Error(), "1 handler") {
			t.Fatalf("Run: %v; want ErrHandlersNotStopped naming 1 handler", err)
		}
		if st := h.w.Health(); st.Ready || st.Live || st.State != "stopped" {
			t.Errorf("health after Run returned: %+v; want stopped, neither ready nor live", st)
		}
		// The stubborn handler's message is neither deleted nor released
		// while its handler runs; the polite one was released.
		for _, m := range f.Messages(src) {
			switch m.Body {
			case "stubborn":
				if m.State != "inflight" {
					t.Errorf("stubborn message is %v; want still in flight (not released under a running handler)", m.State)
				}
			case "polite":
				if m.State != "visible" {
					t.Errorf("polite message is %v; want released", m.State)
				}
			}
		}
		s := h.w.Stats()
		// (A receive in flight at shutdown may get the polite message
		// again; it is released at once too.)
		if s.Abandoned != 1 || s.Released < 1 || s.Deleted != 0 {
			t.Errorf("Stats: Abandoned %d, Released %d, Deleted %d; want 1, at least 1, 0", s.Abandoned, s.Released, s.Deleted)
		}
		mu.Lock()
		var abandoned *worker.Settlement
		for i := range events {
			if events[i].Outcome == worker.Abandoned {
				abandoned = &events[i]
			}
		}
		if abandoned == nil || abandoned.Message.Body != "stubborn" || !strings.Contains(abandoned.Reason, "neither released nor deleted") {
			t.Errorf("settlement events %+v; want the stubborn message Abandoned with the reason", events)
		}
		mu.Unlock()

		// What the handler returns after Run returned is not applied: the
		// message stays, and SQS delivers it again when its lease ends.
		close(release)
		time.Sleep(time.Second)
		if s := h.w.Stats(); s.Deleted != 0 || s.Abandoned != 1 {
			t.Errorf("after the late return: Deleted %d, Abandoned %d; want 0, 1 (nothing applied, nothing counted twice)", s.Deleted, s.Abandoned)
		}
		time.Sleep(12 * time.Second)
		visible := len(f.Messages(src, "visible"))
		if visible != 2 {
			t.Errorf("%d messages visible once the lease ended, want both back in the queue", visible)
		}
	})
}
