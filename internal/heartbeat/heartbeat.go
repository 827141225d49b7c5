package heartbeat

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/internal/sqsbatch"
	"github.com/sqsworker/sqsworker/internal/sqserr"
	"github.com/sqsworker/sqsworker/internal/sqslimit"
)

// API is the narrow SQS interface the heartbeat uses, with the AWS SDK for
// Go v2's exact method signature. *sqs.Client and sqstest.Fake satisfy it.
type API interface {
	ChangeMessageVisibilityBatch(ctx context.Context, params *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error)
}

var _ API = (*sqs.Client)(nil)

// MaxVisibility is the longest SQS keeps a message invisible, counted from
// the receive that returned it: 12 hours. No extension, and no retry delay,
// can reach past it. It is sqsworker's one name for this limit.
const MaxVisibility = sqslimit.MaxVisibility

// maxBatchEntries is the most entries one ChangeMessageVisibilityBatch call
// carries.
const maxBatchEntries = sqslimit.MaxBatchEntries

// Timing constants. They are not options: each follows from SQS's behaviour.
const (
	// capMargin is kept between the last extension and receivedAt+12h. The
	// receive reached SQS before it returned to the caller, and the
	// extension reaches SQS after the heartbeat sends it, so SQS counts a
	// little more elapsed time than the heartbeat does.
	capMargin = time.Second
	// minRetryWait: when less than twice this is left before the deadline,
	// the heartbeat stops retrying and tells the owner.
	minRetryWait = 50 * time.Millisecond
	// minCallTimeout bounds each call's own timeout from below; it is
	// otherwise half the time left before the earliest deadline in the call,
	// at most Options.CallTimeout.
	minCallTimeout = time.Second
	// defaultCallTimeout is Options.CallTimeout's default.
	defaultCallTimeout = 30 * time.Second
	// defaultMaxCalls is Options.MaxCalls's default: SQS's limit of about
	// 120,000 in-flight messages on a standard queue, all received
	// together, is 12,000 calls due at once; 64 calls of 20 ms in flight
	// make them in 3.75 s, well within the default threshold of a 30 s
	// visibility timeout (10 s), leaving the rest for retries.
	defaultMaxCalls = 64
)

// ErrLost means the heartbeat no longer keeps the message invisible and its
// ownership is lost or uncertain: SQS refused the extension because the
// message was deleted, was received again by another consumer (its receipt
// handle was replaced), or is no longer in flight; or every extension
// attempt failed until the message's visibility deadline was too close to
// try again. The handler should stop and must not delete the message or
// change its visibility: another consumer may own it now.
var ErrLost = errors.New("visibility: ownership of the message is lost; stop the handler and leave the message alone (another consumer may receive it)")

// ErrMaxVisibility means the message reached the SQS limit of 12 hours of
// invisibility counted from its receipt: no further extension is possible.
// It is reported Threshold before the last deadline SQS allows; the message
// stays invisible until that deadline, given in the error's detail, and the
// handler should stop cleanly before then, or the message will be delivered
// again.
var ErrMaxVisibility = errors.New("visibility: the message reached SQS's 12-hour visibility limit counted from its receipt; stop the handler before the limit or the message will be delivered again")

// Options configures a Heartbeat. Every field's zero value is usable; each
// is documented on visibility.Options, which converts to it (keep the two
// field for field alike).
type Options struct {
	Extension   time.Duration // zero: the visibilityTimeout passed to New
	Threshold   time.Duration // zero: a third of Extension (at least 1 s or half of Extension)
	MaxRetries  int           // zero: until the deadline; negative: none
	MaxCalls    int           // zero: 64
	CallTimeout time.Duration // zero: 30 s
	Logger      *slog.Logger  // zero: discard
}

// config is the resolved Options.
type config struct {
	ext, threshold, window time.Duration
	maxRetries, maxCalls   int
	callTimeout            time.Duration
	log                    *slog.Logger
}

