// Package worker is sqsworker's runtime: it receives messages from one SQS
// queue, runs a Handler on each with bounded concurrency, and settles every
// message so that a job is either done, waiting for its next retry, or in
// the dead-letter queue with its reason — never silently gone, never
// silently re-run.
//
// # Lifecycle
//
//	handler returned nil                  → deleted (DeleteMessageBatch, batched)
//	ordinary error, panic, handler timeout → attempt n → Options.RetryPolicy → visibility set to the delay
//	                                        (ChangeMessageVisibilityBatch, capped by SQS's 12 h limit from receipt)
//	retries exhausted                     → copied to the DLQ with provenance (SendMessageBatch), then deleted
//	retry.Permanent(err)                  → copied to the DLQ with provenance, then deleted
//	retry.After(d, err)                   → visibility set to exactly d (capped); the attempt still counts
//	retry.Snooze(d, why)                  → visibility set to d; not a failure: never dead-lettered for it
//	not due yet (a delay beyond 15 min)   → hidden or re-sent fresh until due; the handler does not run
//	handler still running                 → the heartbeat extends the visibility in batches; if ownership is lost the
//	                                        handler's context is cancelled with the cause (visibility.ErrLost, or
//	                                        visibility.ErrMaxVisibility at SQS's 12 h limit)
//	received, not started, at shutdown    → released at once (visibility 0) for another consumer
//	running when the shutdown deadline passes → handler cancelled (cause ErrShutdown); message released when it returns
//	still running FlushTimeout/2 after that → Run returns without it (ErrHandlersNotStopped); while the process lives
//	                                        the message stays leased (up to 12 h) and what the handler returns is
//	                                        settled as usual; if the process exits, SQS delivers it again
//	queue without RedrivePolicy           → New refuses, unless Options.AllowNoDLQ
//
// A failed message is deleted only after its dead-letter copy is confirmed
// sent. When the copy fails, the message stays in the queue and comes back.
// A message too large for a dead-letter queue smaller than its queue goes
// through Options.DeadLetterOffloader (an s3payload.Store) when it is set;
// otherwise it is not dead-lettered, and its reason is logged at ERROR and
// given in its settlement's Reason (see package dlq; New warns of the
// mismatch).
// The handler gets a copy of the message: nothing it does to its Message —
// through any pointer, byte slice or map it reaches, Raw included — changes
// how the message is settled, its dead-letter copy, or the Settlement
// reported.
//
// # Ownership until SQS confirms
//
// A message is owned from its receipt until SQS confirms its settlement —
// the delete, the retry delay, the release, or the dead-letter move. Until
// then the heartbeat keeps extending it, also while its delete waits in a
// batch or is retried after a throttled or failed call; the lease is held
// only for the call that settles it, so no extension can overwrite a retry
// delay. Every settling call has its own timeout (Options.CallTimeout) and
// one retry rule (exponential backoff with jitter, for as long as the
// message is owned; the SDK's own retries are off for these calls so each
// retry is counted). Messages awaiting confirmation count against
// Options.MaxUnsettled: when settlement lags, the worker stops receiving
// rather than pile up messages whose deletes it cannot get through.
//
// What could not be confirmed is never silent: a settlement SQS confirmed
// only after the message's visibility deadline (another consumer may have
// received it) is counted in Stats.SettledLate; one that could not be
// confirmed at all in Stats.Abandoned (the message comes back); retried
// deletes in Stats.DeleteRetried. Warnings are logged once per cause per
// interval, not once per message. Options.OnSettled tells a program (its
// metrics, traces, idempotency records) each message's confirmed fate.
//
// # Receiving
//
// A fixed pool of Concurrency handler goroutines takes messages from a
// buffer that pollers fill ahead of them, so handlers never wait for a
// receive's round trip: throughput is bounded by the handlers or by SQS,
// not by latency. The buffer's depth adapts to measured throughput ×
// receive latency (twice that, plus one batch), within Options.MaxPrefetch:
// while receives come back full, the throughput the handlers can take
// (Concurrency / mean handler time, not what they happened to get); while
// they come back partial, the rate messages arrive, so that a drained queue
// is not polled by more receives than it fills. Prefetched messages are leased like
// running ones from their receipt, counted in Stats.Prefetched, and
// released at once on shutdown. Receives carry full batches of 10 at steady state whatever
// Options.Pollers is; fewer only when a handler would otherwise starve.
// While the queue is empty only one long poll (20 s by default) stays open.
// A message's lease counts from the start of the receive that brought it
// (SQS hid it no earlier), so a long poll never waits longer than the
// visibility timeout less the heartbeat's threshold: what it brings at the
// end of its wait still arrives with its lease held.
// Transient receive errors back off exponentially; errors retrying cannot
// fix (queue deleted, access denied, bad credentials) end Run with an error
// that says what to check.
//
// Options.ReceiveGate pauses receiving from outside (package fleet's
// Pauser: a switch shared by every worker of the queue): while it is
// closed the receives in flight get half a second to come back (what they
// bring is released, as at shutdown) and are then ended, prefetched
// messages are released at once, running handlers finish, and Health reports the worker live
// but not ready.
//
// # Shutdown
//
// When Run's context ends, receiving stops and what waits in the buffer is
// released at once. The receive calls in flight get half a second (at most
// ShutdownTimeout) to come back — one whose answer is on the wire has
// hidden its messages already, and they are released too — and a long
// poll still waiting is then cancelled, so it does not take messages
// during the drain only to release them. Running handlers get Options.ShutdownTimeout, then
// their contexts are cancelled (cause ErrShutdown) and their messages
// released. Once the handlers have returned, pending settlements are
// flushed for at most Options.FlushTimeout; messages whose handle is no
// longer valid (deadline passed, ownership lost) are not sent, and what
// could not be confirmed is counted and logged once ("N settlements not
// confirmed at shutdown; those messages will be delivered again"). So Run
// returns within ShutdownTimeout + FlushTimeout of its context's end,
// whatever the network does.
//
// Nor can a handler that ignores its context hold Run: a goroutine cannot
// be stopped from outside, so, as http.Server.Shutdown does, Run returns
// without it. A cancelled handler has the first half of FlushTimeout to
// return; Run returns without one still running then, logging it at ERROR
// with its message ID, and Run's error wraps ErrHandlersNotStopped and
// says how many there were. Its message is not released: another consumer
// would run the job while this handler still does. While the process lives
// (an HTTP service embedding the worker, say) the message stays leased —
// the heartbeat goes on extending it after Run returned, up to SQS's
// 12-hour limit — and what the handler returns is settled as usual:
// deleted on success, retried, dead-lettered or released, counted in Stats
// and reported to Options.OnSettled. If the process exits first, SQS
// delivers the message again when its visibility timeout ends (an attempt
// that counts).
//
// # FIFO queues
//
// Messages of one MessageGroupId run one at a time, in order; groups run in
// parallel. A group's next message starts only once SQS confirmed the
// previous one's delete (or dead-letter move); when that does not happen,
// the rest of the group is released unprocessed, so SQS delivers them again
// after the failed one and order holds.
//
// # Attempts
//
// The attempt number that the retry policy sees comes from
// Options.AttemptCounter: by default SQS's ApproximateReceiveCount, which
// can over-count (a receive that never reached a handler still counts);
// retry/dynamocounter counts handler starts exactly.
//
// # Connections
//
// The worker keeps several calls of each kind in flight (up to Pollers
// receives, deletes and visibility changes each, and the heartbeat's
// calls). The SDK's default HTTP client keeps 10 idle connections per
// host; above Concurrency 20 or so, give the client more, or it opens and
// closes TCP connections as calls come and go:
//
//	httpClient := awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
//		t.MaxIdleConnsPerHost = 100
//	})
//	client := sqs.NewFromConfig(cfg, func(o *sqs.Options) { o.HTTPClient = httpClient })
//
// # Observing a worker
//
// Stats counts messages by fate, what is held now, heartbeat extensions,
// receives by batch size, and every SQS call by API, result class and
// billed payload; Stats.Cost prices those calls (Pricing: 64 KiB billing
// chunks, dollars per million requests) per message and per million
// messages. Health says whether the worker is live and ready (receiving,
// not failing, not stuck), LivenessHandler and ReadinessHandler serve it
// to probes, and StatsHandler serves Stats as JSON for
// `sqsworker cost`. Stats also carries the scaling signals: handler slots,
// runs and busy time, Capacity (Concurrency / mean handler time, messages
// per second), OldestAge (how long fresh messages waited) and, with
// Options.BacklogInterval, the queue's depth (Backlog); `sqsworker
// template --scaling` turns the capacity into a KEDA, ECS or Lambda
// configuration. Options.OnSettled reports each message's confirmed fate;
// the OpenTelemetry module github.com/sqsworker/sqsworker/sqsotel builds
// traces and metrics on it and on Middleware.
//
// # IAM
//
// The worker needs sqs:GetQueueAttributes, sqs:ReceiveMessage,
// sqs:DeleteMessage and sqs:ChangeMessageVisibility on the queue (and
// sqs:SendMessage on it for jobs delayed beyond 15 minutes), and
// sqs:GetQueueUrl, sqs:GetQueueAttributes and sqs:SendMessage on its
// dead-letter queue.
package worker
