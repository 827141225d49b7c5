package worker

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	"github.com/cenkalti/backoff/v4"
	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/semaphore"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/visibility"
)

// Errors a Worker reports, as errors or as context causes.
var (
	// ErrShutdown is the cause of a handler context cancelled because the
	// shutdown deadline (Options.ShutdownTimeout) passed.
	ErrShutdown = errors.New("sqsworker: shutdown deadline passed")
	// ErrHandlerTimeout is the cause of a handler context cancelled because
	// Options.HandlerTimeout passed.
	ErrHandlerTimeout = errors.New("sqsworker: handler timeout")
	// ErrPanic wraps a handler panic turned into a failure.
	ErrPanic = errors.New("sqsworker: handler panicked")
	// ErrAlreadyRunning is returned by Run when the Worker is already running
	// or has run.
	ErrAlreadyRunning = errors.New("sqsworker: Run was already called on this Worker; create a new one")
)

// Worker receives messages from one queue and runs a Handler on each,
// applying the message lifecycle: delete on success, a retry delay on
// failure, the dead-letter queue when retries are exhausted or the failure
// is permanent. Create one with New and start it with Run.
type Worker struct {
	client   *countingClient
	queueURL string
	handler  Handler
	opts     Options

	visibility time.Duration // the queue's (or Options') visibility timeout
	fifo       bool
	target     *dlq.Target // nil without a DLQ (AllowNoDLQ)
	mover      *dlq.Mover

	c        counters
	started  atomic.Bool
	stopping atomic.Bool
	limiter  *rateLimiter
}

// New checks the queue and returns a Worker for it. It reads the queue's
// attributes and its RedrivePolicy, and refuses a queue without one unless
// Options.AllowNoDLQ is set: without a dead-letter queue a failing job is
// retried until retention deletes it.
func New(client API, queueURL string, h Handler, optFns ...func(*Options)) (*Worker, error) {
	if client == nil {
		return nil, errors.New("sqsworker: New needs an SQS client (an *sqs.Client or *sqstest.Fake)")
	}
	if queueURL == "" {
		return nil, errors.New("sqsworker: New needs a queue URL (see GetQueueUrl)")
	}
	if h == nil {
		return nil, errors.New("sqsworker: New needs a Handler")
	}
	var o Options
	for _, fn := range optFns {
		fn(&o)
	}
	if err := o.setDefaults(); err != nil {
		return nil, err
	}
	w := &Worker{client: &countingClient{next: client}, queueURL: queueURL, handler: h, opts: o}
	if o.MaxReceivesPerSecond > 0 {
		w.limiter = newRateLimiter(o.MaxReceivesPerSecond)
	}

	ctx, cancel := context.WithTimeout(context.Background(), o.StartupTimeout)
	defer cancel()
	out, err := w.client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(queueURL),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameVisibilityTimeout, types.QueueAttributeNameFifoQueue},
	})
	if err != nil {
		return nil, describeQueueError(queueURL, err)
	}
	secs, _ := strconv.Atoi(out.Attributes[string(types.QueueAttributeNameVisibilityTimeout)])
	w.visibility = time.Duration(secs) * time.Second
	if o.VisibilityTimeout > 0 {
		w.visibility = o.VisibilityTimeout
	}
	w.fifo = out.Attributes[string(types.QueueAttributeNameFifoQueue)] == "true"
	if w.visibility < time.Second {
		return nil, fmt.Errorf("sqsworker: queue %s has VisibilityTimeout %v: a received message becomes visible to other consumers at once, so no job can be held while it runs; set the queue's VisibilityTimeout (30s is SQS's default) or Options.VisibilityTimeout", queueURL, w.visibility)
	}
	if err := visibility.CheckOptions(w.visibility); err != nil {
		return nil, fmt.Errorf("sqsworker: %w", err)
	}

	target, err := dlq.Discover(ctx, w.client, queueURL)
	switch {
	case err == nil:
		w.target = &target
		w.mover = dlq.NewMover(w.client, target)
		w.checkPolicy(target)
	case errors.Is(err, dlq.ErrNoRedrivePolicy) && o.AllowNoDLQ:
		o.Logger.Warn("sqsworker: queue has no RedrivePolicy (AllowNoDLQ): failed jobs are retried until retention deletes them", "queue", queueURL)
	case errors.Is(err, dlq.ErrNoRedrivePolicy):
		return nil, fmt.Errorf("sqsworker: %w", err)
	default:
		return nil, err
	}
	return w, nil
}

