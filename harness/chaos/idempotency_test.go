package chaos

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"
)

// TestIdempotencyBounded is the idempotency variant, bounded for `make
// test`: 300 jobs, 3 worker processes (Concurrency 4) whose handlers an
// idempotency.Guard wraps, DynamoDB Local and SQS behind fault proxies (throttling, 5xx,
// resets, lost responses, hangs), SIGKILL and SIGTERM every 1 to 4 s for
// 10 s, a fixed seed (whose kill schedule has both kinds early), the
// Guard's LockMargin 2 s instead of 5 s (so the locks of killed runs expire
// sooner and the drain is shorter). It fails on any broken guarantee of the chaos variant, on a
// handler run that began after its job's completion was confirmed, on a
// job done without its side effect (or with it and not done), on an
// unexplained re-run, and when the run did not exercise what it should
// (kills of both kinds, DynamoDB faults, side effects, dead letters).
func TestIdempotencyBounded(t *testing.T) {
	cfg := boundedVariant(t, "idempotency", true)
	cfg.Jobs, cfg.Workers, cfg.Seed = 300, 3, 13
	cfg.Duration, cfg.DrainTimeout = 10*time.Second, 90*time.Second
	cfg.Worker.Concurrency = 4
	cfg.Worker.Idem.LockMargin = 2 * time.Second
	cfg.Race = raceEnabled
	r := runBounded(t, cfg, 3*time.Minute, "make chaos VARIANT=idempotency SEED=13 JOBS=300 WORKERS=3 DURATION=10s (Concurrency 8 and LockMargin 5 s there)")
	ir := r.Idempotency
	var dynamoFaults int
	for _, c := range ir.Requests {
		for _, n := range c.Faults {
			dynamoFaults += n
		}
	}
	if r.Processes.Killed == 0 || r.Processes.Terminated == 0 || r.Done == 0 || r.DeadLettered == 0 || ir.Effects == 0 || dynamoFaults == 0 {
		t.Fatalf("the run did not exercise what it should: %d SIGKILL, %d SIGTERM, %d done, %d dead-lettered, %d side effects, %d DynamoDB faults",
			r.Processes.Killed, r.Processes.Terminated, r.Done, r.DeadLettered, ir.Effects, dynamoFaults)
	}
}

// sharedWorker builds the worker program once for the bounded tests that
// use it (with the race detector when the tests have it).
var sharedWorker = func() func(t *testing.T) string {
	var once sync.Once
	var bin string
	var err error
	return func(t *testing.T) string {
		t.Helper()
		once.Do(func() {
			var dir string
			if dir, err = os.MkdirTemp("", "sqsworker-chaosworker-"); err == nil {
				bin, err = buildWorker(context.Background(), dir, raceEnabled)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		return bin
	}
}()
