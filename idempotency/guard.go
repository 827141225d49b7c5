package idempotency

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/sqsworker/sqsworker/internal/settle"
	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/worker"
)

// defaultTTL is how long a completed record counts unless Options.TTL says
// otherwise: SQS's longest retention period (14 days) plus one day, so no
// copy of a message can outlive its record.
const defaultTTL = 15 * 24 * time.Hour

// defaultLockMargin is how long, by default, a lock outlives the visibility
// deadline of the message that holds it.
const defaultLockMargin = 5 * time.Second

// maxResultSize is the largest result SetResult accepts, in bytes (DynamoDB
// items hold at most 400 KB).
const maxResultSize = 256 << 10

// Options configures a Guard. Every field's zero value selects the
// documented default; pass functions that set fields to New.
type Options struct {
	// Key returns a message's idempotency key: messages with the same key
	// are one job. Zero value: MessageIDKey, the SQS message ID (see
	// JSONKey and AttributeKey for business keys).
	Key KeyFunc

	// KeyPrefix is put in front of every key, as "<prefix>#<key>", so that
	// handlers sharing a table never share a key: give each handler its
	// own. Zero value: no prefix.
	KeyPrefix string

	// HashKey stores the SHA-256 of the key (hex) instead of the key, for
	// keys that are long (DynamoDB takes up to 2,048 bytes) or that should
	// not be stored in clear. The prefix stays readable. Zero value: false,
	// the key is stored as it is.
	HashKey bool

	// TTL is how long a completed job's record counts: a duplicate arriving
	// within it is acknowledged without running; after it, it runs again.
	// DynamoDB's time-to-live deletes the record some time later. Keep it
	// longer than the queue's retention period (and, for business keys,
	// than the longest gap between two sends of one job). Zero value:
	// 15 days, SQS's longest retention period (14 days) plus one, so no
	// copy of a message outlives its record.
	TTL time.Duration

	// LockMargin is how long the lock of a job in progress outlives the
	// visibility deadline of the message that holds it (the lease the
	// heartbeat keeps). It covers the clock difference between consumers
	// and the time a lock extension takes. A duplicate waits this much
	// longer after a crashed run before it runs. Zero value: 5 s.
	LockMargin time.Duration

	// FailOpen runs a message without its lock when DynamoDB cannot be
	// reached to take it (or, once the handler runs, to extend it), instead
	// of failing the message for a retry. The job may then run twice. A
	// warning is logged, and Stats.FailedOpen counts such runs. Zero value:
	// false, a message never runs unprotected.
	FailOpen bool

	// OnDuplicate, when set, is called instead of nothing for a duplicate of
	// a completed job, with the job's record (and the result the handler
	// set with SetResult, if any) — to send a reply again, say. Its nil
	// deletes the duplicate; its error fails it like a handler's error.
	// Zero value: nil, the duplicate is deleted.
	OnDuplicate func(ctx context.Context, m *worker.Message, r Record) error

	// CallTimeout bounds each DynamoDB call (the SDK's own retries happen
	// within it). A call after the handler returned is not cancelled with
	// the handler's context but gets at most 500 ms once that context has
	// ended. Zero value: 5 s.
	CallTimeout time.Duration

	// Logger receives the Guard's warnings (one per cause per 10 s) and
	// debug lines. Zero value: slog.Default().
	Logger *slog.Logger
}

