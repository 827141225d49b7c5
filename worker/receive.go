package worker

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/internal/settle"
	"github.com/sqsworker/sqsworker/internal/sqsbatch"
	"github.com/sqsworker/sqsworker/visibility"
)

// poll is one receive loop. It stops asking for messages when ctx ends; a
// receive already in flight runs on recvCtx, and whatever it returns once
// the worker is stopping is released at once.
func (w *Worker) poll(ctx, recvCtx context.Context, r *run) error {
	failures := 0 // receives failed in a row
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
			QueueUrl:                    aws.String(w.queueURL),
			MaxNumberOfMessages:         int32(n),
			WaitTimeSeconds:             int32(w.opts.WaitTime / time.Second),
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
			MessageAttributeNames:       []string{"All"},
			// The lease the heartbeat counts from, whatever the queue's
			// attribute says now.
			VisibilityTimeout: int32(w.visibility / time.Second),
		}
		callCtx, cancel := context.WithTimeout(recvCtx, w.opts.WaitTime+w.opts.CallTimeout)
		began := time.Now()
		// The SDK's retries are off: a failed receive comes back here, is
		// counted (Stats.Requests, RequestResults) and waits out
		// Options.ReceiveRetry, rather than being retried unseen.
		out, err := w.client.ReceiveMessage(callCtx, in, sqsbatch.NoSDKRetry)
		cancel()
		receivedAt := time.Now()
		if err != nil {
			r.flow.received(n, nil, 0)
			if w.limiter != nil {
				w.limiter.refund(n)
			}
			if ctx.Err() != nil {
				return nil
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
			if !settle.Sleep(ctx, wait) {
				return nil
			}
			continue
		}
		failures = 0
		got := len(out.Messages)
		w.c.receiveSizes[min(got, len(w.c.receiveSizes)-1)].Add(1)
		if w.limiter != nil {
			w.limiter.refund(n - got)
		}
		jobs := w.track(r, out.Messages, receivedAt)
		if !r.flow.received(n, jobs, receivedAt.Sub(began)) {
			// Received by a call that finished during shutdown.
			for _, j := range jobs {
				w.release(r, j)
			}
		}
	}
}

// track starts holding a receive's messages: each is leased (kept
// invisible by the heartbeat) from its receipt until SQS confirms its
// settlement.
func (w *Worker) track(r *run, msgs []types.Message, receivedAt time.Time) []*job {
	if len(msgs) == 0 {
		return nil
	}
	w.c.received.Add(int64(len(msgs)))
	w.c.inFlight.Add(int64(len(msgs)))
	jobs := make([]*job, 0, len(msgs))
	for _, raw := range msgs {
		j := &job{w: w, r: r, msg: settle.Parse(raw, w.queueURL, receivedAt)}
		j.traceHeader = raw.Attributes[string(types.MessageSystemAttributeNameAWSTraceHeader)]
		if len(raw.MessageAttributes) > 0 {
			j.userAttrs = maps.Clone(raw.MessageAttributes)
		}
		lease, err := r.hb.Track(j.msg.ReceiptHandle, receivedAt, j.onLost)
		if err != nil {
			// A message without a receipt handle cannot be settled; SQS
			// never sends one.
			w.warn.Warn("no-handle", "sqsworker: received a message without a receipt handle; it cannot be settled and is left to SQS", "message", j.msg.ID, "err", err)
			w.drop(r, j, settle.Lost, err.Error())
			continue
		}
		j.lease = lease
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

// job is one received message from its receive until SQS confirmed its
// settlement.
type job struct {
	w     *Worker
	r     *run
	msg   settle.Message // the runtime's own copy: settlement reads only this
	lease *visibility.Lease

	started, finished time.Time // the handler's run
	herr              error     // the handler's error

	// The settling call in flight (one at a time): its entry, and what
	// SQS's confirmation will mean.
	entry  settle.Entry
	stage  stage
	result settle.Result
	reason string
	delay  time.Duration

	// What the dead-letter copy needs, taken at receipt: the handler may
	// change the maps it shares with the runtime's copy.
	traceHeader string
	userAttrs   map[string]types.MessageAttributeValue

	dctx   settle.DeadlineContext // the handler context's parent: carries the lease's deadline
	event  settle.Event           // the settlement event, for the hook
	mu     sync.Mutex
	cancel context.CancelCauseFunc // the handler's, once it starts
	cause  error                   // the heartbeat's reason for giving the message up
}

// handlerMessage returns the handler's copy of the message. Its strings
// and pointers are its own; its maps are the received ones (settlement
// reads what it needs from the job's snapshot), unless a settlement hook
// will be shown the message as received: then they are copies too.
func (j *job) handlerMessage() *Message {
	if j.w.notify != nil {
		return messageOf(&j.msg)
	}
	m := (*Message)(j.msg.ShallowCopy())
	return m
}

// raw is the message as received, for its dead-letter copy: body, the
// sender's attributes, group ID and trace header.
func (j *job) raw() types.Message {
	raw := j.msg.Raw
	raw.MessageId, raw.Body, raw.ReceiptHandle = &j.msg.ID, &j.msg.Body, &j.msg.ReceiptHandle
	raw.MessageAttributes = j.userAttrs
	raw.Attributes = map[string]string{}
	if j.msg.GroupID != "" {
		raw.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)] = j.msg.GroupID
	}
	if j.traceHeader != "" {
		raw.Attributes[string(types.MessageSystemAttributeNameAWSTraceHeader)] = j.traceHeader
	}
	return raw
}

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
