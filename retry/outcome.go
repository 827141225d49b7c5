package retry

import (
	"errors"
	"time"
)

// ErrPermanent marks a failure that no retry can fix. errors.Is(err,
// ErrPermanent) reports whether err, or any error it wraps, is permanent: it
// is true for every error made by Permanent, and a handler can also wrap it
// directly: fmt.Errorf("order %s has no items: %w", id, retry.ErrPermanent).
var ErrPermanent = errors.New("permanent failure")

// permanentError is the error Permanent returns.
type permanentError struct {
	err error // the failure; never nil
}

// Permanent marks err as permanent: the input is bad (poison message,
// validation failure) and retrying cannot help, so the worker moves the
// message to the dead-letter queue at once, with err as the reason, without
// spending the remaining retries. Permanent(nil) is nil, so
// `return retry.Permanent(err)` is safe on the success path. An error that is
// already permanent is returned as is. The error's message is err's,
// unchanged (the classification is carried by the error, not by the text),
// errors.Is(e, ErrPermanent) is true, and errors.Is and errors.As see err
// through it.
//
// If an error carries both Permanent and [After], Permanent wins.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	var pe *permanentError
	if errors.As(err, &pe) {
		return err
	}
	return &permanentError{err: err}
}

func (e *permanentError) Error() string { return e.err.Error() }

func (e *permanentError) Unwrap() error { return e.err }

func (e *permanentError) Is(target error) bool { return target == ErrPermanent }

// AfterError is the error After returns.
type AfterError struct {
	Delay time.Duration // how long the message stays invisible; ≥ 0
	Err   error         // the failure; may be nil
}

// After asks for the next attempt after exactly d instead of the policy's
// delay — for example when a downstream answered "retry after 30 s". The
// worker sets the message's visibility to d, capped by what is left of the
// 12 h SQS limit (visibility.MaxVisibility); a negative d means 0 (retry at
// once). The attempt still counts: when the policy's retries are exhausted,
// the message goes to the dead-letter queue like any failure.
//
// Unlike Permanent, After(d, nil) is not nil: it means "not done yet, try
// again after d" (returning nil would tell the worker the job succeeded and
// delete the message).
func After(d time.Duration, err error) error {
	return &AfterError{Delay: max(d, 0), Err: err}
}

// Error returns the wrapped error's message, or "retry after <d>" when there
// is none.
func (e *AfterError) Error() string {
	if e.Err == nil {
		return "retry after " + e.Delay.String()
	}
	return e.Err.Error()
}

// Unwrap returns the wrapped error, which may be nil.
func (e *AfterError) Unwrap() error { return e.Err }

// SnoozeError is the error Snooze returns.
type SnoozeError struct {
	Delay  time.Duration // how long the message stays invisible; ≥ 0
	Reason string        // why it was snoozed, for logs and the settlement hook
}

// Snooze asks for the message to be delivered again after d without
// counting this delivery as a failed attempt: the retry policy is not
// consulted, so a snoozed message is never dead-lettered for being snoozed.
// Use it for a job that cannot run yet and is not at fault: a duplicate of
// a job still in progress elsewhere, a resource that is not ready. The
// delay is capped like After's.
//
// Waiting never spends the queue's receive budget. On a standard queue the
// runtime relays a snoozed message: it sends a fresh copy, delayed by d
// (beyond SQS's 15 minutes, as a due time), that carries the job's first
// message ID (so Message.ID stays the job's across copies) and the attempts
// spent so far, and deletes the snoozed message once the copy is
// confirmed. With the default attempt source (ReceiveCount) every snooze
// is relayed, so the snooze never counts as an attempt; with an exact
// counter (retry/dynamocounter, which forgets the snoozed attempt through
// [AttemptCounter].Uncount) the message is hidden for d instead, and
// relayed only when its next receive would come near the queue's
// maxReceiveCount. Either way SQS never dead-letters a job for waiting,
// however long it waits. A FIFO message is always hidden (a copy would go
// to the end of its group): there each snooze is a receive, so keep
// maxReceiveCount above the policy's attempts plus the snoozes a job may
// meet.
//
// If an error carries Permanent or After as well as Snooze, those win.
func Snooze(d time.Duration, reason string) error {
	return &SnoozeError{Delay: max(d, 0), Reason: reason}
}

// Error returns "snoozed for <d>: <reason>".
func (e *SnoozeError) Error() string {
	if e.Reason == "" {
		return "snoozed for " + e.Delay.String()
	}
	return "snoozed for " + e.Delay.String() + ": " + e.Reason
}
