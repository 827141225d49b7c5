package settle

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Result is what SQS confirmed (or could not) about one message. The
// values mirror worker.Outcome's.
type Result int

const (
	Deleted      Result = iota + 1 // the delete is confirmed
	Retrying                       // the retry delay is set: the message comes back after Delay
	DeadLettered                   // the DLQ copy is confirmed and the source deleted (or left to Lambda)
	Released                       // made visible again unprocessed (shutdown, FIFO order, deadline)
	Lost                           // ownership was lost before the runtime could settle it: SQS delivers it again
	Abandoned                      // settlement could not be confirmed (shutdown flush, errors): SQS delivers it again
	Snoozed                        // the handler snoozed it (retry.Snooze): hidden for Delay, the attempt not counted
	Delayed                        // not due yet (a delay beyond 15 minutes): hidden or re-sent to wait, the handler not run
)

// String returns the result's name (worker.Outcome's String).
func (r Result) String() string {
	switch r {
	case Deleted:
		return "deleted"
	case Retrying:
		return "retrying"
	case DeadLettered:
		return "dead-lettered"
	case Released:
		return "released"
	case Lost:
		return "lost"
	case Abandoned:
		return "abandoned"
	case Snoozed:
		return "snoozed"
	case Delayed:
		return "delayed"
	}
	return "Outcome(" + strconv.Itoa(int(r)) + ")"
}

// Event is one settled message, for the settlement hook.
type Event struct {
	Message *Message // a copy of the message as received
	// View is the runtime's public view of Message (a *worker.Message),
	// when it made one; nil otherwise.
	View    any
	Result  Result
	Attempt int
	Delay   time.Duration // Retrying: how long the message stays invisible
	Reason  string        // why: DeadLettered, Lost, Abandoned, Delayed, a Retrying that should have been dead-lettered
	Err     error         // the handler's error, if it ran and failed
	// Late: the message's visibility deadline passed before SQS confirmed
	// the settlement; another consumer may have received it meanwhile.
	Late bool
	// Extensions are when the heartbeat extended the message's visibility.
	Extensions []time.Time

	ReceivedAt, Started, Finished, Settled time.Time
}

// notifierQueue is how many events may wait for a slow hook before newer
// ones are dropped.
const notifierQueue = 4096

// Notifier delivers events to a hook on a goroutine of its own, in order,
// so a slow or panicking hook never delays settlement. When more than
// notifierQueue events wait, new ones are dropped and counted. Set Hook,
// Log and Warn; a nil *Notifier does nothing (no hook).
type Notifier struct {
	Hook func(*Event)
	Log  *slog.Logger
	Warn *Warner

	ch      chan item // never closed: a stop item ends the loop; made by start
	once    sync.Once
	wg      sync.WaitGroup
	closed  atomic.Bool
	discard atomic.Bool // Close gave up: queued events are dropped, not delivered
	dropped atomic.Int64
}

// item is an event, a flush marker (closed once every earlier event is
// delivered), or the stop marker.
type item struct {
	ev      *Event
	flushed chan struct{}
	stop    bool
}

// start makes the queue and starts the delivering goroutine, once.
func (n *Notifier) start() {
	n.once.Do(func() {
		n.ch = make(chan item, notifierQueue)
		if n.Log == nil {
			n.Log = slog.New(slog.DiscardHandler)
		}
		n.wg.Add(1)
		go n.loop()
	})
}

func (n *Notifier) loop() {
	defer n.wg.Done()
	for it := range n.ch {
		switch {
		case it.stop:
			return
		case it.flushed != nil:
			close(it.flushed)
		case n.discard.Load():
			n.dropped.Add(1)
		default:
			n.call(it.ev)
		}
	}
}

func (n *Notifier) call(ev *Event) {
	defer func() {
		if p := recover(); p != nil {
			n.Warn.Warn("hook-panic", "sqsworker: the settlement hook panicked; the event is skipped", "panic", p)
		}
	}()
	n.Hook(ev)
}

// Notify queues ev for the hook, or drops it when the hook is too far
// behind or the Notifier is closed. It never blocks.
func (n *Notifier) Notify(ev *Event) {
	if n == nil {
		return
	}
	n.start()
	if n.closed.Load() {
		n.dropped.Add(1)
		return
	}
	select {
	case n.ch <- item{ev: ev}:
	default:
		n.dropped.Add(1)
		n.Warn.Warn("hook-behind", "sqsworker: the settlement hook is too slow; settlement events are being dropped (the runtime does not wait for it)", "queued", notifierQueue)
	}
}

// Dropped returns how many events were dropped.
func (n *Notifier) Dropped() int64 {
	if n == nil {
		return 0
	}
	return n.dropped.Load()
}

// Flush waits until the events queued so far are delivered, or ctx ends.
// The Lambda adapter flushes before an invocation returns, since the
// execution environment may be frozen afterwards.
func (n *Notifier) Flush(ctx context.Context) bool {
	if n == nil || n.closed.Load() {
		return true
	}
	return n.flush(ctx)
}

func (n *Notifier) flush(ctx context.Context) bool {
	n.start()
	flushed := make(chan struct{})
	select {
	case n.ch <- item{flushed: flushed}:
	case <-ctx.Done():
		return false
	}
	select {
	case <-flushed:
		return true
	case <-ctx.Done():
		n.Warn.Warn("hook-flush", "sqsworker: the settlement hook did not catch up before the deadline; its remaining events are delivered later")
		return false
	}
}

// Close delivers the queued events until ctx ends, then stops: the
// events still queued are dropped (and counted), as are later ones. A hook
// call in progress when ctx ends is left to finish on its own.
func (n *Notifier) Close(ctx context.Context) {
	if n == nil || n.closed.Swap(true) {
		return
	}
	if !n.flush(ctx) {
		n.discard.Store(true)
		dropped := 0
	drain:
		for {
			select {
			case it := <-n.ch:
				if it.ev != nil {
					dropped++
				}
			default:
				break drain
			}
		}
		n.dropped.Add(int64(dropped))
		n.Log.Warn("sqsworker: the settlement hook did not finish in time; its remaining events are dropped", "dropped", dropped)
	}
	select {
	case n.ch <- item{stop: true}:
	default: // the loop is stuck in the hook; it is left to finish
	}
}
