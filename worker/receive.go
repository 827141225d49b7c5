package worker

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/internal/awscall"
	"github.com/sqsworker/sqsworker/internal/settle"
	"github.com/sqsworker/sqsworker/internal/sqslimit"
)

// poll is one receive loop. It stops asking for messages when ctx ends; a
// receive already in flight runs on recvCtx, and whatever it returns once
// the worker is stopping is released at once.
func (w *Worker) poll(ctx, recvCtx context.Context, r *run) error {
	failures := 0 // receives failed in a row
	// One jobs slice for all of this poller's receives: the flow is done
	// with it when received returns. (Each call's input is its own: the
	// client, a user's fake among them, may keep it.)
	jobs := make([]*job, 0, sqslimit.MaxBatchEntries)
	wait := receiveWait(w.opts.WaitTime, w.visibility, r.hb.Threshold())
	for {
		n := r.flow.reserve(ctx)
		if n == 0 {
			return nil // ctx done, or stopping
		}
		if w.limiter != nil {
			k := w.limiter.take(ctx, n)
			if k < n {
				r.flow.shrink(n-k, k == 0)
			}
			if k == 0 {
				return nil
			}
			n = k
		}
		in := &sqs.ReceiveMessageInput{
			QueueUrl:                    w.url,
			MaxNumberOfMessages:         int32(n),
			WaitTimeSeconds:             int32(wait / time.Second),
			MessageSystemAttributeNames: w.sysAttrs, // what the worker reads, and Options.SystemAttributes
			MessageAttributeNames:       w.msgAttrs,
			// The lease the heartbeat counts from, whatever the queue's
			// attribute says now.
			VisibilityTimeout: int32(w.visibility / time.Second),
		}
		// Closing Options.ReceiveGate (a pause) ends the call.
		gateCtx, open, probe, again := r.gate.receiving()
		if !open {
			r.flow.received(n, nil, 0)
			if w.limiter != nil {
				w.limiter.refund(n)
			}
			if again != nil { // a probe window another receive took
				select {
				case <-again:
				case <-ctx.Done():
					return nil
				}
			}
			continue // the flow waits for the gate to open
		}
		if probe {
			in.MaxNumberOfMessages = 1 // the gate's probe: one message
		}
		callCtx, cancel := context.WithTimeout(recvCtx, wait+w.opts.CallTimeout)
		unwatch := noUnwatch
		if gateCtx.Done() != nil { // without Options.ReceiveGate it never closes
			unwatch = context.AfterFunc(gateCtx, cancel)
		}
		began := time.Now()
		// The SDK's retries are off: a failed receive comes back here, is
		// counted (Stats.Requests, RequestResults) and waits out
		// Options.ReceiveRetry, rather than being retried unseen.
		out, err := w.client.ReceiveMessage(callCtx, in, awscall.SQSOffOpts...)
		unwatch()
		cancel()
		if probe {
			got := 0
			if err == nil {
				got = len(out.Messages)
			}
			r.gate.probedWith(got)
		}
		receivedAt := time.Now()
		if err != nil {
			r.flow.received(n, nil, 0)
			if w.limiter != nil {
				w.limiter.refund(n)
			}
			if ctx.Err() != nil {
				return nil
			}
			if gateCtx.Err() != nil {
				continue // paused: the flow waits for the gate to open
			}
			if !retryable(err) {
				return describeQueueError(w.queueURL, err)
			}
			failures++
			wait, again := w.opts.ReceiveRetry.Delay(failures)
			if !again {
				return fmt.Errorf("sqsworker: receiving from %s failed %d times in a row and Options.ReceiveRetry gave up, so Run stops: %w; restart it once SQS answers, or use a ReceiveRetry that never gives up (the default)", w.queueURL, failures, err)
			}
			w.warn.Warn("receive", "sqsworker: receive failed; retrying", "queue", w.queueURL, "in", wait, "err", err)
			if awscall.Sleep(ctx, wait) != nil {
				return nil
			}
			continue
		}
		failures = 0
		got := len(out.Messages)
		w.c.receiveSizes[min(got, len(w.c.receiveSizes)-1)].Add(1)
		if got > 0 && got >= n {
			// Full: it did not wait for messages, so it measures the
			// receive path (Stats.Capacity).
			w.signals.fullReceive(receivedAt, receivedAt.Sub(began))
		}
		if w.limiter != nil {
			w.limiter.refund(n - got)
		}
		// SQS started each message's visibility timeout when it handed
		// the message out, somewhere between began and receivedAt; an
		// answer slow on the wire (a loaded machine, a slow network) would
		// leave the lease shorter than counted from its arrival. So leases,
		// and the 12-hour limit, count from the call's start: a long poll
		// that waited for its messages costs an earlier extension, never a
		// job run twice.
		jobs = w.track(r, out.Messages, began, jobs[:0])
		if !r.flow.received(n, jobs, receivedAt.Sub(began)) {
			// Received by a call that finished during shutdown or a
			// pause.
			for _, j := range jobs {
				w.release(r, j)
			}
		}
	}
}

