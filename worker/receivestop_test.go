package worker_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sqsworker/sqsworker/sqstest"
	"github.com/sqsworker/sqsworker/worker"
)

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
		if _, inFlight, _ := f.Count(src); inFlight != 10 {
			t.Fatalf("%d in flight before the shutdown, want the receive's 10", inFlight)
		}
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		visible, inFlight, _ := f.Count(src)
		if inFlight != 0 || visible != 10 {
			t.Fatalf("after Run returned: %d visible, %d in flight; want the 10 released (visible), none left hidden for the visibility timeout", visible, inFlight)
		}
		if s := h.w.Stats(); s.Received != 10 || s.Released != 10 {
			t.Fatalf("Stats: Received %d, Released %d; want 10 and 10", s.Received, s.Released)
		}
	})
}
