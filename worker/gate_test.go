package worker_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sqsworker/sqsworker/worker"
)

// switchGate is a ReceiveGate driven by the test: each value sent on
// reports is passed on to the worker.
type switchGate struct{ reports chan bool }

func (g switchGate) Watch(ctx context.Context, set func(bool)) {
	for {
		select {
		case open := <-g.reports:
			set(open)
		case <-ctx.Done():
			return
		}
	}
}

// A closed ReceiveGate stops receiving: nothing is received before its
// first report; closing it ends the long poll in flight at once, releases
// the prefetched messages, lets running handlers finish (their messages
// are deleted), keeps the worker live but not ready however long it lasts;
// opening it again restarts receiving. Nothing is dead-lettered.
func TestReceiveGatePausesAndResumes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, dlq := newQueue(t, 3, "30")
		g := switchGate{reports: make(chan bool)}
		hold := make(chan struct{})
		h := start(t, f, src, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			<-hold
			return nil
		}), func(o *worker.Options) {
			o.ReceiveGate = g
			o.Concurrency = 2
			o.MaxPrefetch = 10
		})
		defer h.stop()

		// Closed until the first report.
		time.Sleep(10 * time.Second)
		if n := f.Requests()["ReceiveMessage"]; n != 0 || !h.w.Stats().Paused {
			t.Fatalf("before the gate's first report: %d receives, Paused %v; want none, paused", n, h.w.Stats().Paused)
		}

		// Open on an empty queue: a long poll waits.
		g.reports <- true
		synctest.Wait()
		if st := h.w.Health(); st.ReceivesInFlight == 0 || h.w.Stats().Paused {
			t.Fatalf("gate open: %+v, Paused %v; want a long poll under way", st, h.w.Stats().Paused)
		}
		// Closing it ends that poll at once.
		g.reports <- false
		synctest.Wait()
		if st := h.w.Health(); st.ReceivesInFlight != 0 || st.Ready || !st.Live {
			t.Fatalf("gate closed: %+v; want no receive in flight, live, not ready", st)
		}

		// Open with messages: two run, more are prefetched.
		sendMany(t, f, src, 30)
		g.reports <- true
		time.Sleep(time.Second)
		s := h.w.Stats()
		if s.Prefetched == 0 || s.InFlight-s.Settling != int64(2+s.Prefetched) {
			t.Fatalf("Stats %+v; want 2 running and some prefetched", s)
		}
		g.reports <- false
		synctest.Wait()
		time.Sleep(100 * time.Millisecond) // the releases' batch linger
		synctest.Wait()
		s = h.w.Stats()
		visible, inflight, _ := f.Count(src)
		if s.Prefetched != 0 || !s.Paused || inflight != 2 || visible != 28 {
			t.Fatalf("after closing: Stats %+v, %d visible and %d in flight at SQS; want the prefetched released, only the 2 running held", s, visible, inflight)
		}
		receives := f.Requests()["ReceiveMessage"]

		// Running handlers finish; a long pause is not a stuck worker.
		close(hold)
		time.Sleep(3 * time.Minute)
		if n := f.Requests()["ReceiveMessage"]; n != receives {
			t.Fatalf("%d receives while closed; want none", n-receives)
		}
		if st := h.w.Health(); !st.Live || st.Ready {
			t.Fatalf("after 3 min closed: %+v; want live, not ready", st)
		}
		if s := h.w.Stats(); s.Deleted != 2 {
			t.Fatalf("Stats %+v; want the 2 running jobs deleted", s)
		}

		g.reports <- true
		for range 600 {
			if visible, inflight, _ := f.Count(src); visible+inflight == 0 {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if s := h.w.Stats(); s.Deleted != 30 || s.DeadLettered != 0 || s.Paused {
			t.Fatalf("after reopening: Stats %+v; want all 30 deleted, none dead-lettered", s)
		}
		if v, i, d := f.Count(dlq); v+i+d != 0 {
			t.Fatalf("the DLQ holds %d messages; a pause must dead-letter nothing", v+i+d)
		}
	})
}
