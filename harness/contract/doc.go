// Package contract is the lifecycle contract suite: every scenario — a
// handler's outcome, a fault on the way to SQS — runs through every
// runtime (the worker, and the Lambda adapter driven as Lambda's event
// source mapping drives it), and each must leave its message in the same
// state in SQS. It tests the runtimes only through their public API
// (worker.New and Run; sqslambda.New, Handle and RunLocal), so it holds
// whatever engine is behind them.
//
// # What it checks
//
// One message per scenario (three, received and settled in one batch, for
// the failed-entry scenarios: each failure must be mapped back to its own
// message), one runtime at a time, on a fresh source queue
// (VisibilityTimeout 10 s) with a dead-letter queue. The messages are
// sent, the faults injected, and the runtime runs until it reports the
// scenario's settlements (Options.OnSettled); then it is stopped, the
// faults are removed, and the suite reads SQS itself:
//
//   - Deleted: gone from the source and not in the DLQ.
//   - BackAfter: still in the source, hidden, and visible again the
//     expected delay after its settlement (the retry policy's delay,
//     retry.After's), within the backend's tolerance.
//   - DeadLettered: gone from the source; in the DLQ with provenance
//     (dlq.ParseProvenance: the source queue, the attempt, the reason and
//     the handler's error), as many copies as expected.
//   - ComesBack: not deleted, not in the DLQ, visible again within the
//     visibility timeout: what must happen when a DLQ copy fails for good
//     (AccessDenied, a KMS error, the DLQ gone) — a message is never
//     deleted without its copy.
//   - Untouched: never received (only for a declared gap, below).
//
// It also counts handler runs. The scenarios (Scenarios) cover success,
// errors, retry.After, retry.Permanent, exhausted attempts, panics and
// handler timeouts (the worker's HandlerTimeout, the Lambda invocation's
// deadline); DLQ copies failing and then succeeding, or failing for good;
// failed batch entries, and entries missing from a batch response (which
// must count as failed); lost responses; hung calls ended by the call
// timeout.
//
// # Backends
//
// Fake runs every scenario on sqstest's in-memory SQS inside a
// testing/synctest bubble: its faults (sqstest.Fault) cover every kind,
// and its time is virtual, so the whole suite takes well under a second.
// Emulator runs, on the local emulator (see testenv; under make test a
// missing emulator fails), the scenarios whose faults a faultproxy in
// front of it can inject (throttling, HTTP 500, a dropped response, a
// hang, the DLQ deleted); each scenario's Cannot reason is logged for the
// others. Its scenarios run in parallel, in real time (about 20 s).
//
// # Differences
//
// Where a runtime ends differently by design, the scenario declares it
// (Scenario.Differs, by runtime name) with the fate it reaches instead and
// why; the suite asserts that fate as strictly and logs the reason. The
// one declared today: in Lambda the event source mapping deletes
// successful records itself, once, and does not retry a failed delete, so
// a success whose delete fails comes back (the worker retries its
// delete). Differences that change no fate are not declared: the worker
// extends a running message's visibility with its heartbeat, Lambda does
// not; the worker hides a message whose DLQ copy failed for the
// visibility timeout from then, the Lambda adapter reports it failed and
// it returns a visibility timeout after its receive. A Difference marked
// Gap is a known defect, not a design: the suite asserts it, so that the
// fix makes the suite fail until the declaration is deleted.
//
// # Adding a scenario
//
// Append a Scenario to Scenarios: a handler behaviour (Handle, given the
// run number), how many messages, the faults to inject (once the runtime
// is built and the messages sent, before it runs), how many settlements
// per message to wait for, and the Fate.
// A new fault kind needs a FaultKind, its mapping in the fake's Env (an
// sqstest.Fault; add what sqstest lacks there, with its own test), and
// either its mapping in the emulator's or a reason in its Cannot.
//
// # Adding a runtime
//
// A Runtime is a name and a New function that builds the runtime from a
// Setup (the client the faults apply to, the source queue, the handler,
// the retry policy, the settlement hook) without receiving yet, and
// returns the function that runs it until its context ends. Add it to
// Runtimes; every scenario then runs through it, and any fate it reaches
// by design differently is declared in the scenarios it concerns.
package contract
