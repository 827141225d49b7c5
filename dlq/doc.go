// Package dlq is sqsworker's dead-letter queue toolkit: it sets up a queue
// with its dead-letter queue, checks the setup, finds a queue's dead-letter
// queue, lists the messages there with the reason they failed, and moves
// them back or deletes them.
//
// A job is either done, waiting for its next retry, or in a dead-letter
// queue with the reason. The runtimes (package worker and worker/sqslambda)
// move failed jobs to the dead-letter queue with their provenance; this
// package is how people and programs look after that queue:
//
//   - [Setup] creates what is missing of a queue, its dead-letter queue and
//     the RedrivePolicy, with the recommended retentions; it keeps existing
//     settings unless asked to change one, reports each [Change], and
//     refuses to lower maxReceiveCount or a retention unless allowed
//     ([ErrWouldLower]).
//   - [Lint] checks the setup against the retry policy and the consumer and
//     returns [Finding]s that say what to change (codes below).
//   - [Discover] reads a queue's RedrivePolicy and resolves its dead-letter
//     queue to a [Target]. A queue without one is an error wrapping
//     [ErrNoRedrivePolicy], because its failed jobs would be lost when
//     retention expires; one whose RedrivePolicy names the queue itself, an
//     error wrapping [ErrRedrivesToItself].
//   - [Inspect] lists dead-lettered messages with their [Provenance]
//     without consuming them; [Count] counts them without receiving any.
//   - [Redrive] moves them back to the source queue (or elsewhere), by a
//     server-side message move task or by a filtered, rate-limited manual
//     move; from a dead-letter queue shared by several queues, only the
//     source's own messages (unless RedriveOptions.AllSources).
//   - [Delete] deletes the messages a [Filter] selects, and only those
//     (the console's delete goes through it; PurgeQueue empties a queue).
//   - [SourcesOf] finds the queues a dead-letter queue serves, so tools can
//     take a dead-letter queue by its own name.
//   - [ParseProvenance] reads the reason back from a dead-lettered message
//     received some other way.
//
// Each of them takes a queue as a name, URL or ARN (see package queueref),
// resolved on each call; a URL costs no call. Each takes an [API]:
// *sqs.Client and sqstest's Fake satisfy it.
//
// # maxReceiveCount
//
// SQS dead-letters a message itself, without provenance, once it has been
// received maxReceiveCount times, so maxReceiveCount must let the retry
// policy finish: [RecommendedMaxReceiveCount] is the rule — the policy's
// attempts on a standard queue, ten times them on a FIFO queue, where a
// receive is also counted for each message released unprocessed behind a
// failed one of its group (at most 1000, SQS's limit). Setup's defaults
// (5, and 40 on a FIFO queue: SNS's default delivery policy makes 4
// deliveries), Lint's findings and the runtimes' start-up warning all
// follow it.
//
// # Provenance attributes
//
// The runtimes record why and from where a message was dead-lettered in
// message attributes named with the prefix "sqsworker.dlq." (so
// ReceiveMessage can ask for them with MessageAttributeNames
// ["sqsworker.dlq.*"]). Empty fields are left out.
//
//	attribute                     type    Provenance field
//	sqsworker.dlq.source          String  SourceQueue (the source queue URL)
//	sqsworker.dlq.error           String  Error (cut to 1 KiB)
//	sqsworker.dlq.attempt         Number  Attempt
//	sqsworker.dlq.first-received  String  FirstReceived (RFC 3339 UTC)
//	sqsworker.dlq.failed-at       String  FailedAt (RFC 3339 UTC)
//	sqsworker.dlq.handler         String  Handler
//	sqsworker.dlq.message-id      String  the message's ID in the queue it failed in (not a field)
//	sqsworker.dlq.provenance      String  all of them as one JSON object
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
//   - 10: no provenance. The move still happens, and the runtime logs the
//     provenance as a warning instead.
//
// When the message is so large that the provenance would push it over the
// size limit, the error text is shortened first, then the provenance is
// left out (and logged). [ParseProvenance] reads both forms back; [Inspect]
// parses them into Message.Provenance and leaves them out of
// Message.Attributes, and a [Filter] matches them by name in either form.
// The manual [Redrive] removes them, so the source gets the original
// message back (unless RedriveOptions.KeepProvenance). It also removes,
// always, the attributes a snoozed job's relayed copy carries
// ("sqsworker.attempts", "sqsworker.origin"; see package worker): a
// redriven job starts afresh, with a whole retry budget.
//
// # A dead-letter queue smaller than its source
//
// SQS lets a dead-letter queue's MaximumMessageSize be below its source's
// (256 KiB behind 1 MiB, say), and its own redrive moves a large message
// there anyway — without a reason. An explicit move cannot: the copy would
// be refused. With an [Offloader] (an s3payload.Store, set as the worker's
// or sqslambda's Options.DeadLetterOffloader), the body of a copy that
// would not fit with its full provenance is stored elsewhere and the copy
// carries the pointer and the whole reason. Without one, a message too
// large for the dead-letter queue is not copied: the runtime logs the
// reason and the fix at ERROR with the message ID (which SQS's redrive
// keeps, so the line matches the message that later reaches the
// dead-letter queue). The message stays in its queue; the runtime retries
// it after the visibility timeout, with that reason in its settlement,
// until SQS's redrive moves it. The runtimes warn of the mismatch at start
// (the [Target] knows both sizes), and [Lint] reports it
// ("dlq-max-message-size-smaller").
//
// # Finding codes
//
// Finding.Code is one of these strings (fanout.Lint and fleet.Lint add
// their own); the severity is the one Lint gives it:
//
//	code                          severity  what it means
//	no-redrive-policy             error     failed jobs are retried until retention, then lost
//	invalid-redrive-policy        error     the RedrivePolicy cannot be read
//	redrives-to-itself            error     the RedrivePolicy names the queue itself as its DLQ
//	dlq-missing                   error     the RedrivePolicy names a queue that does not exist
//	dlq-wrong-type                error     a FIFO queue with a standard DLQ, or the reverse
//	max-receive-count-low         error     SQS dead-letters before the retry policy is done
//	retention-short               error     messages expire before the retry schedule ends
//	fifo-max-receive-count        warning   a FIFO queue's maxReceiveCount is under the FIFO rule
//	dlq-retention-not-longer      warning   dead-lettered messages expire early
//	dlq-max-message-size-smaller  warning   a large failed message cannot be copied with its reason
//	visibility-too-short          warning   the heartbeat cannot keep messages hidden
//	handler-timeout-over-12h      warning   SQS cannot keep a message invisible that long
//	lambda-visibility             warning   visibility under 6 × the Lambda timeout
//	lambda-max-receive-count      warning   maxReceiveCount under 5 with a Lambda consumer
//	is-dead-letter-queue          info      the queue is another queue's DLQ and needs no RedrivePolicy
//	dlq-not-empty                 info      the dead-letter queue holds messages
//
// # Duplicates, never losses
//
// Every move sends before it deletes. If the delete fails (or the process
// dies in between), the message is in both queues: a consumer may see it
// once more, and the dead-letter queue may hold a copy of a message that
// later succeeded. Handlers must be idempotent anyway, since SQS delivers
// at least once.
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
// SQS shows a message only by receiving it, so [Inspect], [Delete], dry
// runs and the manual [Redrive] increase the messages' ApproximateReceiveCount,
// and hide them from other consumers while they work (see
// [InspectOptions].Hold; one minute unless set).
//
// # Interrupted and short reads
//
// A receive takes effect at SQS before its response reaches the caller: a
// receive abandoned in flight, or one whose response is lost, leaves its
// messages hidden for the visibility timeout, with
// nobody holding their receipt handles. Inspect, Delete and the manual
// Redrive guard against both:
//
//   - An interrupt (ctx ends) does not abandon the call in flight: the
//     receive runs to its end, bounded by its own long-poll wait, and what it
//     returned is released at once with every other message received and not
//     moved (ChangeMessageVisibilityBatch, visibility 0). A run right after
//     an interrupt sees every message.
//   - They count the queue's messages first (visible and in flight). When
//     they go through the queue and receive fewer, they say so: a
//     [*NotSeenError] (errors.Is [ErrNotAllSeen]) and, for Redrive and
//     Delete, their result's NotSeen. The messages missed are still in the
//     queue and reappear when their visibility timeout ends; run again
//     after that.
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
// Discover and Lint: sqs:GetQueueAttributes, sqs:GetQueueUrl (and, for a
// queue without a RedrivePolicy, what SourcesOf needs). Count:
// sqs:GetQueueAttributes. Inspect: sqs:GetQueueAttributes,
// sqs:ReceiveMessage, sqs:ChangeMessageVisibility. Delete: Inspect's and
// sqs:DeleteMessage. Redrive: Inspect's, sqs:SendMessage on the
// destination, sqs:DeleteMessage on the dead-letter queue, and for move
// tasks sqs:ListDeadLetterSourceQueues, sqs:StartMessageMoveTask,
// sqs:ListMessageMoveTasks, sqs:CancelMessageMoveTask. Setup:
// sqs:CreateQueue, sqs:SetQueueAttributes, sqs:GetQueueAttributes,
// sqs:GetQueueUrl. SourcesOf: sqs:ListDeadLetterSourceQueues, or
// sqs:ListQueues and sqs:GetQueueAttributes where the endpoint lacks it.
// The runtimes' dead-letter moves: sqs:SendMessage on the dead-letter
// queue, sqs:DeleteMessage on the source.
package dlq
