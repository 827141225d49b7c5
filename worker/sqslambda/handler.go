package sqslambda

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsworker/sqsworker/internal/deadletter"
	"github.com/sqsworker/sqsworker/internal/settle"
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
	// engine settles every record; each rec is its Port. The queue's
	// visibility timeout is not known (Visibility zero): a record that
	// cannot be dead-lettered now is reported and comes back when it ends.
	engine settle.Engine

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
	warn := &settle.Warner{Log: o.Logger}
	return &Handler{h: h, opts: o, warn: warn, byARN: map[string]*queueState{}, engine: settle.Engine{
		Name: "sqslambda", Log: o.Logger, Warn: warn, Policy: o.RetryPolicy, Counter: o.AttemptCounter, CallTimeout: o.CallTimeout,
		HandlerName: o.HandlerName, ReceiveSlack: maxBatchingWindow, Events: o.OnSettled != nil,
	}}, nil
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
		outcomes[r.final.Result.String()]++
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

// rec is one record of a batch. It embeds the settlement engine's state of
// the record (settle.Job) and is that record's settle.Port: the engine
// plans every call, the record carries it — into the partial batch
// response (report it as failed, with the visibility to set before Handle
// returns) or into the invocation's batched calls.
type rec struct {
	settle.Job
	ev events.SQSMessage
	b  *batch
	q  *invocationQueue
	// waits: an earlier record of its FIFO message group is held
	// (settle.Groups); guarded by batch.mu.
	waits bool

	// Guarded by batch.mu until the record is done.
	state recState
	ok    bool // done and succeeded: later records of its group may run

	report     bool  // reported in batchItemFailures
	visibility int32 // visibility to set before returning; -1: leave as it is
	final      settle.Final
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
	next      int                 // recs before next are not pending
	failedAny bool                // some record did not succeed
	groups    settle.Groups[*rec] // FIFO: the records of each message group, in order
}

// returnReserve is how long before the invocation's deadline the
// settlement's calls end (at most half of DeadlineMargin): the time Handle
// needs to return its response. A response that comes after the deadline
// is a timeout for Lambda: the whole batch comes back, succeeded records
// included, and none of the settlement counts.
const returnReserve = 50 * time.Millisecond

