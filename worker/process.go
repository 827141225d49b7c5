package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/internal/schedule"
	"github.com/sqsworker/sqsworker/internal/settle"
	"github.com/sqsworker/sqsworker/internal/sqserr"
	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/visibility"
)

// process runs the handler on one message, on one of the handler
// goroutines, and starts its settlement. On a FIFO queue the next message
// of its group runs only once SQS confirmed this one's delete (or
// dead-letter move): see flow.settled.
func (w *Worker) process(r *run, j *job) {
	log := w.opts.Logger
	slot := time.Now()
	if w.stopping.Load() {
		r.flow.unstarted()
		w.release(r, j) // received but not started: let another consumer have it now
		return
	}
	if lost := j.lostCause(); lost != nil {
		// Given up while it waited for a handler (its extensions failed):
		// another consumer may have it now, so it does not run here.
		r.flow.unstarted()
		j.lease.Stop()
		w.warn.Warn("lost-waiting", "sqsworker: lost a received message before its handler started (its visibility could not be extended); SQS will deliver it again", "message", j.msg.ID, "cause", lost)
		w.drop(r, j, settle.Lost, lost.Error())
		return
	}
	// A job sent with a delay beyond 15 minutes waits for its due time
	// without running the handler or counting an attempt.
	if d, ok, err := settle.Due(&j.msg, slot, w.queueInfo); err != nil || (ok && d.Action != schedule.Run) {
		r.flow.handled(time.Since(slot))
		if err != nil {
			w.c.failed.Add(1)
			j.herr = err
			w.settle(r, j, settle.Decision{Action: settle.DeadLetter, Reason: "invalid due time"})
			return
		}
		w.wait(r, j, d)
		return
	}
	settle.CountAttempt(r.bg, w.opts.CallTimeout, w.opts.AttemptCounter, &j.msg, log)

	hctx, cancelHandler := j.handlerContext(r.hard)
	if w.opts.HandlerTimeout > 0 {
		var cancelTimeout context.CancelFunc
		hctx, cancelTimeout = context.WithTimeoutCause(hctx, w.opts.HandlerTimeout, ErrHandlerTimeout)
		defer cancelTimeout()
	}
	m := j.handlerMessage()
	j.started = time.Now()
	herr, detached := w.invoke(hctx, r, j, m)
	if detached {
		cancelHandler(nil)
		return // Run returned without this handler: nothing it returns is applied (see Run)
	}
	j.finished = time.Now()
	cause := context.Cause(hctx)
	cancelHandler(nil)
	r.flow.handled(j.finished.Sub(slot))

	if herr == nil {
		w.c.succeeded.Add(1)
		w.settle(r, j, settle.Decision{Action: settle.Delete})
		return
	}
	j.herr = herr
	if errors.Is(cause, ErrShutdown) {
		log.Info("sqsworker: handler cancelled at the shutdown deadline; message released", "message", j.msg.ID, "err", herr)
		w.release(r, j)
		return
	}
	w.c.failed.Add(1)
	if lost := j.lostCause(); lost != nil {
		// Another consumer may have the message now: leave it alone.
		j.lease.Stop()
		w.warn.Warn("lost-running", "sqsworker: lost the message while its handler ran; SQS will deliver it again", "message", j.msg.ID, "cause", lost, "err", herr)
		w.drop(r, j, settle.Lost, lost.Error())
		return
	}
	if errors.Is(cause, ErrHandlerTimeout) {
		herr = settle.WithCause(herr, ErrHandlerTimeout)
		j.herr = herr
	}
	w.settle(r, j, settle.Decide(herr, j.msg.Attempt, w.opts.RetryPolicy))
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

// settle starts the calls that make decision real.
func (w *Worker) settle(r *run, j *job, d settle.Decision) {
	w.c.settling.Add(1)
	switch d.Action {
	case settle.Delete:
		j.send(r.deletes, stageDelete, settle.Deleted, "", 0, settle.Entry{Handle: j.msg.ReceiptHandle, Lease: j.lease, Urgent: w.fifo})
	case settle.Retry:
		if d.Snoozed {
			settle.Uncount(r.bg, w.opts.CallTimeout, w.opts.AttemptCounter, &j.msg, w.opts.Logger)
			j.hide(r, settle.Snoozed, d.Delay, "")
			break
		}
		j.hide(r, settle.Retrying, d.Delay, "")
	case settle.DeadLetter:
		w.deadLetter(r, j, d.Reason)
	}
}

// stage is what the call of a job's entry does.
type stage int

const (
	stageDelete stage = iota // delete; then the job is settled
	stageChange              // visibility change; then the job is settled
	stageCopy                // dead-letter copy; then the delete
	stageResend              // a fresh copy of a job not yet due; then the delete
)

// queueInfo is the queue's settings, for the schedule of delayed jobs.
func (w *Worker) queueInfo() settle.Queue { return w.queue }

// wait keeps a job that is not due yet waiting for its due time, as the
// schedule decided: hidden, or re-sent as a fresh copy (send, then delete).
func (w *Worker) wait(r *run, j *job, d schedule.Decision) {
	w.c.settling.Add(1)
	if d.Action == schedule.Hide {
		j.hide(r, settle.Delayed, d.Delay, d.String())
		return
	}
	in := schedule.ResendInput(w.queueURL, j.msg.Raw, d.Delay)
	j.send(r.resends, stageResend, settle.Delayed, d.String(), d.Delay, settle.Entry{Send: settle.SendEntry(in)})
}

// send queues the job's entry for one settling call; result, reason and
// delay are what a confirmed call means.
func (j *job) send(b *settle.Batcher, st stage, result settle.Result, reason string, delay time.Duration, e settle.Entry) {
	j.stage, j.result, j.reason, j.delay = st, result, reason, delay
	j.entry = e
	j.entry.Owner = j
	b.Add(&j.entry)
}

// hide hides the message for d (capped by SQS's 12-hour limit from its
// receive), after which it is delivered again: a retry delay, a snooze, a
// wait for its due time. reason, if any, says why.
func (j *job) hide(r *run, result settle.Result, d time.Duration, reason string) {
	d = settle.CapDelay(d, j.msg.ReceivedAt, time.Now())
	j.w.opts.Logger.Debug("sqsworker: retry scheduled", "message", j.msg.ID, "attempt", j.msg.Attempt, "delay", d, "outcome", Outcome(result).String(), "err", j.herr)
	j.send(r.changes, stageChange, result, reason, d, settle.Entry{Handle: j.msg.ReceiptHandle, Timeout: retry.VisibilitySeconds(d), Lease: j.lease})
}

// release makes a received message visible again at once, unprocessed.
func (w *Worker) release(r *run, j *job) {
	w.c.settling.Add(1)
	j.send(r.changes, stageChange, settle.Released, "", 0, settle.Entry{Handle: j.msg.ReceiptHandle, Timeout: 0, Lease: j.lease})
}

// Settled is the job's entry's outcome (settle.Owner).
func (j *job) Settled(_ *settle.Entry, o settle.Outcome) {
	w, r := j.w, j.r
	switch j.stage {
	case stageDelete, stageChange:
		w.finish(r, j, j.result, o, j.reason, j.delay)
		return
	case stageResend:
		if !o.OK {
			// Not re-sent: it waits a visibility timeout and is tried again.
			w.warn.Warn("resend", "sqsworker: re-sending a job that is not due yet failed; it is tried again after the visibility timeout", "message", j.msg.ID, "err", o.Err)
			j.hide(r, settle.Delayed, w.visibility, j.reason)
			return
		}
		j.send(r.deletes, stageDelete, settle.Delayed, j.reason, j.delay, settle.Entry{Handle: j.msg.ReceiptHandle, Lease: j.lease})
		return
	}
	if !o.OK {
		j.retryLater("send", o.Err)
		return
	}
	w.opts.Logger.Info("sqsworker: message copied to the dead-letter queue; deleting it from the source", "message", j.msg.ID, "dlq", w.target.QueueURL, "copy", o.MessageID, "reason", j.reason, "err", j.herr)
	j.send(r.deletes, stageDelete, settle.DeadLettered, j.reason, 0, settle.Entry{Handle: j.msg.ReceiptHandle, Lease: j.lease, Urgent: w.fifo})
}

// retryLater leaves a message that should go to the dead-letter queue but
// cannot now in the queue: it comes back after the visibility timeout.
func (j *job) retryLater(why string, problem error) {
	j.w.warn.Warn("dlq-"+why, "sqsworker: the message should go to the dead-letter queue but cannot now; it stays in the queue and will be tried again",
		"message", j.msg.ID, "reason", j.reason, "problem", problem, "err", j.herr)
	j.hide(j.r, settle.Retrying, j.w.visibility, fmt.Sprintf("%s (not dead-lettered: %v); it comes back after the visibility timeout", j.reason, problem))
}

// deadLetter copies the message to the DLQ with provenance, then deletes
// it. Without a DLQ, or when the copy cannot be confirmed, the message
// stays in the queue and comes back after the visibility timeout: it is
// never deleted without a DLQ copy.
func (w *Worker) deadLetter(r *run, j *job, reason string) {
	j.reason = reason
	if w.copier == nil {
		j.retryLater("none", errors.New("the queue has no dead-letter queue (AllowNoDLQ): it is retried until retention deletes it"))
		return
	}
	in, err := w.copier.Input(j.raw(), dlq.Provenance{
		SourceQueue:   w.queueURL,
		Error:         fmt.Sprintf("%s: %v", reason, j.herr),
		Attempt:       j.msg.Attempt,
		FirstReceived: j.msg.FirstReceivedAt,
		FailedAt:      time.Now(),
		Handler:       w.opts.HandlerName,
	})
	if err != nil {
		j.retryLater("copy", err)
		return
	}
	j.send(r.sends, stageCopy, settle.DeadLettered, reason, 0, settle.Entry{Send: settle.SendEntry(in), Urgent: w.fifo})
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
		case settle.Delayed:
			w.c.delayed.Add(1)
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
	// On a FIFO queue the group goes on only after a confirmed delete or
	// dead-letter move; otherwise the rest of it is released, in order.
	for _, rest := range r.flow.settled(j, o.OK && (result == settle.Deleted || result == settle.DeadLettered)) {
		w.release(r, rest)
	}
	w.done(r, j, result, reason, delay, o.Late) // last: the hook may have the job's message
}

// drop accounts for a message that ends without a settlement call.
func (w *Worker) drop(r *run, j *job, result settle.Result, reason string) {
	if result == settle.Lost {
		w.c.lost.Add(1)
	}
	if j.lease != nil { // it was in the flow: running, now done
		for _, rest := range r.flow.settled(j, false) {
			w.release(r, rest)
		}
	}
	w.done(r, j, result, reason, 0, false) // last: the hook may have the job's message
}

// done accounts for a settled message and reports it to the hook. The
// runtime touches the job no more: the hook gets the job's own message,
// which nothing else holds (with a hook, handlers get copies of their own).
func (w *Worker) done(r *run, j *job, result settle.Result, reason string, delay time.Duration, late bool) {
	w.c.inFlight.Add(-1)
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
	j.event = settle.Event{
		Message: &j.msg, Result: result, Attempt: attempt, Delay: delay, Reason: reason, Err: j.herr, Late: late, Extensions: extensions,
		ReceivedAt: j.msg.ReceivedAt, Started: j.started, Finished: j.finished, Settled: time.Now(),
	}
	w.notify.Notify(&j.event)
}
