package retry

import "context"

// AttemptCounter says which attempt a delivery is, 1-based, and takes an
// attempt back. It is the one interface of the attempt sources: SQS's
// ApproximateReceiveCount ([ReceiveCount], the default) and the exact count
// kept in DynamoDB (package retry/dynamocounter) implement it.
//
// The worker calls Attempt once per handler start (not per receive) with
// the message's ID and SQS's ApproximateReceiveCount, and passes the
// result, if the handler fails, to Policy.Delay. It calls Uncount after a
// handler snoozed its message ([Snooze]), so that the snoozed delivery does
// not count; a source that cannot take an attempt back returns nil.
//
// Implementations must be safe for concurrent use. An error means the count
// is unknown (Attempt) or still includes the snoozed delivery (Uncount); it
// should say what to do (wrong table, missing permission).
type AttemptCounter interface {
	Attempt(ctx context.Context, messageID string, receiveCount int) (int, error)
	Uncount(ctx context.Context, messageID string) error
}

// ReceiveCount returns the default AttemptCounter: the attempt is SQS's
// ApproximateReceiveCount, with no I/O. It can over-count — a message
// received but never handed to a handler (a crash between receive and
// start, a visibility timeout during shutdown) still counts — so a message
// may reach the dead-letter queue a little early, never late. It cannot
// take an attempt back: its Uncount does nothing. For an exact count use
// package retry/dynamocounter. A count below 1 (attribute missing) is
// reported as 1. Every call returns the same value, so a counter can be
// compared with ReceiveCount().
func ReceiveCount() AttemptCounter { return receiveCount{} }

type receiveCount struct{}

func (receiveCount) Attempt(_ context.Context, _ string, receiveCount int) (int, error) {
	return max(receiveCount, 1), nil
}

func (receiveCount) Uncount(context.Context, string) error { return nil }