func (h *Handler) newBatch(ctx context.Context, ev events.SQSEvent) *batch {
	b := &batch{h: h, start: time.Now(), recs: make([]*rec, len(ev.Records))}
	b.cond.L = &b.mu
	if deadline, ok := ctx.Deadline(); ok {
		b.cutoff = deadline.Add(-h.opts.DeadlineMargin)
		b.hctx, b.cancel = context.WithDeadlineCause(ctx, b.cutoff, ErrDeadline)
		// Settling ends returnReserve before the deadline, so that Handle
		// has returned its response when Lambda's timeout strikes even
		// when a call hangs until the settlement's end.
		b.sctx, b.scncl = context.WithDeadline(context.WithoutCancel(ctx), deadline.Add(-min(returnReserve, h.opts.DeadlineMargin/2)))
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
	for i, e := range ev.Records {
		r := &rec{ev: e, b: b, q: b.queues[e.EventSourceARN], visibility: -1}
		h.engine.Track(&r.Job, r, RawMessage(e), r.q.q.url, b.start)
		b.recs[i] = r
		if r.q.q.fifo || (e.EventSourceARN == "" && r.Msg.GroupID != "") {
			b.fifo = true
		}
	}
	if b.fifo {
		for _, r := range b.recs {
			r.waits = !b.groups.Admit(r.Msg.GroupID, r)
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
				if b.fifo && (r.ok || b.h.opts.SkipGroupOnFailure) {
					// The next record of its group runs only after this one
					// succeeded; otherwise the rest of the group is not run.
					// (By default take stops the whole batch.)
					next, ok, rest := b.groups.Settled(r.Msg.GroupID, r, r.ok)
					if ok {
						next.waits = false
					}
					for _, x := range rest {
						if x.state == pending {
							b.skipLocked(x, "not started: an earlier record of its message group failed")
						}
					}
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
		case b.fifo && b.failedAny && !b.h.opts.SkipGroupOnFailure:
			b.skipRestLocked("not started: an earlier record of this FIFO batch failed")
			return nil
		}
		waiting := false
		for _, r := range b.recs[b.next:] {
			switch {
			case r.state != pending:
			case r.waits:
				waiting = true
			default:
				r.state = running
				return r
			}
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
	r.state, r.ok = done, false
	b.h.engine.Release(&r.Job, why)
}

// process runs the handler on one record and hands it to the settlement
// engine, as the worker does.
func (b *batch) process(r *rec) {
	e := &b.h.engine
	// A job sent with a delay beyond 15 minutes waits for its due time
	// without running the handler or counting an attempt.
	if e.Begin(b.sctx, &r.Job, time.Now()) {
		e.Wait(&r.Job)
		return
	}
	hctx := settle.WithDeadline(b.hctx, b.deadline)
	err := settle.Run(hctx, e, &r.Job, b.h.h, r.handlerMessage())
	if errors.Is(context.Cause(b.hctx), ErrDeadline) {
		err = settle.WithCause(err, ErrDeadline)
	}
	e.Handled(b.sctx, &r.Job, err)
}

// calls reports whether the adapter can make SQS calls for r: it has
// Options.Client, and the record's queue is known.
func (r *rec) calls() bool { return r.b.h.opts.Client != nil && r.q.q.url != "" }

// Delete has the record deleted (settle.Port): it is not reported, so
// Lambda deletes it when the invocation returns. After a dead-letter copy
// or a fresh copy of a job not due yet the adapter deletes it now too, so
// that it does not come back should the invocation fail.
func (r *rec) Delete(j *settle.Job) {
	r.report = false
	if j.Want() != settle.Deleted && r.calls() {
		log := r.b.h.opts.Logger
		r.q.deleter(r.b.h).Add(&settle.Entry{Handle: r.Msg.ReceiptHandle, Urgent: true, Owner: settle.DoneFunc(func(out settle.Outcome) {
			if !out.OK {
				log.Info("sqslambda: deleting the record failed; Lambda deletes it when the invocation returns", "message", r.Msg.ID, "err", out.Err)
			}
		})})
	}
	j.Settled(&j.Entry, settle.Outcome{OK: true})
}

// Change reports the record as failed, with the visibility to set before
// Handle returns (settle.Port); without a client the record comes back
// when its visibility timeout ends.
func (r *rec) Change(j *settle.Job) {
	r.report = true
	if r.calls() && j.Entry.Timeout != settle.KeepVisibility {
		r.visibility = j.Entry.Timeout
	}
	j.Settled(&j.Entry, settle.Outcome{OK: true})
}

// Copy queues the record's dead-letter copy (settle.Port); until its
// delete follows, the record is reported as failed.
func (r *rec) Copy(j *settle.Job) {
	r.report = true
	c, _ := r.q.dlq(r.b.sctx, r.b.h) // known: the engine asked DLQ first
	j.Entry.Urgent = true
	r.q.sender(r.b.h, c).Add(&j.Entry)
}

// Resend queues a fresh copy of a job not due yet (settle.Port); until its
// delete follows, the record is reported as failed.
func (r *rec) Resend(j *settle.Job) {
	r.report = true
	j.Entry.Urgent = true
	r.q.resender(r.b.h).Add(&j.Entry)
}

// errNoClient is why a Handler without Options.Client moves nothing to the
// dead-letter queue.
var errNoClient = errors.New("without Options.Client SQS's own redrive moves it after maxReceiveCount receives, without provenance")

// DLQ returns the record's dead-letter Copier (settle.Port).
func (r *rec) DLQ() (*deadletter.Copier, error) {
	if r.b.h.opts.Client == nil {
		return nil, errNoClient
	}
	return r.q.dlq(r.b.sctx, r.b.h)
}

// Queue returns the record's queue settings (settle.Port).
func (r *rec) Queue() settle.Queue {
	s := r.q.settings(r.b.sctx, r.b.h)
	s.NoCalls = !r.calls()
	return s
}

// Done records the record's settlement (settle.Port), for the response and
// the hook.
func (r *rec) Done(_ *settle.Job, f settle.Final) {
	if f.Result == settle.Deleted {
		r.ok = true
	}
	if (f.Result == settle.Retrying || f.Result == settle.Snoozed) && f.Reason == "" && !r.calls() {
		f.Reason, f.Delay = "no Options.Client: the record comes back when the queue's visibility timeout ends", 0
	}
	r.final = f
}

// handlerMessage returns the handler's copy of the record's message (see
// settle.Detach).
func (r *rec) handlerMessage() *worker.Message {
	m := new(worker.Message)
	*m = viewOf(&r.Msg)
	m.Attributes, m.MessageAttributes = settle.Detach(&r.Msg, &m.Raw, &m.ID, &m.Body, &m.ReceiptHandle, r.b.h.engine.Events)
	return m
}

// viewOf returns a worker.Message sharing s's maps and Raw.
func viewOf(s *settle.Message) worker.Message {
	return worker.Message{
		ID: s.ID, Body: s.Body, ReceiptHandle: s.ReceiptHandle, QueueURL: s.QueueURL,
		Attributes: s.Attributes, MessageAttributes: s.MessageAttributes,
		ReceiveCount: s.ReceiveCount, Attempt: s.Attempt,
		SentAt: s.SentAt, FirstReceivedAt: s.FirstReceivedAt, ReceivedAt: s.ReceivedAt,
		GroupID: s.GroupID, Raw: s.Raw,
	}
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
			r.final.Reason = fmt.Sprintf("visibility change failed (%v): the record comes back when its visibility timeout ends", out.Err)
			b.h.warn.Warn("visibility-"+out.Class.String(), "sqslambda: visibility change failed; the record comes back when its visibility timeout ends (check sqs:ChangeMessageVisibility in the function's role)",
				"queue", r.q.q.url, "message", r.Msg.ID, "timeout", r.visibility, "class", out.Class.String(), "err", out.Err)
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
		n.Notify(r.Event(r.final, nil, now))
	}
	n.Close(b.sctx)
}

// settlementOf is the public view of a settlement event.
func settlementOf(ev *settle.Event) worker.Settlement {
	return worker.Settlement{
		Message: eventMessage(ev), Outcome: worker.Outcome(ev.Result), Attempt: ev.Attempt,
		Delay: ev.Delay, Reason: ev.Reason, Err: ev.Err, Late: ev.Late,
		ReceivedAt: ev.ReceivedAt, HandlerStart: ev.Started, HandlerEnd: ev.Finished, SettledAt: ev.Settled,
	}
}

// eventMessage is the public view of an event's message, which the
// runtime has given up: it shares its maps and Raw.
func eventMessage(ev *settle.Event) *worker.Message {
	m := viewOf(ev.Message)
	return &m
}
