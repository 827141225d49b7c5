package chaos

import (
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/sqsworker/sqsworker/harness/faultproxy"
)

// Config is one chaos run. Start from Variant and change what you need.
type Config struct {
	// Variant names the run in its report.
	Variant string `json:"variant"`
	// SQS is the emulator's endpoint, a loopback URL (the proxy refuses
	// anything else). Region is the SDK region (zero: us-east-1).
	SQS    string `json:"-"`
	Region string `json:"-"`
	// DynamoDB is DynamoDB Local's endpoint, a loopback URL, for the
	// idempotency and unique variants; DynamoFaults are the faults of the proxy in
	// front of it while the chaos lasts.
	DynamoDB     string                     `json:"-"`
	DynamoFaults map[string]faultproxy.Rule `json:"dynamoFaults,omitempty"`

	Jobs int `json:"jobs"`
	// Senders is how many SendMessageBatch calls seed the queue at once
	// (zero: 8; a FIFO queue is seeded one call at a time).
	Senders int    `json:"senders,omitempty"`
	Workers int    `json:"workers"` // worker processes running at once
	Seed    uint64 `json:"seed"`    // seeds the jobs, the faults and the kills
	Mix     Mix    `json:"mix"`
	// FIFO runs on a FIFO queue pair with Groups message groups; the
	// report then checks the order within each group.
	FIFO   bool `json:"fifo"`
	Groups int  `json:"groups,omitempty"`

	// Faults are the proxy's rules while the chaos lasts (by action, "*"
	// for the others); they are cleared before the drain.
	Faults map[string]faultproxy.Rule `json:"faults"`
	Kills  Kills                      `json:"kills"`
	// Duration bounds the chaos phase; it ends earlier when the queue is
	// empty. DrainTimeout bounds the drain that follows (no faults, no
	// kills) until the queue is empty.
	Duration     time.Duration `json:"duration"`
	DrainTimeout time.Duration `json:"drainTimeout"`

	// Visibility is the queue's VisibilityTimeout (slow jobs work longer);
	// MaxReceiveCount its RedrivePolicy's.
	Visibility      time.Duration `json:"visibility"`
	MaxReceiveCount int           `json:"maxReceiveCount"`
	// Worker is each worker process's configuration (Endpoint, Region,
	// Queue and Dir are filled in by Run).
	Worker WorkerConfig `json:"worker"`
	Checks Checks       `json:"checks"`
	// Soak makes the run a soak: long-lived workers whose memory is
	// watched (zero: none).
	Soak Soak `json:"soak,omitzero"`

	// Dir receives the run's files (worker records, proxy log, report).
	// Zero: a new temporary directory.
	Dir string `json:"-"`
	// WorkerBinary is the worker program. Zero: Run builds
	// ./harness/chaos/cmd/chaosworker with `go build` (with -race when
	// Race is set) into Dir.
	WorkerBinary string `json:"-"`
	Race         bool   `json:"race,omitempty"`
	// ProxyLog writes the proxy's JSON log of every request to
	// Dir/proxy.jsonl.
	ProxyLog bool `json:"-"`
	// Log receives progress lines. Zero: discarded.
	Log io.Writer `json:"-"`

	// Producer, when set, makes the run the producer variant (see
	// RunProducer): producer processes send the jobs through the proxy;
	// there are no workers.
	Producer *ProducerSettings `json:"producer,omitempty"`
	// Fanout, when set, makes the run the fan-out variant: the jobs are
	// published to an SNS topic (snstest, in process) whose subscription
	// delivers them to the queue (see FanoutSettings).
	Fanout *FanoutSettings `json:"fanout,omitempty"`
}

// Kills is how the orchestrator stops worker processes during the chaos
// phase: every MinEvery to MaxEvery (uniformly, seeded) one running worker
// gets SIGKILL (with probability KillShare) or SIGTERM, and a replacement is
// started at once. Zero MaxEvery: no kills.
type Kills struct {
	MinEvery  time.Duration `json:"minEvery"`
	MaxEvery  time.Duration `json:"maxEvery"`
	KillShare float64       `json:"killShare"`
}

// interval draws the time to the next kill from rng: uniform in
// [MinEvery, MaxEvery).
func (k Kills) interval(rng *rand.Rand) time.Duration {
	if k.MaxEvery <= k.MinEvery {
		return k.MinEvery
	}
	return k.MinEvery + time.Duration(rng.Int64N(int64(k.MaxEvery-k.MinEvery)))
}

