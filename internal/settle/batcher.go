package settle

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/internal/heartbeat"
	"github.com/sqsworker/sqsworker/internal/sqsbatch"
	"github.com/sqsworker/sqsworker/internal/sqserr"
	"github.com/sqsworker/sqsworker/internal/sqslimit"
)

// The batch calls, one narrow interface each, with the SDK's signatures
// (package sqsbatch makes the calls).
type (
	// DeleteAPI is what a delete Batcher calls.
	DeleteAPI = sqsbatch.DeleteAPI
	// ChangeAPI is what a visibility Batcher calls.
	ChangeAPI = sqsbatch.ChangeAPI
	// SendAPI is what a send Batcher calls.
	SendAPI = sqsbatch.SendAPI
)

// Lease is the part of a visibility lease a Batcher uses
// (*heartbeat.Lease has it).
type Lease interface {
	Hold() (deadline time.Time, err error)
	Release()
	Stop() error
	// Lapsed reports an extension confirmed after its deadline: the
	// message was visible for a while.
	Lapsed() bool
}

// Entry is one delete, visibility change or send waiting in a Batcher.
// (Its fields are ordered so that it has no padding: every job holds one.)
type Entry struct {
	// Handle is the receipt handle to delete or change.
	Handle string
	// Send is the message a send Batcher sends (its Id is set by the
	// Batcher); nil for deletes and changes. A pointer: every job holds an
	// Entry, and few send.
	Send *types.SendMessageBatchRequestEntry
	// Lease, when set, is the message's visibility lease: held for the
	// call, stopped when SQS confirms the entry, released when the entry is
	// retried.
	Lease Lease
	// Owner is told the entry's final outcome, exactly once, from a
	// Batcher goroutine. It must not block for long. Once told, the entry
	// is the owner's again: it may reuse it for its next call.
	Owner Owner
	// Timeout is the visibility timeout a change sets, in seconds.
	Timeout int32
	// Urgent sends the entry without lingering: someone waits for it.
	Urgent bool

	lapsed   bool // a call carrying it was sent or ended after the lease's deadline
	attempts int
	deadline time.Time // the lease's deadline when the call went out
}

// Owner receives an Entry's outcome. An owner that embeds its Entry
// settles a message without allocating a closure per call.
type Owner interface {
	Settled(e *Entry, out Outcome)
}

// DoneFunc adapts a function to an Owner.
type DoneFunc func(Outcome)

// Settled calls f(out).
func (f DoneFunc) Settled(_ *Entry, out Outcome) { f(out) }

// Outcome is what became of one Entry.
type Outcome struct {
	// OK: SQS confirmed the entry.
	OK bool
	// Late: the lease lapsed while the entry was being settled — a call
	// carrying it was sent, or ended, after the message's deadline (an
	// earlier failed call counts too) — so another consumer may have
	// received the message meanwhile.
	Late bool
	// Class says why the entry was not confirmed.
	Class sqserr.Class
	// Err is the last error.
	Err error
	// Attempts is how many calls carried the entry.
	Attempts int
	// MessageID is the new message's ID, for a confirmed send.
	MessageID string
}

// ErrClosed is the Outcome.Err of an entry added after a Batcher closed or
// still unconfirmed when its flush budget ran out.
var ErrClosed = errors.New("sqsworker: settlement not confirmed before the shutdown flush ended; the message will be delivered again")

// errHandleExpired is the Outcome.Err of an entry not sent at shutdown
// because its receipt handle was no longer valid.
var errHandleExpired = errors.New("sqsworker: the message's visibility deadline passed or its ownership was lost before the shutdown flush; not sent, the message will be delivered again")

// BatcherOptions configures a Batcher.
type BatcherOptions struct {
	// Linger is how long the first entry of a batch waits for more before
	// the batch goes out with fewer than ten. Zero: 20 ms.
	Linger time.Duration
	// Senders is how many calls may be in flight at once. Zero: 1.
	Senders int
	// CallTimeout bounds each call. Zero: 10 s.
	CallTimeout time.Duration
	// Log and Warn receive the Batcher's logs. Zero: discarded.
	Log  *slog.Logger
	Warn *Warner
	// OnRetry, when set, is called with the number of entries about to be
	// retried.
	OnRetry func(n int)
}

