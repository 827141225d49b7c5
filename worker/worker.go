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
	"golang.org/x/sync/errgroup"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/internal/awscall"
	"github.com/sqsworker/sqsworker/internal/deadletter"
	"github.com/sqsworker/sqsworker/internal/heartbeat"
	"github.com/sqsworker/sqsworker/internal/settle"
	"github.com/sqsworker/sqsworker/internal/sqserr"
	"github.com/sqsworker/sqsworker/queueref"
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
	ErrPanic = settle.ErrPanic
	// errAlreadyRunning is returned by Run when the Worker is already
	// running or has run.
	errAlreadyRunning = errors.New("sqsworker: Run was already called on this Worker; create a new one")
	// ErrHandlersNotStopped is wrapped by the error Run returns when
	// handlers were still running half of Options.FlushTimeout after the
	// shutdown deadline cancelled their contexts: Run returned without them.
	// Their messages stay leased while the process lives, and what the
	// handlers return is settled as usual (see Run).
	ErrHandlersNotStopped = errors.New("sqsworker: handlers did not stop")
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
	url        *string       // queueURL, for every receive's input
	sysAttrs   []types.MessageSystemAttributeName
	msgAttrs   []string // the message attributes every receive asks for: All
	fifo       bool
	queue      settle.Queue       // what the schedule of delayed jobs needs
	target     *dlq.Target        // nil without a DLQ (AllowNoDLQ)
	copier     *deadletter.Copier // builds dead-letter copies; nil without a DLQ
	warn       *settle.Warner
	notify     *settle.Notifier
	engine     settle.Engine // settles every message; each job is its Port

	c        counters
	started  atomic.Bool
	stopping atomic.Bool
	paused   atomic.Bool // Options.ReceiveGate is closed
	limiter  *rateLimiter
	hb       atomic.Pointer[heartbeat.Heartbeat]
	flow     atomic.Pointer[flow]
	signals  *signals // the scaling signals (Stats.Capacity, …)
}

// receiveStopGrace is how long receives in flight when Run's context ends
// get to come back before they are cancelled: an answer on the wire takes
// milliseconds, and a long poll still waiting has nothing to lose by ending.
const receiveStopGrace = 500 * time.Millisecond

