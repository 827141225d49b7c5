// Package fleet holds the controls shared by every worker of a queue —
// rate limits, concurrency caps, pause and resume, circuit breakers —
// in one DynamoDB table, so that they hold across processes, containers
// and Lambda functions, not per process as worker.Options.Concurrency
// does.
//
//	f, err := fleet.New(dynamoClient, "sqsworker-fleet") // see CreateTable
//	payments, err := f.RateLimit("payments-api", 50)     // 50 jobs/s, fleet-wide
//	tenants, err := f.Cap("tenant", 3, func(o *fleet.CapOptions) { o.Key = fleet.ByGroup })
//	down, err := f.Breaker("payments-api", func(o *fleet.BreakerOptions) { o.Counts = isOutage })
//	pause, err := f.Pauser(queueURL)
//	w, err := worker.New(sqsClient, queueURL,
//		worker.Chain(handler, down.Middleware(), tenants.Middleware(), payments.Middleware()),
//		func(o *worker.Options) { o.ReceiveGate = fleet.AllOpen(pause, down) })
//
// Order the middleware so that the cheapest refusal comes first: the
// breaker (no DynamoDB call while closed or open), then caps, then rate
// limits (a token is spent only by a job that will run).
//
// # The table
//
// The table has a partition key pk of type S and no sort key, on-demand
// capacity, and time-to-live on expiresAt (epoch seconds), so that items of
// keys no longer used (a tenant gone quiet) expire by themselves; pause
// items never expire. [CreateTable] makes it (or write it in your
// infrastructure code) and New checks it. Items are named
// "<kind>|<name>|<key>": rate|…, cap|…, pause|<queue name>, breaker|….
//
// # Waiting is a snooze
//
// A job that must wait — no token, its tenant's cap full, the breaker
// open — is snoozed (retry.Snooze): its message is hidden until it may
// run, no attempt is counted, and it is never dead-lettered by the
// worker for it. A rate-limited job first waits in-process up to
// RateLimitOptions.MaxWait (1 s), which keeps snoozes rare while the
// fleet runs at its limit.
//
// Waiting never spends the queue's receive budget: on a standard queue the
// runtime relays a snoozed message as a fresh copy (delayed by the snooze,
// carrying the job's ID and the attempts it spent; see retry.Snooze), so
// SQS's own redrive, which moves a message after maxReceiveCount receives,
// never dead-letters a job for waiting, however long a flood lasts, and a
// snooze never counts as an attempt. The queue keeps the maxReceiveCount
// its retry policy needs (dlq.Setup's default is fine).
//
// A FIFO message cannot be relayed (the copy would go to the end of its
// group): there each snooze hides the message and is a receive. On FIFO
// queues with fleet controls, set maxReceiveCount well above the retries
// the policy allows (for example 100) and count attempts exactly with
// retry/dynamocounter, so that the retry policy, not SQS's receive count,
// decides when a failing job is dead-lettered (dynamocounter also takes
// the snoozed attempt back). Lint (`sqsworker doctor --fleet`) checks a
// FIFO queue against this rule: maxReceiveCount at least the policy's
// attempts plus the snoozes a job may meet (LintOptions.Snoozes, 50 by
// default), and attempts counted exactly.
//
// # Rate limits
//
// RateLimit is a token bucket per key in one item: rate tokens per
// second, at most Burst (a fifth of a second's worth by default) stored.
// A process takes tokens with conditional writes, for as many of its jobs
// as are waiting (up to Burst) in one request — the jobs that come to wait
// while the request is on its way included — and never holds tokens for
// later: over any window of t seconds at most Burst + rate × t jobs start
// fleet-wide. A write that loses a race reads the winner's state from the
// failed condition (no extra read), and a process that knows no token is
// due does not ask. Measured cost (4 processes, BENCHMARKS.md): 0.6-0.8
// DynamoDB requests per job.
//
// # Concurrency caps and tenant fairness
//
// Cap allows K running jobs per key across the fleet. A slot is an entry
// in the key's item with a lease expiry that follows the message's
// visibility deadline (worker.VisibilityDeadline): renewed whenever the
// worker's heartbeat extends the message, given up when the handler
// returns. It lives until that deadline plus a margin (a quarter of the
// lease, 250 ms to 5 s) that covers a renewal's way to DynamoDB. When a
// process dies (kill -9), its slots expire that margin after its messages
// become visible again — within one lease and a quarter — and the next
// acquisition drops them. Keyed by ByGroup (the MessageGroupId of an SQS
// fair queue: a standard queue whose producers set it, see
// producer.Message.GroupID) or ByAttribute, a Cap keeps one flooding
// tenant from taking every handler: its jobs beyond the cap wait or are
// snoozed while other tenants' jobs run. A message without a key (no
// MessageGroupId) is shared, snoozed or refused as CapOptions.Unkeyed says;
// the first is logged and Stats.Unkeyed counts them.
//
// A cap keeps its slots busy across the fleet as follows:
//
//   - A job that finds the cap full waits in-process (CapOptions.MaxWait,
//     1 s; at most MaxWaiting, 1, per key and process, in any process).
//     A slot this process frees goes to it at once, without a request;
//     otherwise it asks DynamoDB again every job time of its key (the
//     slots' turnover, measured: 100 to 500 ms, spread at random), so a
//     slot freed anywhere in the fleet goes to a waiting job within about
//     a second. A key occupies at most its running jobs plus MaxWaiting of
//     a process's handlers: with worker.Options.Concurrency above the cap
//     plus one, a flooding key always leaves handlers to the others.
//   - A slot whose job ended with no job of its key waiting, while the
//     key's jobs come to this process in a stream (two within the last
//     second), stays with the process for a quarter of a second, for the
//     next job of the key that the worker receives (handed over without a
//     request), then is given back; otherwise it is given back at once. The acquisitions of a key in one process go one at a time (two
//     conditional writes at once would fail each other).
//   - A job that got no slot is snoozed (relayed, see above) for a quarter
//     of the time the key's backlog takes at the cap: the key's jobs
//     snoozed across the fleet and not yet back (each process counts its
//     own and writes its count in the key's item, at most once a second
//     and only once it reaches the limit) times the key's job time (the
//     slots' holders write it in the item) over the cap, between
//     FullSnooze (1 s) and MaxSnooze (15 minutes), spread at random
//     between half and one and a half times that. A job is then snoozed
//     about four times while it waits, whatever the flood's length, and
//     the key's jobs come back at about four times the pace its slots
//     free, so a job is waiting whenever one frees. The count leaves out
//     jobs visible in the queue or in a worker's hands, so the snooze errs
//     short (more snoozes), never long (idle slots).
//
// Measured (BENCHMARKS.md): a tenant flooding 20,000 jobs of 500 ms under
// a cap of 5, 4 processes × 5 handlers, kept 94.8% of its slots busy for
// the 35 minutes its backlog lasted, none dead-lettered at maxReceiveCount
// 5, 5.2 snoozes and 0.72 DynamoDB requests per job; with a full cap of 3
// per tenant the cap costs 0.3-0.8 requests per job at 0, 50 and 200 ms
// jobs, renewals included.
// In one process, 60 jobs of 500 ms under a cap of 3 take 10.2 s (3 slots
// busy throughout: 10 s), none snoozed.
//
// # Pause and resume
//
// Pause and Resume set a queue's switch (also `sqsworker pause|resume
// QUEUE`). A Pauser given as worker.Options.ReceiveGate reads it every
// Interval (2 s, at most 5 s): a paused worker stops receiving, ends its
// poll in flight, releases its prefetched messages at once (visibility 0)
// and lets running handlers finish and settle as usual; it stays live but
// not ready (worker.Health). No attempt is counted and nothing is
// dead-lettered for a pause. For the Lambda adapter, disable the event
// source mapping, or use Pauser.Middleware, which snoozes each message
// while the queue is paused.
//
// # Circuit breaker
//
// Breaker opens after Threshold counted failures in a row (the user's
// BreakerOptions.Counts says which errors mean the downstream is down):
// while open, jobs are snoozed until it half-opens; then one job probes,
// and its success closes it. Counted failures are snoozed, not failed, so
// an outage spends no job's retries. A Breaker is also a
// worker.ReceiveGate (combine it with a Pauser with AllOpen): while it is
// open the worker stops receiving and releases what it prefetched, rather
// than receiving and snoozing every message. When it half-opens the gate
// opens for one probe (Breaker.Probe: the worker makes one receive of at
// most one message), is closed while that probe runs, and opens for good
// when the probe closes the breaker; a window in which no probe started
// (its message went elsewhere) lets another message in after 2 s. So each
// process receives one message per half-open window, not a batch to
// snooze. With Shared, opening is written to the table and honoured by
// every process within SyncInterval (as a gate, once one of its jobs has
// read it).
//
// # Seeing it
//
// A worker whose ReceiveGate is a Pauser, a Breaker or AllOpen of them is
// live but not ready while the gate is closed, and worker.Health's reason
// says why ("queue orders is paused", "breaker payments-api is open until
// …": their Ready methods). Breaker.Ready in worker.HealthOptions.Checks
// makes a worker not ready while its breaker is open also when the breaker
// is only middleware. Stats counts what the controls did; sqsotel's
// ObserveFleet turns it into metrics (snoozes by control, tokens, slots
// held, each queue's pause switch, each breaker's state), and `sqsworker
// status QUEUE --table T` shows a queue's pause switch, the shared
// breakers and the cap slots in use.
//
// # Faults
//
// New refuses a missing table (its error wraps the SDK's
// *types.ResourceNotFoundException and says what to do) or one with another
// key, and each constructor refuses a limit of 0. When DynamoDB cannot be
// asked (an outage, throttling beyond the one retry the library's rule
// makes; the SDK's own retries are off, so a refused connection fails
// within about 100 ms), each control does what its options say:
//
//	RateLimit, Cap   fail closed by default: the job is snoozed for ErrorSnooze (10 s);
//	                 FailOpen runs it unchecked
//	Pauser           fails open: the last state read stays in force (open if never read)
//	Breaker(Shared)  works on its own local state
//	slot renewal     retried every second; a slot that expired meanwhile is counted in
//	                 Stats.SlotsLost and logged (the cap may be exceeded until that job ends)
//
// A control whose call failed does not ask again for every job: its next
// jobs are decided at once (run with FailOpen, else snoozed), while a
// background read checks every 250 ms whether DynamoDB answers again, so
// one job per control waits on the outage and fail-open jobs keep their
// pace (measured: 99% of it with DynamoDB refusing connections).
// Nothing is lost and nothing is dead-lettered for it. Stats counts every
// request, snooze and fallback. A slot whose acquisition's answer was
// lost is recognised as taken when the retry finds it in the item;
// a slot whose acquisition failed (it may have been written) or whose
// release did not get through is dropped by this process's next write of
// the key, rather than keeping the key fuller than it is until its lease
// ends. Tokens whose answer was lost are not used: the limit can only be
// under-used for it.
//
// # Clocks
//
// A slot's expiry is a time on its holder's clock, read on the others':
// a process whose clock is s ahead takes a slot s before its lease ends.
// The cap holds while every slot keeps more lease than the largest
// difference between the fleet's clocks: in the worker a slot's lease
// runs until its message's visibility deadline plus the margin (a quarter
// of the visibility timeout, 250 ms to 5 s), so keep the clocks closer
// than that margin (NTP keeps them within milliseconds; with clocks 4 s
// apart, use a visibility timeout of 20 s or more). A slot lost this way
// is counted in Stats.SlotsLost if its holder renews it afterwards. Rate
// limits barely depend on the clocks agreeing: a process whose clock is
// ahead of the bucket's time moves it to its own, which adds at most one
// Burst, once; a process whose clock is behind moves it on by what its
// own clock measured since it read the bucket, so it is not kept from
// tokens until its clock catches up (TestClockSkewBetweenProcesses:
// clocks 4 s apart, Burst + rate × t + Burst held, tokens shared evenly).
package fleet
