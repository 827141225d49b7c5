package worker

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/visibility"
)

// outcomeTimeout bounds the SQS and DynamoDB calls that settle one message
// (attempt counting, a dead-letter move); they run even during shutdown.
const outcomeTimeout = 30 * time.Second

// capMargin keeps a retry delay this far inside SQS's 12-hour limit, so the
// request is not refused for ending a moment too late.
const capMargin = 5 * time.Second

// process runs the handler on one message and applies the outcome. It
// reports whether the message is settled — deleted or dead-lettered — so a
// FIFO group may go on with its next message. more says that such a message
// follows: a FIFO success then waits until its delete is confirmed, so the
// group's order holds even when the delete fails.
func (w *Worker) process(r *run, j *job, more bool) bool {
	log := w.opts.Logger
	m := NewMessage(j.raw, w.queueURL, j.receivedAt)
	if w.stopping.Load() {
		w.release(r, j) // received but not started: let another consumer have it now
		return false
	}

	if _, byReceives := w.opts.AttemptCounter.(retry.ReceiveCount); !byReceives {
		actx, cancel := context.WithTimeout(r.bg, outcomeTimeout)
		attempt, err := w.opts.AttemptCounter.Attempt(actx, m.ID, m.ReceiveCount)
		cancel()
		if err != nil {
			log.Warn("sqsworker: attempt counter failed; using the receive count", "message", m.ID, "err", err)
			attempt = m.ReceiveCount
		}
		m.Attempt = max(attempt, 1)
	}

	hctx, cancelHandler := j.handlerContext(r.hard)
	if w.opts.HandlerTimeout > 0 {
		var cancelTimeout context.CancelFunc
		hctx, cancelTimeout = context.WithTimeoutCause(hctx, w.opts.HandlerTimeout, ErrHandlerTimeout)
		defer cancelTimeout()
	}
	herr := w.call(hctx, m)
	// No extension may land after this point. At SQS's 12-hour limit the
	// message is still ours until its last extension ends, so its outcome
	// applies as usual; any other loss means another consumer may have it.
	leaseErr := j.lease.Stop()
	lost := leaseErr != nil && !errors.Is(leaseErr, visibility.ErrMaxVisibility)
	cause := context.Cause(hctx)
	cancelHandler(nil)

	switch {
	case herr == nil:
		w.c.succeeded.Add(1)
		w.c.inFlight.Add(-1)
		if !w.fifo || !more {
			r.deletes.add(entry{handle: m.ReceiptHandle, timeout: -1})
			return true
		}
		done := make(chan error, 1)
		r.deletes.add(entry{handle: m.ReceiptHandle, timeout: -1, done: done})
		return <-done == nil
	case lost:
		w.c.failed.Add(1)
		w.c.lost.Add(1)
		w.c.inFlight.Add(-1)
		log.Warn("sqsworker: lost the message while its handler ran; SQS will deliver it again", "message", m.ID, "cause", leaseErr, "err", herr)
		return false
	case errors.Is(cause, ErrShutdown):
		log.Info("sqsworker: handler cancelled at the shutdown deadline; message released", "message", m.ID, "err", herr)
		w.release(r, j)
		return false
	}
	w.c.failed.Add(1)
	if errors.Is(cause, ErrHandlerTimeout) && !errors.Is(herr, ErrHandlerTimeout) && !retry.IsPermanent(herr) {
		herr = fmt.Errorf("%w: %w", ErrHandlerTimeout, herr)
	}
	if d := Decide(herr, m.Attempt, w.opts.RetryPolicy); d.Outcome == DeadLetter {
		return w.deadLetter(r, m, herr, d.Reason)
	} else {
		w.retryAfter(r, m, d.Delay, herr)
	}
	return false
}

// call runs the handler, turning a panic into an error wrapping ErrPanic.
func (w *Worker) call(ctx context.Context, m *Message) (err error) {
	defer func() {
		if p := recover(); p != nil {
			w.opts.Logger.Error("sqsworker: handler panicked", "message", m.ID, "panic", p, "stack", string(debug.Stack()))
			err = fmt.Errorf("%w: %v", ErrPanic, p)
		}
	}()
	return w.handler.Handle(ctx, m)
}

// retryAfter hides the message for d (capped by SQS's 12-hour limit from
// its receive), after which it is delivered again.
func (w *Worker) retryAfter(r *run, m *Message, d time.Duration, cause error) {
	d = capDelay(d, m.ReceivedAt, time.Now())
	r.changes.add(entry{handle: m.ReceiptHandle, timeout: retry.VisibilitySeconds(d)})
	w.c.retried.Add(1)
	w.c.inFlight.Add(-1)
	w.opts.Logger.Debug("sqsworker: retry scheduled", "message", m.ID, "attempt", m.Attempt, "delay", d, "err", cause)
}

// capDelay limits d to what is left of SQS's 12-hour visibility limit.
func capDelay(d time.Duration, receivedAt, now time.Time) time.Duration {
	left := receivedAt.Add(retry.MaxVisibilityTimeout - capMargin).Sub(now)
	return max(min(retry.Cap(d), left), 0)
}

// deadLetter moves the message to the DLQ with provenance and reports
// whether it is settled. Without a DLQ, or when the send fails, the message
// stays in the queue and comes back after a delay: it is never deleted
// without a DLQ copy. When the copy is sent but the delete fails, the delete
// is retried with the batched deletes rather than the handler being run again.
func (w *Worker) deadLetter(r *run, m *Message, cause error, reason string) bool {
	log := w.opts.Logger
	if w.mover == nil {
		log.Error("sqsworker: message should go to a dead-letter queue but the queue has none (AllowNoDLQ); it will be retried until retention deletes it",
			"message", m.ID, "reason", reason, "err", cause)
		w.retryAfter(r, m, w.visibility, cause)
		return false
	}
	ctx, cancel := context.WithTimeout(r.bg, outcomeTimeout)
	defer cancel()
	err := w.mover.Move(ctx, m.Raw, dlq.Provenance{
		SourceQueue:   w.queueURL,
		Error:         fmt.Sprintf("%s: %v", reason, cause),
		Attempt:       m.Attempt,
		FirstReceived: m.FirstReceivedAt,
		FailedAt:      time.Now(),
		Handler:       w.opts.HandlerName,
	})
	switch {
	case err == nil:
	case errors.Is(err, dlq.ErrNotDeleted):
		log.Warn("sqsworker: dead-letter copy sent; deleting the original failed and is retried", "message", m.ID, "err", err)
		r.deletes.add(entry{handle: m.ReceiptHandle, timeout: -1})
	default:
		log.Error("sqsworker: moving the message to the dead-letter queue failed; it stays in the queue and will be tried again",
			"message", m.ID, "dlq", w.target.QueueURL, "err", err)
		w.retryAfter(r, m, w.visibility, cause)
		return false
	}
	w.c.deadLettered.Add(1)
	w.c.inFlight.Add(-1)
	log.Info("sqsworker: message moved to the dead-letter queue", "message", m.ID, "dlq", w.target.QueueURL, "reason", reason, "err", cause)
	return true
}
