package chaos

import (
	"fmt"
	"testing"
	"time"
)

// TestUniqueBounded is the unique variant, bounded for `make test`: 300
// jobs sent with a unique key each (and again, the second send refused),
// 3 worker processes (Concurrency 8) whose settlements free the keys
// through a unique.Store, SQS and DynamoDB Local behind fault proxies
// (throttling, 5xx, resets, lost responses, hangs), SIGKILL and SIGTERM
// every 1 to 3 s for 8 s, no slow jobs (their 8 s of work would outlast
// the bound), a fixed seed. It fails on any broken guarantee of the chaos
// variant (a job lost, an unexplained duplicate: a refused send that
// reached the queue would be one), on a key held at the end that no kill,
// failed release or pending job explains, on a held key of a job whose
// handler succeeded (the workers wrap their handler with Store.Middleware,
// which frees it before the delete), and on a held key that a send at the
// documented bound cannot take over.
func TestUniqueBounded(t *testing.T) {
	cfg := boundedVariant(t, "unique", true)
	cfg.Jobs, cfg.Workers, cfg.Seed = 300, 3, 13
	cfg.Mix.Slow = 0
	cfg.Kills.MaxEvery = 3 * time.Second
	cfg.Duration, cfg.DrainTimeout = 8*time.Second, 60*time.Second
	cfg.Race = raceEnabled
	r := runBounded(t, cfg, 2*time.Minute, fmt.Sprintf("make chaos VARIANT=unique SEED=%d JOBS=%d WORKERS=%d DURATION=%v", cfg.Seed, cfg.Jobs, cfg.Workers, cfg.Duration))
	ur := r.Unique
	var dynamoFaults int
	for _, c := range ur.Requests {
		for _, n := range c.Faults {
			dynamoFaults += n
		}
	}
	if r.Processes.Killed == 0 || r.Done == 0 || r.DeadLettered == 0 || ur.Releases == 0 || dynamoFaults == 0 {
		t.Fatalf("the run did not exercise what it should: %d SIGKILL, %d done, %d dead-lettered, %d releases, %d DynamoDB faults",
			r.Processes.Killed, r.Done, r.DeadLettered, ur.Releases, dynamoFaults)
	}
}
