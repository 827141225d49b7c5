package worker_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sqsworker/sqsworker/sqstest"
	"github.com/sqsworker/sqsworker/worker"
)

// Shutdown ends the receive in flight at once: a long poll waiting on an
// empty queue does not go on for its WaitTime while the running handlers
// finish, and a message that arrives meanwhile is left to the other
// consumers, not received and released (which would count a receive
// against its maxReceiveCount without running it).
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
		if len(msgs) != 1 || msgs[0].State != sqstest.Visible || msgs[0].ReceiveCount != 0 {
			t.Fatalf("messages left = %+v; want the late one visible and never received", msgs)
		}
	})
}
