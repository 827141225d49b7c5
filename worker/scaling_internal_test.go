package worker

import (
	"testing"
	"time"

	"github.com/sqsworker/sqsworker/internal/settle"
)

// The signals' window: the oldest age counts first receives only, covers
// the last one to two windows, and the capacity falls back to the whole
// run's mean when no handler returned lately.
func TestSignalsWindow(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	mk := func(sentAgo time.Duration, receives int, at time.Time) *job {
		j := &job{}
		j.Msg = settle.Message{ReceiveCount: receives, SentAt: at.Add(-sentAgo), ReceivedAt: at}
		return j
	}
	s := &signals{concurrency: 10}
	s.received(t0, []*job{mk(3*time.Second, 1, t0), mk(time.Hour, 2, t0), mk(7*time.Second, 1, t0)})
	s.handled(t0, 200*time.Millisecond)
	s.handled(t0, 300*time.Millisecond)
	var st Stats
	s.fill(t0.Add(30*time.Second), &st)
	if st.OldestAge != 7*time.Second || st.MeanHandlerTime != 250*time.Millisecond || st.Capacity != 40 {
		t.Fatalf("Stats = age %v, mean %v, capacity %v; want 7s (the retry left out), 250ms, 40/s", st.OldestAge, st.MeanHandlerTime, st.Capacity)
	}
	// A window later the figures are still counted (the previous bucket).
	s.handled(t0.Add(70*time.Second), 50*time.Millisecond)
	st = Stats{}
	s.fill(t0.Add(90*time.Second), &st)
	if st.OldestAge != 7*time.Second || st.HandlerRuns != 3 || st.MeanHandlerTime != 550*time.Millisecond/3 {
		t.Fatalf("Stats a window later = age %v, runs %d, mean %v; want 7s, 3, %v", st.OldestAge, st.HandlerRuns, st.MeanHandlerTime, 550*time.Millisecond/3)
	}
	// Two windows later the age is gone; the last bucket's run remains.
	st = Stats{}
	s.fill(t0.Add(150*time.Second), &st)
	if st.OldestAge != 0 || st.MeanHandlerTime != 50*time.Millisecond {
		t.Fatalf("Stats two windows later = age %v, mean %v; want 0, 50ms", st.OldestAge, st.MeanHandlerTime)
	}
	// Idle for longer: the whole run's mean.
	st = Stats{}
	s.fill(t0.Add(time.Hour), &st)
	if st.MeanHandlerTime != 550*time.Millisecond/3 || st.HandlerTime != 550*time.Millisecond {
		t.Fatalf("Stats an hour later = mean %v, total %v; want the whole run's", st.MeanHandlerTime, st.HandlerTime)
	}
}
