// Package sqslambda runs a worker.Handler as an AWS Lambda function behind
// an SQS event source mapping, with the same message lifecycle as a
// worker.Worker: a job is done, waiting for its next retry, or in the
// dead-letter queue with its reason.
//
// The same handler (and middleware) serves a long-lived service and a
// Lambda function:
//
//	h := worker.Chain(processOrder, logging)
//	lambda.Start(sqslambda.New(h, func(o *sqslambda.Options) {
//		o.Client = sqs.NewFromConfig(cfg) // backoff and DLQ moves
//		o.RetryPolicy = policy            // the worker's policy
//	}).Handle)
//
// and RunLocal runs that function against LocalStack, an emulator or a real
// queue the way Lambda's event source mapping would, for development and
// tests.
//
// # The partial batch response
//
// Handle returns an events.SQSEventResponse listing, in batchItemFailures,
// the messageId of every record that did not succeed; when all succeeded
// the list is empty ({"batchItemFailures":[]}, never null). Lambda deletes
// the records not listed and leaves the listed ones in the queue. This
// needs FunctionResponseTypes ["ReportBatchItemFailures"] on the event
// source mapping: without it Lambda ignores the response and deletes every
// record of an invocation that returned no error, failed ones included.
// Handle returns an error (Lambda then retries the whole batch) only when a
// failed record has no messageId, which Lambda could not retry alone.
//
// Each record becomes a worker.Message as the worker builds it from a
// receive: body, message attributes with their data types (String, Number,
// Binary, custom suffixes), system attributes, ReceiveCount, SentAt,
// FirstReceivedAt and GroupID parsed from them, ReceivedAt set to the
// invocation's start, QueueURL resolved from the eventSourceARN (see
// Options.Client), and Raw the SDK message ReceiveMessage would have
// returned, from which the dead-letter copy is built.
//
// # Outcomes
//
// The handler's error decides the record's fate, and the record is settled,
// by the same settlement engine the worker uses (the adapter only carries
// its calls: into the partial batch response, or into its own batched SQS
// calls within the invocation):
//
//	nil                                → not reported; Lambda deletes the record
//	ordinary error, panic, ErrDeadline → reported; visibility set to RetryPolicy's delay for the attempt
//	retry.After(d, err)                → reported; visibility set to exactly d
//	retries exhausted                  → moved to the dead-letter queue with provenance; not reported
//	retry.Permanent(err)               → moved to the dead-letter queue with provenance; not reported
//	dead-letter move failed, or no DLQ → reported; comes back after the visibility timeout
//	not started (deadline, FIFO rule)  → reported; released at once (visibility 0)
//
// The visibility changes go out with ChangeMessageVisibilityBatch, ten
// records per call, before Handle returns. Without them a failed record
// would come back only when the queue's visibility timeout ends, which AWS
// advises to set to six times the function timeout: minutes, whatever the
// retry policy says. Delays are capped so that they end within SQS's
// 12-hour limit even for a record received at the start of a 5-minute
// batching window (so at about 11 h 55 min).
//
// A record moved to the dead-letter queue was sent there (with the
// provenance attributes of package dlq) and then deleted from the source;
// it is deleted only after its copy is confirmed. The handler gets its own
// copy of the record's message: nothing it does to it, through any pointer,
// byte slice or map it reaches, changes the record's fate, its dead-letter
// copy or the Settlement reported. The dead-letter queue is
// discovered from the source queue's RedrivePolicy at the first move and
// cached for the life of the execution environment.
//
// The attempt number comes from the record's ApproximateReceiveCount, or
// from Options.AttemptCounter (retry/dynamocounter counts handler starts
// exactly). Set the queue's maxReceiveCount above the policy's attempts, so
// that the policy, not SQS's redrive, decides when a record is
// dead-lettered (SQS's redrive moves it without provenance).
//
// # Without a client
//
// With Options.Client nil the Handler makes no SQS call: failures are
// reported and come back after the visibility timeout (no backoff), and a
// record that should be dead-lettered (permanent or exhausted) is reported
// as failed too, so it reaches the dead-letter queue by SQS's own redrive
// when maxReceiveCount is reached, without provenance.
//
// # FIFO queues
//
// A batch from a FIFO queue (an eventSourceARN ending in ".fifo") keeps
// every message group in order: the records of a group run one after
// another, in batch order, and a record runs only after the previous record
// of its group succeeded. After a failure, by default, no further record
// starts and every record not run is reported as failed, which is what AWS
// documents for FIFO partial batch responses: stop at the first failure and
// return the failed message and all after it. With
// Options.SkipGroupOnFailure only the rest of the failed record's group is
// reported without running; the other groups carry on. Records
// reported without running are released (visibility 0); SQS's group lock
// holds them back until the failed record of their group is settled.
//
// # Concurrency and the deadline
//
// Options.Concurrency records run at once (default 1, in batch order); FIFO
// groups stay sequential. Lambda cancels nothing before the function
// timeout, so the Handler keeps Options.DeadlineMargin (default 1 s) for
// itself: from the invocation's deadline minus the margin no record starts,
// running handlers' contexts are cancelled with cause ErrDeadline (the
// record is then retried like any failure), and the margin is spent on the
// visibility changes and moves, but for its last 50 ms, in which Handle
// returns: a response after the deadline is a timeout for Lambda, and the
// whole batch would come back. Records that did not start are reported
// and released at once, so another invocation takes them without waiting
// for the visibility timeout. A handler must return promptly when its
// context ends.
//
// # Running locally
//
// RunLocal polls a queue like the event source mapping (batch size,
// batching window, long polling), builds the event exactly as Lambda does
// (NewEvent), invokes the function with the function timeout as its context
// deadline, and deletes the records Lambda would delete, honouring
// ReportBatchItemFailures. Point it at LocalStack or the offline emulators
// (localstack/start.sh) to run the real function end to end. Queue URLs
// there differ from the public https://sqs.REGION.amazonaws.com/ACCOUNT/NAME
// form, which is why a Handler with a client resolves the eventSourceARN
// with GetQueueUrl.
//
// # IAM
//
// The event source mapping needs sqs:ReceiveMessage, sqs:DeleteMessage and
// sqs:GetQueueAttributes on the queue (the managed policy
// AWSLambdaSQSQueueExecutionRole). With Options.Client the Handler also
// needs sqs:ChangeMessageVisibility and sqs:GetQueueUrl on the queue, and,
// for moves to the dead-letter queue, sqs:GetQueueAttributes on the queue
// and the dead-letter queue, sqs:GetQueueUrl and sqs:SendMessage on the
// dead-letter queue, and sqs:DeleteMessage on the queue (plus
// kms:GenerateDataKey and kms:Decrypt when the queues use a customer
// managed KMS key). examples/lambda has a complete policy and the event
// source mapping settings.
package sqslambda
