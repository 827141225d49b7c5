package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/internal/settle"
	"github.com/sqsworker/sqsworker/internal/sqserr"
	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/visibility"
)

// process runs the handler on one message, on a handler slot acquired
// before the receive, and settles it. It reports whether the message is
// settled — deleted or dead-lettered, as SQS confirmed — so a FIFO group
// may go on with its next message. more says that such a message follows:
// then process waits for SQS's confirmation, so the group's order holds
// even when a delete fails.
func (w *Worker) process(r *run, j *job, more bool) bool {
	log := w.opts.Logger
	if w.stopping.Load() {
		r.slots.Release(1)
		w.release(r, j) // received but not started: let another consumer have it now
		return false
	}
	actx, cancel := context.WithTimeout(r.bg, w.opts.CallTimeout)
	settle.CountAttempt(actx, w.opts.AttemptCounter, &j.msg, log)
	cancel()

	hctx, cancelHandler := j.handlerContext(r.hard)
	if w.opts.HandlerTimeout > 0 {
		var cancelTimeout context.CancelFunc
		hctx, cancelTimeout = context.WithTimeoutCause(hctx, w.opts.HandlerTimeout, ErrHandlerTimeout)
		defer cancelTimeout()
	}
	m := messageOf(&j.msg)
	hctx = settle.WithDeadline(hctx, j.lease.Deadline)
	j.started = time.Now()
	herr := settle.Invoke(hctx, log, j.msg.ID, func(ctx context.Context) error { return w.handler.Handle(ctx, m) })
	j.finished = time.Now()
	cause := context.Cause(hctx)
	cancelHandler(nil)
	r.slots.Release(1)

	if herr == nil {
		w.c.succeeded.Add(1)
		return w.settle(r, j, settle.Decision{Action: settle.Delete}, more)
	}
	j.herr = herr
	if errors.Is(cause, ErrShutdown) {
		log.Info("sqsworker: handler cancelled at the shutdown deadline; message released", "message", j.msg.ID, "err", herr)
		w.release(r, j)
		return false
	}
	w.c.failed.Add(1)
	if lost := j.lostCause(); lost != nil {
		// Another consumer may have the message now: leave it alone.
		j.lease.Stop()
		w.warn.Warn("lost-running", "sqsworker: lost the message while its handler ran; SQS will deliver it again", "message", j.msg.ID, "cause", lost, "err", herr)
		w.drop(r, j, settle.Lost, lost.Error())
		return false
	}
	if errors.Is(cause, ErrHandlerTimeout) {
		herr = settle.WithCause(herr, ErrHandlerTimeout)
		j.herr = herr
	}
	return w.settle(r, j, settle.Decide(herr, j.msg.Attempt, w.opts.RetryPolicy), more)
}

// lostCause returns the heartbeat's reason for giving the message up when
// ownership is lost; nil when the message is still held (also at the
// 12-hour limit, where it stays ours until its last deadline).
func (j *job) lostCause() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.cause != nil && !errors.Is(j.cause, visibility.ErrMaxVisibility) {
		return j.cause
	}
	return nil
}

// settle starts the calls that make decision real. When wait is set it
// returns, once SQS has confirmed them, whether the message is done with
// (deleted or dead-lettered); otherwise it returns at once.
func (w *Worker) settle(r *run, j *job, d settle.Decision, wait bool) bool {
	var res chan bool
	if wait && d.Action != settle.Retry {
		res = make(chan bool, 1)
	}
	w.c.settling.Add(1)
	switch d.Action {
	case settle.Delete:
		w.deleteJob(r, j, settle.Deleted, "", res)
	case settle.Retry:
		if d.Snoozed {
			actx, cancel := context.WithTimeout(r.bg, w.opts.CallTimeout)
			settle.Uncount(actx, w.opts.AttemptCounter, &j.msg, w.opts.Logger)
			cancel()
			w.snooze(r, j, d.Delay)
			break
		}
		w.retryJob(r, j, d.Delay)
	case settle.DeadLetter:
		w.deadLetter(r, j, d.Reason, res)
	}
	if res == nil {
		return false
	}
	select {
	case ok := <-res:
		return ok
	case <-r.hard.Done():
		// The shutdown deadline passed: the group stops here; the settlement
		// goes on within the flush.
		return false
	}
}

// deleteJob deletes the message; result is what a confirmed delete means.
func (w *Worker) deleteJob(r *run, j *job, result settle.Result, reason string, res chan<- bool) {
	r.deletes.Add(&settle.Entry{Handle: j.msg.ReceiptHandle, Lease: j.lease, Urgent: res != nil, Done: func(o settle.Outcome) {
		w.finish(r, j, result, o, reason, 0)
		if res != nil {
			res <- o.OK
		}
	}})
}

// retryJob hides the message for d (capped by SQS's 12-hour limit from its
// receive), after which it is delivered again.
func (w *Worker) retryJob(r *run, j *job, d time.Duration) {
	d = settle.CapDelay(d, j.msg.ReceivedAt, time.Now())
	w.opts.Logger.Debug("sqsworker: retry scheduled", "message", j.msg.ID, "attempt", j.msg.Attempt, "delay", d, "err", j.herr)
	r.changes.Add(&settle.Entry{Handle: j.msg.ReceiptHandle, Timeout: retry.VisibilitySeconds(d), Lease: j.lease, Done: func(o settle.Outcome) {
		w.finish(r, j, settle.Retrying, o, "", d)
	}})
}

