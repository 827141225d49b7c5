package worker

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/sqsworker/sqsworker/internal/settle"
	"github.com/sqsworker/sqsworker/internal/sqslimit"
)

// flow is the worker's flow control: how many messages it may hold, which
// received message a free handler takes next, and when a poller may
// receive. Every message the worker holds is in exactly one of these
// states, counted here:
//
//	requested   asked for by a receive still in flight (a reservation)
//	buffered    received, leased, waiting for a handler (prefetched)
//	running     in a handler
//	settling    handler done, settlement not yet confirmed by SQS
//
// A poller may receive n messages when running + buffered + requested + n
// stays within Concurrency + the prefetch target, and fewer than
// MaxUnsettled messages await their settlement; receives carry full
// batches (10) unless handlers would otherwise starve. The prefetch target
// adapts to measured throughput × receive latency: what the handlers can
// take (Concurrency / mean handler time) while the queue has more, the
// rate messages arrive while it does not (see retarget).
type flow struct {
	concurrency  int
	maxPrefetch  int // the cap on the target; 0: no prefetch
	maxUnsettled int
	batchWait    time.Duration // how long a starving poller waits for a fuller batch
	fifo         bool

	mu        sync.Mutex
	handlers  sync.Cond // a job became ready (signalled once per job), or the flow stopped
	pollers   sync.Cond // room for a receive (signalled, one poller at a time), or the flow stopped
	requested int
	buffered  int
	running   int
	settling  int
	receiving int  // receive calls in flight
	empty     bool // the last receive came back empty: one long poll is enough
	stopped   bool
	paused    bool                // Options.ReceiveGate is closed: no receiving, nothing buffered
	ready     jobQueue            // buffered jobs a handler may take now
	groups    settle.Groups[*job] // FIFO: per message group, the messages held

	target int // the current prefetch target

	// Measurements for the target, guarded by mu.
	completed  int           // handler completions since the last retarget
	busy       time.Duration // the handler time of those completions
	receives   int           // receives that brought messages since the last retarget
	full       int           // of those, the ones that brought all they asked for
	lastTarget time.Time     // when retarget last ran
	rate       float64       // messages per second the worker can take (EWMA)
	latency    time.Duration // non-empty receive latency (EWMA)

	signals *signals // the scaling signals; nil: not measured
}

func newFlow(o *Options, fifo bool) *flow {
	f := &flow{
		concurrency: o.Concurrency, maxPrefetch: max(o.MaxPrefetch, 0), maxUnsettled: o.MaxUnsettled,
		batchWait: max(o.ReceiveBatchWait, 0), fifo: fifo,
		lastTarget: time.Now(),
		empty:      true, // until a receive brings messages, one long poll

	}
	f.handlers.L, f.pollers.L = &f.mu, &f.mu
	// Until handler throughput is measured (at the first batch's worth of
	// completions while receives come back full, otherwise within 100 ms),
	// aim for a second round of handlers' worth ahead.
	f.target = min(f.maxPrefetch, max(f.fill(), f.concurrency))
	return f
}

// fill is the prefetch a full receive batch needs on top of the running
// handlers: with fewer than ten handlers, no more than there are handlers.
func (f *flow) fill() int { return min(sqslimit.MaxBatchEntries, f.concurrency) }

// reserve waits until a poller may receive, and reserves the messages it
// asks for: up to 10. It returns 0 once ctx ends or the flow stops.
func (f *flow) reserve(ctx context.Context) int {
	// ctx's end wakes a waiting poller; registered only before a wait, so
	// a receive that may go out at once costs nothing for it.
	var stop func() bool
	defer func() {
		if stop != nil {
			stop()
		}
	}()
	f.mu.Lock()
	defer f.mu.Unlock()
	wait := func() {
		if stop == nil {
			stop = context.AfterFunc(ctx, func() {
				f.mu.Lock()
				f.pollers.Broadcast()
				f.mu.Unlock()
			})
		}
		f.pollers.Wait()
	}
	var waitUntil time.Time
	for {
		if f.stopped || ctx.Err() != nil {
			return 0
		}
		n := f.mayReceiveLocked()
		if n >= sqslimit.MaxBatchEntries || (n > 0 && n >= f.concurrency+f.target) {
			f.take(n)
			f.wakePollerLocked() // room for another receive, perhaps
			return n
		}
		if n > 0 && f.starvingLocked() {
			// Handlers are idle and nothing is on its way: wait briefly for
			// a fuller batch, then take what there is.
			if waitUntil.IsZero() {
				waitUntil = time.Now().Add(f.batchWait)
			}
			if !time.Now().Before(waitUntil) {
				f.take(n)
				return n
			}
			t := time.AfterFunc(time.Until(waitUntil), func() {
				f.mu.Lock()
				f.pollers.Broadcast()
				f.mu.Unlock()
			})
			wait()
			t.Stop()
			continue
		}
		waitUntil = time.Time{}
		wait()
	}
}