// receiveWait is the long-poll wait of each receive: Options.WaitTime, cut
// so that a message handed out at the end of the wait still has the
// heartbeat's threshold of its lease left (whole seconds, at least 1 s).
// Leases count from the receive's start, the one time SQS surely did not
// hide the message before; a longer wait would bring messages whose lease
// had ended, by that count, before they arrived.
func receiveWait(wait, visibility, threshold time.Duration) time.Duration {
	return max(time.Second, min(wait, (visibility-threshold).Truncate(time.Second)))
}

// noUnwatch is the unwatch of a receive no gate can end.
func noUnwatch() bool { return false }

// track starts holding a receive's messages: each is leased (kept
// invisible by the heartbeat) from its receipt until SQS confirms its
// settlement. It appends their jobs to jobs.
func (w *Worker) track(r *run, msgs []types.Message, receivedAt time.Time, jobs []*job) []*job {
	if len(msgs) == 0 {
		return jobs
	}
	w.c.received.Add(int64(len(msgs)))
	w.c.inFlight.Add(int64(len(msgs)))
	// One allocation for the receive's jobs, leases included: each
	// message's is its own element, shared with nothing, and the job is
	// the lease's owner (job.OnLost), so tracking allocates nothing more.
	all := make([]job, len(msgs))
	for i, raw := range msgs {
		j := &all[i]
		j.r = r
		w.engine.Track(&j.Job, j, raw, w.queueURL, receivedAt)
		err := r.hb.TrackInto(&j.leased, j.Msg.ReceiptHandle, receivedAt, j)
		if err != nil {
			// A message without a receipt handle cannot be settled; SQS
			// never sends one.
			w.warn.Warn("no-handle", "sqsworker: received a message without a receipt handle; it cannot be settled and is left to SQS", "message", j.Msg.ID, "err", err)
			w.engine.Drop(&j.Job, settle.Lost, err.Error())
			continue
		}
		j.lease = &j.leased
		jobs = append(jobs, j)
	}
	return jobs
}

// handle is one of the Concurrency handler goroutines: it runs the jobs
// the flow hands out until the flow stops.
func (w *Worker) handle(r *run) {
	for j := r.flow.next(); j != nil; j = r.flow.next() {
		w.process(r, j)
	}
}

// OnLost is what the heartbeat calls when it gives the message up: it
// cancels the running handler with the cause, or remembers it for a
// handler yet to start.
func (j *job) OnLost(cause error) {
	j.mu.Lock()
	j.cause = cause
	cancel := j.cancel
	j.mu.Unlock()
	if cancel != nil {
		cancel(cause)
	}
}

// cancelWith cancels the handler's context with cause, once the handler
// has one.
func (j *job) cancelWith(cause error) {
	j.mu.Lock()
	cancel := j.cancel
	j.mu.Unlock()
	if cancel != nil {
		cancel(cause)
	}
}

// handlerContext returns the context the handler runs with: cancelled at
// once if the heartbeat gave the message up before the handler started.
// parent cannot be cancelled; the shutdown deadline cancels the handler's
// context through run.cancelHandlers.
func (j *job) handlerContext(parent context.Context) (context.Context, context.CancelCauseFunc) {
	j.dctx = settle.DeadlineContext{Context: parent, D: j.lease}
	ctx, cancel := context.WithCancelCause(&j.dctx)
	j.mu.Lock()
	j.cancel = cancel
	cause := j.cause
	j.mu.Unlock()
	if cause != nil {
		cancel(cause)
	}
	return ctx, cancel
}