// New checks the queue and returns a Worker for it. queue is the queue's
// URL, name or ARN (see package queueref), resolved once, here: a name is
// looked up with GetQueueUrl in the client's region and account, an ARN in
// its own region and account, and a URL is used as it is. New reads the
// queue's attributes and its RedrivePolicy, and refuses a queue without
// one unless Options.AllowNoDLQ is set (without a dead-letter queue a
// failing job is retried until retention deletes it), and a RedrivePolicy
// that names the queue itself (dlq.ErrRedrivesToItself).
func New(client API, queue string, h Handler, optFns ...func(*Options)) (*Worker, error) {
	if client == nil {
		return nil, errors.New("sqsworker: New needs an SQS client (an *sqs.Client or *sqstest.Fake)")
	}
	if queue == "" {
		return nil, errors.New("sqsworker: New needs a queue URL, name or ARN")
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
	w := &Worker{client: &countingClient{next: client}, handler: h, opts: o, warn: &settle.Warner{Log: o.Logger}, signals: &signals{concurrency: o.Concurrency, pollers: o.Pollers}}
	w.client.deleted = w.signals.deleteCall
	if o.OnSettled != nil {
		w.notify = &settle.Notifier{Hook: settlementHook(o.OnSettled), Log: o.Logger, Warn: w.warn}
	}
	if o.MaxReceivesPerSecond > 0 {
		w.limiter = newRateLimiter(o.MaxReceivesPerSecond)
	}

	ctx, cancel := context.WithTimeout(context.Background(), o.StartupTimeout)
	defer cancel()
	queueURL, err := queueref.Resolve(ctx, w.client, queue)
	if err != nil {
		if e, ok := sqserr.Unreachable(err, sqserr.SDKKnobs()); ok {
			err = e
		}
		return nil, fmt.Errorf("sqsworker: %w", err)
	}
	w.queueURL, w.url = queueURL, aws.String(queueURL)
	w.sysAttrs, w.msgAttrs = o.receiveAttributes(), []string{"All"}
	out, err := awscall.SQS(ctx, awscall.Rule{}, w.client.GetQueueAttributes, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(queueURL),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameVisibilityTimeout, types.QueueAttributeNameFifoQueue, types.QueueAttributeNameMessageRetentionPeriod},
	})
	if err != nil {
		return nil, describeQueueError(queueURL, err)
	}
	// Every receive asks for this visibility timeout (whole seconds, as SQS
	// counts them) and the heartbeat counts each lease from it, so a later
	// change of the queue's attribute cannot shorten a lease the worker
	// relies on.
	secs, _ := strconv.Atoi(out.Attributes[string(types.QueueAttributeNameVisibilityTimeout)])
	w.visibility = time.Duration(secs) * time.Second
	if o.VisibilityTimeout > 0 {
		w.visibility = o.VisibilityTimeout.Truncate(time.Second)
	}
	w.fifo = out.Attributes[string(types.QueueAttributeNameFifoQueue)] == "true"
	retention, _ := strconv.Atoi(out.Attributes[string(types.QueueAttributeNameMessageRetentionPeriod)])
	w.queue = settle.Queue{FIFO: w.fifo, Retention: time.Duration(retention) * time.Second}
	if w.visibility < time.Second {
		return nil, fmt.Errorf("sqsworker: queue %s has VisibilityTimeout %v: a received message becomes visible to other consumers at once, so no job can be held while it runs; set the queue's VisibilityTimeout (30s is SQS's default) or Options.VisibilityTimeout", queueURL, w.visibility)
	}
	// The heartbeat is made per Run; this checks its options now.
	if _, err := w.newHeartbeat(); err != nil {
		return nil, fmt.Errorf("sqsworker: %w", err)
	}

	copier, err := settle.DiscoverDLQ(ctx, w.client, queueURL, o.RetryPolicy, o.Logger, func(mo *deadletter.Options) {
		mo.Offloader, mo.OffloadTimeout = o.DeadLetterOffloader, o.CallTimeout
	})
	switch {
	case err == nil:
		target := dlq.Target(copier.Target())
		w.target, w.copier = &target, copier
		w.queue.MaxReceiveCount = target.MaxReceiveCount
	case errors.Is(err, dlq.ErrNoRedrivePolicy) && o.AllowNoDLQ:
		o.Logger.Warn("sqsworker: queue has no RedrivePolicy (AllowNoDLQ): failed jobs are retried until retention deletes them", "queue", queueURL)
	case errors.Is(err, dlq.ErrNoRedrivePolicy):
		return nil, fmt.Errorf("sqsworker: %w", err)
	default:
		return nil, err
	}
	w.engine = settle.Engine{
		Name: "sqsworker", Log: o.Logger, Warn: w.warn, Policy: o.RetryPolicy, Counter: o.AttemptCounter, CallTimeout: o.CallTimeout,
		HandlerName: o.HandlerName, Visibility: w.visibility, Events: w.notify != nil,
	}
	return w, nil
}

// newHeartbeat returns the heartbeat for one Run.
func (w *Worker) newHeartbeat() (*heartbeat.Heartbeat, error) {
	return heartbeat.New(w.client, w.queueURL, w.visibility, func(o *heartbeat.Options) {
		o.Logger = w.opts.Logger
		o.CallTimeout = w.opts.CallTimeout
	})
}

// describeQueueError turns a failed GetQueueAttributes into advice.
func describeQueueError(queueURL string, err error) error {
	if e, ok := sqserr.Unreachable(err, sqserr.SDKKnobs()); ok {
		return fmt.Errorf("sqsworker: reading queue %s: %w", queueURL, e)
	}
	var missing *types.QueueDoesNotExist
	if errors.As(err, &missing) || strings.Contains(sqserr.Code(err), "NonExistentQueue") {
		return fmt.Errorf("sqsworker: queue %s does not exist; check the URL, the region and the account (or create it, e.g. with dlq.Setup): %w", queueURL, err)
	}
	if sqserr.Of(err) == sqserr.Fatal {
		return fmt.Errorf("sqsworker: cannot read queue %s: access or credentials problem; check the credentials and that the IAM policy allows sqs:GetQueueAttributes, sqs:ReceiveMessage, sqs:DeleteMessage and sqs:ChangeMessageVisibility on the queue, and sqs:GetQueueUrl, sqs:GetQueueAttributes and sqs:SendMessage on its DLQ: %w", queueURL, err)
	}
	return fmt.Errorf("sqsworker: cannot read the attributes of queue %s: %w", queueURL, err)
}

