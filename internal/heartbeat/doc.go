// Package heartbeat is the visibility heartbeat engine: it keeps received
// SQS messages invisible while their owners hold them, extending their
// visibility timeouts in batches (ChangeMessageVisibilityBatch) from one
// goroutine per queue, and tells an owner when it can no longer do so.
// How it behaves (timing, retries, the 12-hour limit, ownership loss) is
// documented for users in package visibility, its small public front for
// consumers with a receive loop of their own.
//
// The worker uses it directly, through typed calls:
//
//   - Heartbeat.TrackInto tracks a message in a Lease its caller allocated
//     (the worker's per-message job embeds it), telling an Owner of a loss;
//   - Lease.Cause says whether the heartbeat has ended a lease before the
//     owner's notice arrives;
//   - Lease.Hold, Lease.Release and Lease.Lapsed let a settling call (a
//     delete, a retry delay; see internal/settle's Batcher) take a message
//     out of the heartbeat's hands for the call and back, and tell whether
//     its visibility ran out meanwhile;
//   - ErrLost and ErrMaxVisibility are the causes an owner is told; package
//     visibility exports the same values.
package heartbeat