func resolve(visibilityTimeout time.Duration, optFns []func(*Options)) (config, error) {
	var o Options
	for _, fn := range optFns {
		fn(&o)
	}
	c := config{ext: o.Extension, threshold: o.Threshold, maxRetries: o.MaxRetries, maxCalls: o.MaxCalls, callTimeout: o.CallTimeout, log: o.Logger}
	if c.maxCalls < 0 || c.callTimeout < 0 {
		return c, fmt.Errorf("visibility: Options.MaxCalls (%d) and Options.CallTimeout (%v) must not be negative; leave them zero for the defaults", c.maxCalls, c.callTimeout)
	}
	if c.maxCalls == 0 {
		c.maxCalls = defaultMaxCalls
	}
	if c.callTimeout == 0 {
		c.callTimeout = defaultCallTimeout
	}
	c.callTimeout = max(c.callTimeout, minCallTimeout)
	if c.ext == 0 {
		c.ext = visibilityTimeout
	}
	c.ext = c.ext.Truncate(time.Second)
	if c.ext < time.Second || c.ext > MaxVisibility {
		return c, fmt.Errorf("visibility: extension %v (Options.Extension, or the visibilityTimeout passed to New) must be between 1s and 12h; pass the queue's VisibilityTimeout to New or set Options.Extension", c.ext)
	}
	if c.threshold == 0 {
		c.threshold = c.ext / 3
		if c.threshold < time.Second {
			c.threshold = min(time.Second, c.ext/2)
		}
	}
	if c.threshold < 0 || c.threshold >= c.ext {
		return c, fmt.Errorf("visibility: Options.Threshold %v must be positive and shorter than the extension %v, or the heartbeat could not keep up; leave it zero for a third of the extension", c.threshold, c.ext)
	}
	// A message due within window of a call that goes out anyway rides
	// along in it rather than costing a call of its own later. Half the
	// threshold keeps at least half of it for retries; half of the
	// extension's margin over the threshold keeps early extensions from
	// ever shortening a deadline.
	c.window = min(c.threshold/2, (c.ext-c.threshold)/2)
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	return c, nil
}

// Heartbeat keeps the in-flight messages of one queue invisible while they
// are being handled, extending their visibility timeouts in batches. Create
// it with New, run Run in one goroutine, and call Track for each received
// message. Its methods are safe for concurrent use.
type Heartbeat struct {
	client   API
	changer  *sqsbatch.Queue // the client's ChangeMessageVisibilityBatch calls
	queueURL string
	vis      time.Duration
	cfg      config

	running atomic.Bool
	wake    chan struct{} // a lease became the earliest, or a call ended; capacity 1

	// epoch is when New ran, with its monotonic clock reading. A lease
	// keeps its deadline, next action and extensions as ticks since
	// epoch: 8 bytes each instead of a time.Time's 24, compared as
	// integers.
	epoch time.Time

	mu      sync.Mutex
	idle    sync.Cond // broadcast when a call's leases are released; L is &mu
	queue   leaseHeap // tracked leases not in a call and not held, earliest action first
	tracked int
	calls   int     // calls in flight
	free    []*call // buffers of calls that ended, for the next ones
	stats   Stats
}

// call is one ChangeMessageVisibilityBatch call's leases and buffers. A
// Heartbeat reuses them: at most MaxCalls exist at once.
type call struct {
	n       int // entries
	leases  [maxBatchEntries]*Lease
	entries [maxBatchEntries]sqsbatch.Entry
	results [maxBatchEntries]sqsbatch.Result
}

// New returns a heartbeat for the queue at queueURL. visibilityTimeout is
// the visibility timeout the messages were received with (the queue's
// VisibilityTimeout attribute, or the receive's own VisibilityTimeout): a
// message tracked with Track is taken to be invisible until receivedAt plus
// visibilityTimeout. It is also the default Extension.
//
// New returns an error when client is nil or the options are invalid (see
// Options); the error says what to change.
func New(client API, queueURL string, visibilityTimeout time.Duration, optFns ...func(*Options)) (*Heartbeat, error) {
	if client == nil {
		return nil, errors.New("visibility: New needs an SQS client (an *sqs.Client or anything with its ChangeMessageVisibilityBatch method)")
	}
	if queueURL == "" {
		return nil, errors.New("visibility: New needs the queue URL the messages were received from")
	}
	cfg, err := resolve(visibilityTimeout, optFns)
	if err != nil {
		return nil, err
	}
	h := &Heartbeat{
		client:   client,
		changer:  sqsbatch.NewChanger(client, queueURL),
		queueURL: queueURL,
		vis:      visibilityTimeout,
		cfg:      cfg,
		wake:     make(chan struct{}, 1),
		epoch:    time.Now(),
	}
	h.idle.L = &h.mu
	return h, nil
}

