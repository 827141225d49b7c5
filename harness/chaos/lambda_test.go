package chaos

import (
	"testing"
	"time"
)

// TestLambdaBounded is the lambda variant, bounded for `make test`: 600
// jobs of the chaos mix run by 4 sqslambda.RunLocal processes (one
// invocation at a time each, function timeout 5 s) through the chaos
// variant's SQS faults, SIGKILL and SIGTERM every 1 to 4 s for 10 s (a
// seed whose kill schedule has both kinds early), a process
// killed whenever an invocation outlives its deadline, a fixed seed. It
// fails on any broken guarantee of the chaos variant — every job done,
// retrying or in the DLQ with its reason, none lost, every duplicate
// explained — and when the run did not exercise what it should.
func TestLambdaBounded(t *testing.T) {
	cfg := boundedVariant(t, "lambda", false)
	cfg.Jobs, cfg.Seed = 600, 16
	cfg.Duration, cfg.DrainTimeout = 10*time.Second, 60*time.Second
	cfg.Race = raceEnabled
	r := runBounded(t, cfg, 3*time.Minute, "make chaos VARIANT=lambda SEED=16 JOBS=600 DURATION=10s")
	if r.Processes.Killed == 0 || r.Processes.Terminated == 0 || r.Done == 0 || r.DeadLettered == 0 {
		t.Fatalf("the run did not exercise what it should: %d SIGKILL, %d SIGTERM, %d done, %d dead-lettered",
			r.Processes.Killed, r.Processes.Terminated, r.Done, r.DeadLettered)
	}
}
