// Package schedule delays SQS jobs beyond SQS's own 15-minute limit: up to
// any time (a year and more), on standard queues.
//
// The producer records the job's due time in the message attribute
// [Attribute] ("sqsworker.due", an RFC 3339 UTC time) and sends it with the
// native delay [Send] gives. The consumer, before it runs the handler on a
// message that carries a due time, asks [Decide] what to do:
//
//	Run     due: run the handler, as for any message
//	Hide    not due: ChangeMessageVisibility for Delay (at most 12 h from the receive)
//	Resend  not due: send a fresh copy (body and attributes unchanged) with
//	        DelaySeconds = Delay, then delete this copy once the send succeeded
//
// Neither Hide nor Resend runs the handler or counts an attempt. Decide is a
// pure function of the message's times and receive count and of the queue's
// maxReceiveCount and retention; wiring it into the worker and the Lambda
// adapter is the settlement core's job.
//
// # The rules
//
// Let hop be 15 minutes (SQS's longest DelaySeconds; on a queue whose
// retention is under 30 minutes, half the retention), r the time left until
// the due time, and c the copy's receive count.
//
//   - r ≤ 0: Run — unless c > 1 and the copy was first received more than
//     [Tolerance] before the due time: then its earlier receives were hops
//     and its receive count no longer numbers attempts, so a fresh copy is
//     sent with no delay and runs the job as attempt 1.
//   - 0 < r ≤ hop (the final approach): Resend with delay r, rounded up to
//     a second. The fresh copy arrives on time with a receive count of 1,
//     so the handler sees attempt 1 and the retry policy its full budget.
//   - r > hop: the copy waits for the final approach, until due − hop. It is
//     hidden (up to 12 h from its receive per step) while three conditions
//     hold: the next receive leaves [Reserve] spare receives below the
//     queue's maxReceiveCount (c + 1 + Reserve ≤ maxReceiveCount), the hide
//     ends by half the copy's retention (counted from its SentTimestamp: SQS
//     deletes a message at the end of its retention whether it is hidden or
//     not), and Input.NoHide is not set. Otherwise the copy is re-sent with
//     delay min(hop, r − hop), which resets both its receive count and its
//     retention.
//
// So SQS never dead-letters a job that has not run (its receive count stays
// below maxReceiveCount even with Reserve receives lost along the way), no
// copy outlives half its retention, and the job runs once, on time, as
// receive 1 of a fresh copy. On a queue without a redrive policy hides are
// limited by retention alone.
//
// # Cost in requests per delayed day
//
// A long delay is a chain of copies. Each copy is received, hidden K times
// (each hide followed by a receive), then re-sent (a send, and a delete of
// the old copy): 2K + 3 requests per copy, where
//
//	K = min(maxReceiveCount − 1 − Reserve, hides that fit in half the retention)
//
// (K = 0 with NoHide or maxReceiveCount ≤ 2; no count limit without a
// redrive policy). A copy lasts L = hop + K × 12 h when the receive count
// limits it, else half the retention. Per job and day of delay:
//
//	requests/day = (2K + 3) × 24 h / L
//
// For example (the package's tests simulate a year of delay and check
// these against the formula):
//
//	maxReceiveCount  retention  K   L        requests/day
//	5 (dlq.Setup)    4 days     3   36.25 h  5.96
//	10               4 days     4   48 h     5.50
//	10               14 days    8   96.25 h  4.74
//	1000 or none     14 days    14  168 h    4.43
//	≤ 2, or NoHide   any        0   15 min   288
//
// A 30-day delay on a dlq.Setup queue thus costs about 180 requests, plus a
// constant few for the first send and the final approach. These are API
// calls per message as if nothing were batched; a consumer that batches
// receives, visibility changes, sends and deletes (ten per call) pays about
// a tenth when many jobs wait at once. Beyond the requests, hidden copies
// count toward SQS's in-flight limit (about 120,000 messages per standard
// queue); a queue that parks more long-delayed jobs than that should use
// NoHide (288 requests per job and day) or keep them elsewhere.
//
// # Limits
//
// Only standard queues: a FIFO queue takes no per-message delay, and a
// hidden message would hold up its whole message group. The queue's
// retention must exceed 30 minutes (the first send is delayed by up to 15
// minutes, and retention counts from the send). The due time is kept to the
// millisecond and met to the second: delays are whole seconds, rounded so
// that the job never runs early.
package schedule