// Batcher gathers one kind of settling call into batches of up to ten
// entries (and, for sends, at most SQS's batch payload size), sends them
// from a fixed set of goroutines with a per-call timeout, and retries what
// may succeed later with one rule: exponential backoff with jitter, for as
// long as the entry's lease holds the message (or, without a lease, until
// Close's budget ends). Errors retrying cannot fix end the entry at once.
type Batcher struct {
	name string
	q    *sqsbatch.Queue
	o    BatcherOptions

	ctx    context.Context // cancelled when Close's budget ends
	cancel context.CancelFunc

	mu          sync.Mutex
	cond        sync.Cond
	pending     []*Entry
	pendingSize int
	ready       [][]*Entry
	free        [][]*Entry             // sent batches' slices, for the next ones
	timer       *time.Timer            // cuts the pending batch at lingerDue; made once, then Reset
	lingerDue   time.Time              // zero: the timer is not armed
	waiting     map[*Entry]*time.Timer // backing off before a retry
	active      int                    // batches being sent
	closing     bool                   // flush: no lingering; stale handles are not sent
	stopped     bool                   // the budget ended: nothing more is sent
	senders     sync.WaitGroup
}

// NewDeleter returns a Batcher of DeleteMessageBatch calls on queueURL.
func NewDeleter(client DeleteAPI, queueURL string, o BatcherOptions) (*Batcher, error) {
	if client == nil || queueURL == "" {
		return nil, errMissing
	}
	return newBatcher(sqsbatch.NewDeleter(client, queueURL), o)
}

// NewChanger returns a Batcher of ChangeMessageVisibilityBatch calls on
// queueURL.
func NewChanger(client ChangeAPI, queueURL string, o BatcherOptions) (*Batcher, error) {
	if client == nil || queueURL == "" {
		return nil, errMissing
	}
	return newBatcher(sqsbatch.NewChanger(client, queueURL), o)
}

// NewSender returns a Batcher of SendMessageBatch calls on queueURL.
func NewSender(client SendAPI, queueURL string, o BatcherOptions) (*Batcher, error) {
	if client == nil || queueURL == "" {
		return nil, errMissing
	}
	return newBatcher(sqsbatch.NewSender(client, queueURL), o)
}

// SendEntry turns a SendMessage request into a batch entry (its Id is set
// when the entry is sent).
func SendEntry(in *sqs.SendMessageInput) *types.SendMessageBatchRequestEntry {
	return &types.SendMessageBatchRequestEntry{
		MessageBody:             in.MessageBody,
		DelaySeconds:            in.DelaySeconds,
		MessageAttributes:       in.MessageAttributes,
		MessageSystemAttributes: in.MessageSystemAttributes,
		MessageGroupId:          in.MessageGroupId,
		MessageDeduplicationId:  in.MessageDeduplicationId,
	}
}

// errMissing is the error of a Batcher constructor without a client or a
// queue URL.
var errMissing = errors.New("sqsworker: a batcher needs an SQS client and a queue URL")

