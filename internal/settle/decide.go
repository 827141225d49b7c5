package settle

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/sqsworker/sqsworker/internal/sqslimit"
	"github.com/sqsworker/sqsworker/retry"
)

// ErrPanic wraps a handler panic turned into a failure (worker.ErrPanic).
var ErrPanic = errors.New("sqsworker: handler panicked")

// Action is what becomes of a message once its handler has returned.
type Action int

// The actions Decide returns.
const (
	// Delete: the handler succeeded.
	Delete Action = iota
	// Retry: the message stays invisible for Decision.Delay, then comes back.
	Retry
	// DeadLetter: the message goes to the dead-letter queue now.
	DeadLetter
)

// Decision is the fate of one message, as Decide gives it.
type Decision struct {
	Action Action
	// Delay is in [0, 12 h] for Retry; the caller still caps it by what is
	// left of the 12-hour limit counted from the receive (CapDelay).
	Delay time.Duration
	// Reason says why, for DeadLetter: "permanent failure" or "retries
	// exhausted after N attempts".
	Reason string
	// Snoozed: a Retry the handler asked for with retry.Snooze; it does not
	// count against the policy.
	Snoozed bool
}

// Decide is the message lifecycle as one pure function: given the error a
// handler returned for attempt (1-based) and the retry policy, it says
// whether the message is deleted, retried after a delay, or dead-lettered.
//
//   - nil: Delete.
//   - retry.Permanent(err): DeadLetter, "permanent failure" (it wins over After).
//   - any other error: policy.Delay(attempt); Retry after it, or DeadLetter
//     "retries exhausted after <attempt> attempts" when the policy gives up.
//   - retry.After(d, err): as any other error, but Retry after exactly d:
//     After replaces the policy's delay, not its attempt budget.
//   - retry.Snooze(d, why): Retry after d, Snoozed, without consulting the
//     policy (so never DeadLetter).
func Decide(err error, attempt int, policy retry.Policy) Decision {
	if err == nil {
		return Decision{Action: Delete}
	}
	if errors.Is(err, retry.ErrPermanent) {
		return Decision{Action: DeadLetter, Reason: "permanent failure"}
	}
	if d, ok := SnoozeDelay(err); ok {
		return Decision{Action: Retry, Delay: sqslimit.CapVisibility(d), Snoozed: true}
	}
	d, again := policy.Delay(attempt)
	if !again {
		return Decision{Action: DeadLetter, Reason: fmt.Sprintf("retries exhausted after %d attempts", attempt)}
	}
	if after, ok := AfterDelay(err); ok {
		d = after
	}
	return Decision{Action: Retry, Delay: sqslimit.CapVisibility(d)}
}

// capMargin keeps a retry delay this far inside SQS's 12-hour limit, so the
// request is not refused for ending a moment too late.
const capMargin = 5 * time.Second

// CapDelay limits d to what is left, at now, of SQS's 12-hour visibility
// limit for a message received at receivedAt.
func CapDelay(d time.Duration, receivedAt, now time.Time) time.Duration {
	left := receivedAt.Add(sqslimit.MaxVisibility - capMargin).Sub(now)
	return max(min(sqslimit.CapVisibility(d), left), 0)
}

// Handler is what Invoke calls: worker.Handler, generically.
type Handler[M any] interface {
	Handle(ctx context.Context, m M) error
}

// Invoke calls h.Handle(ctx, m), turning a panic into an error wrapping
// ErrPanic (logged with its stack).
func Invoke[M any](ctx context.Context, log *slog.Logger, id string, h Handler[M], m M) (err error) {
	defer func() {
		if p := recover(); p != nil {
			log.Error("sqsworker: handler panicked", "message", id, "panic", p, "stack", string(debug.Stack()))
			err = fmt.Errorf("%w: %v", ErrPanic, p)
		}
	}()
	return h.Handle(ctx, m)
}

// CountAttempt sets m.Attempt from counter: the receive count for
// retry.ReceiveCount (no call, no allocation), else the counter's answer
// within timeout (the receive count, with a warning, when the counter
// fails). The receive count adds the attempts spent in earlier copies
// (m.Earlier); a counter keys them by m.ID, which stays the job's first
// message ID across copies, so it counts them itself.
func CountAttempt(ctx context.Context, timeout time.Duration, counter retry.AttemptCounter, m *Message, log *slog.Logger) {
	if counter == retry.ReceiveCount() {
		return
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	attempt, err := counter.Attempt(ctx, m.ID, m.ReceiveCount)
	if err != nil {
		log.Warn("sqsworker: attempt counter failed; using the receive count", "message", m.ID, "err", err)
		attempt = m.ReceiveCount + m.Earlier
	}
	m.Attempt = max(attempt, 1)
}

// Uncount takes a snoozed attempt back when counter can (retry.ReceiveCount
// cannot: no call); a failure is logged, never fatal.
func Uncount(ctx context.Context, timeout time.Duration, counter retry.AttemptCounter, m *Message, log *slog.Logger) {
	if counter == retry.ReceiveCount() {
		return
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	if err := counter.Uncount(ctx, m.ID); err != nil {
		log.Warn("sqsworker: the attempt counter could not take back a snoozed attempt; it counts", "message", m.ID, "err", err)
	}
}

// deadlineKey is the context key of a handler's visibility deadline.
type deadlineKey struct{}

// Deadliner tells a message's current visibility deadline
// (*heartbeat.Lease is one).
type Deadliner interface {
	Deadline() time.Time
}

// WithDeadline returns ctx carrying d, which tells the message's current
// visibility deadline (see worker.VisibilityDeadline).
func WithDeadline(ctx context.Context, d Deadliner) context.Context {
	return context.WithValue(ctx, deadlineKey{}, d)
}

// Deadline returns the visibility deadline ctx carries.
func Deadline(ctx context.Context) (time.Time, bool) {
	d, ok := ctx.Value(deadlineKey{}).(Deadliner)
	if !ok {
		return time.Time{}, false
	}
	return d.Deadline(), true
}

// DeadlineContext is a context carrying a Deadliner, to embed in a
// per-message struct so that adding the deadline to a handler's context
// costs no allocation: use &x as the parent of the handler's context.
type DeadlineContext struct {
	context.Context
	D Deadliner
}

// Value returns the Deadliner for the deadline key, else the parent's value.
func (c *DeadlineContext) Value(key any) any {
	if _, ok := key.(deadlineKey); ok {
		return c.D
	}
	return c.Context.Value(key)
}

// FixedDeadline is a Deadliner that does not move.
type FixedDeadline time.Time

// Deadline returns d.
func (d FixedDeadline) Deadline() time.Time { return time.Time(d) }

// WithCause wraps herr with cause when the handler's context ended for
// cause and the handler returned an error that does not say so, unless the
// error is permanent (its reason stands).
func WithCause(herr, cause error) error {
	if herr == nil || cause == nil || errors.Is(herr, cause) || errors.Is(herr, retry.ErrPermanent) {
		return herr
	}
	return fmt.Errorf("%w: %w", cause, herr)
}
