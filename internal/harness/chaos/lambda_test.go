package chaos

import (
	"testing"
	"time"

	"github.com/sqsworker/sqsworker/internal/harness/testenv"
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
	env := testenv.Get(t)
	if env.SQS == "" || env.Backend == "aws" {
		t.Skipf("SKIP: the chaos suite runs against a loopback emulator; SQS endpoint is %q (%s)", env.SQS, env.Backend)
	}
	cfg, err := Variant("lambda")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Variant = "lambda-bounded"
	cfg.SQS, cfg.Region = env.SQS, env.Region
	cfg.Jobs, cfg.Seed = 600, 16
	cfg.Duration, cfg.DrainTimeout = 10*time.Second, 60*time.Second
	r := runBounded(t, cfg, "sqsworker-lambda-test-", "make chaos VARIANT=lambda SEED=16 JOBS=600 DURATION=10s")
	if r.Processes.Killed == 0 || r.Processes.Terminated == 0 || r.Done == 0 || r.DeadLettered == 0 {
		t.Fatalf("the run did not exercise what it should: %d SIGKILL, %d SIGTERM, %d done, %d dead-lettered",
			r.Processes.Killed, r.Processes.Terminated, r.Done, r.DeadLettered)
	}
}
