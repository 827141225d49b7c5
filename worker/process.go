package worker

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/sqsworker/sqsworker/internal/deadletter"
	"github.com/sqsworker/sqsworker/internal/heartbeat"
	"github.com/sqsworker/sqsworker/internal/settle"
)

// job is one received message from its receive until SQS confirmed its
// settlement. It embeds the settlement engine's state of the message
// (settle.Job: the runtime's own copy of the message, the handler's run,
// the settling call in flight) and is that message's settle.Port: the
// engine plans every call, the job carries it with the message's lease.
//
// A receive's jobs are one allocation (see track), each job's heartbeat
// lease included: at 1,216 bytes a job, ten of them and the allocation's
// header fit the runtime's 12,288-byte size class; 8 bytes more take them
// to 13,568 (TestJobSize).
type job struct {
	settle.Job
	r      *run             // its Worker is r.w
	lease  *heartbeat.Lease // &leased once the heartbeat tracks the message; nil before
	leased heartbeat.Lease

	dctx    settle.DeadlineContext // the handler context's parent: carries the lease's deadline
	handler Message                // the handler's copy of the message (see handlerMessage)
	mu      sync.Mutex
	cancel  context.CancelCauseFunc // the handler's, once it starts
	cause   error                   // the heartbeat's reason for giving the message up

	prev, next *job // neighbours in run.running while the handler runs (guarded by run.mu)
}

// process runs the handler on one message, on one of the handler
// goroutines, and hands it to the settlement engine. On a FIFO queue the
// next message of its group runs only once SQS confirmed this one's delete
// (or dead-letter move): see Done.
func (w *Worker) process(r *run, j *job) {
	log := w.opts.Logger
	slot := time.Now()
	if w.stopping.Load() {
		r.flow.unstarted()
		w.release(r, j) // received but not started: let another consumer have it now
		return
	}
	if lost := j.lostCause(); lost != nil {
		// Given up while it waited for a handler (its extensions failed):
		// another consumer may have it now, so it does not run here.
		r.flow.unstarted()
		j.lease.Stop()
		w.warn.Warn("lost-waiting", "sqsworker: lost a received message before its handler started (its visibility could not be extended); SQS will deliver it again", "message", j.Msg.ID, "cause", lost)
		w.engine.Drop(&j.Job, settle.Lost, lost.Error())
		return
	}
	// A job sent with a delay beyond 15 minutes waits for its due time
	// without running the handler or counting an attempt.
	if w.engine.Begin(r.bg, &j.Job, slot) {
		r.flow.handled(time.Since(slot))
		if j.Err != nil {
			w.c.failed.Add(1)
		}
		w.c.settling.Add(1)
		w.engine.Wait(&j.Job)
		return
	}

	hctx, cancelHandler := j.handlerContext(r.bg)
	if w.opts.HandlerTimeout > 0 {
		var cancelTimeout context.CancelFunc
		hctx, cancelTimeout = context.WithTimeoutCause(hctx, w.opts.HandlerTimeout, ErrHandlerTimeout)
		defer cancelTimeout()
	}
	herr, ran := w.invoke(hctx, r, j, j.handlerMessage())
	if !ran {
		cancelHandler(nil)
		return // not started: Run was returning (see invoke)
	}
	cause := context.Cause(hctx)
	cancelHandler(nil)
	r.flow.handled(j.Finished.Sub(slot))

	if herr == nil {
		w.c.succeeded.Add(1)
		w.c.settling.Add(1)
		w.engine.Handled(r.bg, &j.Job, nil)
		return
	}
	j.Err = herr
	if errors.Is(cause, ErrShutdown) {
		log.Info("sqsworker: handler cancelled at the shutdown deadline; message released", "message", j.Msg.ID, "err", herr)
		w.release(r, j)
		return
	}
	w.c.failed.Add(1)
	if lost := j.lostCause(); lost != nil {
		// Another consumer may have the message now: leave it alone.
		j.lease.Stop()
		w.warn.Warn("lost-running", "sqsworker: lost the message while its handler ran; SQS will deliver it again", "message", j.Msg.ID, "cause", lost, "err", herr)
		w.engine.Drop(&j.Job, settle.Lost, lost.Error())
		return
	}
	if errors.Is(cause, ErrHandlerTimeout) {
		herr = settle.WithCause(herr, ErrHandlerTimeout)
	}
	w.c.settling.Add(1)
	w.engine.Handled(r.bg, &j.Job, herr)
}

