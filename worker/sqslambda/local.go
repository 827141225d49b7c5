package sqslambda

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/sqsworker/sqsworker/internal/awscall"
	"github.com/sqsworker/sqsworker/internal/sqsbatch"
	"github.com/sqsworker/sqsworker/internal/sqserr"
	"github.com/sqsworker/sqsworker/internal/sqslimit"
	"github.com/sqsworker/sqsworker/queueref"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// LocalAPI is the narrow set of SQS calls RunLocal makes, with the AWS SDK
// for Go v2's exact signatures: the calls of Lambda's event source mapping
// (GetQueueAttributes, ReceiveMessage, DeleteMessageBatch) and
// ChangeMessageVisibilityBatch to release what it received but did not
// invoke with when it stops. *sqs.Client and *sqstest.Fake satisfy it.
type LocalAPI interface {
	GetQueueUrl(ctx context.Context, params *sqs.GetQueueUrlInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
	GetQueueAttributes(ctx context.Context, params *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
	ReceiveMessage(ctx context.Context, params *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessageBatch(ctx context.Context, params *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
	ChangeMessageVisibilityBatch(ctx context.Context, params *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error)
}

var _ LocalAPI = (*sqs.Client)(nil)

// Function is the signature of a Lambda function for an SQS event source
// with partial batch responses; Handler.Handle has it.
type Function func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)

// LocalOptions configures RunLocal like an event source mapping and its
// function. Every field's zero value selects the documented default.
type LocalOptions struct {
	// BatchSize is the most records per invocation (the mapping's
	// BatchSize): 1 to 10 for a FIFO queue, 1 to 10,000 for a standard
	// queue, above 10 only with a MaximumBatchingWindow, as Lambda requires.
	// Zero value: 10.
	BatchSize int

	// MaximumBatchingWindow is how long records are gathered before the
	// invocation, from the first one received, unless BatchSize is reached
	// first (the mapping's MaximumBatchingWindowInSeconds: 0 to 300 s, whole
	// seconds, not for FIFO queues). Zero value: invoke with what one
	// receive returns.
	MaximumBatchingWindow time.Duration

	// WaitTime is the long-poll wait of each receive (1 s to 20 s). Zero
	// value: 20 s, as Lambda polls.
	WaitTime time.Duration

	// FunctionTimeout is the function's timeout: the invocation's context
	// deadline. A function that returns after it has timed out, as on
	// Lambda: the whole batch fails. The queue's VisibilityTimeout must be
	// at least this long (Lambda refuses the mapping otherwise). Zero
	// value: 3 s, Lambda's default.
	FunctionTimeout time.Duration

	// ReportBatchItemFailures is the mapping's FunctionResponseTypes
	// ["ReportBatchItemFailures"]: the records in the response's
	// batchItemFailures are left in the queue and the others deleted. Zero
	// value: false, as a mapping without FunctionResponseTypes: the response
	// is ignored and every record of a batch whose invocation returned no
	// error is deleted, failed ones included (a warning is logged when the
	// response reports failures).
	ReportBatchItemFailures bool

	// Concurrency is how many batches are polled and invoked at once. Zero
	// value: 1.
	Concurrency int

	// FunctionName names the function in the invocation's
	// lambdacontext.LambdaContext (InvokedFunctionArn). Zero value:
	// "sqslambda-local".
	FunctionName string

	// Logger receives the runner's logs: one line per invocation at Info,
	// problems at Warn. Zero value: slog.Default().
	Logger *slog.Logger
}

// local limits of Lambda's SQS event source mapping.
const (
	defaultFunctionTimeout = 3 * time.Second
	maxStandardBatch       = 10000
	releaseTimeout         = 5 * time.Second
)

func (o *LocalOptions) setDefaults(fifo bool) error {
	if o.BatchSize == 0 {
		o.BatchSize = sqslimit.MaxBatchEntries
	}
	if o.WaitTime == 0 {
		o.WaitTime = 20 * time.Second
	}
	if o.FunctionTimeout == 0 {
		o.FunctionTimeout = defaultFunctionTimeout
	}
	if o.Concurrency == 0 {
		o.Concurrency = 1
	}
	if o.FunctionName == "" {
		o.FunctionName = "sqslambda-local"
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	switch {
	case o.BatchSize < 0 || o.BatchSize > maxStandardBatch:
		return fmt.Errorf("sqslambda: LocalOptions.BatchSize is %d; Lambda takes 1 to 10,000 (1 to 10 for FIFO queues)", o.BatchSize)
	case fifo && o.BatchSize > sqslimit.MaxBatchEntries:
		return fmt.Errorf("sqslambda: LocalOptions.BatchSize is %d but the queue is a FIFO queue; Lambda takes 1 to 10 for FIFO queues", o.BatchSize)
	case fifo && o.MaximumBatchingWindow > 0:
		return errors.New("sqslambda: LocalOptions.MaximumBatchingWindow is set but the queue is a FIFO queue; Lambda has no batching window for FIFO queues: leave it 0")
	case o.MaximumBatchingWindow < 0 || o.MaximumBatchingWindow > maxBatchingWindow:
		return fmt.Errorf("sqslambda: LocalOptions.MaximumBatchingWindow is %v; Lambda takes 0 to 5m", o.MaximumBatchingWindow)
	case o.BatchSize > sqslimit.MaxBatchEntries && o.MaximumBatchingWindow < time.Second:
		return fmt.Errorf("sqslambda: LocalOptions.BatchSize is %d; above 10 Lambda needs a MaximumBatchingWindow of at least 1s", o.BatchSize)
	case o.WaitTime < time.Second || o.WaitTime > 20*time.Second:
		return fmt.Errorf("sqslambda: LocalOptions.WaitTime is %v; SQS long polling takes 1s to 20s", o.WaitTime)
	case o.FunctionTimeout < 0:
		return fmt.Errorf("sqslambda: LocalOptions.FunctionTimeout is %v; use a positive duration (or 0 for Lambda's default of 3s)", o.FunctionTimeout)
	case o.Concurrency < 0:
		return fmt.Errorf("sqslambda: LocalOptions.Concurrency is %d; use a positive number (or 0 for 1)", o.Concurrency)
	}
	return nil
}

// RunLocal runs fn as Lambda's SQS event source mapping would, against any
// SQS endpoint (LocalStack, an emulator, a real queue), until ctx is
// cancelled. queue is the queue's URL, name or ARN (see package queueref),
// resolved once when RunLocal starts. It long-polls the queue with all system and message attributes,
// gathers up to BatchSize records (within MaximumBatchingWindow), builds the
// events.SQSEvent Lambda would send (see NewEvent), invokes fn with a
// context whose deadline is FunctionTimeout away and which carries a
// lambdacontext.LambdaContext, and then:
//
//   - fn returned an error, panicked or timed out: nothing is deleted; the
//     records come back when the queue's visibility timeout ends.
//   - ReportBatchItemFailures: the records not in batchItemFailures are
//     deleted (DeleteMessageBatch). A response naming a record that is not
//     in the batch, or an empty itemIdentifier, fails the whole batch, as on
//     Lambda. An empty or null list means every record succeeded.
//   - otherwise every record is deleted.
//
// RunLocal does not change the visibility of failed records: that is the
// function's business (a Handler with Options.Client applies its retry
// delay). When ctx is cancelled it stops polling (a long poll in progress is
// aborted), releases records gathered but not yet invoked with (visibility
// 0), lets a running invocation finish and settles it, and returns nil (also
// when ctx is cancelled while RunLocal is still reading the queue). It
// returns an error at once for a queue that does not exist, is not
// readable, or does not fit the options (Lambda refuses a mapping whose
// queue's VisibilityTimeout is shorter than the function timeout), and
// when receiving fails in a way retrying cannot fix (queue deleted, access
// denied).
//
// Differences from Lambda: one poller per Concurrency instead of Lambda's
// scaling, no 6 MB payload limit, and no retry of the invocation itself.
func RunLocal(ctx context.Context, client LocalAPI, queue string, fn Function, optFns ...func(*LocalOptions)) error {
	if client == nil {
		return errors.New("sqslambda: RunLocal needs an SQS client (an *sqs.Client or *sqstest.Fake)")
	}
	if fn == nil {
		return errors.New("sqslambda: RunLocal needs a function, such as sqslambda.New(h).Handle")
	}
	var o LocalOptions
	for _, f := range optFns {
		f(&o)
	}
	actx, cancel := context.WithTimeout(ctx, 30*time.Second)
	queueURL, err := queueref.Resolve(actx, client, queue)
	if err != nil {
		cancel()
		if ctx.Err() != nil { // stopped while starting: nothing was received
			return nil
		}
		return fmt.Errorf("sqslambda: RunLocal: %w", err)
	}
	out, err := awscall.SQS(actx, awscall.Rule{}, client.GetQueueAttributes, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(queueURL),
		AttributeNames: []types.QueueAttributeName{
			types.QueueAttributeNameQueueArn, types.QueueAttributeNameFifoQueue, types.QueueAttributeNameVisibilityTimeout,
		},
	})
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("sqslambda: reading queue %s (check the URL, region and credentials): %w", queueURL, err)
	}
	arn := out.Attributes[string(types.QueueAttributeNameQueueArn)]
	fifo := out.Attributes[string(types.QueueAttributeNameFifoQueue)] == "true"
	if err := o.setDefaults(fifo); err != nil {
		return err
	}
	secs, _ := strconv.Atoi(out.Attributes[string(types.QueueAttributeNameVisibilityTimeout)])
	vis := time.Duration(secs) * time.Second
	if vis < o.FunctionTimeout {
		return fmt.Errorf("sqslambda: queue %s has VisibilityTimeout %v, shorter than the function timeout %v; Lambda refuses such a mapping. Set the queue's VisibilityTimeout to at least 6 × the function timeout (%v)",
			queueURL, vis, o.FunctionTimeout, 6*o.FunctionTimeout+o.MaximumBatchingWindow)
	}
	if want := 6*o.FunctionTimeout + o.MaximumBatchingWindow; vis < want {
		o.Logger.Warn("sqslambda: the queue's VisibilityTimeout is less than AWS's advice of 6 × the function timeout (plus the batching window); a throttled batch may be delivered twice",
			"queue", queueURL, "visibilityTimeout", vis, "advised", want)
	}
	r := &runner{client: client, url: queueURL, arn: arn, fn: fn, o: o}
	if a, err := queueref.ParseARN(arn); err == nil {
		r.functionARN = fmt.Sprintf("arn:%s:lambda:%s:%s:function:%s", a.Partition, a.Region, a.Account, o.FunctionName)
	}

	pctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	var wg sync.WaitGroup
	for range o.Concurrency {
		wg.Go(func() {
			if err := r.poll(pctx); err != nil {
				stop(err)
			}
		})
	}
	wg.Wait()
	if err := context.Cause(pctx); err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}

// runner is one RunLocal.
type runner struct {
	client      LocalAPI
	url, arn    string
	functionARN string
	fn          Function
	o           LocalOptions
}

// poll is one poller: gather a batch, invoke, settle, until ctx ends.
func (r *runner) poll(ctx context.Context) error {
	for {
		msgs, err := r.gather(ctx)
		if err != nil {
			r.release(msgs)
			return err
		}
		if ctx.Err() != nil {
			r.release(msgs)
			return nil
		}
		if len(msgs) > 0 {
			r.invoke(ctx, msgs)
		}
	}
}

// gather receives up to BatchSize messages: what the first receive returns,
// or, with a batching window, what arrives within it.
func (r *runner) gather(ctx context.Context) ([]types.Message, error) {
	var got []types.Message
	var windowEnd time.Time
	failures := 0
	for len(got) < r.o.BatchSize {
		wait := r.o.WaitTime
		if len(got) > 0 {
			left := time.Until(windowEnd)
			if left <= 0 {
				break
			}
			wait = min(wait, max(time.Second, left.Round(time.Second)))
		}
		out, err := r.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:                    aws.String(r.url),
			MaxNumberOfMessages:         int32(min(sqslimit.MaxBatchEntries, r.o.BatchSize-len(got))),
			WaitTimeSeconds:             int32(wait / time.Second),
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
			MessageAttributeNames:       []string{"All"},
		}, awscall.SQSOff) // retried below, by the one rule (a poll: it never gives up, as Lambda's mapping); every request counted
		if err != nil {
			if ctx.Err() != nil {
				return got, nil
			}
			if !sqserr.Of(err).Retryable() {
				return got, fmt.Errorf("sqslambda: receiving from queue %s failed (Lambda would disable the mapping): check that the queue exists and that the role allows sqs:ReceiveMessage, sqs:DeleteMessage and sqs:GetQueueAttributes: %w", r.url, err)
			}
			failures++
			wait := awscall.Backoff(failures)
			r.o.Logger.Warn("sqslambda: receive failed; retrying", "queue", r.url, "in", wait, "err", err)
			if awscall.Sleep(ctx, wait) != nil {
				return got, nil
			}
			continue
		}
		failures = 0
		if len(out.Messages) > 0 && len(got) == 0 {
			windowEnd = time.Now().Add(r.o.MaximumBatchingWindow)
		}
		got = append(got, out.Messages...)
		if len(got) > 0 && r.o.MaximumBatchingWindow == 0 {
			break
		}
	}
	return got, nil
}

