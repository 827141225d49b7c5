package sqslambda

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/worker"
)

// ErrDeadline is the cause of a handler context cancelled because the
// invocation's deadline minus Options.DeadlineMargin passed. The record is
// then retried like any failure.
var ErrDeadline = errors.New("sqslambda: the invocation deadline is near (Options.DeadlineMargin)")

// settleTimeout bounds the SQS calls that settle a batch when the
// invocation has no deadline (tests, local runs without one).
const settleTimeout = 30 * time.Second

// maxBatchingWindow is the longest an event source mapping holds records
// before invoking (MaximumBatchingWindowInSeconds 300). Lambda does not say
// when a record was received, so retry delays are capped as if it had been
// received that long before the invocation started.
const maxBatchingWindow = 5 * time.Minute

// capMargin keeps a retry delay this far inside SQS's 12-hour limit.
const capMargin = 5 * time.Second

// Handler runs a worker.Handler on the records of Lambda SQS events and
// settles each record as a worker.Worker would: success is left for Lambda
// to delete, a failure is reported in the partial batch response with its
// retry delay applied, and a permanent or exhausted failure is moved to the
// dead-letter queue. Create one with New and pass its Handle method to
// lambda.Start. A Handler is safe for concurrent use; it caches each
// queue's URL and dead-letter queue for the life of the execution
// environment.
type Handler struct {
	h    worker.Handler
	opts Options

	mu     sync.Mutex
	queues map[string]*queueState // by eventSourceARN
}

// New returns a Handler that runs h (wrap it with worker.Chain to add
// middleware) on every record of an SQS event. New panics if h is nil or an
// option is out of range: both are programming errors best caught when the
// function starts.
func New(h worker.Handler, optFns ...func(*Options)) *Handler {
	if h == nil {
		panic("sqslambda.New: the worker.Handler is nil; pass the handler that processes one message")
	}
	var o Options
	for _, fn := range optFns {
		fn(&o)
	}
	if err := o.setDefaults(); err != nil {
		panic(err.Error())
	}
	return &Handler{h: h, opts: o, queues: map[string]*queueState{}}
}

// Handle processes the records of one SQS event and returns the partial
// batch response: the messageId of every record that did not succeed, in
// batch order, and an empty (never null) list when all did. It returns an
// error, failing the whole batch, only when a failed record has no
// messageId, since Lambda could not retry it alone.
//
// Handle has the signature lambda.Start expects for an SQS event source
// mapping with FunctionResponseTypes ["ReportBatchItemFailures"]. Without
// that setting Lambda ignores the response and deletes every record of a
// batch whose invocation did not return an error.
func (h *Handler) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	resp := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
	if len(ev.Records) == 0 {
		return resp, nil
	}
	b := h.newBatch(ctx, ev)
	defer b.scncl()
	b.run()
	b.settle()
	outcomes := map[string]int{}
	for _, r := range b.recs {
		outcomes[r.outcome]++
		if !r.report {
			continue
		}
		if r.ev.MessageId == "" {
			return events.SQSEventResponse{}, errNoMessageID
		}
		resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: r.ev.MessageId})
	}
	h.opts.Logger.Debug("sqslambda: batch settled", "records", len(b.recs), "reported", len(resp.BatchItemFailures), "outcomes", outcomes)
	return resp, nil
}

// recState is where a record is in the batch.
type recState int

const (
	pending recState = iota
	running
	done
)

// rec is one record of a batch.
type rec struct {
	ev   events.SQSMessage
	q    *queueState
	prev *rec // the previous record of the same FIFO message group, or nil

	// Guarded by batch.mu until the record is done.
	state recState
	ok    bool // done and succeeded: later records of its group may run

	report     bool   // reported in batchItemFailures
	visibility int32  // visibility to set before returning; -1: leave as it is
	outcome    string // what became of it, for the batch's debug log
}

// batch is one invocation's records and their scheduling.
type batch struct {
	h      *Handler
	start  time.Time
	cutoff time.Time       // no record starts from then on; zero: none
	hctx   context.Context // handlers' context: ends at cutoff with ErrDeadline
	cancel context.CancelFunc
	sctx   context.Context // settling calls: not cancelled before the invocation ends
	scncl  context.CancelFunc
	fifo   bool
	recs   []*rec

	mu        sync.Mutex
	cond      sync.Cond
	next      int  // recs before next are not pending
	failedAny bool // some record did not succeed
}

