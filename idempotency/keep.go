package idempotency

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sqsworker/sqsworker/worker"
)

// minWatch is the shortest wait between two looks at the visibility
// deadline.
const minWatch = 200 * time.Millisecond

// keeper keeps a run's lock as long as its message's lease: it watches the
// visibility deadline (worker.VisibilityDeadline) and pushes the lock's
// expiry to the new deadline plus LockMargin each time the heartbeat moves
// it — one conditional UpdateItem per extension. It looks at the deadline
// after half of the time left before it each time (a few in-process looks
// per extension, no request), so an extension is seen while at least half
// of the heartbeat's threshold and the whole margin are left.
//
// When the lock cannot be kept — another run took it over, or DynamoDB
// could not be reached to extend it before the deadline it was written
// for — the keeper cancels the handler's context with a cause wrapping
// ErrLockLost (with Options.FailOpen an unreachable DynamoDB only logs).
type keeper struct {
	g      *Guard
	l      *lock
	cancel context.CancelCauseFunc
	quit   chan struct{}
	done   chan struct{}
	// calls is the extensions' parent context: ended by stop, so that an
	// extension in flight when the handler returns does not hold it up.
	calls    context.Context
	endCalls context.CancelFunc

	mu     sync.Mutex
	holder *Record // the run that took the lock over, if one did
}

// keep starts keeping l for the handler whose context is ctx; cancel
// cancels that handler.
func (g *Guard) keep(ctx context.Context, l *lock, cancel context.CancelCauseFunc) *keeper {
	k := &keeper{g: g, l: l, cancel: cancel, quit: make(chan struct{}), done: make(chan struct{})}
	k.calls, k.endCalls = context.WithCancel(context.WithoutCancel(ctx))
	go k.run(ctx)
	return k
}

// stop ends the keeper, cancelling an extension in flight (the handler has
// returned: what comes next, the completion or the removal, is conditional
// on the run's token, not on the lock's expiry), and waits until it has
// ended.
func (k *keeper) stop() {
	select {
	case <-k.quit:
	default:
		close(k.quit)
	}
	k.endCalls()
	<-k.done
}

// takenBy returns the run that took the lock over, or nil.
func (k *keeper) takenBy() *Record {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.holder
}

func (k *keeper) run(ctx context.Context) {
	defer close(k.done)
	g, l := k.g, k.l
	written := l.until.Add(-g.opts.LockMargin) // the deadline the lock's expiry follows
	var failure error
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-k.quit:
			return
		case <-timer.C:
		}
		deadline, _ := worker.VisibilityDeadline(ctx)
		if deadline.After(written) {
			failure = k.extend(deadline)
			if failure == nil {
				written = deadline
			} else if errors.Is(failure, ErrLockLost) {
				return
			}
		}
		now := time.Now()
		if failure != nil && !now.Before(written) {
			// The lock expires within LockMargin and could not be extended.
			if !g.opts.FailOpen {
				g.c.locksLost.Add(1)
				k.cancel(fmt.Errorf("%w: %w: extending the lock failed (it expires at %s): %w", ErrLockLost, ErrUnavailable, l.until.UTC().Format(time.RFC3339Nano), failure))
				return
			}
			g.c.failedOpen.Add(1)
			g.warn.Warn("keep-fail-open", "idempotency: the job's lock could not be extended and expires; the handler goes on WITHOUT it (Options.FailOpen): a duplicate may run too", "message", l.messageID, "key", l.key, "err", failure)
			failure = nil
			written = deadline
		}
		wait := max(deadline.Sub(now)/2, minWatch)
		if failure != nil {
			wait = min(wait, time.Second) // try again soon
		}
		timer.Reset(wait)
	}
}

// extend pushes the lock's expiry to deadline + LockMargin. It returns an
// error wrapping ErrLockLost (after cancelling the handler) when the lock
// is no longer this run's, and other failures as they are.
func (k *keeper) extend(deadline time.Time) error {
	g, l := k.g, k.l
	// No point in a call that ends after the lock it extends.
	timeout := min(g.opts.CallTimeout, max(time.Until(l.until), minWatch))
	cctx, cancel := context.WithTimeout(k.calls, timeout)
	err := g.st.refresh(cctx, l, deadline.Add(g.opts.LockMargin))
	cancel()
	var c *conflict
	switch {
	case err == nil:
		g.c.extensions.Add(1)
		return nil
	case errors.As(err, &c):
		g.c.locksLost.Add(1)
		k.mu.Lock()
		if c.rec != nil && c.rec.Status == InProgress {
			k.holder = c.rec
		}
		k.mu.Unlock()
		lost := fmt.Errorf("%w: another run (message %s) holds the job now", ErrLockLost, holderOf(c.rec))
		if c.rec == nil || c.rec.Status != InProgress {
			lost = fmt.Errorf("%w: the record is gone or no longer in progress", ErrLockLost)
		}
		g.warn.Warn("lock-lost", "idempotency: the job's lock was lost while its handler ran; cancelling the handler", "message", l.messageID, "key", l.key, "cause", lost)
		k.cancel(lost)
		return lost
	case k.calls.Err() != nil: // stopped: the handler has returned
		return err
	default:
		g.warn.Warn("extend", "idempotency: extending the job's lock failed; trying again until it expires", "message", l.messageID, "key", l.key, "lockedUntil", l.until, "err", err)
		return err
	}
}
