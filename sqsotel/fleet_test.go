package sqsotel_test

import (
	"testing"

	"github.com/sqsworker/sqsworker/fleet"
)

// stats is a FleetStatsSource with fixed counters.
type stats fleet.Stats

func (s stats) Stats() fleet.Stats { return fleet.Stats(s) }

// ObserveFleet reports fleet.Stats: requests by result, tokens, waits and
// jobs waiting now, snoozes by control, fallbacks, slots, each queue's
// pause switch (0/1) and each breaker's state as a 0/1 point per state.
func TestFleetMetricsMatchStats(t *testing.T) {
	tel := newTelemetry(t)
	s := fleet.Stats{
		Requests: 40, RequestErrors: 3, Tokens: 25, TokenWaits: 7,
		RateSnoozed: 4, CapSnoozed: 9, BreakerSnoozed: 2, PauseSnoozed: 1,
		FailedOpen: 5, FailedClosed: 6, SlotsHeld: 3, SlotsLost: 1, WaitingForToken: 2, WaitingForSlot: 1, Unkeyed: 8,
		Paused:   map[string]bool{"orders": true, "refunds": false},
		Breakers: map[string]string{"payments-api": "open", "mail": "closed"},
	}
	reg, err := tel.ins.ObserveFleet(stats(s))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = reg.Unregister() }()
	rm := tel.collect(t)
	for _, c := range []struct {
		name  string
		attrs map[string]string
		want  float64
	}{
		{"sqsworker.fleet.requests", map[string]string{"sqsworker.result": "ok"}, 37},
		{"sqsworker.fleet.requests", map[string]string{"sqsworker.result": "error"}, 3},
		{"sqsworker.fleet.tokens", nil, 25},
		{"sqsworker.fleet.token_waits", nil, 7},
		{"sqsworker.fleet.waiting", map[string]string{"sqsworker.control": "rate_limit"}, 2},
		{"sqsworker.fleet.waiting", map[string]string{"sqsworker.control": "cap"}, 1},
		{"sqsworker.fleet.snoozed", map[string]string{"sqsworker.control": "rate_limit"}, 4},
		{"sqsworker.fleet.snoozed", map[string]string{"sqsworker.control": "cap"}, 9},
		{"sqsworker.fleet.snoozed", map[string]string{"sqsworker.control": "breaker"}, 2},
		{"sqsworker.fleet.snoozed", map[string]string{"sqsworker.control": "pause"}, 1},
		{"sqsworker.fleet.fallbacks", map[string]string{"sqsworker.fallback": "open"}, 5},
		{"sqsworker.fleet.fallbacks", map[string]string{"sqsworker.fallback": "closed"}, 6},
		{"sqsworker.fleet.slots.held", nil, 3},
		{"sqsworker.fleet.slots.lost", nil, 1},
		{"sqsworker.fleet.unkeyed", nil, 8},
		{"sqsworker.fleet.queue.paused", map[string]string{"messaging.destination.name": "orders"}, 1},
		{"sqsworker.fleet.queue.paused", map[string]string{"messaging.destination.name": "refunds"}, 0},
		{"sqsworker.fleet.breaker.state", map[string]string{"sqsworker.breaker": "payments-api", "sqsworker.state": "open"}, 1},
		{"sqsworker.fleet.breaker.state", map[string]string{"sqsworker.breaker": "payments-api"}, 1},
		{"sqsworker.fleet.breaker.state", map[string]string{"sqsworker.breaker": "mail", "sqsworker.state": "closed"}, 1},
		{"sqsworker.fleet.breaker.state", map[string]string{"sqsworker.state": "half-open"}, 0},
	} {
		if got := value(t, rm, c.name, c.attrs); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.attrs, got, c.want)
		}
	}
}