// tick is a moment as the time since h.epoch.
type tick = time.Duration

// never is the tick of no moment: later than every other.
const never tick = math.MaxInt64

// tick returns t as a tick, within ±146 years of the epoch, so that adding
// or taking hours never overflows (a zero receivedAt stays in the past).
func (h *Heartbeat) tick(t time.Time) tick {
	return min(max(t.Sub(h.epoch), -1<<62), 1<<62)
}

// time returns the moment of tick t.
func (h *Heartbeat) time(t tick) time.Time { return h.epoch.Add(t) }

// Extension returns the visibility timeout each extension asks for.
func (h *Heartbeat) Extension() time.Duration { return h.cfg.ext }

// Threshold returns how long before a deadline a message is extended.
func (h *Heartbeat) Threshold() time.Duration { return h.cfg.threshold }

// Stats counts what a Heartbeat has done since New.
type Stats struct {
	Calls         int64 // ChangeMessageVisibilityBatch calls made, failed ones included
	Extended      int64 // entries SQS reported extended
	FailedCalls   int64 // calls that returned an error (throttling, 5xx, network, timeout)
	FailedEntries int64 // entries SQS reported failed in a call that succeeded
	Late          int64 // extensions SQS confirmed only after the deadline they were to move (not counted in Extended)
	Lost          int64 // leases ended with ErrLost
	MaxedOut      int64 // leases ended with ErrMaxVisibility
	Tracked       int   // leases tracked now (not stopped, lost or maxed out)
	InFlightCalls int   // ChangeMessageVisibilityBatch calls in flight now
}

// Failures returns FailedCalls plus FailedEntries.
func (s Stats) Failures() int64 { return s.FailedCalls + s.FailedEntries }

// Stats returns the counters.
func (h *Heartbeat) Stats() Stats {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.stats
	s.Tracked = h.tracked
	s.InFlightCalls = h.calls
	return s
}

// Track starts keeping one received message invisible, and returns its
// Lease; call Lease.Stop once the message is settled (deleted, or its
// visibility changed for a retry), and Lease.Hold around the settling call
// itself. receiptHandle is the handle the receive returned. receivedAt is
// when that receive returned (take time.Now() right after ReceiveMessage):
// the message is taken to be invisible until receivedAt plus the
// visibilityTimeout passed to New, and the 12-hour limit counts from it. Use
// TrackUntil when the message's deadline is different.
//
// onLost, which may be nil, is called at most once, from a heartbeat
// goroutine, when the heartbeat stops keeping the message invisible before
// Stop: with an error wrapping ErrLost when ownership is lost or uncertain,
// or ErrMaxVisibility when the 12-hour limit leaves no further extension. It
// must not block (cancelling the handler's context with the cause is the
// intended use), and may call Stop on any lease. Once Stop has begun, no new
// loss is detected; but a loss detected just before may still be reported
// while or shortly after Stop returns, so onLost must be harmless then
// (cancelling a finished handler's context is).
//
// Track returns an error when receiptHandle is empty.
func (h *Heartbeat) Track(receiptHandle string, receivedAt time.Time, onLost func(cause error)) (*Lease, error) {
	return h.TrackUntil(receiptHandle, receivedAt, receivedAt.Add(h.vis), onLost)
}

// TrackUntil is Track for a message whose visibility deadline is known to
// differ from receivedAt plus New's visibilityTimeout, for example because
// it was received with its own VisibilityTimeout or its visibility was
// already changed. deadline is when the message becomes visible again (a
// deadline more than 146 years away is kept as 146 years away).
func (h *Heartbeat) TrackUntil(receiptHandle string, receivedAt, deadline time.Time, onLost func(cause error)) (*Lease, error) {
	l := new(Lease)
	var owner Owner
	if onLost != nil {
		owner = funcOwner(onLost)
	}
	if err := h.trackInto(l, receiptHandle, receivedAt, deadline, owner); err != nil {
		return nil, err
	}
	return l, nil
}

