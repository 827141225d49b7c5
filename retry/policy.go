package retry

import (
	"errors"
	"time"

	"github.com/sqsworker/sqsworker/internal/sqslimit"
)

// Policy decides what happens after an attempt fails. It is the interface the
// worker consumes.
//
// Delay is called with the attempt that just failed, 1-based: attempt 1 is
// the first delivery of the message, attempt 2 its first retry, and so on. It
// returns how long the message stays invisible before the next attempt, and
// true to retry or false to give up (the worker then moves the message to the
// dead-letter queue). A policy that allows N retries returns true for
// attempts 1 … N and false from N+1 on, so the message is delivered at most
// N+1 times. Values of attempt below 1 are treated as 1.
//
// Delay must be a pure function of attempt (and of any randomness the policy
// was given): no clock reads, no sleeping, no shared state beyond what is safe
// for concurrent use — the worker calls it from many goroutines at once. A
// returned delay outside [0, 12 h] is clamped by the worker.
type Policy interface {
	Delay(attempt int) (delay time.Duration, retry bool)
}

// PolicyFunc adapts an ordinary function to the [Policy] interface.
type PolicyFunc func(attempt int) (delay time.Duration, retry bool)

// Delay returns f(attempt).
func (f PolicyFunc) Delay(attempt int) (time.Duration, bool) { return f(attempt) }

// BackOff is a sequence of waits, the shape of cenkalti/backoff/v4's
// BackOff (any value of that type is one): Reset starts the sequence again,
// NextBackOff returns the next wait, or -1 (backoff.Stop) to give up;
// other negative waits count as 0.
type BackOff interface {
	NextBackOff() time.Duration
	Reset()
}

// stop is the wait a BackOff returns to give up (backoff.Stop).
const stop time.Duration = -1

// FromBackOff turns a [BackOff] sequence (for example one of
// cenkalti/backoff/v4's) into a [Policy].
//
// newBackOff must return a fresh BackOff on every call; it is called once per
// Delay. Delay(n) resets that BackOff and calls NextBackOff n times: the n-th
// value is the delay before attempt n+1, and -1 (backoff.Stop) at any of
// those calls means give up. So backoff.WithMaxRetries(b, 3) allows
// 3 retries, 4 deliveries in all, like a DeliveryPolicy with numRetries 3.
// Delays are capped at 12 h (visibility.MaxVisibility).
//
// Because each call replays a new BackOff from the start, Delay is a pure
// function of the attempt, and a BackOff's own randomisation (such as
// ExponentialBackOff.RandomizationFactor) is drawn afresh each time. Limits
// based on elapsed time (ExponentialBackOff.MaxElapsedTime) never trigger
// here, since no real time passes between the replayed calls: bound the
// number of retries with backoff.WithMaxRetries instead. The replay costs n
// calls to NextBackOff.
//
// FromBackOff returns an error if newBackOff is nil or returns a nil
// BackOff. Should a later call return nil, Delay gives up (the worker then
// dead-letters the message with "retries exhausted").
func FromBackOff(newBackOff func() BackOff) (Policy, error) {
	if newBackOff == nil {
		return nil, errors.New("retry.FromBackOff: newBackOff is nil; pass a function that returns a new BackOff")
	}
	if newBackOff() == nil {
		return nil, errors.New("retry.FromBackOff: newBackOff returned a nil BackOff; return a new one on every call")
	}
	return PolicyFunc(func(attempt int) (time.Duration, bool) {
		b := newBackOff()
		if b == nil {
			return 0, false
		}
		b.Reset()
		var d time.Duration
		for range max(attempt, 1) {
			d = b.NextBackOff()
			if d == stop {
				return 0, false
			}
		}
		return sqslimit.CapVisibility(d), true
	}), nil
}