func newBatcher(q *sqsbatch.Queue, o BatcherOptions) (*Batcher, error) {
	if o.Linger <= 0 {
		o.Linger = 20 * time.Millisecond
	}
	if o.Senders <= 0 {
		o.Senders = 1
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = 10 * time.Second
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Warn == nil {
		o.Warn = &Warner{Log: o.Log}
	}
	b := &Batcher{name: q.Op(), q: q, o: o, waiting: map[*Entry]*time.Timer{}}
	b.ctx, b.cancel = context.WithCancel(context.Background())
	b.cond.L = &b.mu
	for range o.Senders {
		b.senders.Go(b.sender)
	}
	return b, nil
}

// size is what e counts against a batch's payload limit.
func (e *Entry) size() int {
	if e.Send == nil {
		return 0 // a delete or change
	}
	be := sqsbatch.Entry{Send: *e.Send}
	return be.Size()
}

// Add queues e. After the Batcher stopped (or on a nil Batcher), e ends at
// once with ErrClosed.
func (b *Batcher) Add(e *Entry) {
	if b == nil {
		if e.Owner != nil {
			e.Owner.Settled(e, Outcome{Class: sqserr.Canceled, Err: ErrClosed})
		}
		return
	}
	b.mu.Lock()
	if b.stopped {
		b.mu.Unlock()
		b.finish(e, Outcome{Class: sqserr.Canceled, Err: ErrClosed})
		return
	}
	b.addLocked(e, e.Urgent || b.closing)
	b.mu.Unlock()
}

// addLocked queues e, cutting a batch when it is full or now is set.
func (b *Batcher) addLocked(e *Entry, now bool) {
	size := e.size()
	if len(b.pending) > 0 && b.pendingSize+size > sqslimit.MaxMessageSize {
		b.cutLocked()
	}
	if b.pending == nil {
		b.pending = b.batchLocked()
	}
	b.pending = append(b.pending, e)
	b.pendingSize += size
	if now || len(b.pending) >= sqslimit.MaxBatchEntries {
		b.cutLocked()
		return
	}
	if b.lingerDue.IsZero() {
		b.lingerDue = time.Now().Add(b.o.Linger)
		if b.timer == nil {
			b.timer = time.AfterFunc(b.o.Linger, b.lingered)
		} else {
			b.timer.Reset(b.o.Linger)
		}
	}
}

// lingered cuts the pending batch once its first entry has waited Linger.
// A firing that was already under way when the timer was stopped (and
// perhaps armed again) finds nothing due and leaves the batch alone.
func (b *Batcher) lingered() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.lingerDue.IsZero() || time.Now().Before(b.lingerDue) {
		return
	}
	b.cutLocked()
}

// disarmLocked stops the linger timer.
func (b *Batcher) disarmLocked() {
	if !b.lingerDue.IsZero() {
		b.timer.Stop()
		b.lingerDue = time.Time{}
	}
}

// cutLocked turns what is pending into a ready batch.
func (b *Batcher) cutLocked() {
	b.disarmLocked()
	if len(b.pending) == 0 {
		return
	}
	b.ready = append(b.ready, b.pending)
	b.pending, b.pendingSize = nil, 0
	b.cond.Signal()
}

// sender sends ready batches until the Batcher is closed and drained.
func (b *Batcher) sender() {
	buf := new(callBuffers) // this sender's, reused by every call it makes
	b.mu.Lock()
	for {
		for len(b.ready) == 0 && !b.drainedLocked() {
			b.cond.Wait()
		}
		if len(b.ready) == 0 {
			b.cond.Broadcast() // let the other senders see it too
			b.mu.Unlock()
			return
		}
		batch := b.ready[0]
		n := copy(b.ready, b.ready[1:]) // in place: the queue keeps its array
		b.ready[n] = nil
		b.ready = b.ready[:n]
		b.active++
		closing := b.closing
		b.mu.Unlock()
		b.deliver(batch, closing, buf)
		b.mu.Lock()
		// deliver kept nothing of the slice (a retry copies its entries).
		clear(batch)
		if len(b.free) <= b.o.Senders { // as many as can be in use at once, and one pending
			b.free = append(b.free, batch[:0])
		}
		b.active--
		if b.drainedLocked() {
			b.cond.Broadcast()
		}
	}
}

// batchLocked returns an empty slice for a new batch: a sent one's, or a
// new one with room for a full batch.
func (b *Batcher) batchLocked() []*Entry {
	if n := len(b.free); n > 0 {
		s := b.free[n-1]
		b.free[n-1] = nil
		b.free = b.free[:n-1]
		return s
	}
	return make([]*Entry, 0, sqslimit.MaxBatchEntries)
}

