package sqslambda

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/internal/schedule"
	"github.com/sqsworker/sqsworker/internal/settle"
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

// Handler runs a worker.Handler on the records of Lambda SQS events and
// settles each record as a worker.Worker would, through the same code:
// success is left for Lambda to delete, a failure is reported in the
// partial batch response with its retry delay applied, and a permanent or
// exhausted failure is copied to the dead-letter queue (and, not being
// reported, deleted by Lambda). Create one with New and pass its Handle
// method to lambda.Start. A Handler is safe for concurrent use; it caches
// each queue's URL and dead-letter queue for the life of the execution
// environment.
type Handler struct {
	h    worker.Handler
	opts Options
	warn *settle.Warner

	mu    sync.Mutex
	byARN map[string]*queueState
}

// New returns a Handler that runs h (wrap it with worker.Chain to add
// middleware) on every record of an SQS event. It returns an error when h
// is nil or an option is out of range.
func New(h worker.Handler, optFns ...func(*Options)) (*Handler, error) {
	if h == nil {
		return nil, errors.New("sqslambda.New: the worker.Handler is nil; pass the handler that processes one message")
	}
	var o Options
	for _, fn := range optFns {
		fn(&o)
	}
	if err := o.setDefaults(); err != nil {
		return nil, err
	}
	return &Handler{h: h, opts: o, warn: &settle.Warner{Log: o.Logger}, byARN: map[string]*queueState{}}, nil
}

func (h *Handler) batcherOptions() settle.BatcherOptions {
	return settle.BatcherOptions{Senders: settleParallel, CallTimeout: h.opts.CallTimeout, Log: h.opts.Logger, Warn: h.warn}
}

