// Package settle is sqsworker's message lifecycle, one copy of it for the
// worker (package worker) and the Lambda adapter (package
// worker/sqslambda): how a received message is parsed, how its attempt is
// counted, how its handler is called, what its fate is (Decide), and how
// that fate is made real in SQS.
//
// Nothing here is public API; the public names (worker.Message,
// worker.Settlement, worker.ErrPanic, …) are views of these.
//
// # The engine and its ports
//
// Engine owns what becomes of a message once its handler has returned, or
// it was not due yet, or it was released unrun: the decision and every call
// that carries it out, in order — delete; hide until the retry (capped by
// SQS's 12-hour limit counted from the receive); copy to the dead-letter
// queue with provenance and delete the source only once the copy is
// confirmed; re-send a job not due yet, then delete; retry later instead of
// dead-lettering (no dead-letter queue, a copy that failed), with the
// reason; release — and the final settlement (Final) with its event.
//
// Each runtime embeds Job in its per-message state and makes that state the
// message's Port, the only way the Engine reaches SQS:
//
//	runtime         Port.Delete / Change / Copy / Resend      Port.Done
//	worker          its Batchers, entries carrying the lease   counters, FIFO group, hook
//	sqslambda       the partial batch response (reported or    the response, the hook
//	                not, the visibility to set) and its own
//	                batched calls within the invocation
//
// A message crosses into the Engine at Track (receipt), Begin (due check
// and attempt count), Run (the handler), Handled, Release or Drop; the
// Engine calls back only through the Port, and a Batcher tells the Job (an
// Owner) each call's outcome, so the next call of the plan needs no trip
// through the runtime.
//
// FIFO message groups stay in order with Groups, in both runtimes.
//
// The handler gets a copy made with Detach, which shares nothing the Engine
// reads: the Engine settles, builds the dead-letter copy and reports the
// event from Job.Msg alone.
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
