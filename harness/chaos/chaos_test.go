package chaos

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sqsworker/sqsworker/harness/testenv"
)

// TestChaosBounded is the chaos variant, bounded for `make test`: 3,000
// jobs, 3 worker processes, every fault (dropped responses and hangs
// included), SIGKILL and SIGTERM every 1 to 4 s, a fixed seed. It fails on
// any lost job, hung or crashed worker, misplaced job (succeeded or
// transient in the DLQ, poison not there with its provenance) or
// unexplained duplicate. The worker processes are built with the race
// detector when this test is.
func TestChaosBounded(t *testing.T) {
	cfg := boundedVariant(t, "chaos", false)
	cfg.Jobs, cfg.Workers, cfg.Seed = 3000, 3, 13
	cfg.Duration, cfg.DrainTimeout = 45*time.Second, 90*time.Second
	cfg.Race = raceEnabled
	r := runBounded(t, cfg, 4*time.Minute, fmt.Sprintf("make chaos VARIANT=chaos SEED=%d JOBS=%d WORKERS=%d DURATION=%v", cfg.Seed, cfg.Jobs, cfg.Workers, cfg.Duration))
	if r.Processes.Killed == 0 || r.Processes.Terminated == 0 || r.Done == 0 || r.DeadLettered == 0 {
		t.Fatalf("the run did not exercise what it should: %d SIGKILL, %d SIGTERM, %d done, %d dead-lettered", r.Processes.Killed, r.Processes.Terminated, r.Done, r.DeadLettered)
	}
}

// TestDrainBounded is the drain variant, bounded for `make test`: 3,000
// jobs, 3 worker processes under load, each SIGTERMed while busy and
// replaced, no faults. Every worker must stop receiving within 1 s of its
// SIGTERM, have what it prefetched released (SQS confirming) within 2 s,
// and return within ShutdownTimeout + FlushTimeout; nothing lost, nothing
// dead-lettered. It takes about 20 s.
func TestDrainBounded(t *testing.T) {
	cfg := boundedVariant(t, "drain", false)
	cfg.Jobs, cfg.Seed = 3000, 5
	cfg.Duration, cfg.DrainTimeout = 20*time.Second, 30*time.Second
	// A release is timed to SQS's confirmation, which on a machine running
	// every package's tests at once can take longer than the variant's
	// 1 s; the receive bound stays 1 s.
	cfg.Checks.MaxRelease = 2 * time.Second
	r := runBounded(t, cfg, 2*time.Minute, fmt.Sprintf("make chaos VARIANT=drain SEED=%d JOBS=%d", cfg.Seed, cfg.Jobs))
	if r.Processes.Terminated < 3 || r.Processes.UnstartedReleased == 0 {
		t.Fatalf("the run did not exercise what it should: %d SIGTERM, %d messages released unstarted", r.Processes.Terminated, r.Processes.UnstartedReleased)
	}
}

// boundedVariant is the named variant for a bounded test, on the test
// environment's emulators (DynamoDB Local too when dynamo is set).
func boundedVariant(t *testing.T, name string, dynamo bool) Config {
	t.Helper()
	env := testenv.Get(t)
	if env.SQS == "" || env.Backend == "aws" || (dynamo && env.DynamoDB == "") {
		t.Skipf("SKIP: the chaos suite runs against loopback emulators; SQS endpoint is %q (%s), DynamoDB %q", env.SQS, env.Backend, env.DynamoDB)
	}
	cfg, err := Variant(name)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Variant = name + "-bounded"
	cfg.SQS, cfg.Region = env.SQS, env.Region
	if dynamo {
		cfg.DynamoDB = env.DynamoDB
	}
	return cfg
}

// runBounded runs cfg for a bounded test, within timeout, in a new
// directory, fails the test when the run broke a guarantee (leaving the
// directory for the diagnosis, with reproduce, the command that runs it
// again), and returns the report. Runs built as the tests are (cfg.Race
// equal to raceEnabled) share one worker program.
func runBounded(t *testing.T, cfg Config, timeout time.Duration, reproduce string) *Report {
	t.Helper()
	dir, err := os.MkdirTemp("", "sqsworker-"+cfg.Variant+"-")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Dir, cfg.ProxyLog = dir, true
	if cfg.Race == raceEnabled {
		cfg.WorkerBinary = sharedWorker(t)
	}
	cfg.Log = &testLog{t: t}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	r, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", r.Text())
	if !r.Passed() {
		t.Fatalf("the %s run broke the guarantee:\n  %s\nthe run's files are in %s (reproduce: %s)", cfg.Variant, strings.Join(r.Failures, "\n  "), dir, reproduce)
	}
	os.RemoveAll(dir)
	return r
}

// testLog writes progress lines to the test log.
type testLog struct {
	t  *testing.T
	mu sync.Mutex
}

func (l *testLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.t.Log(string(bytes.TrimRight(p, "\n")))
	return len(p), nil
}
