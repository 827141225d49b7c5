package retry

import "context"

// AttemptCounter says which attempt a delivery is, 1-based, as the worker
// starts the handler. The worker calls Attempt once per handler start (not
// per receive) with the message's ID and SQS's ApproximateReceiveCount, and
// passes the result, if the handler fails, to Policy.Delay.
//
// Implementations must be safe for concurrent use. An error means the count
// is unknown; it should say what to do (wrong table, missing permission).
type AttemptCounter interface {
	Attempt(ctx context.Context, messageID string, receiveCount int) (int, error)
}

// AttemptCounterFunc adapts an ordinary function to the [AttemptCounter]
// interface.
type AttemptCounterFunc func(ctx context.Context, messageID string, receiveCount int) (int, error)

// Attempt returns f(ctx, messageID, receiveCount).
func (f AttemptCounterFunc) Attempt(ctx context.Context, messageID string, receiveCount int) (int, error) {
	return f(ctx, messageID, receiveCount)
}

// ReceiveCount is the default AttemptCounter: the attempt is SQS's
// ApproximateReceiveCount, with no I/O. It can over-count — a message
// received but never handed to a handler (a crash between receive and start,
// a visibility timeout during shutdown) still counts — so a message may reach
// the dead-letter queue a little early, never late. For an exact count use
// package retry/dynamocounter. A count below 1 (attribute missing) is
// reported as 1.
type ReceiveCount struct{}

// Attempt returns max(receiveCount, 1) and never fails.
func (ReceiveCount) Attempt(_ context.Context, _ string, receiveCount int) (int, error) {
	return max(receiveCount, 1), nil
}

// AttemptUncounter is an AttemptCounter that can take an attempt back: the
// runtime calls Uncount after a handler snoozed its message (Snooze), so the
// snoozed delivery does not count. retry/dynamocounter implements it.
type AttemptUncounter interface {
	AttemptCounter
	Uncount(ctx context.Context, messageID string) error
}
