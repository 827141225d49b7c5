package dlq

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sqsworker/sqsworker/internal/deadletter"
	"github.com/sqsworker/sqsworker/queueref"
)

// ErrNotAllSeen is what a *NotSeenError matches with errors.Is: Inspect or
// Delete or Redrive went through a queue and received fewer messages than
// it held.
var ErrNotAllSeen = errors.New("not every message of the queue was seen")

// NotSeenError reports that Inspect, Delete or Redrive went through a queue and
// received fewer distinct messages than the queue held when it began
// (ApproximateNumberOfMessages plus ApproximateNumberOfMessagesNotVisible),
// or that receives of its own lost their responses.
// The messages it missed are still in the queue, hidden: another reader
// holds them, or a receive took them but its response was lost (this run's
// own, counted in Lost, or an earlier interrupted run's). They
// reappear when their visibility timeout ends — for this run's own receives,
// within Hold — and a run after that sees them.
//
// On a FIFO queue, messages behind a held message of the same group are
// not returned either, so a listing or a redrive that leaves messages in
// place (a filter, a dry run) reports those too.
type NotSeenError struct {
	// Queue is the queue's URL.
	Queue string
	// Expected is how many messages the queue held at the start, visible
	// or in flight (SQS's approximate counts).
	Expected int
	// InFlight is how many of them were already hidden at the start.
	InFlight int
	// Seen is how many distinct messages the run received (messages that
	// arrived during the run included, but not the ones a redrive moved
	// and that came back during it).
	Seen int
	// Lost is how many messages the run's own receives may have hidden: a
	// receive whose response was lost (an error other than throttling) may
	// have taken effect, hiding up to the messages it asked for for the
	// whole Hold. New arrivals do not make up for them.
	Lost int
	// Hold is the run's hold: the visibility timeout of its receives.
	Hold time.Duration

	lostBy error // the last receive error that counted toward Lost
}

// NotSeen returns how many messages the run did not see: Expected less
// Seen, but at least Lost (up to that many are hidden by the run's own
// receives, and messages that arrived meanwhile cannot stand in for them).
func (e *NotSeenError) NotSeen() int { return max(e.Expected-e.Seen, e.Lost) }

func (e *NotSeenError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d messages of queue %s were not seen (it held about %d at the start", e.NotSeen(), queueref.Name(e.Queue), e.Expected)
	if e.InFlight > 0 {
		fmt.Fprintf(&b, ", %d of them in flight", e.InFlight)
	}
	b.WriteString("): hidden by another reader or by a receive whose response was lost")
	if e.Lost > 0 {
		fmt.Fprintf(&b, " (up to %d by this run's own receives, whatever arrived meanwhile", e.Lost)
		if e.lostBy != nil {
			fmt.Fprintf(&b, "; the last one failed with: %v", e.lostBy)
		}
		b.WriteString(")")
	}
	if queueref.FIFO(e.Queue) {
		b.WriteString(" (on a FIFO queue, also behind a held message of their group)")
	}
	fmt.Fprintf(&b, ", they stay in the queue and reappear when their visibility timeout ends — within the %s hold for this run's own receives; run again after that", deadletter.HumanDuration(e.Hold))
	return b.String()
}

// Unwrap returns ErrNotAllSeen.
func (e *NotSeenError) Unwrap() error { return ErrNotAllSeen }