func (o *Options) setDefaults() error {
	if o.TTL < 0 || o.LockMargin < 0 || o.CallTimeout < 0 {
		return errors.New("idempotency.New: Options.TTL, LockMargin and CallTimeout must not be negative (zero selects the default)")
	}
	if o.Key == nil {
		o.Key = MessageIDKey
	}
	if o.TTL == 0 {
		o.TTL = defaultTTL
	}
	if o.LockMargin == 0 {
		o.LockMargin = defaultLockMargin
	}
	if o.CallTimeout == 0 {
		o.CallTimeout = 5 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return nil
}

// Guard runs each job once, as far as DynamoDB can tell: its Wrap method is
// a worker.Middleware for a worker.Worker or a sqslambda.Handler. Create
// one per handler with New. A Guard is safe for concurrent use.
type Guard struct {
	st   store
	opts Options
	warn *settle.Warner
	c    counters
}

// New returns a Guard that keeps its records in table through client. The
// table must exist (see CreateTable). It returns an error if client is nil,
// table is empty, or an option is out of range.
func New(client API, table string, optFns ...func(*Options)) (*Guard, error) {
	if client == nil {
		return nil, errors.New("idempotency.New: client is nil; pass a *dynamodb.Client")
	}
	if table == "" {
		return nil, errors.New("idempotency.New: table name is empty; pass the name of the idempotency table (see idempotency.CreateTable)")
	}
	var o Options
	for _, fn := range optFns {
		fn(&o)
	}
	if err := o.setDefaults(); err != nil {
		return nil, err
	}
	g := &Guard{opts: o, warn: &settle.Warner{Log: o.Logger}}
	g.st = store{client: client, table: table, ttl: o.TTL, calls: &g.c.calls}
	return g, nil
}

// Wrap returns next guarded: it is a worker.Middleware,
//
//	h := worker.Chain(handler, guard.Wrap)
//
// For each message it derives the key and takes the job's lock with one
// conditional PutItem, then:
//
//   - no live record: the lock is taken until the message's visibility
//     deadline (worker.VisibilityDeadline) plus Options.LockMargin, and
//     next runs; the lock follows the deadline while the heartbeat extends
//     it. When next returns nil the record becomes Completed (one
//     UpdateItem) and the message is deleted; when it fails (error, panic)
//     the record is deleted (one DeleteItem) so that the retry runs, and
//     its error is returned.
//   - the job is in progress under another message's live lock: next does
//     not run, and the message is snoozed (retry.Snooze) until that lock
//     expires at the earliest — never counted as a failed attempt, never
//     dead-lettered for being a duplicate.
//   - the job is completed: next does not run, and the message is deleted
//     (or handed to Options.OnDuplicate).
//   - DynamoDB cannot be reached: the message fails with an error matching
//     ErrUnavailable and is retried on the policy, unless Options.FailOpen.
func (g *Guard) Wrap(next worker.Handler) worker.Handler {
	return worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
		return g.handle(ctx, m, next)
	})
}

