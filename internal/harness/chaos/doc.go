// Package chaos is sqsworker's chaos suite: it measures the runtime's
// promise — a job is done, waiting for its next retry, or in the DLQ with
// its reason, never silently gone and never silently re-run — with real
// worker processes, a faulty network and kill -9. `make chaos` runs it
// (command internal/harness/chaos/cmd/chaos); TestChaosBounded runs a bounded
// variant inside `make test`, and TestDrainBounded a bounded drain variant
// (workers SIGTERMed under load: receiving stops within 1 s, prefetched
// messages are released, Run returns within its bound). RELIABILITY.md at the repository's root has
// the figures of every variant and the command for each.
//
// # A run
//
//  1. Create a queue and its DLQ (dlq.Setup; FIFO for the fifo variant) on
//     the emulator and send N unique jobs (MakeJobs, seeded): jobs that
//     succeed, fail transiently a few times, are poison (retry.Permanent),
//     or work longer than the queue's visibility timeout (only the
//     heartbeat keeps them).
//  2. Start a fault proxy (internal/harness/faultproxy) in front of the emulator and
//     the worker processes (internal/harness/chaos/cmd/chaosworker, built with go
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
// # Not covered
//
// The suite runs against the local emulator (fauxqs), on one machine: its
// figures say nothing about real SQS's latency or its own at-least-once
// redeliveries, which the emulator does not produce. Machine crashes (the
// page cache lost) are not simulated: SIGKILL keeps what a process wrote.
package chaos