// Stats returns a snapshot of the Worker's counters.
func (w *Worker) Stats() Stats {
	s := Stats{
		Received: w.c.received.Load(), Succeeded: w.c.succeeded.Load(), Failed: w.c.failed.Load(),
		Deleted: w.c.deleted.Load(), Retried: w.c.retried.Load(), DeadLettered: w.c.deadLettered.Load(),
		Released: w.c.released.Load(), Lost: w.c.lost.Load(), Abandoned: w.c.abandoned.Load(),
		DeleteRetried: w.c.deleteRetried.Load(), SettledLate: w.c.settledLate.Load(),
		InFlight: w.c.inFlight.Load(), Settling: w.c.settling.Load(), HookDropped: w.notify.Dropped(),
		Requests: make(map[string]int64, numAPIs),
	}
	s.Snoozed = w.c.snoozed.Load()
	s.Paused = w.paused.Load()
	s.Delayed = w.c.delayed.Load()
	if f := w.flow.Load(); f != nil {
		s.Prefetched, s.PrefetchTarget = f.snapshot()
	}
	w.signals.fill(time.Now(), &s)
	for i := range s.ReceiveSizes {
		s.ReceiveSizes[i] = w.c.receiveSizes[i].Load()
	}
	if hb := w.hb.Load(); hb != nil {
		hs := hb.Stats()
		s.Extensions, s.LateExtensions = hs.Extended, hs.Late
	}
	s.RequestResults = make(map[string]map[string]int64, numAPIs)
	s.PayloadBytes = make(map[string]int64, numAPIs)
	s.BilledRequests = make(map[string]int64, numAPIs)
	for i, name := range apiNames {
		if n := w.client.calls[i].Load(); n > 0 {
			s.Requests[name] = n
			s.BilledRequests[name] = w.client.billed[i].Load()
			results := make(map[string]int64, 1)
			for r := range numResults {
				if k := w.client.results[i][r].Load(); k > 0 {
					results[resultName(r)] = k
				}
			}
			s.RequestResults[name] = results
		}
		if b := w.client.bytes[i].Load(); b > 0 {
			s.PayloadBytes[name] = b
		}
	}
	return s
}

// QueueURL returns the URL of the queue the Worker consumes.
func (w *Worker) QueueURL() string { return w.queueURL }

// run holds what one call of Run shares between its goroutines.
type run struct {
	w        *Worker
	bg       context.Context // calls that settle messages (attempt counting); the handlers' parent
	flow     *flow
	gate     *gate // Options.ReceiveGate's state
	handlers sync.WaitGroup
	hb       *heartbeat.Heartbeat
	settlers // the run's batchers: deletes, changes, sends, resends
	bo       settle.BatcherOptions
	holdover atomic.Pointer[holdover] // the handlers Run returned without, once it does

	mu       sync.Mutex
	running  *job  // handlers under way (see invoke): a list through job.prev and job.next
	detached bool  // Run has given up on the handlers still running
	shutdown error // the running handlers' cause once the shutdown deadline passed (ErrShutdown)
}

// cancelHandlers cancels the running handlers' contexts with cause, and
// those of handlers starting later (see invoke). The handlers' contexts are
// not children of a cancellable context of the run: each would join (and
// leave) that context's set of children under the lock they all share.
func (r *run) cancelHandlers(cause error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.shutdown = cause
	for j := r.running; j != nil; j = j.next {
		j.cancelWith(cause)
	}
}

