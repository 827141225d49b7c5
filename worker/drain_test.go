package worker_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sqsworker/sqsworker/sqstest"
	"github.com/sqsworker/sqsworker/worker"
)

// Shutdown ends the receive in flight within half a second: a long poll
// waiting on an empty queue does not go on for its WaitTime while the
// running handlers finish, and a message that arrives meanwhile is left to
// the other consumers, not received and released (which would count a
// receive against its maxReceiveCount without running it).
func TestShutdownEndsThePollInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, _ := newQueue(t, 5, "30")
		f.MustSend(t, src, "long")
		started := make(chan struct{}, 1)
		h := start(t, f, src, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			started <- struct{}{}
			time.Sleep(10 * time.Second) // finishes within ShutdownTimeout
			return nil
		}), func(o *worker.Options) { o.Concurrency = 2; o.ShutdownTimeout = time.Minute })
		<-started
		time.Sleep(time.Second) // the next long poll waits on the empty queue
		if n := h.w.Health().ReceivesInFlight; n != 1 {
			t.Fatalf("%d receives in flight before the shutdown, want the long poll", n)
		}
		h.cancel()
		time.Sleep(time.Second)
		if n := h.w.Health().ReceivesInFlight; n != 0 {
			t.Errorf("%d receives still in flight 1 s into the shutdown, want the poll ended", n)
		}
		f.MustSend(t, src, "arrives during the drain")
		if err := <-h.done; err != nil {
			t.Fatal(err)
		}
		s := h.w.Stats()
		if s.Received != 1 || s.Released != 0 || s.Deleted != 1 {
			t.Fatalf("Stats = %+v; want the running job deleted and nothing received during the shutdown", s)
		}
		msgs := f.Messages(src)
		if len(msgs) != 1 || msgs[0].State != "visible" || msgs[0].ReceiveCount != 0 {
			t.Fatalf("messages left = %+v; want the late one visible and never received", msgs)
		}
	})
}

// A receive whose answer is on the wire when Run's context ends has
// already hidden its messages: cancelling it would leave them invisible
// for the queue's whole visibility timeout, with nobody to release them.
// Shutdown gives such a receive a moment to come back, and releases what
// it brings.
func TestShutdownLetsAReceiveOnTheWireComeBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, _ := newQueue(t, 10, "60")
		sendMany(t, f, src, 10)
		f.InjectFault(sqstest.Fault{API: "ReceiveMessage", AfterEffect: true, ResponseDelay: 200 * time.Millisecond})
		h := start(t, f, src, worker.HandlerFunc(func(context.Context, *worker.Message) error { return nil }))
		time.Sleep(50 * time.Millisecond) // the first receive took its 10; its answer is on the wire
		if inFlight := len(f.Messages(src, "inflight")); inFlight != 10 {
			t.Fatalf("%d in flight before the shutdown, want the receive's 10", inFlight)
		}
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		visible, inFlight := len(f.Messages(src, "visible")), len(f.Messages(src, "inflight"))
		if inFlight != 0 || visible != 10 {
			t.Fatalf("after Run returned: %d visible, %d in flight; want the 10 released (visible), none left hidden for the visibility timeout", visible, inFlight)
		}
		if s := h.w.Stats(); s.Received != 10 || s.Released != 10 {
			t.Fatalf("Stats: Received %d, Released %d; want 10 and 10", s.Received, s.Released)
		}
	})
}
