package fleet_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sqsworker/sqsworker/fleet"
	"github.com/sqsworker/sqsworker/harness/sqsfake"
	"github.com/sqsworker/sqsworker/sqstest"
	"github.com/sqsworker/sqsworker/worker"
)

// Pause and Resume through the table reach a worker whose ReceiveGate is
// a Pauser within its Interval: it stops receiving and releases what it
// prefetched, running jobs finish, and after Resume every job is done,
// none dead-lettered. The switch is named by the queue's name, whatever
// form the queue is given in.
func TestPauseHonouredByWorker(t *testing.T) {
	client, table := newTable(t)
	f := newFleet(t, client, table, "worker-1")
	op := newFleet(t, client, table, "operator")

	sq := sqstest.For(t)
	src, dlq := sq.MustCreateQueueWithDLQ(t, "orders", 3, map[string]string{"VisibilityTimeout": "30"})
	p, err := f.Pauser(src, func(o *fleet.PauserOptions) { o.Interval = 500 * time.Millisecond })
	if err != nil {
		t.Fatal(err)
	}
	w, err := worker.New(sq, src, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
		time.Sleep(20 * time.Millisecond)
		return nil
	}), func(o *worker.Options) {
		o.ReceiveGate = p
		o.Concurrency = 2
		o.WaitTime = time.Second
		o.Logger = quiet
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	runErr := make(chan error, 1)
	go func() { runErr <- w.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-runErr; err != nil {
			t.Error(err)
		}
	}()

	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("not within 5 s: %s; worker %+v", what, w.Stats())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if err := op.Pause(t.Context(), "orders", "database migration"); err != nil {
		t.Fatal(err)
	}
	st, err := op.PauseState(t.Context(), sqsfake.ARN(src))
	if err != nil || !st.Paused || st.Reason != "database migration" || st.By != "operator" {
		t.Fatalf("PauseState by ARN = %+v, %v; want paused by operator with the reason", st, err)
	}
	waitFor("the worker pauses", func() bool { return w.Stats().Paused })
	// Health says why (Stats.Paused is also true before the Pauser's
	// first read, so wait for the reason).
	waitFor("Health says the queue is paused", func() bool {
		h := w.Health()
		return !h.Ready && h.Live && strings.Contains(h.Reason, "receiving paused by Options.ReceiveGate: queue orders is paused")
	})
	// The poll in flight gets half a second to come back (an answer on
	// the wire is released, not stranded), then ends.
	waitFor("the poll in flight ends", func() bool { return w.Health().ReceivesInFlight == 0 })
	for range 40 {
		sq.MustSend(t, src, "job")
	}
	time.Sleep(2 * time.Second)
	if s := w.Stats(); s.Received != 0 {
		t.Fatalf("a paused worker received %d messages", s.Received)
	}

	if err := op.Resume(t.Context(), src); err != nil {
		t.Fatal(err)
	}
	waitFor("the worker resumes and does some jobs", func() bool { return w.Stats().Deleted >= 10 })
	if err := op.Pause(t.Context(), src, ""); err != nil {
		t.Fatal(err)
	}
	waitFor("the worker pauses again", func() bool { return w.Stats().Paused })
	if err := op.Resume(t.Context(), src); err != nil {
		t.Fatal(err)
	}
	waitFor("the worker resumes again", func() bool { return !w.Stats().Paused })
	waitFor("every job is done", func() bool { return w.Stats().Deleted == 40 })
	if s := w.Stats(); s.DeadLettered != 0 {
		t.Errorf("Stats %+v; a pause must dead-letter nothing", s)
	}
	if n := len(sq.Messages(dlq)); n != 0 {
		t.Errorf("the DLQ holds %d messages", n)
	}
	if s := f.Stats(); s.Paused["orders"] {
		t.Errorf("Fleet.Stats().Paused = %v; want orders not paused", s.Paused)
	}
}

// Pauser.Middleware, for runtimes that receive on their own, snoozes
// each message while the queue is paused and runs it otherwise.
func TestPauserMiddleware(t *testing.T) {
	client, table := newTable(t)
	f := newFleet(t, client, table, "lambda")
	p, err := f.Pauser("orders")
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	h := p.Middleware()(worker.HandlerFunc(func(context.Context, *worker.Message) error { ran++; return nil }))
	if err := h.Handle(t.Context(), &worker.Message{}); err != nil || ran != 1 {
		t.Fatalf("not paused: %v, ran %d", err, ran)
	}
	if err := f.Pause(t.Context(), "orders", ""); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2100 * time.Millisecond) // the switch is read at most every Interval (2 s)
	err = h.Handle(t.Context(), &worker.Message{})
	if d, ok := retrySnooze(err); !ok || d < 30*time.Second || ran != 1 {
		t.Fatalf("paused: %v, ran %d; want a snooze of 30 s or more, not run", err, ran)
	}
}
