package worker

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/cenkalti/backoff/v4"

	"github.com/sqsworker/sqsworker/internal/settle"
	"github.com/sqsworker/sqsworker/internal/sqslimit"
	"github.com/sqsworker/sqsworker/visibility"
)

// poll is one receive loop. It stops asking for messages when ctx ends; a
// receive already in flight runs on recvCtx, and whatever it returns after
// ctx ended is released at once.
func (w *Worker) poll(ctx, recvCtx context.Context, r *run) error {
	bo := w.opts.ReceiveBackOff()
	bo.Reset()
	for {
		n := w.acquire(ctx, r)
		if n == 0 {
			return nil // ctx done
		}
		if w.limiter != nil {
			k := w.limiter.take(ctx, n)
			w.give(r, n-k)
			if k == 0 {
				return nil
			}
			n = k
		}
		in := &sqs.ReceiveMessageInput{
			QueueUrl:                    aws.String(w.queueURL),
			MaxNumberOfMessages:         int32(n),
			WaitTimeSeconds:             int32(w.opts.WaitTime / time.Second),
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
			MessageAttributeNames:       []string{"All"},
		}
		if w.opts.VisibilityTimeout > 0 {
			in.VisibilityTimeout = int32((w.opts.VisibilityTimeout + time.Second - 1) / time.Second)
		}
		callCtx, cancel := context.WithTimeout(recvCtx, w.opts.WaitTime+w.opts.CallTimeout)
		out, err := w.client.ReceiveMessage(callCtx, in)
		cancel()
		receivedAt := time.Now()
		if err != nil {
			w.give(r, n)
			if w.limiter != nil {
				w.limiter.refund(n)
			}
			if ctx.Err() != nil {
				return nil
			}
			if !retryable(err) {
				return describeQueueError(w.queueURL, err)
			}
			wait := bo.NextBackOff()
			w.warn.Warn("receive", "sqsworker: receive failed; retrying", "queue", w.queueURL, "in", wait, "err", err)
			if wait == backoff.Stop || !settle.Sleep(ctx, wait) {
				return nil
			}
			continue
		}
		bo.Reset()
		got := len(out.Messages)
		w.c.receiveSizes[min(got, len(w.c.receiveSizes)-1)].Add(1)
		w.give(r, n-got)
		if w.limiter != nil {
			w.limiter.refund(n - got)
		}
		if got > 0 {
			w.c.received.Add(int64(got))
			w.c.inFlight.Add(int64(got))
			w.dispatch(r, out.Messages, receivedAt)
		}
	}
}

// acquire takes between 1 and 10 handler slots, and as many places in the
// budget of held messages: it blocks for the first, then waits up to
// ReceiveBatchWait for more so receives carry full batches. It returns 0
// when ctx ends first.
func (w *Worker) acquire(ctx context.Context, r *run) int {
	if r.held.Acquire(ctx, 1) != nil {
		return 0
	}
	if r.slots.Acquire(ctx, 1) != nil {
		r.held.Release(1)
		return 0
	}
	n, want := 1, min(sqslimit.MaxBatchEntries, w.opts.Concurrency)
	for n < want && tryBoth(r) {
		n++
	}
	if n < want && w.opts.ReceiveBatchWait > 0 {
		wctx, cancel := context.WithTimeout(ctx, w.opts.ReceiveBatchWait)
		for n < want {
			if r.held.Acquire(wctx, 1) != nil {
				break
			}
			if r.slots.Acquire(wctx, 1) != nil {
				r.held.Release(1)
				break
			}
			n++
		}
		cancel()
	}
	return n
}

// tryBoth takes a handler slot and a held place, or neither.
func tryBoth(r *run) bool {
	if !r.held.TryAcquire(1) {
		return false
	}
	if !r.slots.TryAcquire(1) {
		r.held.Release(1)
		return false
	}
	return true
}

// give returns n handler slots and held places taken for a receive that
// brought fewer messages.
func (w *Worker) give(r *run, n int) {
	if n > 0 {
		r.slots.Release(int64(n))
		r.held.Release(int64(n))
	}
}

