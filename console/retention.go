package console

import (
	"context"
	"fmt"
	"time"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/internal/deadletter"
	"github.com/sqsworker/sqsworker/internal/sqslimit"
)

// Retention in a dead-letter queue, as AWS documents it: a message expires
// MessageRetentionPeriod (of the queue it is in) after its enqueue time. On
// a standard queue SQS's own redrive keeps the original enqueue time (the
// SentTimestamp), so a message moved to the dead-letter queue after three
// days of a four-day retention has one day left, not four; a FIFO
// dead-letter queue resets the enqueue time to the move. Messages the
// library dead-lettered were sent to the dead-letter queue anew. In every
// case the message's SentTimestamp in the dead-letter queue is the enqueue
// time retention counts from, so expiry = SentAt + the DLQ's retention.

// expiringWindow is how soon an expiry makes the overview warn.
const expiringWindow = 24 * time.Hour

// retentionEntry is a queue's MessageRetentionPeriod as last read.
type retentionEntry struct {
	d  time.Duration
	at time.Time
}

// retentionTTL is how long the console reuses a queue's retention.
const retentionTTL = 5 * time.Minute

// retentionOf returns the dead-letter queue's MessageRetentionPeriod, read
// at most every retentionTTL; zero when it cannot be read.
func (h *handler) retentionOf(ctx context.Context, dlqURL string) time.Duration {
	now := h.opts.Now()
	if e, ok := h.retention.Load(dlqURL); ok && now.Sub(e.(retentionEntry).at) < retentionTTL {
		return e.(retentionEntry).d
	}
	a, err := h.queueAttrs(ctx, dlqURL, deadletter.AttrRetention)
	if err != nil {
		return 0
	}
	d, ok := deadletter.SecondsAttr(a, deadletter.AttrRetention)
	if !ok {
		d = sqslimit.DefaultRetention
	}
	h.retention.Store(dlqURL, retentionEntry{d: d, at: now})
	return d
}

// expiresAt returns when m expires from a queue whose retention is
// retention (zero when either is unknown).
func expiresAt(m dlq.Message, retention time.Duration) time.Time {
	if retention <= 0 || m.SentAt.IsZero() {
		return time.Time{}
	}
	return m.SentAt.Add(retention)
}

// expiry is when the messages of a read expire: the soonest, and how many
// expire within expiringWindow of now.
type expiry struct {
	Retention time.Duration
	Soonest   time.Time
	Within24h int
	Known     bool // the retention was read and some message has a SentAt
}

func expiryOf(msgs []dlq.Message, retention time.Duration, now time.Time) expiry {
	e := expiry{Retention: retention}
	for _, m := range msgs {
		at := expiresAt(m, retention)
		if at.IsZero() {
			continue
		}
		e.Known = true
		if e.Soonest.IsZero() || at.Before(e.Soonest) {
			e.Soonest = at
		}
		if at.Sub(now) < expiringWindow {
			e.Within24h++
		}
	}
	return e
}

// inHuman says how long until t from now: "in 3 h 12 min", or "expired".
func inHuman(t, now time.Time) string {
	d := t.Sub(now)
	if d <= 0 {
		return "now (past its retention; SQS deletes it any moment)"
	}
	return "in " + span(d)
}

// span writes d in its two largest units: "3 h 12 min", "2 d 4 h", "40 s".
func span(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%d s", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d/time.Minute))
	case d < 48*time.Hour:
		h, m := int(d/time.Hour), int(d%time.Hour/time.Minute)
		if m == 0 {
			return fmt.Sprintf("%d h", h)
		}
		return fmt.Sprintf("%d h %d min", h, m)
	}
	days, h := int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour)
	if h == 0 {
		return fmt.Sprintf("%d d", days)
	}
	return fmt.Sprintf("%d d %d h", days, h)
}
