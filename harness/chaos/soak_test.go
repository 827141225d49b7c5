package chaos

import (
	"fmt"
	"testing"
	"time"
)

// TestSoakBounded is the soak variant, bounded for `make test`: 6,000 jobs
// (no slow ones: TestChaosBounded has those; 2,000 sent up front, the rest
// fed as the queue empties), 3 worker processes of which the first is
// never signalled, the chaos faults, kills every 1 to 3 s, RSS sampled
// every second. It fails on any broken
// guarantee (as TestChaosBounded), and when the long-lived worker's memory
// was not watched (too few RSS samples from the warm-up on, no heap
// samples, the worker not alive to the end), it did not take its share of
// the jobs, or its RSS grew more than 50% from the warm-up (a quarter of
// the jobs settled) to the end. A run this short proves the sampling and
// catches a gross leak (one that 6,000 jobs show), not that memory stays
// flat over a million jobs: `make chaos VARIANT=soak` does that. The
// workers are built without the race detector, whose shadow memory would
// be what the samples measure.
func TestSoakBounded(t *testing.T) {
	cfg := boundedVariant(t, "soak", false)
	cfg.Jobs, cfg.Workers, cfg.Seed = 6000, 3, 17
	cfg.Mix.Slow = 0
	cfg.Kills.MaxEvery = 3 * time.Second
	cfg.Duration, cfg.DrainTimeout = 15*time.Second, 60*time.Second
	cfg.Worker.HeapEvery, cfg.Soak.SampleEvery = time.Second, time.Second
	// A worker's RSS climbs for its first few thousand jobs (pools,
	// connections, buffers): a run this short takes its baseline at a
	// quarter of the jobs.
	cfg.Soak.WarmUp, cfg.Soak.MaxGrowth, cfg.Soak.MinSamples, cfg.Soak.Backlog = 0.25, 0.5, 5, 2000
	r := runBounded(t, cfg, 3*time.Minute, fmt.Sprintf("make chaos VARIANT=soak SEED=%d JOBS=%d WORKERS=%d", cfg.Seed, cfg.Jobs, cfg.Workers))
	if r.Processes.Killed == 0 || r.Processes.Terminated == 0 || r.Done == 0 || r.DeadLettered == 0 || r.Timing.Feed == 0 || r.Memory == nil || len(r.Memory.Workers) != 1 {
		t.Fatalf("the run did not exercise what it should: %d SIGKILL, %d SIGTERM, %d done, %d dead-lettered, %v spent feeding jobs, memory %+v",
			r.Processes.Killed, r.Processes.Terminated, r.Done, r.DeadLettered, r.Timing.Feed, r.Memory)
	}
	// The long-lived worker worked through the run: a fair share of the
	// jobs, and samples from the warm-up to the drained queue.
	w := r.Memory.Workers[0]
	if w.Received < int64(cfg.Jobs/(4*cfg.Workers)) || w.End.Settled < cfg.Jobs*9/10 {
		t.Fatalf("the long-lived worker %s received %d messages of %d jobs, and its last sample saw %d settled: it was not watched through the run",
			w.Worker, w.Received, cfg.Jobs, w.End.Settled)
	}
}
