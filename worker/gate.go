package worker

import (
	"context"
	"sync"
	"time"
)

// ReceiveGate says whether a worker may receive: a pause switch shared by
// the workers of a queue (fleet.Pauser keeps one in DynamoDB). See
// Options.ReceiveGate. A gate that also has a Ready() error method (as
// fleet's Pauser, Breaker and AllOpen do) tells Health why it is closed:
// its error is the reason the worker is not ready.
type ReceiveGate interface {
	// Watch reports the gate's state through set — once as soon as it
	// knows it, then at every change — until ctx ends. Run calls it once,
	// on a goroutine of its own, and does not receive until the first
	// report. set never blocks for long and may be called from any
	// goroutine, also after Watch returned (it is then ignored).
	Watch(ctx context.Context, set func(open bool))
}

// gate is one Run's view of Options.ReceiveGate. While the gate is open,
// receives run on a context that closing the gate cancels receiveStopGrace
// later: a receive with its answer on the wire comes back (what it brings
// is released), a long poll still waiting ends. Closing it also stops the
// flow from receiving and releases the buffered messages.
type gate struct {
	apply  sync.Mutex // one report applied at a time
	mu     sync.Mutex
	open   bool
	ctx    context.Context // cancelled when the gate closes; nil while closed
	cancel context.CancelFunc
}

// newGate returns a run's gate: open without Options.ReceiveGate (for
// good: its context is never cancelled), closed until its first report
// with one.
func newGate(gated bool) *gate {
	g := &gate{}
	if !gated {
		g.open, g.ctx = true, context.Background()
	}
	return g
}

// set opens or closes the gate and reports whether that changed it.
func (g *gate) set(open bool) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if open == g.open {
		return false
	}
	g.open = open
	if open {
		g.ctx, g.cancel = context.WithCancel(context.Background())
	} else if g.cancel != nil {
		// Cancelling at once would strand a receive whose messages are
		// already hidden: nobody would release them, and they would come
		// back only when their visibility timeout ends, late after a
		// resume.
		time.AfterFunc(receiveStopGrace, g.cancel)
		g.ctx, g.cancel = nil, nil
	}
	return true
}

// receiving returns the context a receive runs on while the gate stays
// open, and false while it is closed.
func (g *gate) receiving() (context.Context, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.ctx, g.open
}

// setGate applies a report of Options.ReceiveGate to run r: closing stops
// the flow from receiving, releases what it buffered and ends the receives
// in flight within receiveStopGrace (what they still bring is released as
// it arrives);
// opening lets the pollers go on.
func (w *Worker) setGate(r *run, open bool) {
	r.gate.apply.Lock()
	defer r.gate.apply.Unlock()
	if w.stopping.Load() {
		return
	}
	if open {
		if r.gate.set(true) {
			w.paused.Store(false)
			r.flow.pause(false)
			w.opts.Logger.Info("sqsworker: receiving (Options.ReceiveGate is open)", "queue", w.queueURL)
		}
		return
	}
	w.paused.Store(true)
	released := r.flow.pause(true)
	for _, j := range released {
		w.release(r, j)
	}
	if r.gate.set(false) {
		w.opts.Logger.Info("sqsworker: receiving paused (Options.ReceiveGate closed); running handlers finish, prefetched messages released", "queue", w.queueURL, "released", len(released))
	}
}
