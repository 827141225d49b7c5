package fleet

import (
	"context"
	"errors"
	"strings"
	"sync"

	"github.com/sqsworker/sqsworker/worker"
)

// AllOpen returns a worker.ReceiveGate that is open while every one of
// gates is: a Pauser and a Breaker on one worker, say. It reports its
// first state once every gate has reported.
func AllOpen(gates ...worker.ReceiveGate) worker.ReceiveGate { return allOpen(gates) }

type allOpen []worker.ReceiveGate

// Ready joins the errors of the gates that have a Ready() error method
// (Pauser, Breaker): why the combined gate is closed, for worker.Health.
func (a allOpen) Ready() error {
	var why []string
	for _, g := range a {
		if r, ok := g.(interface{ Ready() error }); ok {
			if err := r.Ready(); err != nil {
				why = append(why, err.Error())
			}
		}
	}
	if len(why) == 0 {
		return nil
	}
	return errors.New(strings.Join(why, "; "))
}

// Probe reports whether a gate is open for a probe (worker.ReceiveGate):
// one of gates that has a Probe() bool method says so.
func (a allOpen) Probe() bool {
	for _, g := range a {
		if p, ok := g.(interface{ Probe() bool }); ok && p.Probe() {
			return true
		}
	}
	return false
}

// Watch implements worker.ReceiveGate. A gate's report that it is open
// while all are is passed on even when the combined state does not change:
// it opens a new probe window.
func (a allOpen) Watch(ctx context.Context, set func(open bool)) {
	var (
		mu       sync.Mutex
		states   = make([]bool, len(a))
		reported = make([]bool, len(a))
		known    int
		first    = true
		last     bool
	)
	apply := func(i int, open bool) {
		mu.Lock()
		defer mu.Unlock()
		if ctx.Err() != nil {
			return
		}
		if !reported[i] {
			reported[i] = true
			known++
		}
		states[i] = open
		if known < len(a) {
			return
		}
		all := true
		for _, s := range states {
			all = all && s
		}
		if first || all != last || all && open {
			first, last = false, all
			set(all)
		}
	}
	if len(a) == 0 {
		set(true)
		<-ctx.Done()
		return
	}
	var wg sync.WaitGroup
	for i, g := range a {
		wg.Go(func() { g.Watch(ctx, func(open bool) { apply(i, open) }) })
	}
	wg.Wait()
}