// wakePollerLocked wakes one waiting poller when a receive may go out now:
// a full batch fits, or a handler starves. The woken poller wakes the next
// if there is room for more, so pollers are not all woken at every change.
func (f *flow) wakePollerLocked() {
	if n := f.mayReceiveLocked(); n >= sqslimit.MaxBatchEntries || (n > 0 && (f.starvingLocked() || n >= f.concurrency+f.target)) {
		f.pollers.Signal()
	}
}

// mayReceiveLocked is how many messages a receive may ask for now.
func (f *flow) mayReceiveLocked() int {
	if f.paused {
		return 0
	}
	if f.settling >= f.maxUnsettled {
		return 0 // settlement lags: receiving waits for it
	}
	if f.empty && f.receiving > 0 {
		return 0 // the queue was empty: one long poll is enough
	}
	free := f.concurrency + f.target - f.running - f.buffered - f.requested
	return max(0, min(free, sqslimit.MaxBatchEntries))
}

// starvingLocked reports whether a handler is free with nothing buffered or
// on its way for it.
func (f *flow) starvingLocked() bool {
	return f.running < f.concurrency && f.buffered == 0 && f.requested == 0
}

func (f *flow) take(n int) {
	f.requested += n
	f.receiving++
}

// shrink gives back k of a receive's reserved messages before the call
// (the rate limit allows fewer); with none left the receive is not made.
func (f *flow) shrink(k int, none bool) {
	f.mu.Lock()
	f.requested -= k
	if none {
		f.receiving--
	}
	f.wakePollerLocked()
	f.mu.Unlock()
}

// received ends a receive that reserved n messages and brought jobs, after
// latency; its jobs become buffered. It returns false when the flow has
// stopped or paused meanwhile: the caller releases the jobs.
func (f *flow) received(n int, jobs []*job, latency time.Duration) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requested -= n
	f.receiving--
	f.empty = len(jobs) == 0
	if f.signals != nil && len(jobs) > 0 {
		f.signals.received(time.Now(), jobs)
	}
	if len(jobs) > 0 {
		f.receives++
		if len(jobs) >= n {
			f.full++
		}
		const w = 0.2
		if f.latency == 0 {
			f.latency = latency
		} else {
			f.latency = time.Duration((1-w)*float64(f.latency) + w*float64(latency))
		}
	}
	defer f.wakePollerLocked()
	if f.stopped || f.paused {
		f.settling += len(jobs) // the caller releases them
		return false
	}
	f.buffered += len(jobs)
	for _, j := range jobs {
		if !f.fifo || f.groups.Admit(j.Msg.GroupID, j) {
			f.push(j)
		}
	}
	return true
}

// push makes a buffered job ready and wakes one handler for it.
func (f *flow) push(j *job) {
	f.ready.push(j)
	f.handlers.Signal()
}

// next waits for a job for a free handler; nil once the flow has stopped.
func (f *flow) next() *job {
	f.mu.Lock()
	defer f.mu.Unlock()
	for f.ready.len() == 0 && !f.stopped {
		f.handlers.Wait()
	}
	if f.stopped {
		return nil
	}
	j := f.ready.pop()
	f.buffered--
	f.running++
	f.wakePollerLocked() // the buffer may have run dry with handlers idle
	return j
}

// handled moves a job from running to settling (its handler returned
// after holding its slot for busy).
func (f *flow) handled(busy time.Duration) {
	f.mu.Lock()
	f.running--
	f.settling++
	f.completed++
	f.busy += busy
	if f.signals != nil {
		f.signals.handled(time.Now(), busy)
	}
	f.retargetLocked(time.Now())
	f.wakePollerLocked()
	f.mu.Unlock()
}

// unstarted moves a job taken from the buffer but not run (the worker is
// stopping, or the message was lost while it waited) from running to
// settling.
func (f *flow) unstarted() {
	f.mu.Lock()
	f.running--
	f.settling++
	f.wakePollerLocked()
	f.mu.Unlock()
}