func (h *Handler) newBatch(ctx context.Context, ev events.SQSEvent) *batch {
	b := &batch{h: h, start: time.Now(), recs: make([]*rec, len(ev.Records))}
	b.cond.L = &b.mu
	if deadline, ok := ctx.Deadline(); ok {
		b.cutoff = deadline.Add(-h.opts.DeadlineMargin)
		b.hctx, b.cancel = context.WithDeadlineCause(ctx, b.cutoff, ErrDeadline)
		b.sctx, b.scncl = context.WithDeadline(context.WithoutCancel(ctx), deadline)
		if !b.start.Before(b.cutoff) {
			h.opts.Logger.Warn("sqslambda: the invocation started with less than Options.DeadlineMargin left; no record will run. Raise the function timeout or lower DeadlineMargin",
				"records", len(ev.Records), "left", deadline.Sub(b.start), "deadlineMargin", h.opts.DeadlineMargin)
		}
	} else {
		b.hctx, b.cancel = context.WithCancel(ctx)
		b.sctx, b.scncl = context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	}
	last := map[string]*rec{}
	for i, e := range ev.Records {
		r := &rec{ev: e, q: h.queue(b.sctx, e.EventSourceARN), visibility: -1}
		b.recs[i] = r
		if r.q.fifo || (e.EventSourceARN == "" && groupID(e) != "") {
			b.fifo = true
		}
	}
	if b.fifo {
		for _, r := range b.recs {
			g := groupID(r.ev)
			r.prev = last[g]
			last[g] = r
		}
	}
	return b
}

// run runs the records' handlers, Options.Concurrency at a time.
func (b *batch) run() {
	defer b.cancel()
	var wg sync.WaitGroup
	for range min(b.h.opts.Concurrency, len(b.recs)) {
		wg.Go(func() {
			for r := b.take(); r != nil; r = b.take() {
				b.process(r)
				b.mu.Lock()
				r.state = done
				if !r.ok {
					b.failedAny = true
				}
				b.cond.Broadcast()
				b.mu.Unlock()
			}
		})
	}
	wg.Wait()
}

// take returns the next record to run, in batch order, or nil when none is
// left. It waits while the only records left wait for an earlier record of
// their FIFO group, and marks the records that must not run.
func (b *batch) take() *rec {
	b.mu.Lock()
	defer b.mu.Unlock()
	for {
		for b.next < len(b.recs) && b.recs[b.next].state != pending {
			b.next++
		}
		switch {
		case !b.cutoff.IsZero() && !time.Now().Before(b.cutoff):
			b.skipRestLocked("not started: the invocation deadline is near")
			return nil
		case b.fifo && b.failedAny && b.h.opts.FIFO == StopOnFailure:
			b.skipRestLocked("not started: an earlier record of this FIFO batch failed")
			return nil
		}
		waiting := false
		for _, r := range b.recs[b.next:] {
			if r.state != pending {
				continue
			}
			if r.prev != nil && r.prev.state == done && !r.prev.ok {
				b.skipLocked(r, "not started: an earlier record of its message group failed")
				continue
			}
			if r.prev != nil && r.prev.state != done {
				waiting = true
				continue
			}
			r.state = running
			return r
		}
		if !waiting {
			return nil
		}
		b.cond.Wait()
	}
}

// skipRestLocked marks every pending record as not run.
func (b *batch) skipRestLocked(why string) {
	for _, r := range b.recs[b.next:] {
		if r.state == pending {
			b.skipLocked(r, why)
		}
	}
}

// skipLocked marks r as not run: it is reported as failed and released at
// once, so it is delivered again without waiting for the visibility timeout
// (on a FIFO queue, after the earlier records of its group).
func (b *batch) skipLocked(r *rec, why string) {
	r.state, r.ok, r.report, r.outcome = done, false, true, why
	if b.h.opts.Client != nil && r.q.url != "" {
		r.visibility = 0
	}
}