// settleParallel is how many calls of one kind a batch may have in flight.
const settleParallel = 8

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
	q    *invocationQueue
	prev *rec // the previous record of the same FIFO message group, or nil
	msg  settle.Message

	// Guarded by batch.mu until the record is done.
	state recState
	ok    bool // done and succeeded: later records of its group may run

	report            bool   // reported in batchItemFailures
	visibility        int32  // visibility to set before returning; -1: leave as it is
	outcome           string // what became of it, for the batch's debug log
	result            settle.Result
	reason            string
	delay             time.Duration
	herr              error
	started, finished time.Time
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
	queues map[string]*invocationQueue
	// deadline is the records' visibility deadline as a handler sees it
	// (worker.VisibilityDeadline): the invocation's deadline, which AWS
	// advises to keep below the queue's visibility timeout.
	deadline settle.Deadliner

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
	d, _ := b.sctx.Deadline()
	b.deadline = settle.FixedDeadline(d)
	arns := make([]string, len(ev.Records))
	for i, e := range ev.Records {
		arns[i] = e.EventSourceARN
	}
	b.queues = h.queues(b.sctx, arns)
	last := map[string]*rec{}
	for i, e := range ev.Records {
		r := &rec{ev: e, q: b.queues[e.EventSourceARN], visibility: -1}
		r.msg = settle.Parse(RawMessage(e), r.q.q.url, b.start)
		b.recs[i] = r
		if r.q.q.fifo || (e.EventSourceARN == "" && r.msg.GroupID != "") {
			b.fifo = true
		}
	}
	if b.fifo {
		for _, r := range b.recs {
			g := r.msg.GroupID
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
	r.state, r.ok, r.report, r.outcome, r.result, r.reason = done, false, true, why, settle.Released, why
	if b.h.opts.Client != nil && r.q.q.url != "" {
		r.visibility = 0
	}
}

// process runs the handler on one record and decides its fate with the
// worker's decision (settle.Decide).
func (b *batch) process(r *rec) {
	o := &b.h.opts
	// A job sent with a delay beyond 15 minutes waits for its due time
	// without running the handler or counting an attempt.
	if d, ok, err := settle.Due(&r.msg, time.Now(), func() settle.Queue { return r.q.settings(b.sctx, b.h) }); err != nil {
		r.herr, r.outcome, r.result, r.reason = err, "dead-letter", settle.DeadLettered, "invalid due time"
		b.deadLetter(r, err, "invalid due time")
		return
	} else if ok && d.Action != schedule.Run {
		if b.wait(r, d) {
			return
		}
	}
	settle.CountAttempt(b.sctx, o.CallTimeout, o.AttemptCounter, &r.msg, o.Logger)
	m := (*worker.Message)(r.msg.Copy())
	hctx := settle.WithDeadline(b.hctx, b.deadline)
	r.started = time.Now()
	err := settle.Invoke(hctx, o.Logger, r.msg.ID, b.h.h, m)
	r.finished = time.Now()
	if errors.Is(context.Cause(b.hctx), ErrDeadline) {
		err = settle.WithCause(err, ErrDeadline)
	}
	r.herr = err
	d := settle.Decide(err, r.msg.Attempt, o.RetryPolicy)
	switch d.Action {
	case settle.Delete:
		r.ok, r.outcome, r.result = true, "succeeded", settle.Deleted
	case settle.Retry:
		r.report, r.outcome, r.result = true, "retry", settle.Retrying
		if d.Snoozed {
			r.outcome, r.result = "snoozed", settle.Snoozed
			settle.Uncount(b.sctx, o.CallTimeout, o.AttemptCounter, &r.msg, o.Logger)
		}
		if o.Client != nil && r.q.q.url != "" {
			r.delay = settle.CapDelay(d.Delay, b.start.Add(-maxBatchingWindow), time.Now())
			r.visibility = retry.VisibilitySeconds(r.delay)
			o.Logger.Debug("sqslambda: retry scheduled", "message", r.msg.ID, "attempt", r.msg.Attempt, "delay", r.delay, "err", err)
		} else {
			r.reason = "no Options.Client: the record comes back when the queue's visibility timeout ends"
			o.Logger.Debug("sqslambda: record failed; reported for Lambda to retry after the visibility timeout (no Options.Client, so no backoff)", "message", r.msg.ID, "attempt", r.msg.Attempt, "err", err)
		}
	case settle.DeadLetter:
		r.outcome, r.result, r.reason = "dead-letter", settle.DeadLettered, d.Reason
		b.deadLetter(r, err, d.Reason)
	}
}

// wait keeps a record that is not due yet waiting, as the schedule
// decided, and reports whether it did: hidden (reported as failed, with its
// visibility set to the wait), or re-sent as a fresh copy (then deleted,
// and not reported). Without Options.Client it cannot wait: the handler
// runs now, and a warning says why.
func (b *batch) wait(r *rec, d schedule.Decision) bool {
	o := &b.h.opts
	if o.Client == nil || r.q.q.url == "" {
		b.h.warn.Warn("due-no-client", "sqslambda: a record carries a due time (a delay beyond 15 minutes) but the Handler has no Options.Client to keep it waiting; it runs now", "message", r.msg.ID, "wait", d.String())
		return false
	}
	r.outcome, r.result, r.reason, r.delay = "delayed", settle.Delayed, d.String(), d.Delay
	if d.Action == schedule.Hide {
		r.report, r.visibility = true, retry.VisibilitySeconds(d.Delay)
		return true
	}
	r.report = true
	in := schedule.ResendInput(r.q.q.url, r.msg.Raw, d.Delay)
	r.q.resender(b.h).Add(&settle.Entry{Send: settle.SendEntry(in), Urgent: true, Owner: settle.DoneFunc(func(out settle.Outcome) {
		if !out.OK {
			// Reported as failed: it comes back after the visibility timeout.
			b.h.warn.Warn("resend", "sqslambda: re-sending a record that is not due yet failed; it comes back after its visibility timeout", "message", r.msg.ID, "err", out.Err)
			return
		}
		r.report = false // Lambda deletes it; so does the adapter, now
		r.q.deleter(b.h).Add(&settle.Entry{Handle: r.msg.ReceiptHandle, Urgent: true})
	})})
	return true
}

// deadLetter queues the record's copy to the dead-letter queue, then its
// delete from the source, as the worker does. The record is reported as
// failed (and so stays in the queue) unless the copy is confirmed before
// Handle returns; then it is not reported, so Lambda deletes it even if
// the adapter's own delete failed.
func (b *batch) deadLetter(r *rec, cause error, reason string) {
	o := &b.h.opts
	r.report = true
	fail := func(outcome string, problem error) {
		r.outcome, r.result, r.reason = outcome, settle.Retrying, fmt.Sprintf("%s (%v); reported as failed, it comes back after the visibility timeout", reason, problem)
		b.h.warn.Warn("dlq-"+outcome, "sqslambda: record should go to the dead-letter queue but cannot now; it is reported as failed and will be retried",
			"message", r.msg.ID, "reason", reason, "problem", problem, "err", cause)
	}
	if o.Client == nil {
		fail("dead-letter: no client", errors.New("without Options.Client SQS's own redrive moves it after maxReceiveCount receives, without provenance"))
		return
	}
	c, err := r.q.dlq(b.sctx, b.h)
	if err != nil {
		fail("dead-letter: no DLQ", err)
		return
	}
	in, err := c.Input(r.msg.Raw, dlq.Provenance{
		SourceQueue:   r.q.q.url,
		Error:         fmt.Sprintf("%s: %v", reason, cause),
		Attempt:       r.msg.Attempt,
		FirstReceived: r.msg.FirstReceivedAt,
		FailedAt:      time.Now(),
		Handler:       o.HandlerName,
	})
	if err != nil {
		fail("dead-letter: copy", err)
		return
	}
	r.q.sender(b.h, c).Add(&settle.Entry{Send: settle.SendEntry(in), Urgent: true, Owner: settle.DoneFunc(func(out settle.Outcome) {
		if !out.OK {
			fail("dead-letter failed", out.Err)
			return
		}
		// Not reported: even if this delete fails, Lambda deletes it.
		r.report, r.outcome = false, "dead-lettered"
		o.Logger.Info("sqslambda: record copied to the dead-letter queue; deleting it from the source", "message", r.msg.ID, "dlq", c.Target().QueueURL, "copy", out.MessageID, "reason", reason)
		r.q.deleter(b.h).Add(&settle.Entry{Handle: r.msg.ReceiptHandle, Urgent: true, Owner: settle.DoneFunc(func(out settle.Outcome) {
			if !out.OK {
				o.Logger.Info("sqslambda: deleting the dead-lettered record failed; Lambda deletes it when the invocation returns", "message", r.msg.ID, "err", out.Err)
			}
		})})
	})})
}

// settle confirms the batch's dead-letter copies, then applies its
// visibility changes (retry delays, releases) in batches of ten per queue,
// before Handle returns, within the invocation's deadline; then reports
// every record to the settlement hook.
func (b *batch) settle() {
	for _, iq := range b.queues {
		if iq.sends != nil {
			iq.sends.Close(b.sctx)
		}
		if iq.resends != nil {
			iq.resends.Close(b.sctx)
		}
	}
	var wg sync.WaitGroup
	for _, iq := range b.queues {
		if iq.deletes != nil {
			wg.Go(func() { iq.deletes.Close(b.sctx) })
		}
	}
	for _, r := range b.recs {
		if r.visibility < 0 || b.h.opts.Client == nil {
			continue
		}
		r.q.changer(b.h).Add(&settle.Entry{Handle: r.ev.ReceiptHandle, Timeout: r.visibility, Owner: settle.DoneFunc(func(out settle.Outcome) {
			if out.OK {
				return
			}
			r.reason = fmt.Sprintf("visibility change failed (%v): the record comes back when its visibility timeout ends", out.Err)
			b.h.warn.Warn("visibility-"+out.Class.String(), "sqslambda: visibility change failed; the record comes back when its visibility timeout ends (check sqs:ChangeMessageVisibility in the function's role)",
				"queue", r.q.q.url, "message", r.msg.ID, "timeout", r.visibility, "class", out.Class.String(), "err", out.Err)
		})})
	}
	for _, iq := range b.queues {
		if iq.changes != nil {
			wg.Go(func() { iq.changes.Close(b.sctx) })
		}
	}
	wg.Wait()
	b.notify()
}

// notify reports every record to Options.OnSettled and waits, within the
// invocation's deadline, until the hook has seen them: the execution
// environment may be frozen once Handle returns.
func (b *batch) notify() {
	if b.h.opts.OnSettled == nil {
		return
	}
	n := &settle.Notifier{Hook: func(ev *settle.Event) { b.h.opts.OnSettled(settlementOf(ev)) }, Log: b.h.opts.Logger, Warn: b.h.warn}
	now := time.Now()
	for _, r := range b.recs {
		ev := &settle.Event{Message: r.msg.Copy(), Result: r.result, Attempt: r.msg.Attempt, Delay: r.delay, Reason: r.reason, Err: r.herr,
			ReceivedAt: b.start, Started: r.started, Finished: r.finished, Settled: now}
		if r.started.IsZero() {
			ev.Attempt = 0
		}
		n.Notify(ev)
	}
	n.Close(b.sctx)
}

// settlementOf is the public view of a settlement event.
func settlementOf(ev *settle.Event) worker.Settlement {
	return worker.Settlement{
		Message: (*worker.Message)(ev.Message), Outcome: worker.Outcome(ev.Result), Attempt: ev.Attempt,
		Delay: ev.Delay, Reason: ev.Reason, Err: ev.Err, Late: ev.Late,
		ReceivedAt: ev.ReceivedAt, HandlerStart: ev.Started, HandlerEnd: ev.Finished, SettledAt: ev.Settled,
	}
}
