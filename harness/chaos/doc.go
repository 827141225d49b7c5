// Package chaos is sqsworker's chaos suite: it measures the runtime's
// promise — a job is done, waiting for its next retry, or in the DLQ with
// its reason, never silently gone and never silently re-run — with real
// worker processes, a faulty network and kill -9. `make chaos` runs it
// (command harness/chaos/cmd/chaos); TestChaosBounded runs a bounded
// variant inside `make test`, and TestDrainBounded a bounded drain variant
// (workers SIGTERMed under load: receiving stops within 1 s, prefetched
// messages are released, Run returns within its bound), TestIdempotencyBounded,
// TestUniqueBounded and TestLambdaBounded the idempotency, unique and
// lambda variants, and
// TestSoakBounded a bounded soak (below). RELIABILITY.md at the
// repository's root has the figures of every variant and the command for
// each.
//
// # A run
//
//  1. Create a queue and its DLQ (dlq.Setup; FIFO for the fifo variant) on
//     the emulator and send N unique jobs (MakeJobs, seeded): jobs that
//     succeed, fail transiently a few times, are poison (retry.Permanent),
//     or work longer than the queue's visibility timeout (only the
//     heartbeat keeps them).
//  2. Start a fault proxy (harness/faultproxy) in front of the emulator and
//     the worker processes (harness/chaos/cmd/chaosworker, built with go
//     build) behind it. Each process runs a worker.Worker and records, in
//     files of its own: every handler run (RunRecord, one write each, so
//     it survives SIGKILL), every success (appended and fsynced before the
//     handler returns nil, group-committed), every settlement the runtime
//     confirmed (worker.Options.OnSettled), and, when Run returns, its
//     Stats and when it got SIGTERM (ExitRecord).
//  3. Chaos: the proxy injects its faults; every few seconds (seeded) one
//     worker gets SIGKILL or SIGTERM and a replacement starts. A SIGTERMed
//     worker still alive ShutdownTimeout + FlushTimeout + ExitSlack later
//     is hung: it gets SIGQUIT (its goroutines go to its .out file), then
//     SIGKILL.
//  4. Drain: faults off, no kills, until the queue is empty. Then every
//     worker gets SIGTERM, and the DLQ and whatever is left in the queue are
//     read.
//  5. Reconcile: every job sent is done (a success record), in the DLQ, or
//     still pending; anything else is lost. Poison jobs must all be in the
//     DLQ with their provenance (dlq.ParseProvenance); succeeded and
//     transient jobs never. In a FIFO run, no job's first success may come
//     before the first success of a job sent earlier in its group.
//
// # Soak
//
// The soak variant (`make chaos VARIANT=soak`: 1,000,000 jobs, 6 workers, the
// scale variant's faults and kills) keeps Soak.LongLived worker processes
// out of the kills. The orchestrator samples their RSS (/proc/PID/status
// VmRSS), and its own, every Soak.SampleEvery into memory.jsonl, with the
// jobs settled so far (sent minus what the queue counts); each worker
// process writes its Go heap (runtime/metrics) and its worker's counters
// as often to its .heap.jsonl file. The report's memory section takes the
// first sample at or past the warm-up (Soak.WarmUp of the jobs settled)
// as the baseline and fails the run when the last sample, the queue
// drained, exceeds it by more than Soak.MaxGrowth, or when a long-lived
// worker was not watched to the end. With Soak.Backlog the jobs are fed:
// that many sent before the workers start, the queue topped up as it
// empties (the emulator slows down with a deep queue). TestSoakBounded
// runs 6,000 jobs of it in `make test`.
//
// # Duplicates
//
// A duplicate is a success beyond a job's first (or a dead-letter copy
// beyond its first). Each is tied to a completed run that did not end its
// message, and classified by what the evidence shows about that run:
//
//   - killed before its delete: the process was SIGKILLed and no delete
//     carrying the run's receipt handle reached SQS;
//   - delete faulted: the proxy faulted a delete carrying that handle and
//     the worker reported the settlement abandoned;
//   - handler outlived its lease: the worker reported the message Lost, or
//     its settlement Late;
//   - DLQ send's answer lost (DLQ copies only): a send carrying the copy
//     reached SQS but the worker got no answer (the proxy dropped it, or
//     the call timed out while SQS was at work), so it sent the copy again;
//   - abandoned at shutdown with no fault on its delete;
//   - its settlement event dropped at shutdown: no event, the process was
//     not killed, and it counted events its hook dropped (Stats.HookDropped);
//   - confirmed after its lease lapsed, reported on time: the worker said
//     Deleted (or dead-lettered) and not Late, but the settlement record
//     (receipt, extensions, confirmation) shows the lease had run out — a
//     silent duplicate, which fails the run like an unexplained one;
//   - unexplained: none of these — a bug until shown otherwise.
//
// # The producer variant
//
// The sending side (RunProducer, Config.Producer): producer processes
// (the worker program with -produce: a SIGKILL must be able to take what
// the producer's batcher holds) send their share of the jobs with the
// public producer package — some chunks with SendBatch, the rest one
// Enqueue each — through the fault proxy, and record every job before
// handing it over and every Result. Some get SIGKILL or SIGTERM while
// sending. The queue is then read to its end and each job's copies are
// checked against what its producer reported: reported sent → in the
// queue under the reported message ID; reported failed → absent, or there
// only from sends that reached SQS while their answer was lost; no Result
// → only from a SIGKILLed producer (counted present or absent); never
// handed over → absent. Every copy beyond a job's first needs a send of it
// that reached SQS (the proxy saw it answered 200, or could not read the
// answer): a call can time out in the producer with SQS's answer on its
// way, which is also a lost answer.
//
// # The fan-out variant
//
// Config.Fanout puts SNS in front of the queue: fanout.Setup builds topic,
// subscription (with its dead-letter queue) and queue policies on an
// in-process snstest.Fake, since the emulator never fails a delivery, and
// the jobs are published to the topic. The Fake delivers each as an
// envelope through a second fault proxy (faults on SendMessage), retries
// what fails on SNS's policy (some retries at once, some on timers) and
// puts what still fails in the subscription's dead-letter queue. The
// workers unwrap the envelopes (fanout.Unwrap) under the chaos faults and
// kills. Every job must be done, in the queue's DLQ (poison, with its
// provenance) or in the subscription's DLQ (with failed deliveries and no
// successful one as its reason), and SNS must have discarded nothing. A
// delivery whose send reached SQS while SNS got no answer is delivered
// again: the report counts such duplicates as "SNS delivery's answer
// lost".
//
// # The idempotency variant
//
// The worker processes wrap the job handler with an idempotency.Guard
// (keyed by the job's ID) on DynamoDB Local, reached through a second fault
// proxy with the chaos faults; each job's side effect is a conditional
// PutItem of "effect#<job>" into a second table, carrying the run's token
// ("w3/17"), made after the work and before the success is recorded. An
// effect already there (another run's token) counts as done: the run
// succeeds without making it again, and is recorded as a re-run. The
// Guard's DynamoDB client records every completion it writes, with the
// answer. The reconciliation adds to the chaos variant's: no handler run
// may begin after a completion of its job was confirmed, no lock may
// replace a COMPLETED record, every done job has its side effect (made at
// most once, by the conditional write), and every re-run is explained by
// the run that made the effect: killed (or stopped) between the side
// effect and its completion record — the window of doubt the idempotency
// package documents, measured here —, its completion not recorded, or its
// side effect's answer lost (the run failed and was retried).
//
// # The lambda variant
//
// Each process is one Lambda execution environment: sqslambda.RunLocal
// invokes a sqslambda.Handler (with Options.Client, so failures get their
// retry delay and poison records are moved with provenance) around the
// same job handler, one batch at a time. Lambda's timeout is modelled by
// killing the process: an invocation still running at its deadline makes
// the process SIGKILL itself, as Lambda stops a timed-out invocation's
// environment (nothing after the deadline happens, the response never
// arrives, no record of the batch is deleted). Ending the invocation's
// context alone would model less: the function could still finish its
// calls and the event source mapping would still see its answer. The
// Handler's own cutoff (the deadline minus DeadlineMargin) ends the
// handlers' contexts before that, which the report counts. Successes are
// not recorded as settlements (the adapter reports them before Lambda
// deletes them): the proxy's view of the deletes decides whether a success
// ended its message, and the same reconciliation applies.
//
// # Not covered
//
// The suite runs against the local emulator (fauxqs), on one machine: its
// figures say nothing about real SQS's latency or its own at-least-once
// redeliveries, which the emulator does not produce. Machine crashes (the
// page cache lost) are not simulated: SIGKILL keeps what a process wrote.
package chaos