// invoke calls the function with one batch and deletes what Lambda would.
func (r *runner) invoke(ctx context.Context, msgs []types.Message) {
	log := r.o.Logger
	ev, err := NewEvent(r.arn, msgs...)
	if err != nil {
		log.Error("sqslambda: cannot build the event; the records come back after the visibility timeout", "err", err)
		return
	}
	requestID := newRequestID()
	start := time.Now()
	deadline := start.Add(r.o.FunctionTimeout)
	ictx, cancel := context.WithDeadline(context.WithoutCancel(ctx), deadline)
	ictx = lambdacontext.NewContext(ictx, &lambdacontext.LambdaContext{AwsRequestID: requestID, InvokedFunctionArn: r.functionARN})
	resp, ferr := call(ictx, r.fn, ev)
	cancel()
	took := time.Since(start)
	if ferr == nil && time.Now().After(deadline) {
		ferr = fmt.Errorf("function timed out (Lambda: \"Task timed out after %.2f seconds\")", r.o.FunctionTimeout.Seconds())
	}
	if ferr != nil {
		log.Warn("sqslambda: invocation failed; no record is deleted, the batch comes back after the visibility timeout",
			"requestId", requestID, "records", len(msgs), "duration", took, "err", ferr)
		return
	}

	del := msgs
	failed := len(resp.BatchItemFailures)
	if r.o.ReportBatchItemFailures {
		keep, err := failedSet(resp, msgs)
		if err != nil {
			log.Warn("sqslambda: invalid partial batch response; Lambda treats the whole batch as failed and deletes nothing",
				"requestId", requestID, "records", len(msgs), "err", err)
			return
		}
		del = make([]types.Message, 0, len(msgs)-len(keep))
		for _, m := range msgs {
			if !keep[aws.ToString(m.MessageId)] {
				del = append(del, m)
			}
		}
	} else if failed > 0 {
		log.Warn("sqslambda: the function reported failed records but ReportBatchItemFailures is off, so they are deleted, as Lambda would delete them; set FunctionResponseTypes [\"ReportBatchItemFailures\"] on the event source mapping (LocalOptions.ReportBatchItemFailures here)",
			"requestId", requestID, "failed", failed)
	}
	deleted := r.deleteAll(del)
	log.Info("sqslambda: invoked", "requestId", requestID, "records", len(msgs), "failed", failed, "deleted", deleted, "duration", took)
}

