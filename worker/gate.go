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
//
// A gate that also has a Probe() bool method (fleet's Breaker and AllOpen
// do) may open for a probe: while Probe returns true, an open gate lets
// one message in — the worker makes one receive at a time, of at most one
// message, and once a receive brought one it receives nothing more until
// the gate's next report (a half-open circuit breaker lets one job probe
// the downstream, rather than a batch that it would have to snooze).
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
	// probe is the gate's Probe method, if it has one. While it says true,
	// one receive of one message goes at a time (probing) and none once
	// one brought a message (probed), until the next report; changed is
	// closed (and replaced) by every report and every probe receive that
	// came back empty, for the pollers waiting meanwhile.
	probe           func() bool
	probing, probed bool
	changed         chan struct{}
}

// newGate returns a run's gate: open without Options.ReceiveGate (for
// good: its context is never cancelled), closed until its first report
// with one.
func newGate(rg ReceiveGate) *gate {
	g := &gate{changed: make(chan struct{})}
	if rg == nil {
		g.open, g.ctx = true, context.Background()
	}
	if p, ok := rg.(interface{ Probe() bool }); ok {
		g.probe = p.Probe
	}
	return g
}

// set opens or closes the gate and reports whether that changed it.
func (g *gate) set(open bool) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.probing, g.probed = false, false // every report opens a new probe window
	close(g.changed)
	g.changed = make(chan struct{})
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
// open, and false while it is closed. probe is true when the receive is
// the gate's probe: it asks for one message, and reports with probed what
// it brought. wait, when not nil, is what to wait on before asking again:
// the gate is open for a probe that another receive is making or made.
func (g *gate) receiving() (ctx context.Context, open, probe bool, wait <-chan struct{}) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.open || g.probe == nil || !g.probe() {
		return g.ctx, g.open, false, nil
	}
	if g.probing || g.probed {
		return nil, false, false, g.changed
	}
	g.probing = true
	return g.ctx, true, true, nil
}

// probedWith ends a probe receive that brought n messages: with one, the
// gate lets nothing more in until its next report; with none, the next
// receive probes.
func (g *gate) probedWith(n int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.probing {
		return // a report came meanwhile
	}
	g.probing = false
	if n > 0 {
		g.probed = true
		return
	}
	close(g.changed)
	g.changed = make(chan struct{})
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
