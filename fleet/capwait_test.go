package fleet_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sqsworker/sqsworker/fleet"
	"github.com/sqsworker/sqsworker/worker"
)

// A job waiting in-process for a slot whose context ends (the worker shuts
// down, or the message's lease was lost) did not run: it must not report
// success, which would have the worker delete it unrun (issue 37). It is
// snoozed: no attempt counted, and the message comes back.
func TestCapWaitEndedByTheContextIsNotASuccess(t *testing.T) {
	client, table := newTable(t)
	f := newFleet(t, client, table, "p1")
	c, err := f.Cap("report", 1, func(o *fleet.CapOptions) { o.MaxWait = time.Minute })
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan string, 2)
	release := make(chan struct{})
	h := c.Middleware()(worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
		started <- m.ID
		<-release
		return nil
	}))
	firstErr := make(chan error, 1)
	go func() { firstErr <- h.Handle(t.Context(), &worker.Message{ID: "first"}) }()
	if id := <-started; id != "first" {
		t.Fatalf("%s started first", id)
	}
	ctx, cancel := context.WithCancelCause(t.Context())
	secondErr := make(chan error, 1)
	go func() { secondErr <- h.Handle(ctx, &worker.Message{ID: "second"}) }()
	for f.Stats().WaitingForSlot == 0 {
		select {
		case err := <-secondErr:
			t.Fatalf("the second job, over the cap, returned %v; want it waiting for the slot", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	shutdown := errors.New("worker shutting down")
	cancel(shutdown)
	var got error
	select {
	case got = <-secondErr:
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting job did not return when its context ended")
	}
	if got == nil {
		t.Fatal("the job whose wait for a slot ended with its context returned success: the worker would delete it unrun")
	}
	if _, ok := retrySnooze(got); !ok {
		t.Errorf("the job whose wait ended with its context returned %v; want a snooze (no attempt counted)", got)
	}
	select {
	case id := <-started:
		t.Errorf("%s ran", id)
	default:
	}
	close(release)
	if err := <-firstErr; err != nil {
		t.Fatal(err)
	}
	// A freed slot may be kept a moment for the next job of its key (at
	// most 250 ms); it must then be given back, not leaked.
	deadline := time.Now().Add(2 * time.Second)
	for s := f.Stats(); s.SlotsHeld != 0 || s.WaitingForSlot != 0; s = f.Stats() {
		if time.Now().After(deadline) {
			t.Fatalf("Stats %+v 2 s after the job ended; want no slot held, none waiting", s)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
