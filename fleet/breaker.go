package fleet

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sqsworker/sqsworker/internal/awscall"
	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/worker"
)

// attrOpenUntil is a shared breaker item's end of the open state (epoch
// ms; 0 or past: closed).
const attrOpenUntil = "openUntil"

// The states of a Breaker, as Stats.Breakers gives them.
const (
	stateClosed   = "closed"    // jobs run
	stateOpen     = "open"      // jobs are snoozed until OpenFor has passed
	stateHalfOpen = "half-open" // one probe job runs; the others are snoozed
)

// BreakerOptions configures a Breaker. Counts is required; every other
// field's zero value selects the documented default.
type BreakerOptions struct {
	// Counts reports whether a handler error says the downstream is
	// failing (a timeout, a refused connection, a 503), as opposed to a
	// problem of this job (bad input, a 4xx). Only counted errors open the
	// breaker; they are snoozed, not failed, so they spend no attempt.
	// Other errors pass through unchanged. Required.
	Counts func(err error) bool
	// Threshold is how many counted failures in a row open the breaker.
	// Zero value: 5.
	Threshold int
	// OpenFor is how long the breaker stays open before a probe; each
	// failed probe doubles it, up to MaxOpenFor. Zero value: 30 s.
	OpenFor time.Duration
	// MaxOpenFor caps OpenFor's doubling. Zero value: 5 minutes.
	MaxOpenFor time.Duration
	// Shared makes the breaker fleet-wide: opening it is written to the
	// fleet table, and every process's breaker of the same name reads it
	// at most every SyncInterval and stays open until then too. Each
	// process probes on its own. When DynamoDB cannot be asked, the
	// breaker works locally (it fails open to its own state).
	Shared bool
	// SyncInterval is how often a shared breaker reads the fleet's state.
	// Zero value: 2 s.
	SyncInterval time.Duration
}

// Breaker is a circuit breaker over a downstream: after Threshold counted
// failures in a row it opens, and jobs are snoozed (hidden for the time
// left, no attempt counted) instead of run; after OpenFor one job probes
// the downstream (half-open): its success closes the breaker, its counted
// failure opens it again for twice as long.
type Breaker struct {
	f    *Fleet
	name string
	o    BreakerOptions

	mu        sync.Mutex
	state     string
	failures  int // counted failures in a row while closed
	openFor   time.Duration
	openUntil time.Time // while open
	probing   bool      // a probe is running (half-open)
	syncedAt  time.Time // a shared breaker's last read
	syncing   bool
	changed   chan struct{} // closed (and replaced) when the state changes
}

// Breaker returns the breaker name.
func (f *Fleet) Breaker(name string, optFns ...func(*BreakerOptions)) (*Breaker, error) {
	if err := checkName("Breaker", name); err != nil {
		return nil, err
	}
	var o BreakerOptions
	for _, fn := range optFns {
		fn(&o)
	}
	if o.Counts == nil {
		return nil, fmt.Errorf("fleet: Breaker %q needs BreakerOptions.Counts: say which handler errors mean the downstream is failing (timeouts, refused connections, 5xx), so that a job's own bad input does not open the breaker", name)
	}
	if o.Threshold < 0 || o.OpenFor < 0 || o.MaxOpenFor < 0 || o.SyncInterval < 0 {
		return nil, fmt.Errorf("fleet: Breaker %q: Threshold, OpenFor, MaxOpenFor and SyncInterval must not be negative (zero selects the default)", name)
	}
	if o.Threshold == 0 {
		o.Threshold = 5
	}
	if o.OpenFor == 0 {
		o.OpenFor = 30 * time.Second
	}
	if o.MaxOpenFor == 0 {
		o.MaxOpenFor = 5 * time.Minute
	}
	o.MaxOpenFor = max(o.MaxOpenFor, o.OpenFor)
	if o.SyncInterval == 0 {
		o.SyncInterval = 2 * time.Second
	}
	b := &Breaker{f: f, name: name, o: o, state: stateClosed, openFor: o.OpenFor, changed: make(chan struct{})}
	f.mu.Lock()
	f.breakers[name] = b.stateNow
	f.mu.Unlock()
	return b, nil
}

// stateNow returns "closed", "open" or "half-open" (Stats.Breakers).
func (b *Breaker) stateNow() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.advanceLocked(b.f.o.Now())
	return b.state
}