// settled ends a job's settlement. On a FIFO queue the next message of its
// group becomes ready when goesOn (its settlement lets the group go on,
// settle.Final.GroupGoesOn); otherwise the rest of the group is returned,
// to be released, so the group's order holds (settle.Groups).
func (f *flow) settled(j *job, goesOn bool) (release []*job) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.settling--
	defer f.wakePollerLocked()
	if !f.fifo {
		return nil
	}
	next, ok, release := f.groups.Settled(j.Msg.GroupID, j, goesOn && !f.stopped)
	if ok {
		f.push(next)
		return nil
	}
	f.buffered -= len(release)
	f.settling += len(release)
	return release
}

// stop ends receiving and handing out jobs, and returns every buffered
// job, to be released.
func (f *flow) stop() (release []*job) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stopped = true
	release = f.unbufferLocked()
	f.handlers.Broadcast()
	f.pollers.Broadcast()
	return release
}

// pause stops (on) or restarts (off) receiving. Pausing returns every
// buffered job, to be released; running and settling jobs go on.
func (f *flow) pause(on bool) (release []*job) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.paused = on
	if on {
		return f.unbufferLocked()
	}
	f.pollers.Broadcast()
	return nil
}

// unbufferLocked takes every buffered job out of the flow, as settling,
// for its caller to release.
func (f *flow) unbufferLocked() (release []*job) {
	for f.ready.len() > 0 {
		release = append(release, f.ready.pop())
	}
	release = append(release, f.groups.Drain()...)
	f.buffered -= len(release)
	f.settling += len(release)
	return release
}

// retargetLocked updates the throughput estimate, at most every 100 ms
// after the first,
// and the prefetch target from it: enough received ahead to keep the
// handlers busy for twice the receive latency, plus one full batch, within
// MaxPrefetch.
//
// While receives come back full the queue has more than the worker takes,
// and the estimate is what the handlers can take (Concurrency / their mean
// time per message), not the rate they happened to complete at: handlers
// waiting for receives must not keep the target, and so the receives,
// small. While receives come back partial the queue is drained and the
// estimate is the rate messages arrive (completions per second): more
// receives in flight would only split the arrivals into smaller batches,
// more requests per message.
func (f *flow) retargetLocked(now time.Time) {
	elapsed := now.Sub(f.lastTarget)
	saturated := f.receives > 0 && 2*f.full >= f.receives
	// The first estimate does not wait for 100 ms while the queue has
	// more: a worker started on a backlog would otherwise receive with its
	// starting target for its first 100 ms, a third of the rate it reaches
	// at 15 ms per call. What the handlers can take is estimated from
	// their first batch's worth of completions.
	first := f.rate == 0 && saturated && f.completed >= f.fill()
	if (elapsed < 100*time.Millisecond && !first) || f.completed == 0 {
		return
	}
	var inst float64
	if saturated {
		const most = 1e9 // messages per second: handlers that take no measurable time
		inst = most
		if f.busy > 0 {
			inst = min(most, float64(f.completed)*float64(f.concurrency)/f.busy.Seconds())
		}
	} else {
		inst = float64(f.completed) / elapsed.Seconds()
	}
	f.completed, f.busy, f.receives, f.full, f.lastTarget = 0, 0, 0, 0, now
	const w = 0.3
	if f.rate == 0 {
		f.rate = inst
	} else {
		f.rate = (1-w)*f.rate + w*inst
	}
	ahead := 2*f.rate*f.latency.Seconds() + float64(f.fill())
	f.target = f.maxPrefetch
	if ahead < float64(f.maxPrefetch) {
		f.target = int(math.Ceil(ahead))
	}
}

// snapshot returns the counts for Stats.
func (f *flow) snapshot() (buffered, target int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.buffered, f.target
}

// jobQueue is a FIFO of jobs.
type jobQueue struct {
	items []*job
	head  int
}

func (q *jobQueue) len() int { return len(q.items) - q.head }

func (q *jobQueue) push(j *job) {
	if q.head > 0 && q.head == len(q.items) {
		q.items, q.head = q.items[:0], 0
	}
	q.items = append(q.items, j)
}

func (q *jobQueue) pop() *job {
	j := q.items[q.head]
	q.items[q.head] = nil
	q.head++
	return j
}
