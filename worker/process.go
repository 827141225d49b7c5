package worker

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

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
// reports whether the message succeeded (FIFO groups continue only then).
func (w *Worker) process(r *run, raw types.Message, receivedAt time.Time) bool {
	log := w.opts.Logger
	m := NewMessage(raw, w.queueURL, receivedAt)
	if w.stopping.Load() {
		w.release(r, raw) // received but not started: let another consumer have it now
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

	hctx, cancelHandler := context.WithCancelCause(r.hard)
	var lost atomic.Bool
	lease := r.hb.Track(m.ReceiptHandle, receivedAt, func(cause error) {
		// At SQS's 12-hour limit the message is still ours until its last
		// extension ends: the handler is asked to stop, and its outcome
		// applies as usual. Any other cause means another consumer may have it.
		lost.Store(!errors.Is(cause, visibility.ErrMaxVisibility))
		cancelHandler(cause)
	})
	if w.opts.HandlerTimeout > 0 {
		var cancelTimeout context.CancelFunc
		hctx, cancelTimeout = context.WithTimeoutCause(hctx, w.opts.HandlerTimeout, ErrHandlerTimeout)
		defer cancelTimeout()
	}
	herr := w.call(hctx, m)
	lease.Stop() // no extension may land after this point
	cause := context.Cause(hctx)
	cancelHandler(nil)

	switch {
	case herr == nil:
		r.deletes.add(entry{handle: m.ReceiptHandle, timeout: -1})
		w.c.succeeded.Add(1)
		w.c.inFlight.Add(-1)
		return true
	case lost.Load():
		w.c.failed.Add(1)
		w.c.lost.Add(1)
		w.c.inFlight.Add(-1)
		log.Warn("sqsworker: lost the message while its handler ran; SQS will deliver it again", "message", m.ID, "cause", cause, "err", herr)
		return false
	case errors.Is(cause, ErrShutdown):
		log.Info("sqsworker: handler cancelled at the shutdown deadline; message released", "message", m.ID, "err", herr)
		w.release(r, raw)
		return false
	}
	w.c.failed.Add(1)
	if errors.Is(cause, ErrHandlerTimeout) && !errors.Is(herr, ErrHandlerTimeout) && !retry.IsPermanent(herr) {
		herr = fmt.Errorf("%w: %w", ErrHandlerTimeout, herr)
	}
	if d := Decide(herr, m.Attempt, w.opts.RetryPolicy); d.Outcome == DeadLetter {
		w.deadLetter(r, m, herr, d.Reason)
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

// deadLetter moves the message to the DLQ with provenance. Without a DLQ,
// or when the move fails, the message stays in the queue and comes back
// after a delay: it is never deleted without a DLQ copy.
func (w *Worker) deadLetter(r *run, m *Message, cause error, reason string) {
	log := w.opts.Logger
	if w.mover == nil {
		log.Error("sqsworker: message should go to a dead-letter queue but the queue has none (AllowNoDLQ); it will be retried until retention deletes it",
			"message", m.ID, "reason", reason, "err", cause)
		w.retryAfter(r, m, w.visibility, cause)
		return
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
	if err != nil {
		log.Error("sqsworker: moving the message to the dead-letter queue failed; it stays in the queue and will be tried again",
			"message", m.ID, "dlq", w.target.QueueURL, "err", err)
		w.retryAfter(r, m, w.visibility, cause)
		return
	}
	w.c.deadLettered.Add(1)
	w.c.inFlight.Add(-1)
	log.Info("sqsworker: message moved to the dead-letter queue", "message", m.ID, "dlq", w.target.QueueURL, "reason", reason, "err", cause)
}