// Ready returns an error while the breaker is open, saying until when,
// and nil while it is closed or half-open (letting its probe in). Given to
// worker.HealthOptions.Checks it makes a worker whose downstream is down
// not ready (still live); as the worker's ReceiveGate (alone or through
// AllOpen) the worker's Health reports it without that.
func (b *Breaker) Ready() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.f.o.Now()
	b.advanceLocked(now)
	if b.state != stateOpen {
		return nil
	}
	return fmt.Errorf("breaker %s is open until %s (%s more): its downstream is failing and its jobs are snoozed", b.name, b.openUntil.UTC().Format(time.RFC3339), b.openUntil.Sub(now).Round(time.Second))
}

// advanceLocked turns an open breaker whose time is up half-open.
func (b *Breaker) advanceLocked(now time.Time) {
	if b.state == stateOpen && !now.Before(b.openUntil) {
		b.state, b.probing = stateHalfOpen, false
	}
}

// admit decides whether a job may run now: as the probe, or because the
// breaker is closed; otherwise how long it should wait.
func (b *Breaker) admit(ctx context.Context) (run, probe bool, wait time.Duration) {
	if b.o.Shared {
		b.sync(ctx)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.f.o.Now()
	b.advanceLocked(now)
	switch b.state {
	case stateClosed:
		return true, false, 0
	case stateOpen:
		return false, false, b.openUntil.Sub(now)
	}
	if b.probing {
		return false, false, min(b.o.OpenFor, 5*time.Second)
	}
	b.probing = true
	b.notifyLocked() // as a gate: closed while the probe runs
	return true, true, 0
}

// record notes a job's outcome.
func (b *Breaker) record(ctx context.Context, probe, failed bool) {
	b.mu.Lock()
	before := b.state
	now := b.f.o.Now()
	var publish time.Time
	switch {
	case probe && failed:
		b.openFor = min(2*b.openFor, b.o.MaxOpenFor)
		b.state, b.openUntil, b.probing = stateOpen, now.Add(b.openFor), false
		publish = b.openUntil
	case probe:
		b.state, b.failures, b.openFor, b.probing = stateClosed, 0, b.o.OpenFor, false
	case failed && b.state == stateClosed:
		b.failures++
		if b.failures >= b.o.Threshold {
			b.state, b.openUntil, b.failures = stateOpen, now.Add(b.openFor), 0
			publish = b.openUntil
		}
	case b.state == stateClosed:
		b.failures = 0
	}
	closed := probe && !failed
	if b.state != before || !publish.IsZero() {
		b.notifyLocked()
	}
	b.mu.Unlock()
	if b.o.Shared && (!publish.IsZero() || closed) {
		b.publish(ctx, publish)
	}
}

// publish writes the fleet's open state: until when it is open, or closed
// (zero until). Failures are logged; the breaker works locally.
func (b *Breaker) publish(ctx context.Context, until time.Time) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), b.f.o.CallTimeout)
	defer cancel()
	in := &dynamodb.UpdateItemInput{
		TableName:                 aws.String(b.f.table),
		Key:                       itemKey("breaker|" + b.name),
		UpdateExpression:          aws.String("SET #o = :o, #e = :e"),
		ExpressionAttributeNames:  map[string]string{"#o": attrOpenUntil, "#e": ttlAttribute},
		ExpressionAttributeValues: map[string]types.AttributeValue{":o": num(until.UnixMilli()), ":e": expires(b.f.o.Now())},
	}
	if !until.IsZero() {
		// Never shorten another process's longer open spell.
		in.ConditionExpression = aws.String("attribute_not_exists(#o) OR #o < :o")
	} else {
		in.ExpressionAttributeValues[":o"] = num(0)
	}
	_, err := call(b.f, ctx, func(ctx context.Context) (*dynamodb.UpdateItemOutput, error) {
		return b.f.client.UpdateItem(ctx, in, awscall.DynamoDBOff)
	})
	if err != nil && !isConditionFailed(err) {
		b.f.o.Logger.Warn("fleet: a shared breaker's state could not be written; it works locally", "breaker", b.name, "err", b.f.explain(err, "writing breaker "+b.name))
	}
}

