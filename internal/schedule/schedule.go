package schedule

import (
	"fmt"
	"time"

	"github.com/sqsworker/sqsworker/internal/sqslimit"
)

// Choices the schedule makes.
const (
	// Reserve is how many receives Decide keeps spare below the queue's
	// maxReceiveCount when it hides a message: a receive the library does
	// not see (an abandoned long poll, a hide whose call failed, a release
	// at shutdown) must not be the one that dead-letters a job that never ran.
	Reserve = 1
	// Tolerance is how far before the due time a copy's first receive may lie
	// and still count as the job's own delivery (see Decide); it absorbs
	// clock differences between the sender, SQS and the consumer.
	Tolerance = 5 * time.Minute
)

// Send plans the first send of a job due at due, sent at now: the
// DelaySeconds to send it with, and whether it must carry the due time
// (Attribute) because SQS cannot delay it that long. Jobs due within
// sqslimit.MaxDelay are delayed natively and need no attribute; the delay is
// rounded up to whole seconds, so a job never arrives early. Longer ones
// are sent with the delay that brings their first receive to the start of
// the final approach (due minus MaxDelay), at most MaxDelay.
func Send(due, now time.Time) (delay time.Duration, attr bool) {
	r := due.Sub(now)
	switch {
	case r <= 0:
		return 0, false
	case r <= sqslimit.MaxDelay:
		return ceilSecond(r), false
	default:
		return min(sqslimit.MaxDelay, ceilSecond(r-sqslimit.MaxDelay)), true
	}
}

// Input is what Decide needs to know about a received message that carries
// a due time, and about its queue.
type Input struct {
	// Due is the job's due time (from Attribute).
	Due time.Time
	// Now is the consumer's current time.
	Now time.Time
	// ReceivedAt is when this receive returned the message; SQS's 12-hour
	// visibility limit counts from it. Zero value: Now.
	ReceivedAt time.Time
	// SentAt is when SQS accepted this copy of the message (SentTimestamp);
	// its retention counts from it. Zero value: ReceivedAt.
	SentAt time.Time
	// FirstReceivedAt is when this copy was first received
	// (ApproximateFirstReceiveTimestamp). Zero value: unknown, and a
	// message due now runs whatever its receive count.
	FirstReceivedAt time.Time
	// ReceiveCount is this copy's ApproximateReceiveCount (1 on the first
	// receive).
	ReceiveCount int
	// MaxReceiveCount is the queue's RedrivePolicy maxReceiveCount. Zero
	// value: the queue has no redrive policy, so receives are not limited.
	MaxReceiveCount int
	// Retention is the queue's MessageRetentionPeriod. Zero value:
	// sqslimit.DefaultRetention (4 days, SQS's default).
	Retention time.Duration
	// NoHide parks the message by re-sending only, never by hiding it.
	// Hidden messages count toward SQS's limit of in-flight messages per
	// queue (about 120,000 on a standard queue), delayed ones do not; many
	// long-delayed jobs on one queue need NoHide, at the cost given in the
	// package documentation.
	NoHide bool
}

// Action is what to do with a received message that carries a due time.
type Action int

// The actions Decide returns.
const (
	// Run: the job is due; run the handler as for any message.
	Run Action = iota
	// Hide: not due; set the message's visibility to Decision.Delay
	// (ChangeMessageVisibility), without running the handler or counting
	// an attempt.
	Hide
	// Resend: not due; send a fresh copy of the message (same body and
	// attributes, due time included) with DelaySeconds Decision.Delay, and
	// delete this copy only once the send succeeded. The copy starts with
	// a receive count of 0 and a new retention period.
	Resend
)

// String returns the action's name.
func (a Action) String() string {
	switch a {
	case Run:
		return "run"
	case Hide:
		return "hide"
	case Resend:
		return "resend"
	}
	return fmt.Sprintf("Action(%d)", int(a))
}

// Decision is Decide's answer.
type Decision struct {
	Action Action
	// Delay is the visibility timeout for Hide and the DelaySeconds for
	// Resend, in whole seconds; 0 for Run.
	Delay time.Duration
}

// String describes the decision ("hide 12h0m0s").
func (d Decision) String() string {
	if d.Action == Run {
		return "run"
	}
	return d.Action.String() + " " + d.Delay.String()
}

// Decide says what to do with a received message that carries a due time.
// It is a pure function of its input; see the package documentation for
// the rules and what they cost.
func Decide(in Input) Decision {
	now := in.Now
	recv := in.ReceivedAt
	if recv.IsZero() {
		recv = now
	}
	sent := in.SentAt
	if sent.IsZero() {
		sent = recv
	}
	retention := in.Retention
	if retention <= 0 {
		retention = sqslimit.DefaultRetention
	}
	// hop is the longest a re-sent copy is delayed: SQS's 15 minutes, or
	// less on a queue whose retention would not outlast it comfortably.
	hop := max(min(sqslimit.MaxDelay, floorSecond(retention/2)), time.Second)

	r := in.Due.Sub(now)
	if r <= 0 {
		// Due. Receives of this copy before its due time were hops, not
		// attempts: when it was first received well before the due time
		// and has been received since, its receive count no longer numbers
		// attempts, so a fresh copy runs the job instead, as attempt 1.
		if in.ReceiveCount > 1 && !in.FirstReceivedAt.IsZero() && in.FirstReceivedAt.Before(in.Due.Add(-Tolerance)) {
			return Decision{Action: Resend}
		}
		return Decision{Action: Run}
	}
	if r <= hop {
		// The final approach: a fresh copy arrives at the due time with a
		// receive count of 1.
		return Decision{Action: Resend, Delay: ceilSecond(r)}
	}
	wait := r - hop // until the final approach
	limit := min(sqslimit.MaxVisibility-now.Sub(recv), sent.Add(retention/2).Sub(now))
	countOK := in.MaxReceiveCount <= 0 || in.ReceiveCount+1+Reserve <= in.MaxReceiveCount
	if !in.NoHide && countOK && limit >= min(wait, hop) {
		d := ceilSecond(wait)
		if d > limit {
			d = floorSecond(limit)
		}
		if d >= time.Second {
			return Decision{Action: Hide, Delay: d}
		}
	}
	// Re-send: to the final approach, or as far as SQS's delay reaches
	// (hop is whole seconds, so the rounding never overshoots it).
	return Decision{Action: Resend, Delay: ceilSecond(min(wait, hop))}
}

func ceilSecond(d time.Duration) time.Duration {
	return (d + time.Second - 1).Truncate(time.Second)
}

func floorSecond(d time.Duration) time.Duration { return d.Truncate(time.Second) }