// Owner is told when the heartbeat gives a lease up before Stop: the
// runtime's job, which embeds its Lease (see TrackInto), or Track's onLost.
// OnLost is called at most once, from a heartbeat goroutine, outside the
// heartbeat's lock; it must not block, and may call Stop on any lease.
type Owner interface{ OnLost(cause error) }

// funcOwner is an onLost func as an Owner.
type funcOwner func(cause error)

func (f funcOwner) OnLost(cause error) { f(cause) }

// TrackInto is Track for a lease its caller allocated, l, with owner told
// of a loss: a runtime keeps the lease inside its own per-message job, so
// tracking costs no allocation of its own (no Lease, no onLost closure
// bound to the job). l must not be copied or reused until the lease has
// ended (Stop returned).
func (h *Heartbeat) TrackInto(l *Lease, receiptHandle string, receivedAt time.Time, owner Owner) error {
	return h.trackInto(l, receiptHandle, receivedAt, receivedAt.Add(h.vis), owner)
}

// Cause returns why the heartbeat ended l — an error wrapping ErrLost or
// ErrMaxVisibility — or nil while it has not. The heartbeat ends a call's
// leases together and only then tells their owners, one after another: a
// job about to start asks its lease, not only its own record of the
// notices, so that a message lost together with the one its handler was
// running is not started in between.
func (l *Lease) Cause() error {
	l.h.mu.Lock()
	defer l.h.mu.Unlock()
	return l.cause
}

// trackInto starts tracking the message in l (TrackUntil).
func (h *Heartbeat) trackInto(l *Lease, receiptHandle string, receivedAt, deadline time.Time, owner Owner) error {
	if receiptHandle == "" {
		return errors.New("visibility: Track needs the receipt handle the receive returned for the message")
	}
	d := h.tick(deadline)
	*l = Lease{h: h, handle: receiptHandle, received: h.tick(receivedAt), owner: owner, deadline: d, at: d - h.cfg.threshold, index: -1}
	h.mu.Lock()
	h.queue.push(l)
	h.tracked++
	first := l.index == 0
	h.mu.Unlock()
	if first {
		h.poke()
	}
	return nil
}

// poke wakes Run without blocking.
func (h *Heartbeat) poke() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// Lease is one message tracked by a Heartbeat.
type Lease struct {
	h        *Heartbeat
	handle   string
	received tick  // the receive time given to Track
	owner    Owner // nil: nobody to tell

	// Guarded by h.mu. Ticks count from h.epoch.
	deadline tick   // when the message becomes visible, as far as known (never later than SQS's)
	at       tick   // next action: extension, retry or the 12-hour notice
	index    int32  // in h.queue; -1 when not there
	failures int32  // consecutive failed attempts
	ask      int32  // the visibility timeout the current call asks for, in seconds
	exts     int32  // how many extensions SQS confirmed
	inCall   bool   // in an extension call that has not returned
	held     bool   // held by its owner for a call of its own (Hold): not extended meanwhile
	ended    bool   // stopped, lost or maxed out
	last     bool   // the current call is the last extension the 12-hour limit allows
	final    bool   // the last extension succeeded: next comes the ErrMaxVisibility notice
	lapsed   bool   // an extension SQS confirmed only after the deadline it was to move
	cause    error  // why the heartbeat ended the lease (lost or maxed out); nil if Stop did
	ext0     tick   // when the first extension SQS confirmed was sent (kept here: most leases have at most one)
	more     []tick // when the later ones were sent
}

// errStopped is what Hold returns for a lease its owner already stopped.
var errStopped = errors.New("visibility: Hold on a stopped lease; the message is no longer tracked")

// Stop stops tracking the message. It returns only after any
// ChangeMessageVisibilityBatch call that includes the message has returned,
// so a delete or a ChangeMessageVisibility made after Stop is never
// overwritten by a late extension. Such a call is bounded by its timeout
// (half the time left before the message's deadline, at most
// Options.CallTimeout). Stop is idempotent.
//
// Stop returns the cause onLost gets (or got) when the heartbeat ended the
// lease before Stop did — an error wrapping ErrLost or ErrMaxVisibility —
// and nil when the message was still held. Unlike the onLost call, which may
// come shortly after Stop returns, the result is settled when Stop returns:
// use it to decide whether the receipt handle may still be used.
func (l *Lease) Stop() error {
	h := l.h
	h.mu.Lock()
	defer h.mu.Unlock()
	if !l.ended {
		h.endLocked(l)
	}
	for l.inCall {
		h.idle.Wait()
	}
	return l.cause
}

