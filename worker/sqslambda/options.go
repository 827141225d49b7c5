package sqslambda

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/worker"
)

// API is the narrow set of SQS calls the Handler makes, with the AWS SDK for
// Go v2's exact signatures. *sqs.Client and *sqstest.Fake satisfy it.
//
//   - GetQueueUrl: the queue URL for a record's eventSourceARN, at most once
//     per queue per invocation until it succeeds (then kept).
//   - ChangeMessageVisibilityBatch: the retry delay of failed records, and
//     the release of records that did not start.
//   - GetQueueAttributes, GetQueueUrl: the dead-letter queue, discovered
//     from the RedrivePolicy at the first move and kept.
//   - SendMessageBatch, DeleteMessageBatch: the move to the dead-letter
//     queue (copy, then delete from the source; Lambda deletes the record
//     too, since it is not reported).
type API interface {
	GetQueueUrl(ctx context.Context, params *sqs.GetQueueUrlInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
	GetQueueAttributes(ctx context.Context, params *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
	ChangeMessageVisibilityBatch(ctx context.Context, params *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error)
	SendMessageBatch(ctx context.Context, params *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
	DeleteMessageBatch(ctx context.Context, params *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
}

var _ API = (*sqs.Client)(nil)

// Options configures a Handler. Every field's zero value selects the
// documented default; pass functions that set fields to New.
type Options struct {
	// Client makes the SQS calls that go beyond reporting failures: the
	// retry delay of failed records (ChangeMessageVisibilityBatch), the
	// release of records that did not start, and moves to the dead-letter
	// queue. Zero value: nil. Without a client the Handler only reports
	// failures in batchItemFailures: a failed record comes back when the
	// queue's visibility timeout ends (no backoff), and a record that should
	// go to the dead-letter queue (retry.Permanent, retries exhausted) is
	// reported as failed and reaches the dead-letter queue by SQS's own
	// redrive once maxReceiveCount is reached, without provenance.
	Client API

	// RetryPolicy gives the delay before each retry and when to give up
	// (then the record is moved to the dead-letter queue). It is the same
	// policy a worker.Worker takes. Zero value:
	// retry.DefaultDeliveryPolicy(), SNS's default (3 retries, 20 s apart).
	RetryPolicy retry.Policy

	// AttemptCounter numbers the attempts that RetryPolicy sees; it is
	// called once per record started. Zero value: SQS's
	// ApproximateReceiveCount from the record's attributes, which can
	// over-count; retry/dynamocounter counts handler starts exactly.
	AttemptCounter retry.AttemptCounter

	// Logger receives the Handler's logs. Zero value: slog.Default().
	Logger *slog.Logger

	// Concurrency is how many records of one batch run at once. Records of
	// one FIFO message group always run one after another, in order. Zero
	// value: 1, every record in batch order.
	Concurrency int

	// DeadlineMargin is how long before the invocation's deadline (the
	// context deadline Lambda sets from the function timeout) the Handler
	// stops: no record starts after it, running handlers' contexts are
	// cancelled with cause ErrDeadline, and the time left settles the batch
	// (visibility changes, dead-letter moves) but for its last 50 ms (at
	// most half the margin), kept for Handle to return its response before
	// the deadline. Records that did not start
	// are reported as failed and released at once. Zero value: 1 s.
	// Without a context deadline there is no limit.
	DeadlineMargin time.Duration

	// SkipGroupOnFailure is the rule for the rest of a FIFO batch after a
	// failure. False is AWS's documented rule for partial batch responses
	// from FIFO queues: stop at the first failure and report the failed
	// record and every record that has not run as failed, whatever its
	// message group (with Concurrency 1, records run in batch order, so
	// that is "the failed record and all after it"). True reports as
	// failed, without running them, only the later records of the failed
	// record's message group; other groups carry on. Order still holds
	// within every group, and one poison group does not hold back the
	// others in the batch. A batch is treated as FIFO when its
	// eventSourceARN names a ".fifo" queue, or, without an ARN, when its
	// records carry a MessageGroupId. Zero value: false, AWS's rule.
	SkipGroupOnFailure bool

	// CallTimeout bounds each SQS call the Handler makes (within the
	// invocation's deadline). Zero value: 10 s.
	CallTimeout time.Duration

	// OnSettled, when set, is told what became of every record of a batch
	// before Handle returns, as worker.Options.OnSettled is: succeeded
	// records are reported as worker.Deleted (Lambda deletes them once
	// Handle returns), failed ones as worker.Retrying, dead-letter copies
	// as worker.DeadLettered, records that did not start as worker.Released.
	// It runs on a goroutine of its own, so a slow hook does not delay
	// settlement; Handle waits for it within the invocation's deadline,
	// since the execution environment may be frozen afterwards. Zero value:
	// nil.
	OnSettled func(worker.Settlement)

	// HandlerName names the handler in dead-letter provenance. Zero value:
	// the AWS_LAMBDA_FUNCTION_NAME environment variable when New runs, else
	// "sqslambda".
	HandlerName string

	// DeadLetterOffloader, when set, stores the body of a failed message
	// whose dead-letter copy would not fit the dead-letter queue (one whose
	// MaximumMessageSize is below its source's, as SQS allows) elsewhere:
	// the copy then carries a pointer to it and the full reason. An
	// s3payload.Store does it in S3, in the extended clients' format, so
	// its Middleware reads a redriven copy as it read the original. Each
	// call is bounded by CallTimeout. Zero value: none; such a message is
	// not dead-lettered: its reason is logged at ERROR with the message ID
	// and given in the settlement's Reason, and it comes back after the
	// visibility timeout (reported as failed) until SQS's own redrive
	// moves it (after maxReceiveCount receives, without provenance). The
	// discovery of the dead-letter queue, at the first move, warns when it
	// is smaller than its source.
	DeadLetterOffloader dlq.Offloader
}

func (o *Options) setDefaults() error {
	if o.Concurrency < 0 {
		return fmt.Errorf("sqslambda: Options.Concurrency is %d; use a positive number (or 0 for the default of 1)", o.Concurrency)
	}
	if o.DeadlineMargin < 0 {
		return fmt.Errorf("sqslambda: Options.DeadlineMargin is %v; use a positive duration (or 0 for the default of 1s)", o.DeadlineMargin)
	}
	if o.Concurrency == 0 {
		o.Concurrency = 1
	}
	if o.CallTimeout < 0 {
		return fmt.Errorf("sqslambda: Options.CallTimeout is %v; use a positive duration (or 0 for the default of 10s)", o.CallTimeout)
	}
	if o.CallTimeout == 0 {
		o.CallTimeout = 10 * time.Second
	}
	if o.DeadlineMargin == 0 {
		o.DeadlineMargin = time.Second
	}
	if o.RetryPolicy == nil {
		o.RetryPolicy = retry.DefaultDeliveryPolicy()
	}
	if o.AttemptCounter == nil {
		o.AttemptCounter = retry.ReceiveCount()
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.HandlerName == "" {
		o.HandlerName = os.Getenv("AWS_LAMBDA_FUNCTION_NAME")
	}
	if o.HandlerName == "" {
		o.HandlerName = "sqslambda"
	}
	return nil
}