// checkPolicy warns when SQS would dead-letter a message before the retry
// policy gives up, which moves it without provenance.
func (w *Worker) checkPolicy(t dlq.Target) {
	attempts := retry.MaxDeliveries(w.opts.RetryPolicy)
	if w.fifo && t.MaxReceiveCount >= attempts && t.MaxReceiveCount < min(1000, fifoReceiveFactor*attempts) {
		w.opts.Logger.Warn("sqsworker: on a FIFO queue a message's receive count also grows each time an earlier message of its group fails (it is released unprocessed), so SQS may dead-letter a message that never ran; raise maxReceiveCount (SQS allows up to 1000)",
			"queue", w.queueURL, "maxReceiveCount", t.MaxReceiveCount, "policyAttempts", attempts, "suggested", min(1000, fifoReceiveFactor*attempts))
	}
	if t.MaxReceiveCount > 0 && t.MaxReceiveCount < attempts {
		w.opts.Logger.Warn("sqsworker: the queue's maxReceiveCount is lower than the retry policy's attempts; SQS will dead-letter messages before the policy gives up (without provenance). Raise maxReceiveCount or shorten the policy",
			"queue", w.queueURL, "maxReceiveCount", t.MaxReceiveCount, "policyAttempts", attempts)
	}
}

// fifoReceiveFactor is how many times the policy's deliveries a FIFO
// queue's maxReceiveCount should allow: a message waiting behind up to 9
// others of its group (one receive) is released, and so received again,
// once per failed attempt of each of them.
const fifoReceiveFactor = 10

// describeQueueError turns a failed GetQueueAttributes into advice.
func describeQueueError(queueURL string, err error) error {
	var missing *types.QueueDoesNotExist
	if errors.As(err, &missing) {
		return fmt.Errorf("sqsworker: queue %s does not exist; check the URL, the region and the account (or create it, e.g. with dlq.Setup): %w", queueURL, err)
	}
	if isFatal(err) {
		return fmt.Errorf("sqsworker: cannot read queue %s: access or credentials problem; check the credentials and that the IAM policy allows sqs:GetQueueAttributes, sqs:ReceiveMessage, sqs:DeleteMessage and sqs:ChangeMessageVisibility on the queue, and sqs:GetQueueUrl, sqs:GetQueueAttributes and sqs:SendMessage on its DLQ: %w", queueURL, err)
	}
	return fmt.Errorf("sqsworker: cannot read the attributes of queue %s: %w", queueURL, err)
}

// isFatal reports whether a receive error will not go away by retrying.
func isFatal(err error) bool {
	var missing *types.QueueDoesNotExist
	if errors.As(err, &missing) {
		return true
	}
	var api smithy.APIError
	if !errors.As(err, &api) {
		return false
	}
	// Some endpoints prefix query-compatible codes ("AWS.SimpleQueueService.").
	switch strings.TrimPrefix(api.ErrorCode(), "AWS.SimpleQueueService.") {
	case "AccessDenied", "AccessDeniedException", "InvalidClientTokenId", "UnrecognizedClientException",
		"SignatureDoesNotMatch", "IncompleteSignature", "MissingAuthenticationToken", "InvalidSecurity",
		"ExpiredToken", "ExpiredTokenException", "NonExistentQueue", "QueueDoesNotExist", "InvalidAddress", "KmsAccessDenied", "KmsDisabled", "KmsNotFound":
		return true
	}
	return false
}

// Stats returns a snapshot of the Worker's counters.
func (w *Worker) Stats() Stats {
	s := Stats{
		Received: w.c.received.Load(), Succeeded: w.c.succeeded.Load(), Failed: w.c.failed.Load(),
		Retried: w.c.retried.Load(), DeadLettered: w.c.deadLettered.Load(), Released: w.c.released.Load(),
		Lost: w.c.lost.Load(), DeleteFailed: w.c.deleteFailed.Load(), InFlight: w.c.inFlight.Load(),
		Requests: make(map[string]int64, numAPIs),
	}
	for i, name := range apiNames {
		if n := w.client.calls[i].Load(); n > 0 {
			s.Requests[name] = n
		}
	}
	return s
}

// QueueURL returns the URL of the queue the Worker consumes.
func (w *Worker) QueueURL() string { return w.queueURL }

