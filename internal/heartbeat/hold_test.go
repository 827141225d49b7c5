package heartbeat_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sqsworker/sqsworker/internal/heartbeat"
	"github.com/sqsworker/sqsworker/sqstest"
)

// A held lease is not extended; released, it is extended at once when an
// extension fell due meanwhile.
func TestHoldPausesExtensionsReleaseResumes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, 30)
		h := newHB(t, e.rec, e.url, 30*time.Second)
		msgs, receivedAt := e.receive(t, 1)
		l := track(t, h, msgs[0].handle, receivedAt, nil)
		run(t, h)
		deadline, err := l.Hold()
		if err != nil || !deadline.Equal(receivedAt.Add(30*time.Second)) {
			t.Fatalf("Hold = %v, %v; want the first deadline", deadline, err)
		}
		time.Sleep(25 * time.Second) // past the extension due at 20 s
		if n := len(e.rec.Calls()); n != 0 {
			t.Fatalf("%d extension calls while held, want none", n)
		}
		l.Release()
		synctest.Wait()
		calls := e.rec.Calls()
		if len(calls) != 1 || calls[0].at.Sub(receivedAt) != 25*time.Second {
			t.Fatalf("calls %+v; want one extension at once on release (25s)", calls)
		}
		if got := l.Deadline(); !got.Equal(receivedAt.Add(55 * time.Second)) {
			t.Fatalf("deadline %v after the extension, want 55s after receipt", got.Sub(receivedAt))
		}
		if err := l.Stop(); err != nil {
			t.Fatal(err)
		}
	})
}

// Hold waits for an extension call in flight that includes the message, so
// the owner's own call cannot race with it.
func TestHoldWaitsForTheCallInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, 30)
		e.f.InjectFault(sqstest.Fault{API: "ChangeMessageVisibilityBatch", Latency: 3 * time.Second})
		h := newHB(t, e.rec, e.url, 30*time.Second)
		msgs, receivedAt := e.receive(t, 1)
		l := track(t, h, msgs[0].handle, receivedAt, nil)
		run(t, h)
		time.Sleep(21 * time.Second) // the extension went out at 20 s and takes 3 s
		if _, err := l.Hold(); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(receivedAt); d != 23*time.Second {
			t.Fatalf("Hold returned at %v, want when the call ended (23s)", d)
		}
		l.Stop()
	})
}

// Hold on a lease the heartbeat lost returns the cause; on a stopped lease,
// an error.
func TestHoldReportsLostAndStopped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, 30)
		h := newHB(t, e.rec, e.url, 30*time.Second)
		run(t, h)
		bad := track(t, h, "not-a-receipt-handle", time.Now(), nil)
		time.Sleep(25 * time.Second)
		if _, err := bad.Hold(); !errors.Is(err, heartbeat.ErrLost) {
			t.Fatalf("Hold on a lost lease = %v, want ErrLost", err)
		}
		msgs, receivedAt := e.receive(t, 1)
		l := track(t, h, msgs[0].handle, receivedAt, nil)
		l.Stop()
		if _, err := l.Hold(); err == nil {
			t.Fatal("Hold on a stopped lease succeeded")
		}
	})
}

// An extension SQS confirms only after the deadline it was to move is
// counted as late, not as kept.
func TestLateExtensionIsReported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, 3)
		// Every call takes 900 ms and the first one fails: the retry goes out
		// 50 ms before the deadline with a 1 s timeout, and SQS confirms it
		// after the deadline.
		e.f.InjectFault(sqstest.Fault{API: "ChangeMessageVisibilityBatch", Code: "InternalError", Times: 1})
		e.f.InjectFault(sqstest.Fault{API: "ChangeMessageVisibilityBatch", Latency: 900 * time.Millisecond})
		h := newHB(t, e.rec, e.url, 3*time.Second)
		msgs, receivedAt := e.receive(t, 1)
		l := track(t, h, msgs[0].handle, receivedAt, func(err error) { t.Errorf("lost: %v", err) })
		run(t, h)
		time.Sleep(6500 * time.Millisecond)
		s := h.Stats()
		if s.FailedCalls != 1 || s.Late != 1 || s.Extended < 1 || s.Lost != 0 {
			t.Fatalf("Stats = %+v; want one failed call, then one late extension, then extensions on time", s)
		}
		l.Stop()
	})
}

// With tens of thousands of leases and calls that take 20 ms, several
// calls in flight keep every extension on time: ⌈N/10⌉ calls per period.
func TestManyLeasesConcurrentCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 5000
		e := newEnv(t, 30)
		e.f.InjectFault(sqstest.Fault{API: "ChangeMessageVisibilityBatch", Latency: 20 * time.Millisecond})
		h := newHB(t, e.rec, e.url, 30*time.Second)
		msgs, receivedAt := e.receive(t, n)
		leases := make([]*heartbeat.Lease, n)
		for i, m := range msgs {
			leases[i] = track(t, h, m.handle, receivedAt, func(err error) { t.Errorf("lost: %v", err) })
		}
		run(t, h)
		time.Sleep(65 * time.Second) // three periods
		s := h.Stats()
		if s.Late != 0 || s.Lost != 0 || s.Extended != 3*n || s.Calls != 3*n/10 {
			t.Fatalf("Stats = %+v; want %d extensions in %d calls, none late", s, 3*n, 3*n/10)
		}
		for _, l := range leases {
			l.Stop()
		}
	})
}