// Hold takes the message out of the heartbeat's hands for a call its owner
// makes with the receipt handle — a delete, or a visibility change for a
// retry delay — so that no extension can race with that call and overwrite
// its effect. It waits until no extension call that includes the message is
// in flight, and returns the message's deadline as far as known. While
// held, the message is not extended; call Stop when the owner's call
// succeeded (the message is settled), or Release when it failed, to have
// the heartbeat keep the message invisible again while the owner retries.
//
// Hold returns the cause when the heartbeat already ended the lease (an
// error wrapping ErrLost or ErrMaxVisibility): the receipt handle may be
// stale. It returns an error, too, for a lease already stopped.
func (l *Lease) Hold() (deadline time.Time, err error) {
	h := l.h
	h.mu.Lock()
	defer h.mu.Unlock()
	for l.inCall {
		h.idle.Wait()
	}
	switch {
	case l.cause != nil:
		return h.time(l.deadline), l.cause
	case l.ended:
		return h.time(l.deadline), errStopped
	}
	if !l.held {
		l.held = true
		if l.index >= 0 {
			h.queue.remove(int(l.index))
		}
	}
	return h.time(l.deadline), nil
}

// Lapsed reports whether the message's visibility ran out while the
// heartbeat held it: an extension SQS confirmed only after the deadline it
// was to move (Stats.Late counts them). For a while the message was visible
// and may have been delivered to another consumer, so whatever its owner
// does with it afterwards — a delete SQS confirms on time included — cannot
// rule out a second run. A settlement reports it as late.
func (l *Lease) Lapsed() bool {
	h := l.h
	h.mu.Lock()
	defer h.mu.Unlock()
	return l.lapsed
}

// Release hands a held message back to the heartbeat, which extends it
// again as usual (at once, if an extension fell due while it was held).
// Release does nothing for a lease that is not held or has ended.
func (l *Lease) Release() {
	h := l.h
	h.mu.Lock()
	if l.ended || !l.held {
		h.mu.Unlock()
		return
	}
	l.held = false
	h.queue.push(l)
	first := l.index == 0
	h.mu.Unlock()
	if first {
		h.poke()
	}
}

// Deadline returns when the message becomes visible again as far as the
// heartbeat knows: receivedAt plus the visibility timeout, moved by each
// successful extension (counted from when the call was sent, so SQS's own
// deadline is never earlier).
func (l *Lease) Deadline() time.Time {
	l.h.mu.Lock()
	defer l.h.mu.Unlock()
	return l.h.time(l.deadline)
}

// Extensions returns when the heartbeat sent the extensions SQS confirmed
// for this message, oldest first (a copy).
func (l *Lease) Extensions() []time.Time {
	h := l.h
	h.mu.Lock()
	defer h.mu.Unlock()
	if l.exts == 0 {
		return nil
	}
	out := make([]time.Time, 0, l.exts)
	out = append(out, h.time(l.ext0))
	for _, t := range l.more {
		out = append(out, h.time(t))
	}
	return out
}

// ReceivedAt returns the receive time given to Track (within 146 years of
// when the heartbeat was made: kept as a tick).
func (l *Lease) ReceivedAt() time.Time { return l.h.time(l.received) }

// endWithLocked untracks l because of cause, which its owner is told (by
// a notice delivered once h.mu is released) and Stop returns. h.mu must be
// held.
func (h *Heartbeat) endWithLocked(l *Lease, cause error, notes *[]notice) {
	h.endLocked(l)
	l.cause = cause
	*notes = append(*notes, notice{l, cause})
}

// endLocked untracks l. h.mu must be held.
func (h *Heartbeat) endLocked(l *Lease) {
	l.ended = true
	h.tracked--
	if l.index >= 0 {
		h.queue.remove(int(l.index))
	}
}