// drainedLocked reports whether nothing is left to send, nor can be.
func (b *Batcher) drainedLocked() bool {
	return (b.closing || b.stopped) && len(b.ready) == 0 && len(b.pending) == 0 && len(b.waiting) == 0 && b.active == 0
}

// callBuffers are one sender's buffers for a call: a call carries at most
// ten entries.
type callBuffers struct {
	entries [sqslimit.MaxBatchEntries]sqsbatch.Entry
	results [sqslimit.MaxBatchEntries]sqsbatch.Result
}

// deliver sends one batch and settles its entries, with buf for the call.
func (b *Batcher) deliver(batch []*Entry, closing bool, buf *callBuffers) {
	send := batch[:0] // filtered in place: the sender's own slice
	now := time.Now()
	for _, e := range batch {
		if e.Lease == nil {
			send = append(send, e)
			continue
		}
		deadline, cause := e.Lease.Hold()
		e.deadline = deadline
		// A lease that lapsed while the heartbeat held it (an extension
		// confirmed after its deadline) makes any settlement late.
		e.lapsed = e.lapsed || now.After(deadline) || e.Lease.Lapsed()
		// A lease ended by the 12-hour limit is still ours until its
		// deadline: what its handler returned applies as usual.
		stale := cause != nil && !errors.Is(cause, heartbeat.ErrMaxVisibility)
		switch {
		case closing && (stale || now.After(deadline)):
			// Its handle may no longer be valid: it comes back anyway.
			e.Lease.Stop()
			b.finish(e, Outcome{Class: sqserr.Stale, Err: errHandleExpired, Attempts: e.attempts})
		case stale && b.name != "DeleteMessageBatch":
			// Not ours any more: leave its visibility alone.
			e.Lease.Stop()
			b.finish(e, Outcome{Class: sqserr.Stale, Err: cause, Attempts: e.attempts})
		default:
			// A delete is worth trying even when the heartbeat gave the
			// message up: if nobody received it since, it is deleted.
			send = append(send, e)
		}
	}
	if len(send) == 0 {
		return
	}
	for _, e := range send {
		e.attempts++
	}
	entries, res := buf.entries[:len(send)], buf.results[:len(send)]
	for i, e := range send {
		entries[i] = sqsbatch.Entry{Handle: e.Handle, Timeout: e.Timeout}
		if e.Send != nil {
			entries[i].Send = *e.Send
		}
	}
	ctx, cancel := context.WithTimeout(b.ctx, b.o.CallTimeout)
	err := b.q.OnceInto(ctx, entries, res, nil) // counted by the client the runtime passes
	cancel()
	done := time.Now()
	for _, e := range send {
		// However this call ends, the message was visible for a while if
		// it outlived the lease: another consumer may have received it.
		if e.Lease != nil && done.After(e.deadline) {
			e.lapsed = true
		}
	}
	if err != nil {
		class := sqserr.Of(err)
		if b.ctx.Err() != nil {
			class, err = sqserr.Canceled, fmt.Errorf("%w (last call: %w)", ErrClosed, err)
		}
		if class.Retryable() {
			b.retry(send, err)
			return
		}
		b.o.Warn.Warn(b.name+"-"+class.String(), "sqsworker: "+b.name+" failed and cannot be retried; the messages will be delivered again",
			"class", class.String(), "entries", len(send), "err", err, "hint", sqserr.Hint(err, action(b.name)))
		for _, e := range send {
			b.end(e, Outcome{Class: class, Err: err, Attempts: e.attempts})
		}
		return
	}
	var again []*Entry
	var againErr error
	for i, e := range send {
		switch r := res[i]; {
		case r.OK:
			b.end(e, Outcome{OK: true, Late: e.lapsed, Attempts: e.attempts, MessageID: r.MessageID})
		case r.Class.Retryable():
			again, againErr = append(again, e), r.Err
		default:
			b.end(e, Outcome{Class: r.Class, Err: r.Err, Attempts: e.attempts})
		}
	}
	if len(again) > 0 {
		b.retry(again, againErr)
	}
}

