// Package worker is sqsworker's runtime: it receives messages from one SQS
// queue, runs a Handler on each with bounded concurrency, and settles every
// message so that a job is either done, waiting for its next retry, or in
// the dead-letter queue with its reason — never silently gone.
//
// # Lifecycle
//
//	handler returned nil                  → deleted (DeleteMessageBatch, batched, flushed on shutdown)
//	ordinary error, panic, handler timeout → attempt n → Options.RetryPolicy → visibility set to the delay
//	                                        (ChangeMessageVisibilityBatch, capped by SQS's 12 h limit from receipt)
//	retries exhausted                     → moved to the DLQ now, with provenance (dlq.Mover: send, then delete)
//	retry.Permanent(err)                  → moved to the DLQ now, with provenance
//	retry.After(d, err)                   → visibility set to exactly d (capped); the attempt still counts
//	handler still running                 → the heartbeat (package visibility) extends the visibility in batches;
//	                                        if ownership is lost the handler's context is cancelled with the cause
//	received, not started, at shutdown    → released at once (visibility 0) for another consumer
//	running when the shutdown deadline passes → handler cancelled (cause ErrShutdown); message released
//	queue without RedrivePolicy           → New refuses, unless Options.AllowNoDLQ
//
// A failed message is deleted only after its dead-letter copy is confirmed
// sent. When the move fails, the message stays in the queue and comes back.
//
// # Receiving
//
// Pollers long-poll (20 s by default) with batches of up to 10, and never
// ask for more messages than there are free handler slots, so no message
// waits invisibly in a local buffer while its receive count grows. A poller
// waits briefly (Options.ReceiveBatchWait) for more free slots so receives
// carry full batches. Transient receive errors back off exponentially;
// errors retrying cannot fix (queue deleted, access denied, bad
// credentials) end Run with an error that says what to check.
//
// # FIFO queues
//
// Messages of one MessageGroupId run one at a time, in order; groups run in
// parallel. When a message of a group does not succeed, the later messages
// of that group from the same receive are released unprocessed (visibility
// 0), so SQS delivers them again after the failed one and order holds.
//
// # Attempts
//
// The attempt number that the retry policy sees comes from
// Options.AttemptCounter: by default SQS's ApproximateReceiveCount, which
// can over-count (a receive that never reached a handler still counts);
// retry/dynamocounter counts handler starts exactly.
//
// # Observing a worker
//
// Stats counts messages by fate, what is held now, heartbeat extensions,
// receives by batch size, and every SQS call by API, result class and
// billed payload; Stats.Cost prices those calls (Pricing: 64 KiB billing
// chunks, dollars per million requests) per message and per million
// messages. Health says whether the worker is live and ready (receiving,
// not failing, not stuck), HealthHandler serves it to liveness and
// readiness probes, and StatsHandler serves Stats as JSON for
// `sqsworker cost`. Options.OnSettled reports each message's confirmed fate;
// the OpenTelemetry module github.com/sqsworker/sqsworker/sqsotel builds
// traces and metrics on it and on Middleware.
//
// # IAM
//
// The worker needs sqs:GetQueueAttributes, sqs:ReceiveMessage,
// sqs:DeleteMessage and sqs:ChangeMessageVisibility on the queue, and
// sqs:GetQueueUrl, sqs:GetQueueAttributes and sqs:SendMessage on its
// dead-letter queue.
package worker