// invoke runs the handler on j's message, and reports false when it did
// not start because Run had given up on its handlers (then the job is
// accounted for as abandoned). A handler Run returned without (see detach)
// is settled as usual when it returns, through the holdover.
func (w *Worker) invoke(ctx context.Context, r *run, j *job, m *Message) (err error, ran bool) {
	r.mu.Lock()
	if r.detached {
		r.mu.Unlock()
		// Reached its handler only after Run gave up (a slow attempt
		// counter): it does not start.
		w.abandon(r, j, "not started: Run was returning; SQS delivers the message again when its visibility timeout ends")
		return nil, false
	}
	r.joinLocked(j)
	r.mu.Unlock()

	err = settle.Run(ctx, &w.engine, &j.Job, w.handler, m)

	r.mu.Lock()
	r.leaveLocked(j)
	detached := r.detached
	r.mu.Unlock()
	if detached {
		w.opts.Logger.Warn("sqsworker: a handler returned after Run had returned without it; its message, kept leased meanwhile, is settled as usual",
			"queue", w.queueURL, "message", j.Msg.ID, "err", err)
	}
	return err, true
}

// joinLocked adds j, whose handler is about to start, to the running
// handlers: a list, not a map, so joining and leaving it hashes nothing.
// After the shutdown deadline, j's context is cancelled at once (it was
// made after cancelHandlers ran).
func (r *run) joinLocked(j *job) {
	j.next = r.running
	if j.next != nil {
		j.next.prev = j
	}
	r.running = j
	if r.shutdown != nil {
		j.cancelWith(r.shutdown)
	}
}

// leaveLocked removes j, whose handler returned, from the running
// handlers.
func (r *run) leaveLocked(j *job) {
	if j.prev != nil {
		j.prev.next = j.next
	} else {
		r.running = j.next
	}
	if j.next != nil {
		j.next.prev = j.prev
	}
	j.prev, j.next = nil, nil
}

// detach gives up on the handlers still running at the end of the
// shutdown's wait, so that Run can return: they are held over (see
// holdover). Their messages are not released while their handlers run
// (another consumer would run them at the same time): they stay leased
// while the process lives, and what the handlers return is settled as
// usual. It returns how many there were.
func (w *Worker) detach(r *run) int {
	h := &holdover{jobs: map[*job]bool{}}
	s, err := w.newSettlers(r.bo)
	r.mu.Lock()
	r.detached = true
	var stuck []*job
	for j := r.running; j != nil; j = j.next {
		stuck = append(stuck, j)
		h.jobs[j] = true
	}
	if len(stuck) > 0 && err == nil {
		h.settlers = s
		h.left.Add(len(stuck))
		r.holdover.Store(h)
	}
	r.mu.Unlock()
	if err == nil && len(stuck) == 0 {
		s.close(context.Background()) // nothing in them
	}
	if len(stuck) == 0 {
		return 0
	}
	ids := make([]string, len(stuck))
	for i, j := range stuck {
		ids[i] = j.Msg.ID
	}
	if err != nil { // cannot happen: the run's own settlers were made alike
		for _, j := range stuck {
			w.abandon(r, j, "the handler did not return after its context was cancelled at shutdown: "+err.Error())
		}
		return len(stuck)
	}
	w.opts.Logger.Error(fmt.Sprintf("sqsworker: %s ignored the cancellation of their context; Run returns without them. Their messages stay leased (extended up to SQS's 12-hour limit) while this process lives, and what the handlers return is settled as usual; if the process exits first, SQS delivers the messages again when their visibility timeout ends", countHandlers(len(stuck))),
		"queue", w.queueURL, "messages", ids)
	return len(stuck)
}

// abandon accounts for a job whose handler Run gave up on: no settlement
// call is made, and its lease ends with the heartbeat, at the end of the
// flush (Lease.Stop could wait for an extension in flight, past Run's
// bound).
func (w *Worker) abandon(r *run, j *job, reason string) {
	w.c.abandoned.Add(1)
	w.engine.Drop(&j.Job, settle.Abandoned, reason)
}

// countHandlers says "1 handler" or "n handlers".
func countHandlers(n int) string {
	if n == 1 {
		return "1 handler"
	}
	return strconv.Itoa(n) + " handlers"
}