// dispatch starts the handlers for one receive's messages, each on a slot
// acquired before the receive. Every message is kept invisible by the
// heartbeat from the moment it is received until its settlement is
// confirmed. On a FIFO queue the messages of one group run one after
// another, in order; when one of them is not settled (done or
// dead-lettered), the rest of its group is released.
func (w *Worker) dispatch(r *run, msgs []types.Message, receivedAt time.Time) {
	jobs := make([]*job, 0, len(msgs))
	for _, raw := range msgs {
		j := &job{msg: settle.Parse(raw, w.queueURL, receivedAt)}
		lease, err := r.hb.Track(j.msg.ReceiptHandle, receivedAt, j.onLost)
		if err != nil {
			// A message without a receipt handle cannot be settled; SQS
			// never sends one.
			w.warn.Warn("no-handle", "sqsworker: received a message without a receipt handle; it cannot be settled and is left to SQS", "message", j.msg.ID, "err", err)
			r.slots.Release(1)
			w.drop(r, j, settle.Lost, err.Error())
			continue
		}
		j.lease = lease
		jobs = append(jobs, j)
	}
	if w.stopping.Load() {
		// Received by a call that finished during shutdown.
		for _, j := range jobs {
			r.slots.Release(1)
			w.release(r, j)
		}
		return
	}
	if !w.fifo {
		for _, j := range jobs {
			j.state.Store(jobStarted)
			r.handlers.Go(func() {
				w.process(r, j, false)
			})
		}
		return
	}
	var order []string
	groups := map[string][]*job{}
	for _, j := range jobs {
		g := j.msg.GroupID
		if _, ok := groups[g]; !ok {
			order = append(order, g)
		}
		groups[g] = append(groups[g], j)
		r.addPending(j)
	}
	for _, g := range order {
		group := groups[g]
		r.handlers.Go(func() {
			for i, j := range group {
				if !j.state.CompareAndSwap(jobWaiting, jobStarted) {
					continue // released by the shutdown, which also freed its slot
				}
				r.removePending(j)
				if w.process(r, j, i < len(group)-1) {
					continue
				}
				for _, rest := range group[i+1:] {
					if rest.state.CompareAndSwap(jobWaiting, jobReleased) {
						r.removePending(rest)
						r.slots.Release(1)
						w.release(r, rest)
					}
				}
				return
			}
		})
	}
}

// job is one received message from its receive until SQS confirmed its
// settlement.
type job struct {
	msg   settle.Message // the runtime's own copy: settlement reads only this
	lease *visibility.Lease
	state atomic.Int32 // FIFO: waiting, then started or released

	started, finished time.Time // the handler's run
	herr              error     // the handler's error

	mu     sync.Mutex
	cancel context.CancelCauseFunc // the handler's, once it starts
	cause  error                   // the heartbeat's reason for giving the message up
}

const (
	jobWaiting int32 = iota
	jobStarted
	jobReleased
)

// onLost is the heartbeat's callback: it cancels the running handler with
// the cause, or remembers it for a handler yet to start.
func (j *job) onLost(cause error) {
	j.mu.Lock()
	j.cause = cause
	cancel := j.cancel
	j.mu.Unlock()
	if cancel != nil {
		cancel(cause)
	}
}

// handlerContext returns the context the handler runs with: cancelled at
// once if the heartbeat gave the message up before the handler started.
func (j *job) handlerContext(parent context.Context) (context.Context, context.CancelCauseFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	j.mu.Lock()
	j.cancel = cancel
	cause := j.cause
	j.mu.Unlock()
	if cause != nil {
		cancel(cause)
	}
	return ctx, cancel
}

func (r *run) addPending(j *job) {
	r.mu.Lock()
	r.pending[j] = struct{}{}
	r.mu.Unlock()
}

func (r *run) removePending(j *job) {
	r.mu.Lock()
	delete(r.pending, j)
	r.mu.Unlock()
}

// releasePending releases, at shutdown, every received message that has
// not started, so another consumer can take it at once.
func (w *Worker) releasePending(r *run) {
	r.mu.Lock()
	waiting := make([]*job, 0, len(r.pending))
	for j := range r.pending {
		waiting = append(waiting, j)
	}
	clear(r.pending)
	r.mu.Unlock()
	for _, j := range waiting {
		if j.state.CompareAndSwap(jobWaiting, jobReleased) {
			r.slots.Release(1)
			w.release(r, j)
		}
	}
}
