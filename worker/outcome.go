package worker

import (
	"fmt"
	"time"

	"github.com/sqsworker/sqsworker/retry"
)

// Outcome is what becomes of a message once its handler has returned.
type Outcome int

// The outcomes Decide returns.
const (
	// Delete: the handler succeeded; the message is deleted.
	Delete Outcome = iota
	// RetryAfter: the message stays invisible for Decision.Delay and is
	// then delivered again.
	RetryAfter
	// DeadLetter: the message is moved to the dead-letter queue now, with
	// Decision.Reason and the handler's error as its provenance.
	DeadLetter
)

// String returns the outcome's name.
func (o Outcome) String() string {
	switch o {
	case Delete:
		return "delete"
	case RetryAfter:
		return "retry"
	case DeadLetter:
		return "dead-letter"
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// Decision is the fate of one message, as Decide gives it.
type Decision struct {
	// Outcome says what to do with the message.
	Outcome Outcome
	// Delay is how long the message stays invisible before its next
	// delivery, for RetryAfter; it is in [0, retry.MaxVisibilityTimeout].
	// The caller still caps it by what is left of SQS's 12-hour limit
	// counted from the receive.
	Delay time.Duration
	// Reason says why, for DeadLetter: "permanent failure" or "retries
	// exhausted after N attempts".
	Reason string
}

// Decide is the message lifecycle as one pure function: given the error a
// handler returned for attempt (1-based) and the retry policy, it says
// whether the message is deleted, retried after a delay, or dead-lettered.
// The Worker and the Lambda adapter (package worker/sqslambda) both settle
// messages with it, so a job meets the same fate in either runtime.
//
//   - nil: Delete.
//   - retry.Permanent(err): DeadLetter, reason "permanent failure"
//     (Permanent wins over After).
//   - any other error: policy.Delay(attempt); RetryAfter its delay, or
//     DeadLetter "retries exhausted after <attempt> attempts" when the
//     policy gives up.
//   - retry.After(d, err): as any other error, but RetryAfter exactly d:
//     After replaces the policy's delay, not its attempt budget, so a
//     handler that keeps asking for later cannot retry forever.
//
// Decide does no I/O and reads no clock; policy must not be nil.
func Decide(err error, attempt int, policy retry.Policy) Decision {
	if err == nil {
		return Decision{Outcome: Delete}
	}
	if retry.IsPermanent(err) {
		return Decision{Outcome: DeadLetter, Reason: "permanent failure"}
	}
	d, again := policy.Delay(attempt)
	if !again {
		return Decision{Outcome: DeadLetter, Reason: fmt.Sprintf("retries exhausted after %d attempts", attempt)}
	}
	if after, ok := retry.AfterDelay(err); ok {
		d = after
	}
	return Decision{Outcome: RetryAfter, Delay: retry.Cap(d)}
}
