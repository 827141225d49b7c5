// Package settle is sqsworker's one message lifecycle, shared by the worker
// (package worker) and the Lambda adapter (package worker/sqslambda): how a
// received message is parsed, how its attempt is counted, how its handler
// is called, what its fate is (Decide), and how that fate is made real in
// SQS — deletes, visibility changes and dead-letter copies sent in batches
// by one Batcher with one retry rule, and settlement events reported to a
// hook once SQS has confirmed them.
//
// Nothing here is public API; the public names (worker.Message,
// worker.Settlement, worker.ErrPanic, …) are thin views of these.
//
// # Ownership until confirmed
//
// A Batcher entry may carry the message's visibility Lease. While the entry
// waits in a batch the heartbeat keeps extending the message; the Batcher
// holds the lease only for the call that settles it (so no extension can
// overwrite a retry delay), stops it when SQS confirms the entry, and hands
// it back to the heartbeat when the call must be retried. A settlement that
// SQS confirms only after the lease's deadline is reported as late (another
// consumer may have received the message meanwhile); one that cannot be
// confirmed is reported as abandoned. Neither is ever silent.
package settle