// lostCause returns the heartbeat's reason for giving the message up when
// ownership is lost; nil when the message is still held (also at the
// 12-hour limit, where it stays ours until its last deadline).
func (j *job) lostCause() error {
	j.mu.Lock()
	cause := j.cause
	j.mu.Unlock()
	if cause == nil && j.lease != nil {
		// Ended by the heartbeat, with the notice still on its way.
		cause = j.lease.Cause()
	}
	if cause != nil && !errors.Is(cause, heartbeat.ErrMaxVisibility) {
		return cause
	}
	return nil
}

// release makes a received message visible again at once, unprocessed.
func (w *Worker) release(r *run, j *job) {
	w.c.settling.Add(1)
	w.engine.Release(&j.Job, "")
}

// The job is its message's settle.Port: each call goes to the run's
// Batcher of its kind; deletes and visibility changes carry the lease, so
// the heartbeat keeps the message invisible while the call waits in a
// batch. On a FIFO queue deletes and dead-letter copies go out at once:
// the next message of the group waits for them.

// Delete queues the message's delete (settle.Port).
func (j *job) Delete(*settle.Job) {
	j.Entry.Lease, j.Entry.Urgent = j.lease, j.r.w.fifo
	j.r.carrier(j).deletes.Add(&j.Entry)
}

// Change queues the message's visibility change (settle.Port).
func (j *job) Change(*settle.Job) {
	j.Entry.Lease = j.lease
	j.r.carrier(j).changes.Add(&j.Entry)
}

// Copy queues the message's dead-letter copy (settle.Port).
func (j *job) Copy(*settle.Job) {
	j.Entry.Urgent = j.r.w.fifo
	j.r.carrier(j).sends.Add(&j.Entry)
}

// Resend queues a fresh copy of a job not due yet (settle.Port).
func (j *job) Resend(*settle.Job) { j.r.carrier(j).resends.Add(&j.Entry) }

// DLQ returns the queue's dead-letter Copier (settle.Port).
func (j *job) DLQ() (*deadletter.Copier, error) {
	if j.r.w.copier == nil {
		return nil, settle.ErrNoDLQ
	}
	return j.r.w.copier, nil
}

// Queue returns the queue's settings (settle.Port).
func (j *job) Queue() settle.Queue { return j.r.w.queue }

// Done accounts for a settled message (settle.Port): counters, the held
// place, the FIFO group, the hook. The runtime touches the job no more:
// the hook gets the job's own message, which nothing else holds.
func (j *job) Done(_ *settle.Job, f settle.Final) {
	r := j.r
	w := r.w
	switch {
	case f.Confirmed:
		switch f.Result {
		case settle.Deleted:
			w.c.deleted.Add(1)
		case settle.Retrying:
			w.c.retried.Add(1)
		case settle.DeadLettered:
			w.c.deadLettered.Add(1)
		case settle.Released:
			w.c.released.Add(1)
		case settle.Snoozed:
			w.c.snoozed.Add(1)
		case settle.Delayed:
			w.c.delayed.Add(1)
		}
		if f.Late {
			w.c.settledLate.Add(1)
		}
	case f.Result == settle.Lost:
		w.c.lost.Add(1)
	case f.Result == settle.Abandoned && f.Called: // a drop's is counted by abandon
		w.c.abandoned.Add(1)
	}
	if f.Called {
		w.c.settling.Add(-1)
	}
	if j.lease != nil { // it was in the flow
		for _, rest := range r.flow.settled(j, f.GroupGoesOn()) {
			w.release(r, rest)
		}
	}
	w.c.inFlight.Add(-1)
	if h := r.holdover.Load(); h != nil {
		defer h.settled(j) // after the hook is queued: the holdover then closes it
	}
	if w.notify == nil {
		return
	}
	var extensions []time.Time
	if j.lease != nil {
		extensions = j.lease.Extensions()
	}
	w.notify.Notify(j.Event(f, extensions, time.Now())) // last: the hook may have the job's message
}
