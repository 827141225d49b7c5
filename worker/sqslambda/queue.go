package sqslambda

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/internal/deadletter"
	"github.com/sqsworker/sqsworker/internal/queueurl"
	"github.com/sqsworker/sqsworker/internal/settle"
	"github.com/sqsworker/sqsworker/queueref"
)

// queueState is what a Handler knows about one source queue, kept across
// invocations once resolved.
type queueState struct {
	arn  string
	url  string // "" when the records carry no usable eventSourceARN
	fifo bool

	mu       sync.Mutex
	resolved bool               // url came from GetQueueUrl, or needs no call
	copier   *deadletter.Copier // the dead-letter queue, once discovered
	settings *settle.Queue      // retention and maxReceiveCount, once read
}

// invocationQueue is one queue's share of one invocation: the lookups made
// for it (at most one GetQueueUrl and one dead-letter discovery, whatever
// the number of records) and its batchers, made when first needed.
type invocationQueue struct {
	q *queueState

	mu        sync.Mutex // records run concurrently
	triedDLQ  bool
	copier    *deadletter.Copier
	copierErr error
	changes   *settle.Batcher
	sends     *settle.Batcher
	deletes   *settle.Batcher
	resends   *settle.Batcher
	triedInfo bool
}

// queues resolves the queues of an invocation's records, once per distinct
// eventSourceARN: with Options.Client by GetQueueUrl (which knows
// LocalStack and emulator URLs; a success is kept for later invocations),
// else — or when that call fails — from the ARN itself.
func (h *Handler) queues(ctx context.Context, arns []string) map[string]*invocationQueue {
	out := make(map[string]*invocationQueue, 1)
	for _, arn := range arns {
		if _, ok := out[arn]; ok {
			continue
		}
		out[arn] = &invocationQueue{q: h.queue(ctx, arn)}
	}
	return out
}

// queue returns the state of the queue an eventSourceARN names, asking
// GetQueueUrl at most once per call.
func (h *Handler) queue(ctx context.Context, arn string) *queueState {
	h.mu.Lock()
	q, ok := h.byARN[arn]
	if !ok {
		q = &queueState{arn: arn}
		if a, err := queueref.ParseARN(arn); err == nil {
			q.url, q.fifo = queueurl.FromARN(a), queueref.FIFO(a.Name)
			q.resolved = h.opts.Client == nil
		} else {
			q.resolved = true
			h.opts.Logger.Warn("sqslambda: record has no usable eventSourceARN; its queue is unknown, so failed records get no retry delay and cannot be moved to the dead-letter queue",
				"eventSourceARN", arn, "err", err)
		}
		h.byARN[arn] = q
	}
	h.mu.Unlock()

	q.mu.Lock()
	defer q.mu.Unlock()
	if q.resolved {
		return q
	}
	cctx, cancel := context.WithTimeout(ctx, h.opts.CallTimeout)
	defer cancel()
	url, err := queueref.Resolve(cctx, h.opts.Client, arn)
	if err != nil {
		// This invocation goes on with the URL the ARN gives; the next one
		// asks again.
		h.warn.Warn("queue-url", "sqslambda: GetQueueUrl failed; using the URL derived from the ARN for this invocation (check sqs:GetQueueUrl in the function's role)",
			"eventSourceARN", arn, "url", q.url, "err", err)
		return q
	}
	q.url, q.resolved = url, true
	return q
}

// dlq returns the queue's dead-letter Copier, discovering the dead-letter
// queue from the RedrivePolicy at most once per invocation. A discovery
// that fails is not kept, so a fixed queue is picked up by the next
// invocation.
func (iq *invocationQueue) dlq(ctx context.Context, h *Handler) (*deadletter.Copier, error) {
	iq.mu.Lock()
	defer iq.mu.Unlock()
	if iq.triedDLQ {
		return iq.copier, iq.copierErr
	}
	iq.triedDLQ = true
	q := iq.q
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.copier != nil {
		iq.copier = q.copier
		return iq.copier, nil
	}
	if q.url == "" {
		iq.copierErr = fmt.Errorf("the record's queue is unknown (eventSourceARN %q)", q.arn)
		return nil, iq.copierErr
	}
	cctx, cancel := context.WithTimeout(ctx, h.opts.CallTimeout)
	defer cancel()
	c, err := settle.DiscoverDLQ(cctx, h.opts.Client, q.url, h.opts.RetryPolicy, h.opts.Logger, func(o *deadletter.Options) {
		o.Offloader, o.OffloadTimeout = h.opts.DeadLetterOffloader, h.opts.CallTimeout
	})
	if err != nil {
		iq.copierErr = err
		return nil, err
	}
	q.copier, iq.copier = c, c
	return c, nil
}