// handle is one guarded message.
func (g *Guard) handle(ctx context.Context, m *worker.Message, next worker.Handler) error {
	log := g.opts.Logger
	key, err := g.storedKey(m)
	if err != nil {
		return err
	}
	deadline, ok := worker.VisibilityDeadline(ctx)
	if !ok || deadline.IsZero() {
		return fmt.Errorf("idempotency: message %s has no visibility deadline in its context; Guard.Wrap must wrap a handler that a worker.Worker or a sqslambda.Handler runs", m.ID)
	}
	now := time.Now()
	l := &lock{key: key, messageID: m.ID, token: newToken(), started: now, until: later(deadline, now).Add(g.opts.LockMargin)}
	var existing, taken *Record
	for try := 0; ; try++ {
		actx, cancel := context.WithTimeout(ctx, g.opts.CallTimeout)
		existing, taken, err = g.st.acquire(actx, l)
		cancel()
		var c *conflict
		if errors.As(err, &c) && try < 2 { // the record went away under the check
			continue
		}
		break
	}
	switch {
	case err != nil:
		g.c.unavailable.Add(1)
		if !g.opts.FailOpen {
			g.warn.Warn("acquire", "idempotency: cannot take the job's lock; the message fails and is retried (it never runs unprotected unless Options.FailOpen)", "message", m.ID, "key", key, "err", err)
			return &unavailableError{err: err}
		}
		g.c.failedOpen.Add(1)
		g.warn.Warn("fail-open", "idempotency: cannot take the job's lock; running the message WITHOUT it (Options.FailOpen): a duplicate may run too", "message", m.ID, "key", key, "err", err)
		return next.Handle(context.WithValue(ctx, runKey{}, &runState{key: key}), m) // SetResult works, and records nothing
	case existing != nil && existing.Status != Completed && existing.Status != InProgress:
		return fmt.Errorf("idempotency: the record of message %s (key %q) has status %q, which a Guard never writes; give the Guard a table of its own (see idempotency.CreateTable)", m.ID, key, existing.Status)
	case existing != nil && existing.Status == Completed:
		g.c.duplicatesCompleted.Add(1)
		log.Debug("idempotency: duplicate of a completed job; acknowledged without running", "message", m.ID, "key", key, "completedBy", existing.MessageID, "completedAt", existing.CompletedAt)
		if g.opts.OnDuplicate != nil {
			return g.opts.OnDuplicate(ctx, m, *existing)
		}
		return nil
	case existing != nil:
		g.c.duplicatesInProgress.Add(1)
		d := snoozeFor(existing, now)
		log.Debug("idempotency: duplicate of a job in progress; snoozed", "message", m.ID, "key", key, "holder", existing.MessageID, "lockedUntil", existing.LockedUntil, "snooze", d)
		return retry.Snooze(d, fmt.Sprintf("duplicate of message %s in progress (idempotency key %s, locked until %s)",
			existing.MessageID, key, existing.LockedUntil.UTC().Format(time.RFC3339Nano)))
	}
	if taken != nil && taken.Status == InProgress {
		g.c.takenOver.Add(1)
		log.Info("idempotency: took over an expired lock (its run crashed or lost its message); the job runs again", "message", m.ID, "key", key, "previous", taken.MessageID, "lockedUntil", taken.LockedUntil)
	}
	return g.run(ctx, m, next, l)
}

// run runs next under the lock l and records its outcome.
func (g *Guard) run(ctx context.Context, m *worker.Message, next worker.Handler, l *lock) (herr error) {
	g.c.ran.Add(1)
	hctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	res := &runState{key: l.key}
	hctx = context.WithValue(hctx, runKey{}, res)
	k := g.keep(ctx, l, cancel)
	returned := false
	defer func() {
		if !returned { // next panicked: the runtime retries the message
			k.stop()
			g.release(ctx, m, l)
		}
	}()
	herr = next.Handle(hctx, m)
	returned = true
	k.stop()

	if herr != nil {
		if cause := context.Cause(hctx); errors.Is(cause, ErrLockLost) && !errors.Is(herr, ErrLockLost) {
			herr = fmt.Errorf("%w: %w", cause, herr)
		}
		if holder := k.takenBy(); holder != nil {
			// Another run holds the job now: this message is its duplicate.
			g.c.duplicatesInProgress.Add(1)
			return retry.Snooze(snoozeFor(holder, time.Now()), fmt.Sprintf("duplicate of message %s in progress (idempotency key %s; it took over this run's lock: %v)", holder.MessageID, l.key, herr))
		}
		g.release(ctx, m, l)
		return herr
	}
	cctx, cancelCall := g.callContext(ctx)
	err := g.st.complete(cctx, l, res.get())
	cancelCall()
	var c *conflict
	switch {
	case errors.As(err, &c):
		g.c.completeFailed.Add(1)
		g.warn.Warn("complete-lost", "idempotency: the handler succeeded after its lock was lost; another run may have run the job too", "message", m.ID, "key", l.key, "holder", holderOf(c.rec))
	case err != nil:
		g.c.completeFailed.Add(1)
		g.warn.Warn("complete", "idempotency: the handler succeeded but its completion could not be recorded; the message is deleted, and a duplicate arriving after the lock expires would run again",
			"message", m.ID, "key", l.key, "lockedUntil", l.until, "err", err)
	default:
		g.c.completed.Add(1)
	}
	return nil
}