// DeadLetterQueue returns the queue's dead-letter queue, and false when it
// has none (Options.AllowNoDLQ).
func (w *Worker) DeadLetterQueue() (dlq.Target, bool) {
	if w.target == nil {
		return dlq.Target{}, false
	}
	return *w.target, true
}

// run holds what one call of Run shares between its goroutines.
type run struct {
	hard     context.Context // handlers' parent: cancelled at the shutdown deadline
	bg       context.Context // SQS calls that must finish during shutdown
	slots    *semaphore.Weighted
	handlers sync.WaitGroup
	hb       *visibility.Heartbeat
	deletes  *batcher
	changes  *batcher

	mu      sync.Mutex
	pending map[*job]struct{} // FIFO messages received but not started
}

// Run receives and handles messages until ctx is cancelled, then shuts down:
// it stops receiving (aborting the long poll), releases received messages
// that have not started, waits up to Options.ShutdownTimeout for running
// handlers, cancels those still running and releases their messages,
// flushes pending deletes and visibility changes, and returns nil. It
// returns an error early when receiving fails in a way retrying cannot fix
// (the queue was deleted, access was denied), after the same shutdown.
func (w *Worker) Run(ctx context.Context) error {
	if !w.started.CompareAndSwap(false, true) {
		return ErrAlreadyRunning
	}
	log := w.opts.Logger
	bg, stopBG := context.WithCancel(context.WithoutCancel(ctx))
	defer stopBG()
	hard, hardCancel := context.WithCancelCause(bg)
	defer hardCancel(nil)

	r := &run{hard: hard, bg: bg, slots: semaphore.NewWeighted(int64(w.opts.Concurrency)), pending: map[*job]struct{}{}}
	r.hb = visibility.New(w.client, w.queueURL, w.visibility, func(o *visibility.Options) { o.Logger = log })
	hbCtx, stopHB := context.WithCancel(bg)
	hbDone := make(chan struct{})
	go func() {
		defer close(hbDone)
		_ = r.hb.Run(hbCtx)
	}()
	// As many delete calls in flight as receive calls keeps up with them
	// without opening more connections than the SDK keeps idle per host.
	r.deletes = newBatcher(bg, "DeleteMessageBatch", w.opts.BatchLinger, w.opts.Pollers, log, sendDeletes(w.client, w.queueURL), func(e entry, err error) {
		w.c.deleteFailed.Add(1)
		log.Error("sqsworker: delete failed; the message will be received again (a duplicate)", "queue", w.queueURL, "err", err)
	})
	r.changes = newBatcher(bg, "ChangeMessageVisibilityBatch", w.opts.BatchLinger, w.opts.Pollers, log, sendChanges(w.client, w.queueURL), func(e entry, err error) {
		log.Warn("sqsworker: visibility change failed; the message becomes visible when its current timeout ends", "queue", w.queueURL, "timeout", e.timeout, "err", err)
	})

	g, gctx := errgroup.WithContext(ctx)
	for range w.opts.Pollers {
		g.Go(func() error { return w.poll(gctx, r) })
	}
	runErr := g.Wait()

	// Shutdown.
	w.stopping.Store(true)
	w.releasePending(r)
	done := make(chan struct{})
	go func() {
		r.handlers.Wait()
		close(done)
	}()
	t := time.NewTimer(w.opts.ShutdownTimeout)
	select {
	case <-done:
	case <-t.C:
		log.Warn("sqsworker: shutdown timeout passed; cancelling running handlers and releasing their messages",
			"queue", w.queueURL, "running", w.c.inFlight.Load())
		hardCancel(ErrShutdown)
		<-done
	}
	t.Stop()
	r.deletes.close()
	r.changes.close()
	stopHB()
	<-hbDone
	return runErr
}

