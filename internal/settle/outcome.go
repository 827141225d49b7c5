package settle

import (
	"errors"
	"time"

	"github.com/sqsworker/sqsworker/retry"
)

// AfterDelay reports the delay asked for by the outermost retry.After in err's
// chain, and whether there is one. The worker still caps the delay.
func AfterDelay(err error) (time.Duration, bool) {
	var ae *retry.AfterError
	if !errors.As(err, &ae) {
		return 0, false
	}
	return max(ae.Delay, 0), true
}

// SnoozeDelay reports the delay asked for by the outermost retry.Snooze in err's
// chain, and whether err is a snooze: a Permanent or After error is not,
// even when it wraps one.
func SnoozeDelay(err error) (time.Duration, bool) {
	var se *retry.SnoozeError
	if !errors.As(err, &se) || errors.Is(err, retry.ErrPermanent) {
		return 0, false
	}
	if _, after := AfterDelay(err); after {
		return 0, false
	}
	return max(se.Delay, 0), true
}
