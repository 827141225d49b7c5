// Package sqstest is an in-memory Amazon SQS for tests: a Fake that
// implements, with the AWS SDK for Go v2's exact method signatures, every SQS
// call sqsworker uses, so it can stand in for an *sqs.Client wherever a
// package takes a narrow SQS interface.
//
// The Fake models what a job runtime depends on: visibility timeouts and
// their 12-hour cap counted from receipt, receive counts, redrive to the
// dead-letter queue after maxReceiveCount, retention, message and queue
// delays, long polling that returns as soon as a message arrives, FIFO group
// locking, ordering and deduplication, batch calls with per-entry failures,
// PurgeQueue, ListDeadLetterSourceQueues and message move tasks. It returns
// the error types real SQS returns (for example *types.QueueDoesNotExist,
// *types.ReceiptHandleIsInvalid, *types.BatchEntryIdsNotDistinct, and a
// smithy.APIError with code InvalidParameterValue), wrapped in a
// *smithy.OperationError as the SDK wraps them.
//
// The same conformance suite (harness/conformance) runs against the Fake
// and against a real SQS emulator, so the Fake cannot drift from SQS.
// Package snstest adds an in-memory SNS that delivers into a Fake's
// queues, for testing SNS fan-out.
//
// # In a test
//
// For makes a Fake that fails the test on a bad option; MustCreateQueue,
// MustCreateQueueWithDLQ (a queue and its dead-letter queue, joined by a
// RedrivePolicy) and MustSend set up what the test needs; Messages shows a
// queue's messages without receiving them, in every state or in those
// asked for ("visible", "inflight", "delayed"):
//
//	f := sqstest.For(t)
//	src, dlq := f.MustCreateQueueWithDLQ(t, "orders", 3, nil)
//	f.MustSend(t, src, `{"id":1}`)
//	// ... run the code under test with f as its SQS client ...
//	if n := len(f.Messages(dlq)); n != 0 {
//		t.Errorf("%d messages dead-lettered", n)
//	}
//
// # Time
//
// The Fake reads time from time.Now plus an offset that Advance moves
// forward; Now tells it, for code under test that takes a clock. Inside a
// testing/synctest bubble, time.Now and all of the Fake's timers are
// virtual, so long polls and visibility timeouts cost no real time;
// outside one, Advance makes hidden messages visible without waiting.
//
// # Faults and accounting
//
// InjectFault makes calls fail (with an SQS error code — Fault.Code
// "RequestThrottled", "InternalError" — or any error), slow down, hang
// until their context ends, or lose their response after taking effect
// (AfterEffect: the messages were received or deleted, the caller cannot
// know), also only when the caller gives up while the response is still on
// its way (ResponseDelay); it can fail single entries of batch calls
// (Entries) or leave them out of the response (Omit), only the first N
// calls (Times) or every N-th (Every). Options.Latency adds a delay to
// every call. Requests counts calls by API name, so tests and benchmarks
// can report SQS requests per message.
package sqstest
