package schedulestest_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/sqsworker/sqsworker/harness/conformance"
	"github.com/sqsworker/sqsworker/schedules/schedulestest"
	"github.com/sqsworker/sqsworker/sqstest"
)

// TestConformanceScheduler holds the in-memory Scheduler to EventBridge
// Scheduler's documented behaviour: the Scheduler conformance suite called
// directly, each behaviour on a fresh Scheduler firing into a fresh
// sqstest fake inside its own synctest bubble (weeks of schedules in
// virtual time), with what it does not model declared.
func TestConformanceScheduler(t *testing.T) {
	conformance.RunScheduler(t, conformance.SchedulerBackend{
		Name:        "schedulestest",
		NewClients:  func(t *testing.T) (conformance.SchedulerAPI, conformance.API) { return start(t) },
		NotModelled: conformance.SchedulestestNotModelled(),
		Wrap:        func(t *testing.T, f func(*testing.T)) { synctest.Test(t, f) },
		Fast:        true,
	})
}

// start returns a Scheduler firing into a new sqstest fake until t ends.
func start(t *testing.T) (*schedulestest.Scheduler, *sqstest.Fake) {
	q := sqstest.For(t)
	s, err := schedulestest.New(q)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = s.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return s, q
}