// settings returns what the schedule of delayed jobs needs to know of the
// queue: its retention (GetQueueAttributes) and maxReceiveCount (from the
// dead-letter discovery moves use), read at most once per invocation until
// it succeeds, then kept. When the retention cannot be read, the schedule
// assumes SQS's default; when the redrive policy cannot be, waiting jobs
// are re-sent rather than hidden (hiding counts receives toward its
// maxReceiveCount).
func (iq *invocationQueue) settings(ctx context.Context, h *Handler) settle.Queue {
	q := iq.q
	q.mu.Lock()
	known := q.settings
	q.mu.Unlock()
	if known != nil {
		return *known
	}
	// Until the redrive policy is known, waiting jobs are re-sent; the
	// poller may have received a record up to its batching window before
	// the invocation started.
	s := settle.Queue{FIFO: q.fifo, RedriveUnknown: true, ReceiveSlack: maxBatchingWindow}
	iq.mu.Lock()
	tried := iq.triedInfo
	iq.triedInfo = true
	iq.mu.Unlock()
	if tried || h.opts.Client == nil || q.url == "" {
		return s
	}
	cctx, cancel := context.WithTimeout(ctx, h.opts.CallTimeout)
	defer cancel()
	out, err := h.opts.Client.GetQueueAttributes(cctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(q.url),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameMessageRetentionPeriod}})
	if err != nil {
		h.warn.Warn("queue-settings", "sqslambda: reading the queue's retention failed; delayed jobs wait as on a queue with SQS's defaults (check sqs:GetQueueAttributes in the function's role)", "queue", q.url, "err", err)
		return s
	}
	secs, _ := strconv.Atoi(out.Attributes[string(types.QueueAttributeNameMessageRetentionPeriod)])
	s.Retention = time.Duration(secs) * time.Second
	c, err := iq.dlq(ctx, h)
	switch {
	case err == nil:
		s.MaxReceiveCount = c.Target().MaxReceiveCount
	case !errors.Is(err, dlq.ErrNoRedrivePolicy):
		return s // not known: read again by a later invocation
	}
	s.RedriveUnknown = false
	q.mu.Lock()
	q.settings = &s
	q.mu.Unlock()
	return s
}

// batcher returns *b, making it with mk the first time: an invocation's
// batchers are made only when a record needs one.
//
// The Handler has a client and the queue a URL whenever a record needs a
// batcher, so mk does not fail; if it did, the entry would end at once
// (a nil Batcher ends every entry with ErrClosed).
func (iq *invocationQueue) batcher(b **settle.Batcher, mk func() (*settle.Batcher, error)) *settle.Batcher {
	iq.mu.Lock()
	defer iq.mu.Unlock()
	if *b == nil {
		*b, _ = mk()
	}
	return *b
}

// changer is the invocation's visibility Batcher for the queue.
func (iq *invocationQueue) changer(h *Handler) *settle.Batcher {
	return iq.batcher(&iq.changes, func() (*settle.Batcher, error) { return settle.NewChanger(h.opts.Client, iq.q.url, h.batcherOptions()) })
}

// sender is the invocation's Batcher of dead-letter copies (c's queue).
func (iq *invocationQueue) sender(h *Handler, c *deadletter.Copier) *settle.Batcher {
	return iq.batcher(&iq.sends, func() (*settle.Batcher, error) {
		return settle.NewSender(h.opts.Client, c.Target().DLQURL, h.batcherOptions())
	})
}

// deleter is the invocation's delete Batcher for the queue (deletes after a
// dead-letter copy or a fresh copy of a job not yet due).
func (iq *invocationQueue) deleter(h *Handler) *settle.Batcher {
	return iq.batcher(&iq.deletes, func() (*settle.Batcher, error) { return settle.NewDeleter(h.opts.Client, iq.q.url, h.batcherOptions()) })
}

// resender is the invocation's Batcher of fresh copies of jobs not yet due,
// sent back to the queue.
func (iq *invocationQueue) resender(h *Handler) *settle.Batcher {
	return iq.batcher(&iq.resends, func() (*settle.Batcher, error) { return settle.NewSender(h.opts.Client, iq.q.url, h.batcherOptions()) })
}