// Checks are a variant's acceptance criteria beyond the ones every run
// has (nothing lost, no hung or crashed worker, no succeeded or transient
// job in the DLQ, every poison job there with provenance, no unexplained
// duplicate, FIFO order).
type Checks struct {
	// MaxRunsPerJob, when positive, bounds handler runs per job.
	MaxRunsPerJob float64 `json:"maxRunsPerJob,omitempty"`
	// OnlyDeleteFaultDuplicates fails a duplicate that a fault on the
	// job's own delete does not explain.
	OnlyDeleteFaultDuplicates bool `json:"onlyDeleteFaultDuplicates,omitempty"`
	// MaxReceiveStop, when positive, bounds how long a SIGTERMed worker
	// may go on receiving (Processes.ReceiveStopMax).
	MaxReceiveStop time.Duration `json:"maxReceiveStop,omitempty"`
	// MaxRelease, when positive, bounds how long after SIGTERM a worker may
	// take to release a message it did not start (Processes.ReleaseMax).
	MaxRelease time.Duration `json:"maxRelease,omitempty"`
	// NoDeadLetters fails a run with any job in the DLQ (for a mix whose
	// jobs all succeed).
	NoDeadLetters bool `json:"noDeadLetters,omitempty"`
}

// ShutdownBound is how long a worker may take to return from Run after
// SIGTERM: ShutdownTimeout + FlushTimeout.
func (c Config) ShutdownBound() time.Duration {
	return c.Worker.ShutdownTimeout + c.Worker.FlushTimeout
}

// RunSlack is what Run may take, after SIGTERM, beyond ShutdownTimeout +
// FlushTimeout before the report counts it over its bound: the timers
// start a little after the signal (the signal goroutine, the cancel, the
// handlers' return), which the bound does not count.
const RunSlack = 100 * time.Millisecond

// ExitSlack is what a worker process gets on top of ShutdownBound to exit
// after SIGTERM (signal delivery, writing its exit record, process exit, on
// a loaded machine) before it counts as hung and gets SIGKILL.
const ExitSlack = 2 * time.Second

// Variants lists the named variants.
func Variants() []string {
	return []string{"graceful", "chaos", "blackhole", "throttle", "scale", "fifo", "drain", "producer", "fanout", "idempotency", "unique", "lambda", "soak"}
}

