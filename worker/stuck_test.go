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
// the handlers left running. Their messages are not released under a
// running handler: while the process lives they stay leased — past their
// visibility timeout, the heartbeat going on after Run returned — and what
// the handler returns is settled as usual (issue 37: the message came back
// after one visibility timeout, another consumer ran it while this handler
// still did, and the handler's success was dropped).
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
		if !errors.Is(err, worker.ErrHandlersNotStopped) || !strings.Contains(err.Error(), "1 handler") || !strings.Contains(err.Error(), "stay leased") {
			t.Fatalf("Run: %v; want ErrHandlersNotStopped naming 1 handler, saying its message stays leased", err)
		}
		if st := h.w.Health(); st.Ready || st.Live || st.State != "stopped" {
			t.Errorf("health after Run returned: %+v; want stopped, neither ready nor live", st)
		}
		// The stubborn handler's message is neither deleted nor released
		// while its handler runs, long past its visibility timeout (12 s);
		// the polite one was released.
		time.Sleep(40 * time.Second)
		for _, m := range f.Messages(src) {
			switch m.Body {
			case "stubborn":
				if m.State != "inflight" {
					t.Errorf("stubborn message is %v 40 s after Run returned; want still in flight (leased while its handler runs)", m.State)
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
		if s.Abandoned != 0 || s.Released < 1 || s.Deleted != 0 || s.InFlight != 1 {
			t.Errorf("Stats: Abandoned %d, Released %d, Deleted %d, InFlight %d; want 0, at least 1, 0, 1", s.Abandoned, s.Released, s.Deleted, s.InFlight)
		}

		// What the handler returns after Run returned is settled as usual:
		// its success deletes the message.
		close(release)
		time.Sleep(time.Second)
		if s := h.w.Stats(); s.Deleted != 1 || s.Abandoned != 0 || s.InFlight != 0 {
			t.Errorf("after the late return: Deleted %d, Abandoned %d, InFlight %d; want 1, 0, 0", s.Deleted, s.Abandoned, s.InFlight)
		}
		for _, m := range f.Messages(src) {
			if m.Body == "stubborn" {
				t.Errorf("the stubborn message is still in the queue (%v) after its handler succeeded", m.State)
			}
		}
		mu.Lock()
		var deleted *worker.Settlement
		for i := range events {
			if events[i].Outcome == worker.Abandoned {
				t.Errorf("settlement event %+v: nothing is abandoned", events[i])
			}
			if events[i].Message.Body == "stubborn" && events[i].Outcome == worker.Deleted {
				deleted = &events[i]
			}
		}
		if deleted == nil {
			t.Errorf("settlement events %+v; want the stubborn message Deleted", events)
		}
		mu.Unlock()
	})
}