// poll is one receive loop.
func (w *Worker) poll(ctx context.Context, r *run) error {
	bo := w.opts.ReceiveBackOff()
	bo.Reset()
	for {
		n := w.acquire(ctx, r.slots)
		if n == 0 {
			return nil // ctx done
		}
		if w.limiter != nil {
			k := w.limiter.take(ctx, n)
			r.slots.Release(int64(n - k))
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
		out, err := w.client.ReceiveMessage(ctx, in)
		receivedAt := time.Now()
		if err != nil {
			r.slots.Release(int64(n))
			if w.limiter != nil {
				w.limiter.refund(n)
			}
			if ctx.Err() != nil {
				return nil
			}
			if isFatal(err) {
				return describeQueueError(w.queueURL, err)
			}
			wait := bo.NextBackOff()
			w.opts.Logger.Warn("sqsworker: receive failed; retrying", "queue", w.queueURL, "in", wait, "err", err)
			if wait == backoff.Stop || !sleepCtx(ctx, wait) {
				return nil
			}
			continue
		}
		bo.Reset()
		if got := len(out.Messages); got < n {
			r.slots.Release(int64(n - got))
		}
		if w.limiter != nil {
			w.limiter.refund(n - len(out.Messages))
		}
		if len(out.Messages) > 0 {
			w.c.received.Add(int64(len(out.Messages)))
			w.c.inFlight.Add(int64(len(out.Messages)))
			w.dispatch(r, out.Messages, receivedAt)
		}
	}
}

// acquire takes between 1 and 10 handler slots: it blocks for the first,
// then waits up to ReceiveBatchWait for more so receives carry full batches.
// It returns 0 when ctx ends first.
func (w *Worker) acquire(ctx context.Context, slots *semaphore.Weighted) int {
	if slots.Acquire(ctx, 1) != nil {
		return 0
	}
	n, want := 1, min(maxBatch, w.opts.Concurrency)
	for n < want && slots.TryAcquire(1) {
		n++
	}
	if n < want && w.opts.ReceiveBatchWait > 0 {
		wctx, cancel := context.WithTimeout(ctx, w.opts.ReceiveBatchWait)
		for n < want && slots.Acquire(wctx, 1) == nil {
			n++
		}
		cancel()
	}
	return n
}

// dispatch starts the handlers for one receive's messages, each on a slot
// acquired before the receive. Every message is kept invisible by the
// heartbeat from the moment it is received. On a FIFO queue the messages of
// one group run one after another, in order; when one of them is not
// settled (done or dead-lettered), the rest of its group is released.
func (w *Worker) dispatch(r *run, msgs []types.Message, receivedAt time.Time) {
	jobs := make([]*job, len(msgs))
	for i, raw := range msgs {
		j := &job{raw: raw, receivedAt: receivedAt}
		j.lease = r.hb.Track(aws.ToString(raw.ReceiptHandle), receivedAt, j.onLost)
		jobs[i] = j
	}
	if !w.fifo {
		for _, j := range jobs {
			j.state.Store(jobStarted)
			r.handlers.Add(1)
			go func() {
				defer r.handlers.Done()
				defer r.slots.Release(1)
				w.process(r, j, false)
			}()
		}
		return
	}
	var order []string
	groups := map[string][]*job{}
	for _, j := range jobs {
		g := j.raw.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)]
		if _, ok := groups[g]; !ok {
			order = append(order, g)
		}
		groups[g] = append(groups[g], j)
		r.addPending(j)
	}
	for _, g := range order {
		group := groups[g]
		r.handlers.Add(1)
		go func() {
			defer r.handlers.Done()
			for i, j := range group {
				if !j.state.CompareAndSwap(jobWaiting, jobStarted) {
					continue // released by the shutdown, which also freed its slot
				}
				r.removePending(j)
				settled := w.process(r, j, i < len(group)-1)
				r.slots.Release(1)
				if settled {
					continue
				}
				for _, rest := range group[i+1:] {
					if rest.state.CompareAndSwap(jobWaiting, jobReleased) {
						r.removePending(rest)
						w.release(r, rest)
						r.slots.Release(1)
					}
				}
				return
			}
		}()
	}
}

// job is one received message from its receive until it is settled.
type job struct {
	raw        types.Message
	receivedAt time.Time
	lease      *visibility.Lease
	state      atomic.Int32 // FIFO: waiting, then started or released

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
			w.release(r, j)
			r.slots.Release(1)
		}
	}
}

// release makes a received message visible again at once, unprocessed.
// A message the heartbeat already lost is not ours to release.
func (w *Worker) release(r *run, j *job) {
	if err := j.lease.Stop(); err == nil || errors.Is(err, visibility.ErrMaxVisibility) {
		r.changes.add(entry{handle: aws.ToString(j.raw.ReceiptHandle), timeout: 0})
	} else {
		w.c.lost.Add(1)
	}
	w.c.released.Add(1)
	w.c.inFlight.Add(-1)
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