// action is the IAM action a batch call needs.
func action(name string) string {
	switch name {
	case "DeleteMessageBatch":
		return "sqs:DeleteMessage"
	case "ChangeMessageVisibilityBatch":
		return "sqs:ChangeMessageVisibility"
	}
	return "sqs:SendMessage"
}

// end settles e: its lease is stopped, its owner told.
func (b *Batcher) end(e *Entry, out Outcome) {
	if e.Lease != nil {
		e.Lease.Stop()
	}
	b.finish(e, out)
}

// retry hands the entries' leases back to the heartbeat and sends them
// again after a backoff, unless the budget has ended.
func (b *Batcher) retry(entries []*Entry, err error) {
	if b.o.OnRetry != nil {
		b.o.OnRetry(len(entries))
	}
	b.o.Warn.Warn(b.name+"-retry", "sqsworker: "+b.name+" failed; retrying (the messages stay invisible meanwhile)",
		"entries", len(entries), "err", err)
	var ended []*Entry
	attempts := 0
	b.mu.Lock()
	group := make([]*Entry, 0, len(entries))
	for _, e := range entries {
		if e.Lease != nil {
			e.Lease.Release()
		}
		if b.stopped {
			ended = append(ended, e)
			continue
		}
		group = append(group, e)
		attempts = max(attempts, e.attempts)
	}
	// The entries of one failed call wait together and go out together.
	if len(group) > 0 {
		var t *time.Timer
		t = time.AfterFunc(sqsbatch.Backoff(attempts), func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			now := b.closing
			for _, e := range group {
				if b.waiting[e] != t {
					continue // taken by stop
				}
				delete(b.waiting, e)
				b.addLocked(e, false)
				now = now || e.Urgent
			}
			if now {
				b.cutLocked()
			}
		})
		for _, e := range group {
			b.waiting[e] = t
		}
	}
	b.mu.Unlock()
	for _, e := range ended {
		b.end(e, Outcome{Class: sqserr.Canceled, Err: fmt.Errorf("%w (last call: %w)", ErrClosed, err), Attempts: e.attempts})
	}
}

func (b *Batcher) finish(e *Entry, out Outcome) {
	if e.Owner != nil {
		e.Owner.Settled(e, out)
	}
}

// Close sends everything queued and waits until every entry has its
// outcome. Entries are retried until ctx ends; then the calls in flight
// are cancelled and what is left ends with ErrClosed. Leased entries whose
// handle is no longer valid (deadline passed, ownership lost) are not sent.
// Entries added after Close end with ErrClosed at once.
func (b *Batcher) Close(ctx context.Context) {
	if b == nil {
		return
	}
	b.mu.Lock()
	b.closing = true
	b.cutLocked()
	b.cond.Broadcast()
	b.mu.Unlock()

	drained := make(chan struct{})
	go func() {
		b.senders.Wait()
		close(drained)
	}()
	select {
	case <-drained:
	case <-ctx.Done():
		b.stop()
		<-drained
	}
	b.stop() // anything added meanwhile ends at once
}

// stop ends the budget: calls in flight are cancelled, entries waiting
// for a retry or a call end with ErrClosed.
func (b *Batcher) stop() {
	b.cancel()
	b.mu.Lock()
	b.stopped = true
	var ended []*Entry
	for e, t := range b.waiting {
		t.Stop()
		ended = append(ended, e)
	}
	clear(b.waiting)
	for _, batch := range b.ready {
		ended = append(ended, batch...)
	}
	ended = append(ended, b.pending...)
	b.ready, b.pending, b.pendingSize = nil, nil, 0
	b.disarmLocked()
	b.cond.Broadcast()
	b.mu.Unlock()
	for _, e := range ended {
		b.end(e, Outcome{Class: sqserr.Canceled, Err: ErrClosed, Attempts: e.attempts})
	}
}
