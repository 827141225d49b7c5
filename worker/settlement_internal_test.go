package worker

import (
	"testing"

	"github.com/sqsworker/sqsworker/internal/settle"
)

// The public outcomes are the runtime's results, value for value.
func TestOutcomesMatchTheRuntime(t *testing.T) {
	for want, got := range map[Outcome]settle.Result{
		Deleted: settle.Deleted, Retrying: settle.Retrying, DeadLettered: settle.DeadLettered, Released: settle.Released,
		Lost: settle.Lost, Abandoned: settle.Abandoned, Snoozed: settle.Snoozed, Delayed: settle.Delayed,
	} {
		if Outcome(got) != want {
			t.Errorf("%v is %d in the runtime, %d in package worker", want, got, want)
		}
	}
}
