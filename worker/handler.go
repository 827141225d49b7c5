package worker

import "context"

// Handler processes one message. Its return value decides the message's fate:
//
//   - nil: done; the message is deleted.
//   - retry.Permanent(err): poison or bad input; the message is moved to the
//     dead-letter queue now, with err as the reason.
//   - retry.After(d, err): retried after exactly d (the attempt still counts
//     against the policy: once it has no retries left, the DLQ).
//   - any other error (and a panic, or the handler timeout): retried after
//     the delay Options.RetryPolicy gives for this attempt, or moved to the
//     dead-letter queue when the policy has no retries left.
//
// Handle must return promptly once ctx is done: ctx is cancelled when the
// message's visibility can no longer be kept (context.Cause tells why), when
// Options.HandlerTimeout passes, and when the shutdown deadline passes.
// Delivery is at least once, so handlers should be idempotent.
type Handler interface {
	Handle(ctx context.Context, m *Message) error
}

// HandlerFunc adapts an ordinary function to a Handler.
type HandlerFunc func(ctx context.Context, m *Message) error

// Handle calls f(ctx, m).
func (f HandlerFunc) Handle(ctx context.Context, m *Message) error { return f(ctx, m) }

// Middleware wraps a Handler with behaviour of its own (logging, metrics,
// decoding, tracing).
type Middleware func(Handler) Handler

// Chain returns h wrapped by mw, the first middleware outermost:
// Chain(h, a, b) handles a message as a(b(h)).
func Chain(h Handler, mw ...Middleware) Handler {
	for i := len(mw) - 1; i >= 0; i-- {
		h = mw[i](h)
	}
	return h
}