// release deletes the record of a run that failed.
func (g *Guard) release(ctx context.Context, m *worker.Message, l *lock) {
	cctx, cancel := g.callContext(ctx)
	err := g.st.release(cctx, l)
	cancel()
	var c *conflict
	switch {
	case errors.As(err, &c): // another run holds it now, or it is gone: not ours to remove
	case err != nil:
		g.warn.Warn("release", "idempotency: could not remove the record of a failed run; its retry waits until the lock expires", "message", m.ID, "key", l.key, "lockedUntil", l.until, "err", err)
	default:
		g.c.released.Add(1)
	}
}

// cancelledCallGrace is how long a DynamoDB call the Guard makes after the
// handler returned (recording the completion, removing a failed run's
// record) may go on once the handler's context has ended (the worker's
// shutdown deadline, the Lambda adapter's cutoff). Such a call is not
// cancelled with that context, so that a handler that returns nil as its
// context ends still gets its completion recorded; but the runtime waits
// for a cancelled handler only so long (half of worker.Options.FlushTimeout;
// sqslambda.Options.DeadlineMargin), and a call that outlived that would
// make the worker give up on the handler (ErrHandlersNotStopped, its
// message left unsettled) or the invocation time out.
const cancelledCallGrace = 500 * time.Millisecond

// callContext bounds a call made after the handler returned: within
// CallTimeout, not cancelled with the handler's context, but at most
// cancelledCallGrace after that context ends.
func (g *Guard) callContext(ctx context.Context) (context.Context, context.CancelFunc) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), g.opts.CallTimeout)
	stop := context.AfterFunc(ctx, func() { time.AfterFunc(cancelledCallGrace, cancel) })
	return cctx, func() { stop(); cancel() }
}

// snoozeFor is how long a duplicate of a job in progress waits: until the
// holder's lock expires, and at least as long as the holder has run (so a
// duplicate of a long job is received a few times, not once per lock
// extension), in whole seconds, at least 1 s.
func snoozeFor(holder *Record, now time.Time) time.Duration {
	d := holder.LockedUntil.Sub(now)
	if !holder.StartedAt.IsZero() {
		d = max(d, now.Sub(holder.StartedAt))
	}
	return max(d.Truncate(time.Second)+time.Second, time.Second)
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func holderOf(r *Record) string {
	if r == nil {
		return "(no record)"
	}
	return r.MessageID
}

// runKey is the context key of a guarded run's state.
type runKey struct{}

// runState is what a guarded handler can reach through its context: the
// job's key, and the result it passed to SetResult.
type runState struct {
	key string
	v   atomic.Pointer[[]byte]
}

func (s *runState) get() []byte {
	if p := s.v.Load(); p != nil {
		return *p
	}
	return nil
}

// SetResult records result as the job's result, for a handler that a Guard
// wraps: the completed record keeps it (with Options.TTL), and
// Options.OnDuplicate receives it with each duplicate. A later call
// replaces an earlier one, and nil sets none; nothing is written until the handler returns
// nil. It returns an error when ctx is not the context of a guarded handler
// or result is larger than 256 KiB (a DynamoDB item holds 400 KB).
func SetResult(ctx context.Context, result []byte) error {
	s, ok := ctx.Value(runKey{}).(*runState)
	if !ok {
		return errors.New("idempotency.SetResult: the context is not a guarded handler's; call it with the context the handler received from Guard.Wrap")
	}
	if len(result) > maxResultSize {
		return fmt.Errorf("idempotency.SetResult: the result is %d bytes; at most %d fit in the record: store it elsewhere (S3, say) and set its location instead", len(result), maxResultSize)
	}
	if result == nil {
		s.v.Store(nil)
		return nil
	}
	b := append([]byte{}, result...)
	s.v.Store(&b)
	return nil
}

// Key returns, inside a handler that a Guard wraps, the job's key as
// stored (prefix and hash applied), and false elsewhere. Pass it on as the
// idempotency key of calls that have one (payment APIs, say): they then
// stay once-only even across the window between the handler's success and
// the completed record.
func Key(ctx context.Context) (string, bool) {
	s, ok := ctx.Value(runKey{}).(*runState)
	if !ok {
		return "", false
	}
	return s.key, true
}
