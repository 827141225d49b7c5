package worker

import (
	"context"
	"time"

	"github.com/sqsworker/sqsworker/internal/settle"
)

// Outcome is what SQS confirmed about a message's fate, as the settlement
// hook (Options.OnSettled) learns it.
type Outcome int

// The outcomes a Settlement reports.
const (
	// Deleted: the handler succeeded and SQS confirmed the delete.
	Deleted Outcome = iota + 1
	// Retrying: the handler failed; SQS confirmed the retry delay
	// (Settlement.Delay), after which the message is delivered again.
	Retrying
	// DeadLettered: the message's copy in the dead-letter queue is
	// confirmed and the message is deleted from the source
	// (Settlement.Reason says why).
	DeadLettered
	// Released: the message was made visible again without being handled
	// to the end (shutdown, FIFO order).
	Released
	// Lost: the runtime lost ownership of the message before it could
	// settle it (its visibility could not be kept); SQS delivers it again.
	Lost
	// Abandoned: the settlement could not be confirmed (the shutdown flush
	// ended, or SQS refused it for good), or Run returned without the
	// message's handler (it ignored its context; see Run); SQS delivers the
	// message again.
	Abandoned
	// Snoozed: the handler snoozed the message (retry.Snooze): SQS
	// confirmed it hidden for Settlement.Delay; the attempt does not count.
	Snoozed
	// Delayed: the message is a job not due yet (sent with a delay beyond
	// SQS's 15 minutes, see package producer): it was hidden, or re-sent as
	// a fresh copy, to wait for its due time; the handler did not run and
	// no attempt was counted.
	Delayed
)

// String returns the outcome's name.
func (o Outcome) String() string { return settle.Result(o).String() }

// Settlement is what happened to one message, reported to
// Options.OnSettled once SQS has confirmed it (or once it is clear that SQS
// will not).
type Settlement struct {
	// Message is a copy of the message as it was received (the handler's
	// changes are not in it).
	Message *Message
	// Outcome is the message's fate.
	Outcome Outcome
	// Attempt is the attempt the handler ran as (0 when it did not run).
	Attempt int
	// Delay is how long the message stays invisible, for Retrying, Snoozed
	// and Delayed.
	Delay time.Duration
	// Reason says why, for DeadLettered, Lost and Abandoned; for Delayed,
	// how the job waits for its due time; for Retrying, why a message that
	// should have been dead-lettered was not (no dead-letter queue, a copy
	// that failed).
	Reason string
	// Err is the handler's error, when it ran and failed.
	Err error
	// Late reports a settlement whose message's visibility deadline passed
	// before SQS confirmed it (a call carrying it, or an earlier failed
	// one, ended after the deadline): another consumer may have received
	// the message meanwhile, so it may run again.
	Late bool
	// Extensions are when the heartbeat extended the message's visibility
	// while the runtime held it, oldest first.
	Extensions []time.Time
	// ReceivedAt is when the receive that returned the message was made
	// (Message.ReceivedAt); HandlerStart and
	// HandlerEnd bound the handler's run (zero when it did not run);
	// SettledAt is when SQS confirmed the outcome.
	ReceivedAt, HandlerStart, HandlerEnd, SettledAt time.Time
}

// settlementOf is the public view of a settlement event.
func settlementOf(ev *settle.Event) Settlement {
	return Settlement{
		Message: eventMessage(ev), Outcome: Outcome(ev.Result), Attempt: ev.Attempt,
		Delay: ev.Delay, Reason: ev.Reason, Err: ev.Err, Late: ev.Late, Extensions: ev.Extensions,
		ReceivedAt: ev.ReceivedAt, HandlerStart: ev.Started, HandlerEnd: ev.Finished, SettledAt: ev.Settled,
	}
}

// settlementHook adapts Options.OnSettled to the hook the runtime calls.
func settlementHook(fn func(Settlement)) func(*settle.Event) {
	if fn == nil {
		return nil
	}
	return func(ev *settle.Event) { fn(settlementOf(ev)) }
}

// VisibilityDeadline returns, inside a handler, when the message being
// handled becomes visible to other consumers unless the heartbeat extends
// it again — the lease the runtime holds on it, as far as the heartbeat
// knows (SQS's own deadline is never earlier). Middleware that keeps state
// tied to the message's ownership (an idempotency lock, say) can let that
// state expire with the lease. In the Lambda adapter it is the
// invocation's deadline. It returns false outside a handler.
func VisibilityDeadline(ctx context.Context) (time.Time, bool) { return settle.Deadline(ctx) }
