package sqslambda

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/retry"
)

// queueState is what a Handler knows about one source queue.
type queueState struct {
	arn  string
	url  string // "" when the records carry no usable eventSourceARN
	fifo bool

	mu       sync.Mutex
	resolved bool       // url came from GetQueueUrl, or needs no call
	mover    *dlq.Mover // the dead-letter queue, once discovered
}

// queue returns the state of the queue an eventSourceARN names, resolving
// its URL once: with Options.Client by GetQueueUrl (which knows LocalStack
// and emulator URLs), else from the ARN.
func (h *Handler) queue(ctx context.Context, arn string) *queueState {
	h.mu.Lock()
	q, ok := h.queues[arn]
	if !ok {
		q = &queueState{arn: arn}
		if a, err := dlq.ParseQueueARN(arn); err == nil {
			q.url, q.fifo = a.URL(), a.FIFO()
			q.resolved = h.opts.Client == nil
		} else {
			q.resolved = true
			h.opts.Logger.Warn("sqslambda: record has no usable eventSourceARN; its queue is unknown, so failed records get no retry delay and cannot be moved to the dead-letter queue",
				"eventSourceARN", arn, "err", err)
		}
		h.queues[arn] = q
	}
	h.mu.Unlock()

	q.mu.Lock()
	defer q.mu.Unlock()
	if q.resolved {
		return q
	}
	url, err := dlq.ResolveQueueURL(ctx, h.opts.Client, arn)
	if err != nil {
		// Tried again at the next invocation.
		h.opts.Logger.Warn("sqslambda: GetQueueUrl failed; using the URL derived from the ARN (check sqs:GetQueueUrl in the function's role)",
			"eventSourceARN", arn, "url", q.url, "err", err)
		return q
	}
	q.url, q.resolved = url, true
	return q
}

// mover returns the queue's dead-letter Mover, discovering the dead-letter
// queue from the RedrivePolicy the first time. A failed discovery is not
// cached, so a fixed queue is picked up without a new execution
// environment.
func (h *Handler) mover(ctx context.Context, q *queueState) (*dlq.Mover, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.mover != nil {
		return q.mover, nil
	}
	if q.url == "" {
		return nil, fmt.Errorf("the record's queue is unknown (eventSourceARN %q)", q.arn)
	}
	t, err := dlq.Discover(ctx, h.opts.Client, q.url)
	if err != nil {
		return nil, err
	}
	q.mover = dlq.NewMover(h.opts.Client, t, func(o *dlq.MoverOptions) { o.Logger = h.opts.Logger })
	h.checkPolicy(t)
	return q.mover, nil
}

// checkPolicy warns when SQS would dead-letter a record before the retry
// policy gives up, which moves it without provenance.
func (h *Handler) checkPolicy(t dlq.Target) {
	attempts := retry.MaxDeliveries(h.opts.RetryPolicy)
	if t.MaxReceiveCount > 0 && t.MaxReceiveCount < attempts {
		h.opts.Logger.Warn("sqslambda: the queue's maxReceiveCount is lower than the retry policy's attempts; SQS will dead-letter records before the policy gives up (without provenance). Raise maxReceiveCount or shorten the policy",
			"queue", t.SourceURL, "maxReceiveCount", t.MaxReceiveCount, "policyAttempts", attempts)
	}
}

// maxBatch is the most entries one SQS batch call takes.
const maxBatch = 10

// settleParallel is how many ChangeMessageVisibilityBatch calls run at once.
const settleParallel = 8

// change is one visibility change.
type change struct {
	id      string // the record's messageId, for logs
	handle  string
	timeout int32
}

// settle applies the visibility changes the batch decided, in batches of
// ten per queue, before Handle returns.
func (b *batch) settle() {
	if b.h.opts.Client == nil {
		return
	}
	byQueue := map[string][]change{}
	var order []string
	for _, r := range b.recs {
		if r.visibility < 0 {
			continue
		}
		if _, ok := byQueue[r.q.url]; !ok {
			order = append(order, r.q.url)
		}
		byQueue[r.q.url] = append(byQueue[r.q.url], change{id: r.ev.MessageId, handle: r.ev.ReceiptHandle, timeout: r.visibility})
	}
	sem := make(chan struct{}, settleParallel)
	var wg sync.WaitGroup
	for _, url := range order {
		all := byQueue[url]
		for start := 0; start < len(all); start += maxBatch {
			chunk := all[start:min(start+maxBatch, len(all))]
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				b.changeVisibility(url, chunk)
			})
		}
	}
	wg.Wait()
}

// changeVisibility sends one ChangeMessageVisibilityBatch, retrying the
// entries SQS failed on its side a few times. A change that fails for good
// only costs time: the record comes back when its current visibility
// timeout ends.
func (b *batch) changeVisibility(url string, chunk []change) {
	log := b.h.opts.Logger
	for attempt := 1; ; attempt++ {
		in := &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(url), Entries: make([]types.ChangeMessageVisibilityBatchRequestEntry, len(chunk))}
		for i, c := range chunk {
			in.Entries[i] = types.ChangeMessageVisibilityBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: aws.String(c.handle), VisibilityTimeout: c.timeout}
		}
		out, err := b.h.opts.Client.ChangeMessageVisibilityBatch(b.sctx, in)
		if err != nil {
			log.Warn("sqslambda: ChangeMessageVisibilityBatch failed; these records come back when their visibility timeout ends (check sqs:ChangeMessageVisibility in the function's role)",
				"queue", url, "records", len(chunk), "err", err)
			return
		}
		var again []change
		for _, f := range out.Failed {
			i, err := strconv.Atoi(aws.ToString(f.Id))
			if err != nil || i < 0 || i >= len(chunk) {
				continue
			}
			if !f.SenderFault && attempt < 3 {
				again = append(again, chunk[i])
				continue
			}
			log.Warn("sqslambda: visibility change failed; the record comes back when its visibility timeout ends",
				"queue", url, "message", chunk[i].id, "timeout", chunk[i].timeout, "code", aws.ToString(f.Code), "err", aws.ToString(f.Message))
		}
		if len(again) == 0 {
			return
		}
		if !sleepCtx(b.sctx, time.Duration(attempt)*100*time.Millisecond) {
			return
		}
		chunk = again
	}
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
