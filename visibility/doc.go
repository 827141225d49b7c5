// Package visibility keeps received SQS messages invisible while their
// handlers run, so that a long job is not delivered to a second consumer
// (and run twice, or dead-lettered without ever failing) when its visibility
// timeout ends.
//
// # How it works
//
// One [Heartbeat] per queue tracks every in-flight message with its current
// visibility deadline, in a heap ordered by the time each message is next
// due. Its [Heartbeat.Run] goroutine sleeps on a single timer until the
// earliest message is due — Threshold before its deadline — and then
// extends every due message with ChangeMessageVisibilityBatch, ten entries
// per call: 25 messages due together cost 3 calls, 1,000 cost 100. There is
// no goroutine or ticker per message and no polling. When a call goes out
// with room to spare, messages due within a short window (half the
// Threshold, and never so early that an extension would shorten a deadline)
// ride along instead of costing a call of their own a moment later; so
// messages received one by one fall into shared batches after their first
// extension.
//
// Each extension asks for Extension from the time of the call; the new
// deadline is counted from when the call was sent, so the heartbeat's idea
// of a deadline is never later than SQS's. With a 30 s visibility timeout and
// the defaults (Extension 30 s, Threshold 10 s) a message received at 0 s is
// extended at 20 s, 40 s, 60 s, … for 30 s each time.
//
// [Heartbeat.Track] returns a stop function; call it the moment the handler
// is done, before deleting the message or changing its visibility (for a
// retry delay). It waits until no call that includes the message is in
// flight, so no extension can land after the delete or overwrite the retry
// delay.
//
// # Defaults
//
//   - Extension: the visibility timeout passed to [New] (the queue's
//     VisibilityTimeout), in whole seconds.
//   - Threshold: a third of Extension; for short timeouts at least 1 s or
//     half of Extension, whichever is less (30 s → 10 s, 2 s → 1 s).
//   - MaxRetries: retry failed calls (throttling, 5xx, network, timeouts)
//     with exponential backoff and jitter until the deadline is too close.
//   - MaxCalls: 64 calls in flight at most. The heartbeat has only as many
//     in flight as its due messages fill, ten each; 64 extend SQS's
//     in-flight limit of 120,000 messages, all due together, in 3.75 s at
//     20 ms per call, within the 10 s Threshold of a 30 s timeout. Give the
//     SQS client's HTTP transport as many idle connections.
//   - Logger: discard.
//
// # When ownership is lost
//
// The onLost function given to Track is called at most once, from the Run
// goroutine, with a cause wrapping [ErrLost] when SQS refuses an extension
// because the message was deleted, was received again by another consumer
// (its receipt handle was replaced) or is no longer in flight
// (ReceiptHandleIsInvalid, InvalidParameterValue, MessageNotInflight). The
// message is untracked; the others keep being extended.
//
// Transient failures are retried before the deadline. If none succeeds in
// time, the heartbeat cannot know whether the message will stay invisible:
// it stops tracking it and reports ErrLost as well, just before the
// deadline, so the handler can stop before another consumer may receive the
// message. Each call's own timeout is half the time left before the
// earliest deadline in it (between 1 s and 30 s), so a hung connection
// leaves time for a retry.
//
// # The 12-hour limit
//
// SQS keeps a message invisible for at most 12 hours counted from the
// receive that returned it ([MaxVisibility]); an extension reaching past
// that fails. The heartbeat never asks past receivedAt + 12 h: when less than
// Extension is left it asks for exactly what is left, in whole seconds, less
// a 1 s margin for the receive's own latency (SQS starts counting before the
// receive returns). That is the last extension. When the message is next
// due — Threshold before the deadline that last extension set — the owner
// gets a cause wrapping [ErrMaxVisibility] instead of an extension, saying
// until when the message stays invisible: the handler has Threshold to stop
// cleanly before the message is delivered again. A message that cannot be
// extended at all (received with a 12-hour timeout) is told the same way
// Threshold before its deadline.
//
// # Standalone use
//
// The worker package runs a Heartbeat for you. With your own receive loop:
//
//	hb, err := visibility.New(client, queueURL, 30*time.Second) // the queue's VisibilityTimeout
//	go hb.Run(ctx)
//
//	out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &queueURL, MaxNumberOfMessages: 10})
//	receivedAt := time.Now()
//	for _, m := range out.Messages {
//		go func() {
//			jobCtx, cancel := context.WithCancelCause(ctx)
//			defer cancel(nil)
//			stop, err := hb.Track(*m.ReceiptHandle, receivedAt, cancel)
//			if err != nil {
//				return
//			}
//			err = handle(jobCtx, m) // watch jobCtx; context.Cause(jobCtx) says why it ended
//			cause := stop()         // before deleting or changing visibility
//			if err == nil && !errors.Is(cause, visibility.ErrLost) {
//				client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &queueURL, ReceiptHandle: m.ReceiptHandle})
//			}
//		}()
//	}
//
// A handler whose context ends with a cause wrapping ErrLost must not delete
// the message: another consumer may be handling it. One ending with
// ErrMaxVisibility still owns the message until the deadline in the error;
// it should stop and leave the job to be retried (or finish and delete it
// before then).
//
// # Permissions
//
// The consumer's IAM role needs sqs:ChangeMessageVisibility on the queue
// (it covers ChangeMessageVisibilityBatch).
package visibility
