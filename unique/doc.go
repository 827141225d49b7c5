// Package unique keeps one job per key across a fleet of producers: a send
// that carries a key already held by a job is refused before anything
// reaches the queue, and the key is freed exactly when its job is done.
//
// # Where it lives
//
// A Store is one DynamoDB table of keys (CreateTable makes it; New checks
// it), shared by every process that sends or runs the jobs. Producers send
// a unique job with Store.Send, which wraps producer.Producer.Send:
//
//	res, err := keys.Send(ctx, p, unique.Key{Name: "report/acct-42"}, producer.Message{Body: b})
//	if errors.Is(err, unique.ErrDuplicate) {
//		// a job with the key is waiting, retrying or running: res.MessageID is its ID
//	}
//
// Consumers free the keys through the settlement hook both runtimes
// already have: pass Store.Settled as worker.Options.OnSettled (or
// sqslambda.Options.OnSettled), or call it from your own hook; and wrap
// the handler with Store.Middleware, which frees a succeeded job's key
// before its delete (see "Keys whose job was lost") and runs debounced
// jobs. Both
// runtimes report a message's fate from the settlement engine once SQS has
// confirmed it, so a key is released on exactly the fates that end a job.
// The worker calls its hook on one goroutine, so each release (one
// DeleteItem) is made in turn: at 5 ms a call that is some 200 releases a
// second per worker before the hook falls behind (and, past 4,096 events,
// drops some: those keys then end at their expiry). Options.ReleaseConcurrency
// has Settled make them in the background, that many at once; Close then
// waits for them once Run has returned. The Lambda adapter
// reports a succeeded record before Lambda deletes it, once Handle returns.
//
// # Modes
//
// Key.For and Key.Debounce select the mode:
//
//   - Zero: until settled. The key is held while its job is waiting
//     (including a delay), retrying, snoozed or running, and freed when its
//     handler succeeds (by Middleware, just before the delete; by Settled
//     once the job is deleted, without the Middleware) or when the job is
//     moved to the dead-letter queue (by the worker or the Lambda adapter).
//     A retry, a snooze and a release keep it. A send while it is held is refused with ErrDuplicate; the
//     Result carries the holding job's message ID (the job's first ID: a
//     snooze relayed as a fresh copy keeps it) when Options.RecordJobID
//     is set, so the caller chooses to treat the refusal as an error or
//     as "already enqueued".
//
//   - Positive: for a period. At most one job per key per window of that
//     length, counted from the accepted send; the job's fate does not free
//     the key, the window's end does.
//
//   - Debounce positive: debounce. The first send claims the key with its
//     body and a due time (now + Debounce) stored on the key's item, and
//     sends the job delayed by the window. A send while the job waits
//     updates the item instead (one conditional UpdateItem): its body
//     replaces the stored one and the due time moves to now + Debounce,
//     never past Key.MaxDelay after the first send. It returns no error and
//     (with Options.RecordJobID) the job's ID. The consumers wrap their handler with Store.Middleware:
//     a job that arrives before its due time waits (a sleep of up to a
//     second, else a snooze that spends no attempt); once due, it is
//     marked as running, its body is replaced by the last send's, and the
//     handler runs. From then on the key is held as in until-settled mode,
//     and freed the same way. A debounced body is stored on the item, so
//     it may have at most 380,000 bytes (DynamoDB items hold 400 KB).
//
// # How a key travels and is released
//
// An accepted send claims the key with one conditional PutItem (the item
// is absent, or its expiry has passed), then sends the message with the
// message attribute "sqsworker.unique" (mode, a random claim token, and
// the key); with Options.RecordJobID it then records the message ID on the
// item with one conditional UpdateItem, so that a refused send learns the
// holding job's ID. The attribute travels with the message through retries, snoozes
// relayed as fresh copies and long delays re-sent by the runtime. When the
// runtime settles the job as Deleted or DeadLettered, Settled deletes the
// item with one DeleteItem conditional on the claim token, so a late or
// repeated release (a dead-letter copy redriven and run again, say) never
// frees a newer claim of the same key. On the happy path a job held until
// settled costs two DynamoDB writes, three with RecordJobID (see
// BENCHMARKS.md).
//
// A send that SQS refuses frees its claim at once and returns the send's
// error. (If the send's response was lost and SQS did enqueue the message,
// one duplicate job may follow; producer.Result.Err documents when that
// happens.)
//
// # Keys whose job was lost
//
// A job can end without a settlement the Store hears of: the queue was
// purged, the message's retention expired, SQS's own redrive moved it to
// the dead-letter queue after maxReceiveCount receives (a consumer killed
// again and again), the settlement hook dropped the event, or the release
// call failed. Such a key is never held forever: every claim carries an
// expiry of the send time + the message's delay + Options.Retention (zero:
// 14 days, the longest SQS retention; set the queue's
// MessageRetentionPeriod for a shorter bound) + one hour, after which any
// send may take the key over (counted in Stats.Recovered). A snoozed job
// restarts the retention clock when it is relayed as a fresh copy, so
// each Snoozed settlement pushes the expiry to now + the snooze +
// Retention + one hour. DynamoDB's time-to-live on expiresAt removes
// expired items later; correctness never depends on it. Store.Release
// frees a key at once (after a purge).
//
// A job's delete (in SQS) and its key's release (in DynamoDB) cannot be
// made at once, so a consumer killed with kill -9 between them leaves one
// done and not the other. With Store.Middleware in the consumer's chain a
// succeeded job's key is freed when its handler returns, just before the
// runtime deletes it: a kill between the two then leaves the key free and
// the message not deleted, which SQS delivers again (as it does any job
// whose delete did not happen) and which runs again beside any job of the
// key sent since; its second release is a no-op. Without the Middleware,
// Settled frees the key after the delete, and a kill between the two
// holds the key until its expiry: the chaos suite's bounded unique run (3
// SIGKILLs, Concurrency 8) left 2 to 4 keys of 300 held that way with
// ReleaseConcurrency 16, some 100 with releases made in turn, and none
// with the Middleware (see RELIABILITY.md). A dead-lettered job's key is
// always freed after the move (Settled): a kill between the two holds it
// until its expiry. Stats.Recovered counts the keys taken over after it.
//
// # Through a one-time schedule
//
// A producer whose Options.Schedule sends long delays through one-time
// schedules (schedules.Jobs.At) takes a unique job too: Send claims the
// key, the producer's Schedule creates the schedule, and the key's
// attribute travels in the schedule's body envelope. Consume such a queue
// with worker.Chain(h, schedules.Unwrap(), store.Middleware): Unwrap
// restores the attribute, so the Middleware frees a succeeded job's key
// before its delete, and Settled finds the key inside the envelope of the
// message as received, so a dead-lettered scheduled job's key is freed
// too. The claim's expiry counts from the due time as for any delay; a
// delivery Scheduler retries (its MaxEventAge, 24 hours by default) may
// come later than the hour of margin, so for such jobs set
// Options.Retention to the queue's retention plus that age. A scheduled
// job cancelled with Jobs.Cancel never runs: free its key with Release.
//
// # Through a topic
//
// Send takes a Producer for a topic (producer.NewTopic) too: the key is a
// message attribute of the publish, and the consumers' Settled finds it
// in the delivered message, in its attributes (raw message delivery) or
// in the SNS envelope around it. A period key works whatever the number
// of subscribed queues: one publish per window. A key until settled (or
// debounced) is freed when the first copy is settled (a debounced job's
// later copies are then dropped), so use it on a
// topic only when each message reaches one queue (one subscription, or
// filter policies that route each message to one); with several queues
// each running its copy, send a unique job to each queue instead, keyed
// per queue ("billing/report-42").
//
// # Faults
//
// Every DynamoDB call is bounded by Options.CallTimeout and counted in
// Stats.Requests. When the claim cannot be made (DynamoDB throttled, down,
// or refusing), Send fails closed by default: it returns the error and
// sends nothing. With Options.FailOpen it sends the job without a key
// (counted in Stats.FailedOpen): a duplicate job is then possible, a lost
// one is not. A release that fails is logged and counted
// (Stats.ReleaseErrors); the key then ends at its expiry. A send reported
// refused never reaches the queue.
//
// # The table
//
// Partition key "key" (type S), time-to-live on "expiresAt" (epoch
// seconds). Items: "token", "mode", "until" (expiry in epoch
// milliseconds), "job" (the message ID, with RecordJobID); debounced keys add "body", "due"
// and "cap" (epoch milliseconds) and "state" (set once the job runs).
// The command sqsworker unique create-table makes the table, and sqsworker
// unique check checks it (and sqsworker doctor --unique-table TABLE QUEUE
// beside the queue). The console shows a dead-lettered job's key on its
// message page, and the sqsotel module's Instrumentation.ObserveUnique
// reports Stats as metrics (sends refused as duplicates, keys held).
//
// The senders need dynamodb:PutItem, UpdateItem and DeleteItem; the
// consumers UpdateItem and DeleteItem; New needs dynamodb:DescribeTable;
// Held needs dynamodb:Scan.
package unique
