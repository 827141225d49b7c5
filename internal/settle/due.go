package settle

import (
	"fmt"
	"time"

	"github.com/sqsworker/sqsworker/internal/schedule"
	"github.com/sqsworker/sqsworker/retry"
)

// Queue is what the schedule needs to know of a queue.
type Queue struct {
	FIFO            bool
	MaxReceiveCount int           // 0: no redrive policy
	Retention       time.Duration // 0: SQS's default
	// RedriveUnknown: the redrive policy could not be read, so a waiting
	// job is only ever re-sent (a fresh copy, receive count 1), never
	// hidden, which SQS might count toward a maxReceiveCount.
	RedriveUnknown bool
	// ReceiveSlack is how much earlier than Message.ReceivedAt SQS may
	// have counted the receive (a Lambda poller holds records up to its
	// batching window before the invocation): SQS's 12-hour visibility
	// limit counts from the earlier time.
	ReceiveSlack time.Duration
	// NoCalls: the runtime cannot make SQS calls (the Lambda adapter
	// without Options.Client), so a job not due yet cannot be kept waiting
	// and runs now.
	NoCalls bool
}

// Queuer tells a queue's settings (a Port does).
type Queuer interface {
	Queue() Queue
}

// Due says what to do with a received message that may carry a due time
// (a job sent with a delay beyond SQS's 15 minutes, internal/schedule):
// ok is false for a message without one (or on a FIFO queue, which takes no
// delays); err is a permanent failure for a message whose due time cannot
// be read, so it goes to the dead-letter queue with that reason.
//
// queue is asked for the queue's settings only when the message carries a
// due time.
func Due(m *Message, now time.Time, queue Queuer) (d schedule.Decision, ok bool, err error) {
	if _, has := m.MessageAttributes[schedule.Attribute]; !has {
		return schedule.Decision{}, false, nil
	}
	q := queue.Queue()
	if q.FIFO {
		return schedule.Decision{}, false, nil
	}
	due, ok, err := schedule.Parse(m.MessageAttributes)
	if err != nil {
		return schedule.Decision{}, false, retry.Permanent(fmt.Errorf("message %s: %w", m.ID, err))
	}
	if !ok {
		return schedule.Decision{}, false, nil
	}
	d = schedule.Decide(schedule.Input{
		Due: due, Now: now, ReceivedAt: m.ReceivedAt.Add(-q.ReceiveSlack), SentAt: m.SentAt, FirstReceivedAt: m.FirstReceivedAt,
		ReceiveCount: m.ReceiveCount, MaxReceiveCount: q.MaxReceiveCount, Retention: q.Retention, NoHide: q.RedriveUnknown,
	})
	return d, true, nil
}
