// Package dlq is sqsworker's dead-letter queue toolkit: it finds a queue's
// dead-letter queue, checks the setup, moves failed messages there with
// their provenance, lists them, and moves them back.
//
// A job is either done, waiting for its next retry, or in a dead-letter
// queue with the reason. This package keeps the third promise:
//
//   - [Discover] reads a queue's RedrivePolicy and resolves its dead-letter
//     queue to a [Target]. A queue without one is an error wrapping
//     [ErrNoRedrivePolicy], because its failed jobs would be lost when
//     retention expires; one whose RedrivePolicy names the queue itself, an
//     error wrapping [ErrRedrivesToItself].
//   - [Mover.Move] copies a failed message to the dead-letter queue with
//     [Provenance] attributes, then deletes it from the source — in that
//     order, so a failure leaves a duplicate at worst, never a loss.
//   - [Lint] checks the setup against the retry policy and the consumer and
//     returns [Finding]s that say what to change.
//   - [Inspect] lists dead-lettered messages with their provenance without
//     consuming them; [Count] counts them without receiving any.
//   - [Delete] deletes the messages a [Filter] selects, and only those
//     (the console's delete goes through it; PurgeQueue empties a queue).
//   - [Redrive] moves them back to the source queue (or elsewhere), by a
//     server-side message move task or by a filtered, rate-limited manual
//     move; from a dead-letter queue shared by several queues, only the
//     source's own messages (unless RedriveOptions.AllSources).
//   - [Setup] creates what is missing of a queue, its dead-letter queue and
//     the RedrivePolicy, with the recommended retentions; it keeps existing
//     settings unless asked to change one, reports each [Change], and
//     refuses to lower maxReceiveCount or a retention unless allowed
//     ([ErrWouldLower]).
//   - [SourcesOf] finds the queues a dead-letter queue serves, so tools can
//     take a dead-letter queue by its own name.
//
// Each of them takes a queue as a name, URL or ARN (see package queueref),
// resolved on each call; a URL costs no call.
//
// # maxReceiveCount
//
// SQS dead-letters a message itself, without provenance, once it has been
// received maxReceiveCount times, so maxReceiveCount must let the retry
// policy finish: [RecommendedMaxReceiveCount] is the rule — the policy's
// attempts on a standard queue, ten times them ([fifoReceiveFactor]) on a
// FIFO queue, where a receive is also counted for each message released
// unprocessed behind a failed one of its group. Setup's defaults, Lint's
// findings and the worker's start-up warning all follow it.
//
// # Provenance attributes
//
// Move records why and from where a message was dead-lettered in message
// attributes named with the prefix "sqsworker.dlq." (see [AttrPrefix]):
// source (the source queue URL), error (the handler's error text, cut to
// [MoverOptions].MaxErrorBytes), attempt (a Number), first-received and
// failed-at (RFC 3339 UTC), and handler. Empty fields are left out.
//
// SQS allows ten message attributes per message and a maximum message size
// (256 KiB, or the dead-letter queue's MaximumMessageSize). The message's
// own attributes always stay; provenance takes what is left:
//
//   - up to 4 attributes of the user's: one attribute per field (up to 6),
//     and, with an attribute left, message-id (the message's ID in the
//     queue it failed in, by which [Redrive] tells a message it moved that
//     came back);
//   - 5 to 9: everything in the single JSON attribute
//     "sqsworker.dlq.provenance" ({"source":…,"error":…,"attempt":…,
//     "firstReceived":…,"failedAt":…,"handler":…,"messageId":…});
//   - 10: no provenance. The move still happens, and Move logs the
//     provenance as a warning instead.
//
// When the message is so large that the provenance would push it over the
// size limit, the error text is shortened first, then the provenance is
// left out (and logged). [ParseProvenance] reads both forms back, and
// [StripProvenance] removes them; the manual redrive strips them, so the
// source gets the original message back.
//
// # A dead-letter queue smaller than its source
//
// SQS lets a dead-letter queue's MaximumMessageSize be below its source's
// (256 KiB behind 1 MiB, say), and its own redrive moves a large message
// there anyway — without a reason. An explicit move cannot: the copy would
// be refused. With [MoverOptions].Offloader set (an s3payload.Store; the
// worker's and sqslambda's Options.DeadLetterOffloader pass it through),
// the body of a copy that would not fit with its full provenance is stored
// elsewhere and the copy carries the pointer and the whole reason.
// Without one, a message too large for the dead-letter queue is not
// copied: [Copier.Input] and [Mover.Move] return an error wrapping
// [ErrTooLarge] that holds the reason and the fix, and log it at ERROR
// with the message ID (which SQS's redrive keeps, so the line matches the
// message that later reaches the dead-letter queue). The message stays in
// its queue; a runtime retries it after the visibility timeout, with that
// reason in its settlement, until SQS's redrive moves it. [NewCopier] warns
// of the mismatch when the [Target] knows both sizes ([Discover] reads
// them), and [Lint] reports it ([CodeDLQMaxMessageSizeSmaller]).
//
// # Duplicates, never losses
//
// Every move in this package sends before it deletes. If the delete fails
// (or the process dies in between), the message is in both queues: a
// consumer may see it once more, and the dead-letter queue may hold a copy
// of a message that later succeeded. Handlers must be idempotent anyway,
// since SQS delivers at least once.
//
// # FIFO queues
//
// A FIFO queue's dead-letter queue is a FIFO queue. Moves keep the
// message's MessageGroupId and use a deduplication ID derived from the
// source queue and message ID, so retrying a move within SQS's five-minute
// deduplication window does not add a second copy.
//
// # Receive counts
//
// SQS shows a message only by receiving it, so [Inspect], dry runs and the
// manual [Redrive] increase the messages' ApproximateReceiveCount, and hide
// them from other consumers while they work (see [InspectOptions].Hold).
//
// # Interrupted and short reads
//
// A receive takes effect at SQS before its response reaches the caller: a
// receive abandoned in flight, or one whose response is lost, leaves its
// messages hidden for the visibility timeout, with
// nobody holding their receipt handles. Inspect and the manual Redrive guard
// against both:
//
//   - An interrupt (ctx ends) does not abandon the call in flight: the
//     receive runs to its end, bounded by its own long-poll wait, and what it
//     returned is released at once with every other message received and not
//     moved (ChangeMessageVisibilityBatch, visibility 0). A run right after
//     an interrupt sees every message.
//   - Both count the queue's messages first (visible and in flight). When
//     they go through the queue and receive fewer, they say so: a
//     [*NotSeenError] (errors.Is [ErrNotAllSeen]) and, for Redrive,
//     RedriveResult.NotSeen. The messages missed are still in the queue and
//     reappear when their visibility timeout ends; run again after that.
//   - Their receives run with the SDK's retries off, so a lost response
//     comes back to the walk: it retries the receive itself and counts the
//     messages asked for as possibly hidden (NotSeenError.Lost). Messages
//     that arrive during the walk do not make up for them.
//   - Redrive's sends and deletes, and the final release, are batch calls
//     retried by the library's one rule; a message is deleted from the
//     dead-letter queue only once SQS confirmed its copy.
//
// # IAM
//
// Discover and Lint: sqs:GetQueueAttributes, sqs:GetQueueUrl. Move:
// sqs:SendMessage on the dead-letter queue, sqs:DeleteMessage on the
// source. Inspect: sqs:GetQueueAttributes, sqs:ReceiveMessage,
// sqs:ChangeMessageVisibility. Delete: Inspect's and sqs:DeleteMessage.
// Redrive: Inspect's, sqs:SendMessage on the destination, sqs:DeleteMessage on the
// dead-letter queue, and for move tasks sqs:ListDeadLetterSourceQueues,
// sqs:StartMessageMoveTask, sqs:ListMessageMoveTasks,
// sqs:CancelMessageMoveTask. Setup: sqs:CreateQueue, sqs:SetQueueAttributes,
// sqs:GetQueueAttributes, sqs:GetQueueUrl. SourcesOf:
// sqs:ListDeadLetterSourceQueues, or sqs:ListQueues and
// sqs:GetQueueAttributes where the endpoint lacks it.
//
// Each function takes the narrowest client interface it needs ([QueueAPI],
// [API], [InspectAPI], [DeleteAPI], [RedriveAPI], [SetupAPI], [SourcesAPI]); *sqs.Client and
// sqstest's Fake satisfy them all.
package dlq