// Variant returns a named variant's configuration:
//
//   - graceful: throttling, 5xx, resets and latency on every action;
//     SIGTERM only.
//   - chaos: every fault (dropped responses and hangs too); SIGKILL and
//     SIGTERM every 1 to 4 s.
//   - blackhole: 25% of deletes and visibility changes and 5% of the other
//     calls never answer, CallTimeout 10 s; SIGTERM every 2 to 5 s: every
//     worker must exit within its shutdown bound.
//   - throttle: 10% of DeleteMessageBatch throttled, 50,000 jobs that
//     succeed, SIGTERM every 3 to 6 s: at most 1.01 handler runs per job.
//   - scale: 100,000 jobs, 6 workers (Concurrency 32, CallTimeout 5 s),
//     the chaos faults and kills.
//   - fifo: the chaos variant on a FIFO queue with 50 groups.
//   - drain: 3 workers under load (jobs that all succeed, 0 to 200 ms of
//     work),
//     no faults, SIGTERM every 2 to 4 s (each replaced): every worker
//     must stop receiving within 1 s of the signal, release what it
//     prefetched within 1 s, and return within
//     ShutdownTimeout + FlushTimeout, nothing lost, nothing dead-lettered
//     (maxReceiveCount 5, so receives wasted on draining workers would
//     show).
//   - producer: 8 producer processes send 40,000 jobs through the chaos
//     faults (MaxAttempts 2, so some sends fail), up to 6 of them stopped
//     mid-send every 3 to 6 s (75% SIGKILL, the rest SIGTERM); every job reported sent is in the queue, every
//     one reported failed is absent or there from a lost answer (see
//     RunProducer).
//   - fanout: the chaos variant behind SNS: jobs published to a topic
//     (snstest) whose deliveries to the queue fail 36% of the time (5
//     retries, 3 at once and 2 after 1 s, then the subscription DLQ),
//     workers unwrapping the envelopes (fanout.Unwrap); every job done or
//     in a DLQ with its reason.
//   - idempotency: the chaos variant with the handler wrapped by an
//     idempotency.Guard on DynamoDB Local, behind a fault proxy with the
//     chaos faults too; each job's side effect is a conditional write
//     (see idempotencyVariant).
//   - unique: the chaos variant with every job sent with a unique key
//     (twice: the second send refused), the workers' settlements freeing
//     the keys through a unique.Store on DynamoDB Local behind a fault
//     proxy with the chaos faults; every key free at the end or held for
//     a cause the run shows and taken over at the documented bound (see
//     uniqueVariant).
//   - lambda: the chaos variant's jobs and SQS faults through
//     sqslambda.RunLocal, one invocation at a time per process, the
//     process killed when an invocation outlives its deadline (see
//     lambdaVariant).
//   - soak: 1,000,000 jobs, the scale variant's workers, faults and kills,
//     except the first worker process, never signalled until the queue is
//     drained: its RSS, sampled every 5 s, must end within 20% of its
//     value once 10% of the jobs were settled.
func Variant(name string) (Config, error) {
	c := base()
	c.Variant = name
	switch name {
	case "graceful":
		c.Faults = map[string]faultproxy.Rule{"*": {Throttle: 0.03, ServerError: 0.02, Reset: 0.02, LatencyJitter: 20 * time.Millisecond}}
		c.Checks.OnlyDeleteFaultDuplicates = true
	case "chaos":
		c.Faults = chaosFaults()
		c.Kills = Kills{MinEvery: time.Second, MaxEvery: 4 * time.Second, KillShare: 0.5}
	case "blackhole":
		// Calls that never answer, and the SDK call timeout longer than
		// the flush bound: only the runtime's own bounds end a shutdown.
		c.Jobs = 3000
		c.Faults = map[string]faultproxy.Rule{
			"*":                            {Hang: 0.05},
			"DeleteMessageBatch":           {Hang: 0.25},
			"ChangeMessageVisibilityBatch": {Hang: 0.25},
		}
		c.Worker.CallTimeout = 10 * time.Second
	case "throttle":
		c.Jobs = 50_000
		c.Mix = Mix{MaxWork: 5 * time.Millisecond}
		c.Faults = map[string]faultproxy.Rule{"DeleteMessageBatch": {Throttle: 0.10}}
		c.Kills = Kills{MinEvery: 3 * time.Second, MaxEvery: 6 * time.Second}
		c.Duration = 2 * time.Minute
		c.Checks.MaxRunsPerJob = 1.01
	case "scale":
		c.Jobs, c.Workers = 100_000, 6
		c.Mix.Slow = 0.005
		c.Faults = chaosFaults()
		c.Kills = Kills{MinEvery: time.Second, MaxEvery: 4 * time.Second, KillShare: 0.5}
		c.Duration, c.DrainTimeout = 30*time.Minute, 10*time.Minute
		c.Worker.Concurrency, c.Worker.CallTimeout = 32, 5*time.Second
	case "fifo":
		c.Jobs, c.FIFO, c.Groups = 3000, true, 50
		c.Faults = chaosFaults()
		c.Kills = Kills{MinEvery: 2 * time.Second, MaxEvery: 5 * time.Second, KillShare: 0.5}
	case "drain":
		c.Jobs, c.Workers = 20_000, 3
		c.Mix = Mix{MaxWork: 200 * time.Millisecond}
		c.Faults = nil
		c.Kills = Kills{MinEvery: 2 * time.Second, MaxEvery: 4 * time.Second}
		c.MaxReceiveCount = 5
		c.Checks.MaxReceiveStop, c.Checks.MaxRelease = time.Second, time.Second
		c.Checks.NoDeadLetters = true
	case "producer":
		producerVariant(&c)
	case "fanout":
		fanoutVariant(&c)
	case "idempotency":
		idempotencyVariant(&c)
	case "unique":
		uniqueVariant(&c)
	case "lambda":
		lambdaVariant(&c)
	case "soak":
		c = soakConfig(c)
	default:
		return Config{}, fmt.Errorf("chaos: no variant %q; choose one of %s", name, strings.Join(Variants(), ", "))
	}
	return c, nil
}

// base is what the variants share.
func base() Config {
	return Config{
		Jobs: 5000, Workers: 4, Seed: 1,
		Mix:          Mix{Transient: 0.08, Poison: 0.02, Slow: 0.02, MaxFails: 2, SlowFor: 8 * time.Second, MaxWork: 5 * time.Millisecond},
		Kills:        Kills{MinEvery: 2 * time.Second, MaxEvery: 5 * time.Second},
		Duration:     60 * time.Second,
		DrainTimeout: 3 * time.Minute,
		Visibility:   5 * time.Second, MaxReceiveCount: 40,
		Worker: WorkerConfig{
			Concurrency: 16, ShutdownTimeout: 4 * time.Second, FlushTimeout: 3 * time.Second,
			CallTimeout: 2 * time.Second, StartupTimeout: 5 * time.Second, WaitTime: 2 * time.Second,
			RetryDelay: time.Second, MaxAttempts: 20,
		},
	}
}

// chaosFaults are the chaos variant's faults on every action.
func chaosFaults() map[string]faultproxy.Rule {
	return map[string]faultproxy.Rule{"*": {
		Throttle: 0.03, ServerError: 0.02, Reset: 0.02, DropResponse: 0.03, Hang: 0.005,
		LatencyJitter: 20 * time.Millisecond,
	}}
}