// notice is an onLost call to make once h.mu is released.
type notice struct {
	l     *Lease
	cause error
}

// Run keeps the tracked messages invisible until ctx ends; run it in one
// goroutine per Heartbeat. It sleeps until the earliest message is due, then
// extends every due message, ten per call, with up to Options.MaxCalls calls
// in flight. When ctx ends it waits for the calls in flight (their contexts
// end too) and returns nil; messages still tracked are kept (a later Run
// resumes them) but are not extended meanwhile, so keep Run going until
// every lease is stopped. It returns an error at once if Run is already
// running on h.
func (h *Heartbeat) Run(ctx context.Context) error {
	if !h.running.CompareAndSwap(false, true) {
		return fmt.Errorf("visibility: Run is already running for %s; run it once per Heartbeat", h.queueURL)
	}
	defer h.running.Store(false)
	var calls sync.WaitGroup
	defer calls.Wait()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		if ctx.Err() != nil {
			return nil
		}
		c, notes, next, full := h.collect(h.tick(time.Now()))
		if c != nil {
			calls.Go(func() {
				h.extend(ctx, c)
				h.poke()
			})
		}
		// Outside h.mu and outside any call: an onLost may Stop any lease.
		h.deliver(notes)
		if c != nil && !full {
			continue
		}
		var fire <-chan time.Time
		if next != never && !full {
			timer.Reset(next - h.tick(time.Now()))
			fire = timer.C
		}
		select {
		case <-ctx.Done():
			return nil
		case <-h.wake:
		case <-fire:
		}
		timer.Stop()
	}
}

// collect takes up to maxBatchEntries due leases out of the queue for one
// call, when fewer than MaxCalls calls are in flight: those due now, then,
// if the call has room, those due within the window. A due lease the
// 12-hour limit leaves no extension for (its last one is done, or none
// would move its deadline) is ended with an ErrMaxVisibility notice instead.
// It returns the call (nil when none is due), when the next lease is due
// (never when none is tracked), and full when no call may start until one
// in flight ends.
func (h *Heartbeat) collect(now tick) (c *call, notes []notice, next tick, full bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.calls >= h.cfg.maxCalls {
		return nil, nil, never, true
	}
	for (c == nil || c.n < maxBatchEntries) && len(h.queue) > 0 {
		l := h.queue[0]
		early := l.at > now
		if early && (c == nil || l.at-now > h.cfg.window) {
			break
		}
		ask, last := time.Duration(0), true
		if !l.final {
			ask, last = h.askFor(l, now)
		}
		if ask == 0 {
			if early {
				break // its notice is not due yet
			}
			h.stats.MaxedOut++
			h.endWithLocked(l, h.maxedOut(l, "no further extension is possible"), &notes)
			continue
		}
		h.queue.remove(0)
		l.inCall, l.ask, l.last = true, int32(ask/time.Second), last
		if c == nil {
			c = h.newCallLocked()
		}
		c.leases[c.n] = l
		c.entries[c.n] = sqsbatch.Entry{Handle: l.handle, Timeout: l.ask}
		c.n++
	}
	if c != nil {
		h.calls++
	}
	next = never
	if len(h.queue) > 0 {
		next = h.queue[0].at
	}
	return c, notes, next, h.calls >= h.cfg.maxCalls
}

// newCallLocked returns an empty call, reusing an ended one's buffers.
// h.mu must be held.
func (h *Heartbeat) newCallLocked() *call {
	if k := len(h.free); k > 0 {
		c := h.free[k-1]
		h.free = h.free[:k-1]
		return c
	}
	return new(call)
}

// askFor returns the visibility timeout to ask for l at now, and whether
// it is the last the 12-hour limit allows, in whole seconds. It returns 0
// when no extension would move the deadline.
func (h *Heartbeat) askFor(l *Lease, now tick) (ask time.Duration, last bool) {
	ask = h.cfg.ext
	left := (l.received + MaxVisibility - capMargin - now).Truncate(time.Second)
	if left < ask {
		ask, last = left, true
	}
	if ask < time.Second || now+ask <= l.deadline {
		return 0, true
	}
	return ask, last
}