// sync reads the fleet's open state at most every SyncInterval (one
// caller at a time; the others go on with the local state).
func (b *Breaker) sync(ctx context.Context) {
	b.mu.Lock()
	now := b.f.o.Now()
	if b.syncing || now.Sub(b.syncedAt) < b.o.SyncInterval {
		b.mu.Unlock()
		return
	}
	b.syncing = true
	b.mu.Unlock()
	item, err := b.f.getItem(ctx, "breaker|"+b.name)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.syncing, b.syncedAt = false, b.f.o.Now()
	if err != nil {
		if ctx.Err() == nil {
			b.f.o.Logger.Warn("fleet: a shared breaker's state could not be read; it works locally", "breaker", b.name, "err", b.f.explain(err, "reading breaker "+b.name))
		}
		return
	}
	until := time.UnixMilli(numAttr(item, attrOpenUntil))
	if b.state != stateOpen && until.After(b.syncedAt) && !b.probing {
		b.state, b.openUntil, b.failures = stateOpen, until, 0
		b.notifyLocked()
	}
}

// notifyLocked wakes Watch.
func (b *Breaker) notifyLocked() {
	close(b.changed)
	b.changed = make(chan struct{})
}

var _ worker.ReceiveGate = (*Breaker)(nil)

// probeRearm is how long a half-open breaker's gate, open for a probe
// that has not started (the message it let in did not come to this
// breaker's Middleware), waits before it lets in another.
const probeRearm = 2 * time.Second

// Watch implements worker.ReceiveGate: the gate is closed while the
// breaker is open, opens for one probe when it half-opens (Probe says so:
// the worker receives one message), is closed while that probe runs, and
// opens for good when a probe closes the breaker. Given to the worker as
// Options.ReceiveGate (with a Pauser, through AllOpen), an open breaker
// stops receiving — the prefetched messages are released at once —
// instead of receiving and snoozing every message, and a half-open one
// receives one message per probe window, not a batch; Middleware still
// guards the jobs.
func (b *Breaker) Watch(ctx context.Context, set func(open bool)) {
	first, last := true, false
	var reported time.Time
	for {
		b.mu.Lock()
		now := b.f.o.Now()
		b.advanceLocked(now)
		open := b.state == stateClosed || b.state == stateHalfOpen && !b.probing
		waiting := b.state == stateHalfOpen && !b.probing // a probe window
		until, changed := b.openUntil, b.changed
		b.mu.Unlock()
		if first || open != last || waiting && now.Sub(reported) >= probeRearm {
			set(open) // a report while open opens a new probe window
			first, last, reported = false, open, now
		}
		var due <-chan time.Time
		var t *time.Timer
		switch {
		case !open:
			if b.stateNow() == stateOpen {
				t = time.NewTimer(until.Sub(now))
			}
		case waiting:
			t = time.NewTimer(max(probeRearm-now.Sub(reported), 0))
		}
		if t != nil {
			due = t.C
		}
		select {
		case <-ctx.Done():
		case <-changed:
		case <-due:
		}
		if t != nil {
			t.Stop()
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// Probe reports whether the breaker is half-open: as a worker's
// ReceiveGate, its gate is then open for one message at a time (see
// worker.ReceiveGate).
func (b *Breaker) Probe() bool {
	return b.stateNow() == stateHalfOpen
}

// Middleware returns middleware that runs jobs through the breaker: while
// it is open they are snoozed until it half-opens; a counted failure is
// snoozed instead of failed (no attempt spent); every other outcome is
// returned unchanged.
func (b *Breaker) Middleware() worker.Middleware {
	return func(next worker.Handler) worker.Handler {
		return worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			run, probe, wait := b.admit(ctx)
			if !run {
				b.f.st.breakerSnoozed.Add(1)
				return retry.Snooze(snoozeFor(wait), "fleet: breaker "+b.name+" is open")
			}
			if probe {
				// A probe that panics proves nothing: the next job probes.
				defer b.endProbe()
			}
			err := next.Handle(ctx, m)
			failed := err != nil && !errors.Is(err, retry.ErrPermanent) && !isSnooze(err) && b.o.Counts(err)
			b.record(ctx, probe, failed)
			if !failed {
				return err
			}
			b.f.st.breakerSnoozed.Add(1)
			b.mu.Lock()
			wait = b.openFor
			if b.state == stateOpen {
				wait = b.openUntil.Sub(b.f.o.Now())
			}
			b.mu.Unlock()
			return retry.Snooze(snoozeFor(wait), "fleet: breaker "+b.name+": downstream failing: "+err.Error())
		})
	}
}

// endProbe lets another job probe if the probe ended without a record.
func (b *Breaker) endProbe() {
	b.mu.Lock()
	if b.state == stateHalfOpen && b.probing {
		b.probing = false
		b.notifyLocked()
	}
	b.mu.Unlock()
}

func isSnooze(err error) bool {
	var se *retry.SnoozeError
	return errors.As(err, &se)
}
