package fleet

import (
	"maps"
	"sync/atomic"
)

// Stats is a snapshot of a Fleet's counters, for metrics and health
// pages. Counters count since New.
type Stats struct {
	// Requests counts DynamoDB calls the controls made (New's check
	// included), and RequestErrors those that failed (a failed condition,
	// the normal way two processes meet, is not an error).
	Requests, RequestErrors int64
	// Tokens counts rate-limit tokens taken, and TokenWaits the jobs that
	// waited in-process for one (up to RateLimitOptions.MaxWait).
	Tokens, TokenWaits int64
	// RateSnoozed, CapSnoozed, BreakerSnoozed and PauseSnoozed count jobs
	// snoozed (hidden, no attempt counted) because a rate limit had no
	// token due soon, a cap was full, a breaker was open, or the queue was
	// paused (Pauser.Middleware).
	RateSnoozed, CapSnoozed, BreakerSnoozed, PauseSnoozed int64
	// CapWaits counts jobs that found a cap full and waited in-process for
	// a slot (up to CapOptions.MaxWait; those that got none are also in
	// CapSnoozed), and CapHandoffs the slots handed from a job that ended
	// to one waiting in the same process, without a request.
	CapWaits, CapHandoffs int64
	// WaitingForToken and WaitingForSlot are the jobs waiting in-process
	// now, each holding one of the worker's handlers, for a rate-limit
	// token (up to RateLimitOptions.MaxWait) and for a cap slot (up to
	// CapOptions.MaxWait): gauges, where TokenWaits and CapWaits count.
	WaitingForToken, WaitingForSlot int64
	// FailedOpen counts jobs let through and FailedClosed jobs snoozed
	// because DynamoDB could not be asked (see each control's FailOpen).
	FailedOpen, FailedClosed int64
	// Unkeyed counts messages a RateLimit's or Cap's Key gave no key (ByGroup:
	// no MessageGroupId), whatever their Unkeyed option did with them.
	Unkeyed int64
	// SlotsHeld is the number of cap slots this process holds now;
	// SlotsLost counts slots whose renewal found them gone (expired and
	// taken back while the job still ran).
	SlotsHeld, SlotsLost int64
	// Paused says, by queue name, whether the queue was paused when this
	// process's Pausers last read it.
	Paused map[string]bool
	// Breakers gives each breaker's state by name: "closed", "open" or
	// "half-open".
	Breakers map[string]string
}

type counters struct {
	requests, requestErrors, tokens, tokenWaits,
	rateSnoozed, capSnoozed, breakerSnoozed, pauseSnoozed,
	capWaits, capHandoffs, waitingForToken, waitingForSlot,
	failedOpen, failedClosed, slotsHeld, slotsLost, unkeyed atomic.Int64
}

// Stats returns a snapshot of the Fleet's counters.
func (f *Fleet) Stats() Stats {
	c := &f.st
	s := Stats{
		Requests: c.requests.Load(), RequestErrors: c.requestErrors.Load(),
		Tokens: c.tokens.Load(), TokenWaits: c.tokenWaits.Load(),
		RateSnoozed: c.rateSnoozed.Load(), CapSnoozed: c.capSnoozed.Load(),
		BreakerSnoozed: c.breakerSnoozed.Load(), PauseSnoozed: c.pauseSnoozed.Load(),
		CapWaits: c.capWaits.Load(), CapHandoffs: c.capHandoffs.Load(),
		WaitingForToken: c.waitingForToken.Load(), WaitingForSlot: c.waitingForSlot.Load(),
		FailedOpen: c.failedOpen.Load(), FailedClosed: c.failedClosed.Load(),
		SlotsHeld: c.slotsHeld.Load(), SlotsLost: c.slotsLost.Load(), Unkeyed: c.unkeyed.Load(),
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	s.Paused = maps.Clone(f.paused)
	s.Breakers = make(map[string]string, len(f.breakers))
	for name, state := range f.breakers {
		s.Breakers[name] = state()
	}
	return s
}
