// Package idempotency runs each job once, as far as a DynamoDB table can
// tell, for a worker.Worker and for the same handler on AWS Lambda
// (worker/sqslambda): "effectively once" on top of SQS's at-least-once
// delivery.
//
// SQS may deliver a message twice, and a consumer that dies between its
// handler's success and the delete (kill -9, a lost network, a delete that
// fails) gets the message delivered again. A [Guard] wraps the handler
// (Guard.Wrap is a worker.Middleware) and keeps one record per job in a
// DynamoDB table, so that a second delivery of a job that completed is
// acknowledged without running, and one that arrives while the job runs
// elsewhere waits:
//
//	guard, err := idempotency.New(dynamodb.NewFromConfig(cfg), "orders-idempotency", func(o *idempotency.Options) {
//		o.KeyPrefix = "charge-order"
//		o.Key = idempotency.JSONKey("order_id") // or the message ID (default)
//	})
//	h := worker.Chain(chargeOrder, guard.Wrap)
//
// # Keys
//
// A job's key is the SQS message ID by default ([MessageIDKey]): it catches
// SQS's own duplicates. The same job sent twice arrives as two messages
// with two IDs; key those by a business key instead: [JSONKey] (a value in
// the JSON body), [AttributeKey] (a message attribute), or any [KeyFunc].
// Options.KeyPrefix keeps the keys of handlers that share a table apart;
// Options.HashKey stores a key's SHA-256 instead of the key. A message
// without a key fails permanently (it goes to the dead-letter queue).
//
// # States
//
// A record is in progress, completed, or absent:
//
//   - In progress: a run holds the job's lock until LockedUntil: its
//     message's visibility deadline (worker.VisibilityDeadline, the lease
//     the heartbeat keeps) plus Options.LockMargin. While the handler runs,
//     the Guard watches that deadline and, each time the heartbeat moves it,
//     moves the lock with it (a conditional UpdateItem). So a handler
//     slower than any fixed expiry never loses its lock, and the lock of a
//     crashed consumer expires LockMargin after its lease: the message is
//     delivered again once its visibility timeout ends, takes the expired
//     lock over, and the job runs again. On Lambda the deadline is the
//     invocation's, which does not move: the lock lasts the invocation plus
//     the margin.
//   - Completed: the handler returned nil. Duplicates within Options.TTL
//     (15 days by default, longer than SQS's longest retention) are
//     acknowledged — deleted — without running; Options.OnDuplicate can act
//     on them, with the result the handler stored with [SetResult].
//   - Absent: no run yet, or the last one failed. A failed run (an error,
//     retry.Permanent, a snooze, a panic) removes its record, so that its
//     retry — or a redrive from the dead-letter queue — runs.
//
// A duplicate that arrives while the job is in progress does not run: it
// is snoozed (retry.Snooze) until the other run's lock expires, or for as
// long as that run has been going if that is longer (so a duplicate of a
// long job is received a few times, not once per lock extension). A snooze
// is not a failed attempt and never sends a message to the dead-letter
// queue. Each snooze is still a receive, though: SQS counts it in
// ApproximateReceiveCount, and at the queue's maxReceiveCount SQS itself
// moves the message to the dead-letter queue. Give the queue a
// maxReceiveCount well above the policy's attempts, and count attempts
// exactly (retry/dynamocounter gives snoozed attempts back). On Lambda a
// snooze needs sqslambda.Options.Client (without it a snoozed record comes
// back after the queue's visibility timeout).
//
// # DynamoDB requests per message
//
//   - a job that runs and succeeds: 1 PutItem (take the lock) + 1
//     UpdateItem (completed);
//   - plus 1 UpdateItem per heartbeat extension while it runs (none on
//     Lambda, none for a job shorter than its visibility timeout less the
//     heartbeat's threshold);
//   - a run that fails: 1 PutItem + 1 DeleteItem;
//   - a duplicate (completed or in progress): 1 PutItem, whose condition
//     fails (DynamoDB still bills it as a write).
//
// The lock's deadline is watched in-process, with no request: the keeper
// looks again after half of the time left before the deadline each time,
// so an extension is seen, and written, while at least half the heartbeat's
// threshold plus the margin are left. BENCHMARKS.md gives the requests and
// the added latency measured against DynamoDB Local.
//
// # When DynamoDB is unavailable
//
// A message whose lock cannot be taken (DynamoDB unreachable, the table
// missing, access denied, throttling beyond the SDK's retries) does not
// run: it fails with an error matching [ErrUnavailable] (and
// [ErrTableNotFound] or [ErrThrottled] where that applies) that says what
// to do, and is retried on the policy like any failure — so a long outage
// ends in the dead-letter queue, from which the messages can be redriven.
// A lock that cannot be extended while its handler runs cancels the
// handler (cause [ErrLockLost]) before it expires. With Options.FailOpen
// the message runs without its lock instead, and a warning says so.
//
// # What "effectively once" means here, and where it ends
//
// The Guard makes sure that, while a job's record counts, at most one run
// of the job is going at a time, and that no run starts once one has
// completed. It cannot make the work itself atomic:
//
//   - Between the handler's success and the completed record there is a
//     window (one UpdateItem). A crash in it leaves the record in progress
//     until its lock expires; the redelivered message then runs the job
//     again. A completed record that cannot be written is logged and
//     counted (Stats.CompleteFailed); the message is still deleted. When
//     the runtime has cancelled the handler (the worker's shutdown
//     deadline, the Lambda adapter's cutoff) the write gets at most
//     500 ms, so the handler returns while the runtime still
//     waits for it; a slower DynamoDB leaves the job in this window.
//   - A run that fails after part of its work (an email sent, then an
//     error) is retried in full. Side effects that are not idempotent
//     themselves — payments, emails, calls to other services — need their
//     own idempotency keys (most payment APIs take one: pass the job's key),
//     or must happen last.
//   - A lock outlives its lease only by Options.LockMargin; a consumer
//     whose clock runs ahead of the others by more than that may take a
//     lock over early. Keep clocks synchronised (NTP, as on AWS).
//   - A handler that ignores its context after its lock was lost
//     (ErrLockLost, or the heartbeat's visibility.ErrLost) may overlap with
//     the run that took over.
//   - Records count for Options.TTL; a duplicate after that runs again.
//
// # Logs
//
// The Guard logs warnings (one per cause per 10 s) for what needs an
// operator: DynamoDB errors, locks lost, completions not recorded, runs
// without a lock (FailOpen); duplicates and take-overs are logged at Debug
// and Info, and Guard.Stats counts every path. The AWS SDK may log "failed
// to close HTTP response body" for a failed condition (every duplicate)
// when the endpoint sends no CRC32 header with error responses, as
// DynamoDB Local does (aws/aws-sdk-go-v2#3545); examples/idempotency
// filters that one line out of the client's logger.
//
// # Table and IAM
//
// [CreateTable] makes the table: partition key "key" (S), on-demand
// capacity, time-to-live on expiresAt. A Guard needs dynamodb:PutItem,
// dynamodb:UpdateItem and dynamodb:DeleteItem on it; CreateTable also needs
// dynamodb:CreateTable, dynamodb:DescribeTable, dynamodb:DescribeTimeToLive
// and dynamodb:UpdateTimeToLive.
//
// A record (a [Record] as DynamoDB holds it) has these attributes, for
// reading the table directly:
//
//   - key (S): the job's key, with Options.KeyPrefix in front (and hashed
//     with Options.HashKey); the partition key.
//   - status (S): the record's [Status], "INPROGRESS" or "COMPLETED".
//   - token (S): a random token of the run that holds or held the lock;
//     every write after the first is conditional on it.
//   - messageId (S): the SQS message ID of that run.
//   - startedAt (N): when that run took the lock, in epoch milliseconds.
//   - lockedUntil (N): when the lock of a record in progress expires, in
//     epoch milliseconds.
//   - completedAt (N): when the job completed, in epoch milliseconds.
//   - result (B): the handler's result, when it set one ([SetResult]).
//   - expiresAt (N): when the record stops counting, in epoch seconds; the
//     table's time-to-live deletes it some time later.
package idempotency