// extend makes c's ChangeMessageVisibilityBatch call and applies its
// outcome.
func (h *Heartbeat) extend(ctx context.Context, c *call) {
	start := h.tick(time.Now())
	batch, results := c.leases[:c.n], c.results[:c.n]
	// A lease's deadline changes only when a call of its own returns, and
	// its call is this one: reading it outside h.mu is safe.
	earliest := batch[0].deadline
	for _, l := range batch[1:] {
		earliest = min(earliest, l.deadline)
	}
	timeout := min(max((earliest-start)/2, minCallTimeout), h.cfg.callTimeout)
	callCtx, cancel := context.WithTimeout(ctx, timeout)
	// The heartbeat retries failed extensions itself, before the deadline
	// (the batch layer turns the SDK's own retries off).
	err := h.changer.OnceInto(callCtx, c.entries[:c.n], results, nil)
	cancel()
	now := h.tick(time.Now())
	shutdown := err != nil && ctx.Err() != nil

	var notes []notice
	h.mu.Lock()
	h.calls--
	h.stats.Calls++
	if err != nil && !shutdown {
		h.stats.FailedCalls++
		h.cfg.log.Warn("visibility: ChangeMessageVisibilityBatch failed; retrying before the deadline",
			"queue", h.queueURL, "messages", len(batch), "deadline", h.time(earliest), "error", err)
	}
	extended, failed, late := 0, 0, 0
	for i, l := range batch {
		l.inCall = false
		if l.ended { // stopped while the call was in flight
			continue
		}
		switch r := results[i]; {
		case shutdown:
			h.requeueLocked(l) // unchanged: a later Run picks it up
		case err != nil:
			h.retryLocked(l, now, err, &notes)
		case r.OK:
			// Confirmed only after the deadline it was to move: for a while
			// the message was visible and may have been delivered again.
			if now > l.deadline {
				late++
				l.lapsed = true
			} else {
				extended++
			}
			l.deadline = start + time.Duration(l.ask)*time.Second
			if l.exts == 0 {
				l.ext0 = start
			} else {
				l.more = append(l.more, start)
			}
			l.exts++
			l.failures = 0
			l.final = l.last
			l.at = l.deadline - h.cfg.threshold
			h.requeueLocked(l)
		default: // failed, or left out of the response (sqsbatch.ErrNoResult)
			failed++
			h.entryFailedLocked(l, now, r.Err, r.Class, &notes)
		}
	}
	h.stats.Extended += int64(extended)
	h.stats.Late += int64(late)
	h.stats.FailedEntries += int64(failed)
	// Nothing of the call is kept: no lease, handle or error outlives it.
	clear(c.leases[:c.n])
	clear(c.entries[:c.n])
	clear(results)
	c.n = 0
	h.free = append(h.free, c)
	h.mu.Unlock()
	h.idle.Broadcast()
	if late > 0 {
		h.cfg.log.Warn("visibility: extensions confirmed after the messages' deadlines; they may have been delivered to another consumer meanwhile (the heartbeat is falling behind: raise Options.MaxCalls or the visibility timeout)",
			"queue", h.queueURL, "late", late, "call", now-start)
	}
	if err == nil && h.cfg.log.Enabled(ctx, slog.LevelDebug) {
		h.cfg.log.Debug("visibility: extended", "queue", h.queueURL, "extended", extended, "failed", failed)
	}
	// The call's leases are released: an onLost may Stop any of them.
	h.deliver(notes)
}

// requeueLocked puts l back in the queue, unless its owner holds it.
func (h *Heartbeat) requeueLocked(l *Lease) {
	if !l.held {
		h.queue.push(l)
	}
}

// deliver calls the owners' onLost, outside h.mu.
func (h *Heartbeat) deliver(notes []notice) {
	for _, n := range notes {
		if n.l.owner != nil {
			n.l.owner.OnLost(n.cause)
		}
	}
}