// snooze hides the message for d, as the handler asked (retry.Snooze).
func (w *Worker) snooze(r *run, j *job, d time.Duration) {
	d = settle.CapDelay(d, j.msg.ReceivedAt, time.Now())
	r.changes.Add(&settle.Entry{Handle: j.msg.ReceiptHandle, Timeout: retry.VisibilitySeconds(d), Lease: j.lease, Done: func(o settle.Outcome) {
		w.finish(r, j, settle.Snoozed, o, "", d)
	}})
}

// release makes a received message visible again at once, unprocessed.
func (w *Worker) release(r *run, j *job) {
	w.c.settling.Add(1)
	r.changes.Add(&settle.Entry{Handle: j.msg.ReceiptHandle, Timeout: 0, Lease: j.lease, Done: func(o settle.Outcome) {
		w.finish(r, j, settle.Released, o, "", 0)
	}})
}

// deadLetter copies the message to the DLQ with provenance, then deletes
// it. Without a DLQ, or when the copy cannot be confirmed, the message
// stays in the queue and comes back after the visibility timeout: it is
// never deleted without a DLQ copy.
func (w *Worker) deadLetter(r *run, j *job, reason string, res chan<- bool) {
	log := w.opts.Logger
	retryLater := func(why string, err error) {
		w.warn.Warn("dlq-"+why, "sqsworker: the message should go to the dead-letter queue but cannot now; it stays in the queue and will be tried again",
			"message", j.msg.ID, "reason", reason, "problem", err, "err", j.herr)
		w.retryJob(r, j, w.visibility)
		if res != nil {
			res <- false
		}
	}
	if w.copier == nil {
		retryLater("none", errors.New("the queue has no dead-letter queue (AllowNoDLQ): it is retried until retention deletes it"))
		return
	}
	in, err := w.copier.Input(j.msg.Raw, dlq.Provenance{
		SourceQueue:   w.queueURL,
		Error:         fmt.Sprintf("%s: %v", reason, j.herr),
		Attempt:       j.msg.Attempt,
		FirstReceived: j.msg.FirstReceivedAt,
		FailedAt:      time.Now(),
		Handler:       w.opts.HandlerName,
	})
	if err != nil {
		retryLater("copy", err)
		return
	}
	r.sends.Add(&settle.Entry{Send: settle.SendEntry(in), Urgent: res != nil, Done: func(o settle.Outcome) {
		if !o.OK {
			retryLater("send", o.Err)
			return
		}
		log.Info("sqsworker: message copied to the dead-letter queue; deleting it from the source", "message", j.msg.ID, "dlq", w.target.QueueURL, "copy", o.MessageID, "reason", reason, "err", j.herr)
		w.deleteJob(r, j, settle.DeadLettered, reason, res)
	}})
}

// finish accounts for a settled message: counters, logs, the held place,
// the hook.
func (w *Worker) finish(r *run, j *job, result settle.Result, o settle.Outcome, reason string, delay time.Duration) {
	switch {
	case o.OK:
		switch result {
		case settle.Deleted:
			w.c.deleted.Add(1)
		case settle.Retrying:
			w.c.retried.Add(1)
		case settle.DeadLettered:
			w.c.deadLettered.Add(1)
		case settle.Released:
			w.c.released.Add(1)
		case settle.Snoozed:
			w.c.snoozed.Add(1)
		}
		if o.Late {
			w.c.settledLate.Add(1)
			w.warn.Warn("late", "sqsworker: SQS confirmed a settlement only after the message's visibility deadline; another consumer may have received the message meanwhile (a duplicate is likely)",
				"queue", w.queueURL, "message", j.msg.ID, "outcome", Outcome(result).String())
		}
	case o.Class == sqserr.Stale:
		result, reason = settle.Lost, o.Err.Error()
		w.c.lost.Add(1)
		w.warn.Warn("lost", "sqsworker: the message's receipt handle is no longer valid (its visibility ended or another consumer has it); SQS will deliver it again",
			"queue", w.queueURL, "message", j.msg.ID, "wanted", Outcome(result).String(), "err", o.Err)
	default:
		wanted := Outcome(result).String()
		result, reason = settle.Abandoned, o.Err.Error()
		w.c.abandoned.Add(1)
		w.warn.Warn("abandoned-"+wanted, "sqsworker: settlement abandoned; SQS will deliver the message again",
			"queue", w.queueURL, "message", j.msg.ID, "wanted", wanted, "attempts", o.Attempts, "err", o.Err)
	}
	w.c.settling.Add(-1)
	w.done(r, j, result, reason, delay, o.Late)
}

// drop accounts for a message that ends without a settlement call.
func (w *Worker) drop(r *run, j *job, result settle.Result, reason string) {
	if result == settle.Lost {
		w.c.lost.Add(1)
	}
	w.done(r, j, result, reason, 0, false)
}

// done frees the message's held place and reports it to the hook.
func (w *Worker) done(r *run, j *job, result settle.Result, reason string, delay time.Duration, late bool) {
	w.c.inFlight.Add(-1)
	r.held.Release(1)
	if w.notify == nil {
		return
	}
	attempt := j.msg.Attempt
	if j.started.IsZero() {
		attempt = 0
	}
	var extensions []time.Time
	if j.lease != nil {
		extensions = j.lease.Extensions()
	}
	w.notify.Notify(&settle.Event{
		Message: j.msg.Copy(), Result: result, Attempt: attempt, Delay: delay, Reason: reason, Err: j.herr, Late: late, Extensions: extensions,
		ReceivedAt: j.msg.ReceivedAt, Started: j.started, Finished: j.finished, Settled: time.Now(),
	})
}
