package fleet

import (
	"context"
	"time"
)

// What the tests reach below the public API: the controls' direct calls,
// which Middleware makes, their errors, the breaker states and the table's
// attribute and finding codes.

const (
	StateClosed             = stateClosed
	StateOpen               = stateOpen
	StateHalfOpen           = stateHalfOpen
	KeyAttribute            = keyAttribute
	TTLAttribute            = ttlAttribute
	CodeReceiveBudget       = codeReceiveBudget
	CodeApproximateAttempts = codeApproximateAttempts
	DefaultSnoozeBudget     = defaultSnoozeBudget
)

var (
	ErrCapFull       = errCapFull
	ErrSlotLost      = errSlotLost
	ErrTableNotFound = errTableNotFound
	ErrThrottled     = errThrottled
)

// Slot is a slot of a Cap.
type Slot = capSlot

// Acquire takes a slot of key, leased until until, or returns ErrCapFull.
func (c *Cap) Acquire(ctx context.Context, key string, until time.Time) (*Slot, error) {
	return c.acquire(ctx, key, until, false)
}

// Renew moves the slot's lease expiry to until, or returns ErrSlotLost.
func (s *Slot) Renew(ctx context.Context, until time.Time) error { return s.renew(ctx, until) }

// Release gives the slot back.
func (s *Slot) Release(ctx context.Context) error { return s.release(ctx) }

// Take takes one token of key's bucket, waiting in-process up to MaxWait.
func (l *RateLimit) Take(ctx context.Context, key string) (time.Duration, error) {
	return l.take(ctx, key)
}

// State returns "closed", "open" or "half-open".
func (b *Breaker) State() string { return b.stateNow() }

// Paused reports the state the Pauser last read.
func (p *Pauser) Paused() bool { return p.lastRead() }

// Holder returns the name this process holds slots under.
func (f *Fleet) Holder() string { return f.o.Holder }
