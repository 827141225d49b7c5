package worker

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/sqsworker/sqsworker/internal/heartbeat"
	"github.com/sqsworker/sqsworker/internal/settle"
)

// settlers are the batchers that carry settling calls to SQS.
type settlers struct {
	deletes *settle.Batcher
	changes *settle.Batcher
	sends   *settle.Batcher // dead-letter copies; nil without a DLQ
	resends *settle.Batcher // fresh copies of jobs not yet due (internal/schedule); nil on a FIFO queue
}

// newSettlers makes the batchers of one Run, or of its holdover.
func (w *Worker) newSettlers(bo settle.BatcherOptions) (settlers, error) {
	var s settlers
	var errs [4]error
	deleteOpts := bo
	deleteOpts.OnRetry = func(n int) { w.c.deleteRetried.Add(int64(n)) }
	s.deletes, errs[0] = settle.NewDeleter(w.client, w.queueURL, deleteOpts)
	s.changes, errs[1] = settle.NewChanger(w.client, w.queueURL, bo)
	if w.target != nil {
		s.sends, errs[2] = settle.NewSender(w.client, w.target.DLQURL, bo)
	}
	if !w.fifo {
		s.resends, errs[3] = settle.NewSender(w.client, w.queueURL, bo)
	}
	return s, errors.Join(errs[:]...)
}

// close flushes the settlers within ctx: dead-letter copies and fresh
// copies first (a confirmed copy adds its delete), then deletes and
// visibility changes together.
func (s *settlers) close(ctx context.Context) {
	if s.sends != nil {
		s.sends.Close(ctx)
	}
	if s.resends != nil {
		s.resends.Close(ctx)
	}
	var flush sync.WaitGroup
	flush.Go(func() { s.deletes.Close(ctx) })
	flush.Go(func() { s.changes.Close(ctx) })
	flush.Wait()
}

// holdover keeps the messages of the handlers Run returned without (they
// ignored their context) while the process lives: their leases stay with
// the heartbeat, which Run starts again once it has flushed, so no other
// consumer receives them while their handlers still run (up to SQS's
// 12-hour limit); and what a handler returns is settled as usual, through
// settlers of their own, since Run's are closed by then. When the last of
// them has settled, the heartbeat stops and the settlement hook is closed.
type holdover struct {
	settlers
	// over: Run has returned; every settling call goes through the
	// holdover (on a FIFO queue, a held job's settlement releases the rest
	// of its group).
	over atomic.Bool

	mu   sync.Mutex
	jobs map[*job]bool // the held jobs not yet settled
	left sync.WaitGroup
}

// holds reports whether j is one of the held jobs.
func (h *holdover) holds(j *job) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.jobs[j]
}

// settled notes that j, if held, is settled.
func (h *holdover) settled(j *job) {
	h.mu.Lock()
	held := h.jobs[j]
	delete(h.jobs, j)
	h.mu.Unlock()
	if held {
		h.left.Done()
	}
}

// carrier returns the settlers that carry j's calls: the run's, or, for a
// handler Run returned without (and for everything once Run has
// returned), the holdover's.
func (r *run) carrier(j *job) *settlers {
	if h := r.holdover.Load(); h != nil && (h.over.Load() || h.holds(j)) {
		return &h.settlers
	}
	return &r.settlers
}

// keepHeldOver runs, once Run has flushed, what keeps the held jobs'
// messages until their handlers return and they are settled: the
// heartbeat, again, and then the holdover's flush, the heartbeat's end and
// the settlement hook's.
func (w *Worker) keepHeldOver(bg context.Context, h *holdover, hb *heartbeat.Heartbeat) {
	h.over.Store(true)
	ctx, stop := context.WithCancel(bg)
	hbDone := make(chan struct{})
	go func() {
		defer close(hbDone)
		_ = hb.Run(ctx)
	}()
	go func() {
		h.left.Wait()
		fctx, cancel := context.WithTimeout(bg, w.opts.FlushTimeout)
		defer cancel()
		h.close(fctx)
		stop()
		<-hbDone
		w.notify.Close(fctx)
	}()
}