// stuckError is Run's error for n handlers it returned without.
func (w *Worker) stuckError(n int) error {
	return fmt.Errorf("%w: %s still running %v after the shutdown deadline cancelled their contexts (FlushTimeout/2); Run returned without them. While this process lives their messages stay leased (extended up to SQS's 12-hour limit), so no other consumer runs them meanwhile, and what the handlers return is settled as usual; if the process exits first, SQS delivers them again when their visibility timeout (%v) ends. Make handlers return when their context is cancelled",
		ErrHandlersNotStopped, countHandlers(n), w.opts.FlushTimeout/2, w.visibility)
}

// Run receives and handles messages until ctx is cancelled, then shuts down:
// it stops receiving, releases received messages that have not started,
// waits up to Options.ShutdownTimeout for running handlers, cancels those
// still running (cause ErrShutdown) and releases their messages as they
// return, flushes pending settlements for at most Options.FlushTimeout,
// and returns nil. Whatever the network and the handlers do, Run returns
// within ShutdownTimeout + FlushTimeout of ctx's end.
//
// Cancelled handlers have half of FlushTimeout to return. Run returns
// without those that do not (a handler that ignores its context), with an
// error wrapping ErrHandlersNotStopped that counts them (logged at ERROR).
// Their messages are not released, since another consumer would then run
// them while these handlers still do: while the process lives they stay
// leased — the heartbeat goes on extending them, up to SQS's 12-hour
// limit — and what such a handler returns is settled as usual (deleted,
// retried, dead-lettered, released; counted in Stats and reported to
// Options.OnSettled). If the process exits first, SQS delivers them again
// when their visibility timeout ends.
//
// Run returns an error early when receiving fails in a way retrying cannot
// fix (the queue was deleted, access was denied), after the same shutdown.
func (w *Worker) Run(ctx context.Context) error {
	if !w.started.CompareAndSwap(false, true) {
		return errAlreadyRunning
	}
	w.client.health.running(time.Now())
	defer func() { w.client.health.stopped(time.Now()) }()
	log := w.opts.Logger
	bg := context.WithoutCancel(ctx)

	hb, err := w.newHeartbeat()
	if err != nil {
		return fmt.Errorf("sqsworker: %w", err)
	}
	w.hb.Store(hb)
	r := &run{w: w, bg: bg, hb: hb, flow: newFlow(&w.opts, w.fifo), gate: newGate(w.opts.ReceiveGate)}
	r.flow.signals = w.signals
	if w.opts.ReceiveGate != nil {
		w.paused.Store(true) // until the gate's first report
		r.flow.pause(true)
	}
	w.flow.Store(r.flow)
	hbCtx, stopHB := context.WithCancel(bg)
	hbDone := make(chan struct{})
	go func() {
		defer close(hbDone)
		_ = hb.Run(hbCtx)
	}()
	// As many calls of each kind in flight as receive calls keeps up with
	// them without opening more connections than the SDK keeps idle.
	r.bo = settle.BatcherOptions{Linger: w.opts.BatchLinger, Senders: w.opts.Pollers, CallTimeout: w.opts.CallTimeout, Log: log, Warn: w.warn}
	if r.settlers, err = w.newSettlers(r.bo); err != nil {
		stopHB()
		<-hbDone
		return fmt.Errorf("sqsworker: %w", err)
	}

	// Concurrency handler goroutines take the received messages from the
	// flow; the pollers receive as the flow allows. Receiving stops when
	// ctx ends (or a fatal error), and the receives in flight end soon
	// after (receiveStopGrace): a long poll left to run would take messages
	// that arrive during the drain only to release them, counting a
	// receive against their maxReceiveCount without running them. What a
	// receive brings back as it ends is released at once.
	r.handlers.Add(w.opts.Concurrency)
	for range w.opts.Concurrency {
		go func() {
			defer r.handlers.Done()
			w.handle(r)
		}()
	}
	if w.opts.BacklogInterval > 0 {
		sctx, stopSampling := context.WithCancel(ctx)
		var sampling sync.WaitGroup
		sampling.Go(func() { w.sampleBacklog(sctx) })
		defer func() { stopSampling(); sampling.Wait() }()
	}
	g, gctx := errgroup.WithContext(ctx)
	recvCtx, cancelRecv := context.WithCancel(bg)
	defer cancelRecv()
	for range w.opts.Pollers {
		g.Go(func() error { return w.poll(gctx, recvCtx, r) })
	}
	if rg := w.opts.ReceiveGate; rg != nil {
		// Not waited for: Run's time bound does not depend on the gate.
		// Reports after the shutdown began are ignored.
		go rg.Watch(gctx, func(open bool) { w.setGate(r, open) })
	}
	<-gctx.Done()

	// Shutdown: what waits in the buffer is released at once; running
	// handlers get ShutdownTimeout.
	w.stopping.Store(true)
	w.client.health.stopping(time.Now())
	// A receive in flight may have its answer on the wire: its messages
	// are hidden already, and cancelling it now would leave them invisible
	// for the visibility timeout with nobody to release them. So receives
	// get receiveStopGrace (within ShutdownTimeout) to come back, and what
	// they bring is released; a long poll still waiting is cancelled then.
	stopReceiving := time.AfterFunc(min(receiveStopGrace, w.opts.ShutdownTimeout), cancelRecv)
	defer stopReceiving.Stop()
	for _, j := range r.flow.stop() {
		w.release(r, j)
	}
	done := make(chan struct{})
	go func() {
		r.handlers.Wait()
		close(done)
	}()
	// The flush budget starts when the handlers have returned, or at the
	// shutdown deadline: cancelled handlers have its first half to return,
	// then Run gives up on them. The batchers keep sending meanwhile.
	var flushCtx context.Context
	var cancelFlush context.CancelFunc
	stuck := 0
	t := time.NewTimer(w.opts.ShutdownTimeout)
	select {
	case <-done:
		flushCtx, cancelFlush = context.WithTimeout(bg, w.opts.FlushTimeout)
	case <-t.C:
		log.Warn("sqsworker: shutdown timeout passed; cancelling running handlers and releasing their messages",
			"queue", w.queueURL, "running", w.c.inFlight.Load()-w.c.settling.Load())
		r.cancelHandlers(ErrShutdown)
		flushCtx, cancelFlush = context.WithTimeout(bg, w.opts.FlushTimeout)
		grace := time.NewTimer(w.opts.FlushTimeout / 2)
		select {
		case <-done:
		case <-grace.C:
			stuck = w.detach(r)
		}
		grace.Stop()
	}
	defer cancelFlush()
	t.Stop()
	runErr := g.Wait()
	if stuck > 0 {
		runErr = errors.Join(runErr, w.stuckError(stuck))
	}

	// Flush, within one budget: dead-letter copies first (a confirmed copy
	// adds its delete), then deletes and visibility changes together.
	// The heartbeat keeps messages invisible while they settle, but not past
	// the budget: a settling call waits for an extension of its message in
	// flight (so the two cannot overwrite each other), and ending the
	// heartbeat cancels one that hangs.
	stopHBAfterFlush := context.AfterFunc(flushCtx, stopHB)
	defer stopHBAfterFlush()
	before := w.c.abandoned.Load()
	r.settlers.close(flushCtx)
	stopHB()
	<-hbDone
	if h := r.holdover.Load(); h != nil {
		// Handlers Run returns without: their messages stay leased, and
		// they are settled as usual when the handlers return.
		w.notify.Flush(flushCtx)
		w.keepHeldOver(bg, h, hb)
	} else {
		w.notify.Close(flushCtx)
	}
	if n := w.c.abandoned.Load() - before; n > 0 {
		log.Warn(fmt.Sprintf("sqsworker: %d settlements not confirmed at shutdown; those messages will be delivered again", n),
			"queue", w.queueURL, "flushTimeout", w.opts.FlushTimeout)
	}
	return runErr
}

// retryable reports whether a receive error may go away by retrying.
func retryable(err error) bool {
	switch sqserr.Of(err) {
	case sqserr.Fatal, sqserr.Invalid:
		return false
	}
	return true
}
