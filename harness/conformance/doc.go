// Package conformance is the SQS conformance suite: one set of SQS
// behaviours that sqsworker relies on, run against every SQS backend the
// project tests with, to keep them honest.
//
// It encodes what real Amazon SQS does — visibility expiry and extension,
// receive counts, the 12 hour visibility cap counted from receipt, redrive
// to the dead-letter queue, move tasks, batch partial failures and size
// limits, delays, long polling, FIFO group locking and deduplication, purge
// and retention, and the exact errors of each misuse — as the AWS documentation and
// AWS-validated test suites describe it. Where the local emulator differs,
// the difference is declared as a Quirk of that backend rather than
// weakening the suite: the in-memory fake in sqstest has no quirks and must
// behave as real SQS does.
//
// # The SNS suite
//
// RunSNS is the same idea for the SNS fan-out sqsworker relies on: enveloped
// and raw delivery with message attributes, filter policies on attributes
// and on the body, FIFO topics, a standard topic passing MessageGroupId
// to its queues (fair queues), PublishBatch's per-entry answers,
// idempotent subscribing, subscription
// attributes, subscription dead-letter queues for deliveries SNS cannot
// make (a deleted queue, a queue policy refusing the topic), and how SNS
// lists a subscription pending confirmation (SubscriptionArn
// "PendingConfirmation", not its ARN). It runs against sqstest/snstest's
// fake (TestConformanceFake there) and against the emulator
// (TestConformanceEmulatorSNS). fauxqs 1.9.2's SNS declares four quirks
// (FauxqsSNSQuirks): it ignores queue policies, it drops a delivery to a
// deleted queue instead of sending it to the subscription's dead-letter
// queue, it confirms every SQS subscription at once, also of another
// account's queue, and it drops the MessageGroupId published to a
// standard topic.
//
// # The Scheduler suite
//
// RunScheduler holds an EventBridge Scheduler implementation, firing into
// SQS, to AWS's documentation: each behaviour cites the Scheduler user
// guide or API reference page it encodes — the CreateSchedule /
// GetSchedule / UpdateSchedule / DeleteSchedule / ListSchedules round trip
// of every field, defaults (ENABLED, the 185 attempts / 86400 s retry
// policy), UpdateSchedule replacing the whole schedule, ConflictException,
// ResourceNotFoundException, ValidationException, ClientToken idempotency,
// pages and filters; one-time at() schedules firing once (ignoring
// StartDate and EndDate) and deleted with ActionAfterCompletion DELETE,
// recurring ones deleted after their EndDate; rate schedules from creation
// or StartDate; cron in a time zone; both DST edge cases (a skipped wall
// time does not fire, a repeated one fires once); StartDate/EndDate
// bounds; DISABLED; flexible windows; the four context attributes; FIFO
// targets' MessageGroupId; a failed delivery in the dead-letter queue. Fire
// times are checked against Scheduler's documented 60 second precision.
//
// A backend declares what it does not model (NotModelled, the counterpart
// of a Quirk): a behaviour that can observe it asserts the gap still holds;
// the others are declared for the record. Two runners, both in virtual
// time: TestConformanceScheduler in schedules/schedulestest (the in-memory
// Scheduler called directly) and TestConformanceSchedulerHTTP in
// harness/schedulerhttp (the SDK's *scheduler.Client, its requests carried
// as HTTP/1.1 bytes in process to the Scheduler served over REST-JSON).
// The firing behaviours wait minutes to weeks and run on virtual-time
// backends only.
//
// # Backends and runners
//
//   - sqstest's fake: TestConformanceFake in sqstest/conformance_test.go runs
//     every behaviour on a fresh sqstest.Fake inside its own synctest bubble,
//     so the waits cost no real time and the slow behaviours always run.
//   - the endpoint testenv finds: TestConformanceEmulator in this package.
//     Under `make test` that is fauxqs, with the quirks of FauxqsQuirks.
//
// Run it against LocalStack (for example the docker-compose.yml one):
//
//	AWS_ENDPOINT_URL_SQS=http://localhost:4566 SQSWORKER_SQS_BACKEND=localstack \
//	  go test ./harness/conformance/ -run TestConformanceEmulator -v
//
// and against real SQS (it creates and deletes queues named cf…-<run>-<n>;
// credentials from the usual AWS environment or profile):
//
//	AWS_REGION=eu-west-1 AWS_PROFILE=sandbox SQSWORKER_SQS_BACKEND=aws \
//	  AWS_ENDPOINT_URL_SQS=https://sqs.eu-west-1.amazonaws.com \
//	  go test ./harness/conformance/ -run TestConformanceEmulator -v -timeout 30m
//
// Neither LocalStack nor real SQS declares quirks: a failure there is either
// a LocalStack difference to declare in QuirksFor, or a mistake in the suite
// (which would then be wrong for the fake too).
//
// Slow behaviours (message retention of 60 s, the visibility cap over a
// minute or more) run on virtual-time backends always, and on real-time
// backends only with SQSWORKER_CONFORMANCE_SLOW=1; otherwise they are skipped
// with that reason — the suite's only skip.
//
// The behaviours run concurrently (one goroutine per t.Run, not t.Parallel,
// which -parallel would cap at GOMAXPROCS), each with its own uniquely named
// queues, and use visibility timeouts of 1–5 s and long polls of at most
// 2 s, so the whole suite takes about 5 s on fauxqs.
//
// # Declared quirks of fauxqs 1.9.2
//
// Each is verified by the suite on every run (the behaviour asserts the
// quirky result, so a fixed emulator fails until the declaration goes):
//
//   - NoDLQAdminActions: ListDeadLetterSourceQueues, StartMessageMoveTask and
//     ListMessageMoveTasks answer InvalidAction.
//   - DeleteAcceptsAnyReceiptHandle: DeleteMessage and DeleteMessageBatch
//     accept a malformed receipt handle (real SQS: ReceiptHandleIsInvalid).
//   - ChangeVisibilityNotInflight: ChangeMessageVisibility with a malformed
//     handle or a deleted message's handle says MessageNotInflight (real SQS:
//     ReceiptHandleIsInvalid, resp. InvalidParameterValue).
//   - LongPollWakesAllWaiters: one arriving message wakes every waiting long
//     poll; the others return empty at once.
//   - FIFOOneMessagePerGroup: a FIFO receive returns one message per group
//     (real SQS: several of a group, in order).
//   - FifoSuffixMakesFIFO: CreateQueue of "x.fifo" without FifoQueue=true
//     makes a FIFO queue (real SQS: InvalidParameterValue).
//   - NoVisibilityCapFromReceipt: ChangeMessageVisibility ignores the 12 h
//     cap counted from the receipt (real SQS: InvalidParameterValue).
//   - MessageAttributesAlwaysReturned: ReceiveMessage returns message
//     attributes that were not asked for.
//   - PurgeNotRateLimited: a second PurgeQueue within 60 s succeeds (real SQS:
//     PurgeQueueInProgress).
//   - PrefixedErrorCodes: unmodelled error codes read
//     "AWS.SimpleQueueService.InvalidParameterValue" (real SQS:
//     "InvalidParameterValue"); compare codes with that prefix stripped.
//   - NoRetention: MessageRetentionPeriod is not enforced (slow behaviour).
//   - CountsIgnoreVisibilityExpiry: a message whose visibility timeout ended
//     counts in ApproximateNumberOfMessagesNotVisible, not in
//     ApproximateNumberOfMessages, until the next ReceiveMessage on the
//     queue (their sum is right).
//   - NoAWSTraceHeader: the AWSTraceHeader system attribute of a send is
//     accepted but not returned on receive (sqsotel's links through it are
//     tested on the fake).
//   - FIFORedriveKeepsEnqueueTime: a FIFO message redriven to its FIFO
//     dead-letter queue keeps its SentTimestamp (real SQS: the enqueue time
//     resets to the move).
//   - NoStandardMessageGroupId: a MessageGroupId sent to a standard queue
//     (SQS fair queues) is accepted but not returned on receive (tenant
//     caps keyed by it, fleet.ByGroup, are tested on the fake).
//
// Bare fauxqs 1.9.2 has one more difference, which its launcher
// (localstack/fauxqs-server.mjs) corrects, so it is not declared: a long
// poll whose client disconnected stayed registered until its wait ended and
// took the next message sent, hiding it for the visibility timeout (a worker
// aborts its polls when it shuts down, so a second run of a program missed
// jobs for a while). AbortedLongPollTakesNoLaterMessage checks the launched
// emulator against real SQS's behaviour.
//
// # Real SQS semantics worth knowing
//
// A few behaviours the suite pins down surprise people (and fakes):
//
//   - Zero-valued int32 inputs are not sent by the SDK, so they mean "the
//     default": ReceiveMessage VisibilityTimeout 0 is the queue's timeout, not
//     "visible at once"; WaitTimeSeconds 0 is the queue's
//     ReceiveMessageWaitTimeSeconds; SendMessage DelaySeconds 0 is the
//     queue's delay. ChangeMessageVisibility(0) does release a message.
//   - ChangeMessageVisibility of a deleted message is InvalidParameterValue,
//     of a malformed handle ReceiptHandleIsInvalid, and of a message whose
//     visibility already ran out (not received again) no error at all; real
//     SQS gives MessageNotInflight in none of these cases.
//   - The 12 h visibility maximum counts from the receipt:
//     ChangeMessageVisibility(43200) any time after the receive is
//     InvalidParameterValue; SQS does not clip it to the time left.
//   - DeleteMessage with the handle of a message whose visibility ran out
//     still deletes it; deleting twice is no error.
//   - A receive takes effect when SQS answers it, whether or not the answer
//     reaches the caller: a receive whose response is lost (or abandoned in
//     flight) hides its messages for the visibility timeout and counts as a
//     receive. A reader that must not strand messages never abandons a
//     receive, and counts what it expects to see (dlq.Inspect, dlq.Redrive).
//   - Redrive moves a message to the DLQ on the receive attempt after the
//     maxReceiveCount-th (that receive returns nothing), keeping MessageId,
//     body, attributes, SentTimestamp and ApproximateReceiveCount ("received
//     across all queues") — except that a FIFO dead-letter queue resets the
//     enqueue time (SentTimestamp) to the move, so its retention starts
//     again.
//   - A move task (StartMessageMoveTask) enqueues new messages: new
//     MessageId, new enqueue time, receive count from zero.
//   - FIFO: a receive returns several messages of one group in order; while
//     any message of a group is in flight none of that group is delivered;
//     deduplication holds for 5 minutes, also after the first was deleted.
package conformance
