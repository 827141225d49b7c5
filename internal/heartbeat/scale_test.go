package heartbeat_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sqsworker/sqsworker/internal/heartbeat"
	"github.com/sqsworker/sqsworker/sqstest"
)

// TestSQSInFlightLimitAt20ms is BenchmarkHeartbeat120000At20ms scaled down
// tenfold in virtual time, with the same calls-in-flight arithmetic:
// 120,000 leases (SQS's in-flight limit for a standard queue) due at once
// with a 10 s threshold need 12,000 calls of 20 ms in 10 s, 24 in flight at
// the least; 12,000 leases with a 1 s threshold (3 s visibility) need 1,200
// calls in 1 s, the same 24. Every extension of three periods must be
// confirmed before the deadline it moves, none lost, every call full.
func TestSQSInFlightLimitAt20ms(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n, periods = 12000, 3
		e := newEnv(t, 3)
		e.f.InjectFault(sqstest.Fault{API: "ChangeMessageVisibilityBatch", Latency: 20 * time.Millisecond})
		h := newHB(t, e.f, e.url, 3*time.Second) // Threshold 1 s: due at 2 s, 4 s, 6 s
		msgs, receivedAt := e.receive(t, n)
		leases := make([]*heartbeat.Lease, n)
		for i, m := range msgs {
			leases[i] = track(t, h, m.handle, receivedAt, func(err error) { t.Errorf("lost: %v", err) })
		}
		run(t, h)
		time.Sleep(receivedAt.Add(periods*2*time.Second + 900*time.Millisecond).Sub(time.Now()))
		s := h.Stats()
		if s.Late != 0 || s.Lost != 0 || s.Failures() != 0 || s.Extended != periods*n || s.Calls != periods*n/10 {
			t.Errorf("Stats = %+v; want %d extensions in %d calls, none late, failed or lost", s, periods*n, periods*n/10)
		}
		if inflight := len(e.f.Messages(e.url, "inflight")); inflight != n {
			t.Errorf("%d of %d messages in flight after %d periods; want all", inflight, n, periods)
		}
		for _, l := range leases {
			if d := l.Deadline().Sub(receivedAt); d < periods*2*time.Second+3*time.Second {
				t.Fatalf("a lease's deadline is %v after its receipt; want at least %v (three extensions)", d, periods*2*time.Second+3*time.Second)
			}
			l.Stop()
		}
	})
}

// A lease keeps its times as ticks since the heartbeat's start; times far
// from it behave as they are. A message received at the zero time, tracked
// 13 h after the heartbeat started, is past the 12-hour limit at once:
// ErrMaxVisibility, never a call. One whose deadline is in the year 9000
// is not due (its deadline is kept as 146 years away, the farthest a tick
// holds).
func TestTimesFarFromTheHeartbeatsStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, 30)
		h := newHB(t, e.rec, e.url, 30*time.Second)
		run(t, h)
		time.Sleep(13 * time.Hour)
		lost := newLosses()
		old := track(t, h, "received-at-zero", time.Time{}, lost.fn("old"))
		far := trackUntil(t, h, "far", time.Now(), time.Date(9000, 1, 1, 0, 0, 0, 0, time.UTC), lost.fn("far"))
		time.Sleep(time.Minute)
		if got := lost.of("old"); len(got) != 1 || !errors.Is(got[0].cause, heartbeat.ErrMaxVisibility) {
			t.Errorf("message received at the zero time: onLost %v; want one ErrMaxVisibility", got)
		}
		if got := lost.of("far"); len(got) != 0 {
			t.Errorf("message due in the year 9000: onLost %v; want none", got)
		}
		if n := len(e.rec.Calls()); n != 0 {
			t.Errorf("%d calls; want none", n)
		}
		if d := far.Deadline(); d.Before(time.Now().Add(100 * 365 * 24 * time.Hour)) {
			t.Errorf("Deadline = %v; want at least a century away", d)
		}
		if err := old.Stop(); !errors.Is(err, heartbeat.ErrMaxVisibility) {
			t.Errorf("Stop = %v; want ErrMaxVisibility", err)
		}
		far.Stop()
	})
}