// call invokes fn, turning a panic into an error as the Lambda Go runtime
// reports it.
func call(ctx context.Context, fn Function, ev events.SQSEvent) (resp events.SQSEventResponse, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("function panicked: %v", p)
		}
	}()
	return fn(ctx, ev)
}

// failedSet checks a partial batch response as Lambda does and returns the
// messageIds it reports.
func failedSet(resp events.SQSEventResponse, msgs []types.Message) (map[string]bool, error) {
	inBatch := make(map[string]bool, len(msgs))
	for _, m := range msgs {
		inBatch[aws.ToString(m.MessageId)] = true
	}
	keep := make(map[string]bool, len(resp.BatchItemFailures))
	for _, f := range resp.BatchItemFailures {
		switch {
		case f.ItemIdentifier == "":
			return nil, errors.New("a batchItemFailures entry has an empty itemIdentifier")
		case !inBatch[f.ItemIdentifier]:
			return nil, fmt.Errorf("itemIdentifier %q is not the messageId of a record in this batch", f.ItemIdentifier)
		}
		keep[f.ItemIdentifier] = true
	}
	return keep, nil
}

// deleteAll deletes msgs in batches of ten, once, as the event source
// mapping does (a record whose delete fails, or that SQS's answer leaves
// out, comes back and runs again), and returns how many SQS confirmed.
func (r *runner) deleteAll(msgs []types.Message) int {
	if len(msgs) == 0 {
		return 0
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res := sqsbatch.NewDeleter(r.client, r.url).Run(ctx, entries(msgs, 0), sqsbatch.Policy{MaxAttempts: 1, CallTimeout: 10 * time.Second})
	deleted := 0
	for _, x := range res {
		if x.OK {
			deleted++
			continue
		}
		r.o.Logger.Warn("sqslambda: delete failed; the record will be delivered again", "queue", r.url, "class", x.Class.String(), "err", x.Err)
	}
	return deleted
}

// release makes messages gathered but not invoked with visible again.
func (r *runner) release(msgs []types.Message) {
	if len(msgs) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	res := sqsbatch.NewChanger(r.client, r.url).Run(ctx, entries(msgs, 0), sqsbatch.Policy{CallTimeout: releaseTimeout})
	for _, x := range res {
		if !x.OK {
			r.o.Logger.Warn("sqslambda: releasing an unprocessed record failed; it comes back after the visibility timeout", "queue", r.url, "class", x.Class.String(), "err", x.Err)
		}
	}
}

// entries turns msgs into batch entries for their receipt handles; timeout
// is the visibility timeout a change sets.
func entries(msgs []types.Message, timeout int32) []sqsbatch.Entry {
	out := make([]sqsbatch.Entry, len(msgs))
	for i, m := range msgs {
		out[i] = sqsbatch.Entry{Handle: aws.ToString(m.ReceiptHandle), Timeout: timeout}
	}
	return out
}

// newRequestID returns a random UUID, as Lambda request IDs are.
func newRequestID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	b[6] = (b[6] & 0x0f) | 0x40
	b[8] = (b[8] & 0x3f) | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