// process runs the handler on one record and decides its fate.
func (b *batch) process(r *rec) {
	o := &b.h.opts
	m := worker.NewMessage(RawMessage(r.ev), r.q.url, b.start)
	if _, byReceives := o.AttemptCounter.(retry.ReceiveCount); !byReceives {
		attempt, err := o.AttemptCounter.Attempt(b.sctx, m.ID, m.ReceiveCount)
		if err != nil {
			o.Logger.Warn("sqslambda: attempt counter failed; using the receive count", "message", m.ID, "err", err)
			attempt = m.ReceiveCount
		}
		m.Attempt = max(attempt, 1)
	}
	err := b.call(m)
	if errors.Is(context.Cause(b.hctx), ErrDeadline) && err != nil && !errors.Is(err, ErrDeadline) && !retry.IsPermanent(err) {
		err = fmt.Errorf("%w: %w", ErrDeadline, err)
	}
	d := worker.Decide(err, m.Attempt, o.RetryPolicy)
	switch d.Outcome {
	case worker.Delete:
		r.ok, r.outcome = true, "succeeded"
	case worker.RetryAfter:
		r.report, r.outcome = true, "retry"
		if o.Client != nil && r.q.url != "" {
			delay := capDelay(d.Delay, b.start, time.Now())
			r.visibility = retry.VisibilitySeconds(delay)
			o.Logger.Debug("sqslambda: retry scheduled", "message", m.ID, "attempt", m.Attempt, "delay", delay, "err", err)
		} else {
			o.Logger.Debug("sqslambda: record failed; reported for Lambda to retry after the visibility timeout (no Options.Client, so no backoff)", "message", m.ID, "attempt", m.Attempt, "err", err)
		}
	case worker.DeadLetter:
		if b.deadLetter(r, m, err, d.Reason) {
			r.outcome = "dead-lettered"
		} else {
			r.report, r.outcome = true, "dead-letter failed"
		}
	}
}

// call runs the handler, turning a panic into an error wrapping
// worker.ErrPanic.
func (b *batch) call(m *worker.Message) (err error) {
	defer func() {
		if p := recover(); p != nil {
			b.h.opts.Logger.Error("sqslambda: handler panicked", "message", m.ID, "panic", p, "stack", string(debug.Stack()))
			err = fmt.Errorf("%w: %v", worker.ErrPanic, p)
		}
	}()
	return b.h.h.Handle(b.hctx, m)
}

// deadLetter moves the record's message to the queue's dead-letter queue
// and reports whether its copy there is confirmed. When it is not, the
// record is reported as failed and stays in the queue.
func (b *batch) deadLetter(r *rec, m *worker.Message, cause error, reason string) bool {
	o := &b.h.opts
	log := o.Logger.With("message", m.ID, "reason", reason, "err", cause)
	if o.Client == nil {
		log.Warn("sqslambda: record should go to the dead-letter queue, but without Options.Client it can only be reported as failed; SQS's redrive moves it after maxReceiveCount receives, without provenance")
		return false
	}
	mover, err := b.h.mover(b.sctx, r.q)
	if err != nil {
		log.Error("sqslambda: record should go to the dead-letter queue but none is available; it is reported as failed and will be retried", "queue", r.q.url, "problem", err)
		return false
	}
	err = mover.Move(b.sctx, m.Raw, dlq.Provenance{
		SourceQueue:   r.q.url,
		Error:         fmt.Sprintf("%s: %v", reason, cause),
		Attempt:       m.Attempt,
		FirstReceived: m.FirstReceivedAt,
		FailedAt:      time.Now(),
		Handler:       o.HandlerName,
	})
	switch {
	case err == nil:
		log.Info("sqslambda: record moved to the dead-letter queue", "dlq", mover.Target().QueueURL)
		return true
	case errors.Is(err, dlq.ErrNotDeleted):
		// The copy is in the dead-letter queue; Lambda deletes the record
		// from the source because it is not reported as failed.
		log.Info("sqslambda: record copied to the dead-letter queue; Lambda deletes it from the source", "dlq", mover.Target().QueueURL, "deleteErr", err)
		return true
	default:
		log.Error("sqslambda: moving the record to the dead-letter queue failed; it is reported as failed and comes back after the visibility timeout", "dlq", mover.Target().QueueURL, "problem", err)
		return false
	}
}

// capDelay limits d to what is surely left of SQS's 12-hour visibility
// limit, counted from a receive at most maxBatchingWindow before start.
func capDelay(d time.Duration, start, now time.Time) time.Duration {
	left := start.Add(-maxBatchingWindow).Add(retry.MaxVisibilityTimeout - capMargin).Sub(now)
	return max(min(retry.Cap(d), left), 0)
}
