package fleet_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sqsworker/sqsworker/fleet"
	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/worker"
)

var errDown = errors.New("downstream: connection refused")

// The breaker's states on an injected clock: closed until Threshold
// counted failures in a row (each snoozed, not failed; uncounted errors
// pass through and do not count); open — jobs snoozed for the time left,
// not run; half-open after OpenFor — one probe, the others snoozed; a
// failed probe opens it for twice as long; a good probe closes it.
func TestBreakerOpensProbesAndCloses(t *testing.T) {
	client, table := newTable(t)
	clk := newClock()
	f := newFleet(t, client, table, "p1", func(o *fleet.Options) { o.Now = clk.Now })
	b, err := f.Breaker("payments", func(o *fleet.BreakerOptions) {
		o.Counts = func(err error) bool { return errors.Is(err, errDown) }
		o.Threshold = 3
		o.OpenFor = 10 * time.Second
	})
	if err != nil {
		t.Fatal(err)
	}
	var down bool
	var ran int
	h := b.Middleware()(worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
		ran++
		if m.Body == "bad input" {
			return errors.New("invalid order")
		}
		if down {
			return errDown
		}
		return nil
	}))
	handle := func() error { return h.Handle(t.Context(), &worker.Message{ID: "m"}) }
	snoozed := func(err error) time.Duration {
		t.Helper()
		d, ok := retrySnooze(err)
		if !ok {
			t.Fatalf("got %v; want a snooze", err)
		}
		return d
	}

	if err := h.Handle(t.Context(), &worker.Message{Body: "bad input"}); err == nil || errors.Is(err, retry.ErrPermanent) {
		t.Fatalf("an uncounted error came back as %v; want it unchanged", err)
	}
	down = true
	for i := range 3 {
		if d := snoozed(handle()); d < 10*time.Second {
			t.Fatalf("counted failure %d snoozed for %v; want about OpenFor", i+1, d)
		}
	}
	if s := b.State(); s != fleet.StateOpen {
		t.Fatalf("after 3 counted failures the breaker is %s; want open", s)
	}
	ran = 0
	clk.Add(4 * time.Second)
	if d := snoozed(handle()); d < 6*time.Second || d > 8*time.Second || ran != 0 {
		t.Fatalf("while open: snoozed %v, ran %d; want about the 6 s left, not run", d, ran)
	}

	clk.Add(6 * time.Second)
	if s := b.State(); s != fleet.StateHalfOpen {
		t.Fatalf("after OpenFor the breaker is %s; want half-open", s)
	}
	// A failed probe: open for twice as long.
	snoozed(handle())
	if s := b.State(); s != fleet.StateOpen || ran != 1 {
		t.Fatalf("after a failed probe: %s, ran %d; want open, the probe run", s, ran)
	}
	clk.Add(19 * time.Second)
	if s := b.State(); s != fleet.StateOpen {
		t.Fatalf("19 s after a failed probe: %s; want still open (20 s)", s)
	}
	clk.Add(time.Second)

	// Half-open: one probe at a time.
	probing := make(chan struct{})
	finish := make(chan struct{})
	down = false
	slow := b.Middleware()(worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
		close(probing)
		<-finish
		return nil
	}))
	done := make(chan error, 1)
	go func() { done <- slow.Handle(t.Context(), &worker.Message{ID: "probe"}) }()
	<-probing
	ran = 0
	snoozed(handle())
	if ran != 0 {
		t.Fatal("a second job ran while the probe was running")
	}
	close(finish)
	if err := <-done; err != nil {
		t.Fatalf("probe: %v", err)
	}
	if s := b.State(); s != fleet.StateClosed {
		t.Fatalf("after a good probe: %s; want closed", s)
	}
	if err := handle(); err != nil || ran != 1 {
		t.Fatalf("closed again: %v, ran %d; want the job run", err, ran)
	}
	if s := f.Stats(); s.Breakers["payments"] != fleet.StateClosed || s.BreakerSnoozed < 6 {
		t.Errorf("Stats %+v; want the breaker closed and the snoozes counted", s)
	}
}

// A shared breaker opened in one process is honoured by another within
// its SyncInterval; closing it (a good probe) is too.
func TestBreakerSharedAcrossProcesses(t *testing.T) {
	client, table := newTable(t)
	clk := newClock()
	opts := func(o *fleet.BreakerOptions) {
		o.Counts = func(err error) bool { return errors.Is(err, errDown) }
		o.Threshold = 1
		o.Shared = true
		o.OpenFor = time.Minute
	}
	a, _ := newFleet(t, client, table, "a", func(o *fleet.Options) { o.Now = clk.Now }).Breaker("payments", opts)
	b, _ := newFleet(t, client, table, "b", func(o *fleet.Options) { o.Now = clk.Now }).Breaker("payments", opts)
	failing := a.Middleware()(worker.HandlerFunc(func(context.Context, *worker.Message) error { return errDown }))
	ran := 0
	ok := b.Middleware()(worker.HandlerFunc(func(context.Context, *worker.Message) error { ran++; return nil }))

	if err := ok.Handle(t.Context(), &worker.Message{}); err != nil || ran != 1 {
		t.Fatalf("b before any failure: %v", err)
	}
	if _, snoozed := retrySnooze(failing.Handle(t.Context(), &worker.Message{})); !snoozed || a.State() != fleet.StateOpen {
		t.Fatalf("a after a counted failure: %s; want open", a.State())
	}
	clk.Add(3 * time.Second) // past b's SyncInterval
	err := ok.Handle(t.Context(), &worker.Message{})
	if d, snoozed := retrySnooze(err); !snoozed || ran != 1 || d < 50*time.Second {
		t.Fatalf("b after a opened: %v (ran %d); want snoozed for the ~57 s a's breaker stays open", err, ran)
	}
}