// retryLocked schedules another attempt for l after a transient failure,
// or ends it with ErrLost when no attempt is left before its deadline.
func (h *Heartbeat) retryLocked(l *Lease, now tick, cause error, notes *[]notice) {
	l.failures++
	left := l.deadline - now
	wait := min(sqsbatch.Backoff(int(l.failures)), left/2)
	exhausted := h.cfg.maxRetries < 0 || (h.cfg.maxRetries > 0 && int(l.failures) > h.cfg.maxRetries)
	if !exhausted && wait >= minRetryWait {
		l.at = now + wait
		h.requeueLocked(l)
		return
	}
	h.stats.Lost++
	err := fmt.Errorf("%w: could not extend the visibility timeout of message received at %s before its deadline %s (%d attempts failed, last: %w); from the deadline on SQS may deliver it to another consumer%s",
		ErrLost, h.time(l.received).Format(time.RFC3339Nano), h.time(l.deadline).Format(time.RFC3339Nano), l.failures, cause, hint(cause))
	h.cfg.log.Warn("visibility: giving up on a message", "queue", h.queueURL, "error", err)
	h.endWithLocked(l, err, notes)
}

// entryFailedLocked handles an entry SQS reported in Failed (or left out
// of its response), whose error is cause, of class.
func (h *Heartbeat) entryFailedLocked(l *Lease, now tick, cause error, class sqserr.Class, notes *[]notice) {
	switch class {
	case sqserr.MaxedOut:
		h.stats.MaxedOut++
		h.endWithLocked(l, h.maxedOut(l, "SQS refused a further extension: "+cause.Error()), notes)
	case sqserr.Stale, sqserr.Invalid, sqserr.Fatal:
		h.stats.Lost++
		err := fmt.Errorf("%w: SQS refused to extend the visibility timeout of the message received at %s (%w): it was deleted, its visibility was changed and it was received again by another consumer, or it is no longer in flight; do not delete it or change its visibility with this receipt handle",
			ErrLost, h.time(l.received).Format(time.RFC3339Nano), cause)
		h.cfg.log.Warn("visibility: message lost", "queue", h.queueURL, "error", err)
		h.endWithLocked(l, err, notes)
	default:
		h.retryLocked(l, now, cause, notes)
	}
}

// maxedOut builds the ErrMaxVisibility cause for l.
func (h *Heartbeat) maxedOut(l *Lease, why string) error {
	err := fmt.Errorf("%w: the message was received at %s; %s, and it stays invisible until %s; stop the handler before then (split long jobs or checkpoint their progress)",
		ErrMaxVisibility, h.time(l.received).Format(time.RFC3339Nano), why, h.time(l.deadline).Format(time.RFC3339Nano))
	h.cfg.log.Warn("visibility: 12-hour limit reached", "queue", h.queueURL, "error", err)
	return err
}

// leaseHeap is a binary min-heap of leases by their next action time;
// each lease knows its index, so Stop and Hold remove it in O(log n).
type leaseHeap []*Lease

func (q leaseHeap) less(i, j int) bool { return q[i].at < q[j].at }

func (q leaseHeap) swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].index = int32(i)
	q[j].index = int32(j)
}

// push adds l.
func (q *leaseHeap) push(l *Lease) {
	i := len(*q)
	l.index = int32(i)
	*q = append(*q, l)
	q.up(i)
}

// remove takes out the lease at index i.
func (q *leaseHeap) remove(i int) {
	old := *q
	n := len(old) - 1
	l := old[i]
	if i != n {
		old.swap(i, n)
	}
	old[n] = nil
	*q = old[:n]
	if i != n && !q.down(i) {
		q.up(i)
	}
	l.index = -1
}

func (q leaseHeap) up(j int) {
	for j > 0 {
		i := (j - 1) / 2 // parent
		if !q.less(j, i) {
			break
		}
		q.swap(i, j)
		j = i
	}
}

// down moves the lease at i0 down to its place, and reports whether it
// moved.
func (q leaseHeap) down(i0 int) bool {
	i, n := i0, len(q)
	for {
		j := 2*i + 1
		if j >= n {
			break
		}
		if r := j + 1; r < n && q.less(r, j) {
			j = r
		}
		if !q.less(j, i) {
			break
		}
		q.swap(i, j)
		i = j
	}
	return i > i0
}

// hint says what to do about a call error that retrying does not fix.
func hint(err error) string {
	if h := sqserr.Hint(err, "sqs:ChangeMessageVisibility"); h != "" {
		return "; " + h
	}
	return ""
}
