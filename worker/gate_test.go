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
// first report; closing it ends the long poll in flight within half a
// second (an answer on the wire may still come back), releases
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
		// Closing it ends that poll within half a second, and no other
		// starts.
		g.reports <- false
		synctest.Wait()
		if n := f.Requests()["ReceiveMessage"]; n != 1 {
			t.Fatalf("%d receives after closing, want the one poll", n)
		}
		time.Sleep(500 * time.Millisecond)
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
		visible, inflight := len(f.Messages(src, "visible")), len(f.Messages(src, "inflight"))
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
			if len(f.Messages(src, "visible", "inflight")) == 0 {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if s := h.w.Stats(); s.Deleted != 30 || s.DeadLettered != 0 || s.Paused {
			t.Fatalf("after reopening: Stats %+v; want all 30 deleted, none dead-lettered", s)
		}
		if n := len(f.Messages(dlq)); n != 0 {
			t.Fatalf("the DLQ holds %d messages; a pause must dead-letter nothing", n)
		}
	})
}

// Closing the gate while a receive's answer is on the wire does not
// strand its messages: the receive comes back within the grace and its
// messages are released at once, not left hidden for the visibility
// timeout until long after the queue resumes.
func TestPauseLetsAReceiveOnTheWireComeBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, _ := newQueue(t, 10, "60")
		sendMany(t, f, src, 10)
		g := switchGate{reports: make(chan bool)}
		hold := make(chan struct{})
		defer close(hold)
		h := start(t, f, src, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			<-hold
			return nil
		}), func(o *worker.Options) { o.ReceiveGate = g })
		defer h.stop()
		f.InjectFault(sqstest.Fault{API: "ReceiveMessage", AfterEffect: true, ResponseDelay: 200 * time.Millisecond})
		g.reports <- true
		time.Sleep(50 * time.Millisecond) // the first receive took its 10; its answer is on the wire
		if inFlight := len(f.Messages(src, "inflight")); inFlight != 10 {
			t.Fatalf("%d in flight before the pause, want the receive's 10", inFlight)
		}
		g.reports <- false
		time.Sleep(time.Second) // the answer, then the releases' batch linger
		visible, inFlight := len(f.Messages(src, "visible")), len(f.Messages(src, "inflight"))
		if inFlight != 0 || visible != 10 {
			t.Fatalf("paused: %d visible, %d in flight; want the 10 released (visible), none hidden for the visibility timeout", visible, inFlight)
		}
		if s := h.w.Stats(); s.Received != 10 || s.Released != 10 {
			t.Fatalf("Stats: Received %d, Released %d; want 10 and 10", s.Received, s.Released)
		}
	})
}

// probeGate is a switchGate whose Probe method says what probing holds.
type probeGate struct {
	switchGate
	probing *atomic.Bool
}

func (g probeGate) Probe() bool { return g.probing.Load() }

// A gate open for a probe (its Probe method says true) lets one message
// in per report: one receive of one message, however many handlers are
// free and however many pollers the worker has; a receive that came back
// empty lets the next one probe. Once the probe window is over (Probe
// false), the worker receives in batches again.
func TestReceiveGateProbeLetsOneMessageIn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, _ := newQueue(t, 10, "30")
		var probing atomic.Bool
		probing.Store(true)
		g := probeGate{switchGate{reports: make(chan bool)}, &probing}
		var handled atomic.Int64
		h := start(t, f, src, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			handled.Add(1)
			return nil
		}), func(o *worker.Options) {
			o.ReceiveGate = g
			o.Concurrency = 5
			o.Pollers = 3
		})
		defer h.stop()

		// Open for a probe on an empty queue: one long poll, not three.
		g.reports <- true
		time.Sleep(time.Second)
		if st := h.w.Health(); st.ReceivesInFlight != 1 {
			t.Fatalf("open for a probe, queue empty: %d receives in flight; want 1", st.ReceivesInFlight)
		}
		sendMany(t, f, src, 20)
		time.Sleep(5 * time.Second)
		if s := h.w.Stats(); s.Received != 1 || handled.Load() != 1 {
			t.Fatalf("one probe window: Received %d, handled %d; want 1 message", s.Received, handled.Load())
		}
		// Each report opens another window: one more message each.
		for i := 2; i <= 3; i++ {
			g.reports <- true
			time.Sleep(5 * time.Second)
			if s := h.w.Stats(); s.Received != int64(i) {
				t.Fatalf("after %d probe windows: Received %d; want %d", i, s.Received, i)
			}
		}
		// The probe closed the breaker: batches again.
		probing.Store(false)
		g.reports <- true
		time.Sleep(5 * time.Second)
		if s := h.w.Stats(); s.Received != 20 || handled.Load() != 20 {
			t.Fatalf("open: Received %d, handled %d; want all 20", s.Received, handled.Load())
		}
	})
}
