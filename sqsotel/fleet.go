package sqsotel

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/sqsworker/sqsworker/fleet"
)

// The fleet controls' instruments (package fleet), read from fleet.Stats,
// and the worker's own paused state; doc.go lists them.
const (
	metricPaused         = "sqsworker.receiving.paused"
	metricFleetRequests  = "sqsworker.fleet.requests"
	metricFleetTokens    = "sqsworker.fleet.tokens"
	metricFleetWaits     = "sqsworker.fleet.token_waits"
	metricFleetWaiting   = "sqsworker.fleet.waiting"
	metricFleetSnoozed   = "sqsworker.fleet.snoozed"
	metricFleetFallbacks = "sqsworker.fleet.fallbacks"
	metricSlotsHeld      = "sqsworker.fleet.slots.held"
	metricSlotsLost      = "sqsworker.fleet.slots.lost"
	metricFleetUnkeyed   = "sqsworker.fleet.unkeyed"
	metricQueuePaused    = "sqsworker.fleet.queue.paused"
	metricBreakerState   = "sqsworker.fleet.breaker.state"
)

// The attributes of the fleet instruments.
const (
	attrControl  = attribute.Key("sqsworker.control")
	attrFallback = attribute.Key("sqsworker.fallback")
	attrBreaker  = attribute.Key("sqsworker.breaker")
)

// breakerStates are a breaker's states, each reported as a 0/1 point.
var breakerStates = []string{"closed", "open", "half-open"} // as fleet.Stats.Breakers gives them

// fleetInstruments are the asynchronous instruments of ObserveFleet, and
// the worker's paused gauge ObserveWorker reports.
type fleetInstruments struct {
	paused                                                          metric.Int64ObservableGauge
	requests, tokens, waits, snoozed, fallbacks, slotsLost, unkeyed metric.Int64ObservableCounter
	slotsHeld, waiting                                              metric.Int64ObservableUpDownCounter
	queuePaused, breakerState                                       metric.Int64ObservableGauge
}

func (m *fleetInstruments) init(meter metric.Meter) error {
	var errs []error
	add := func(err error) { errs = append(errs, err) }
	var err error
	m.paused, err = meter.Int64ObservableGauge(metricPaused, metric.WithUnit("1"),
		metric.WithDescription("1 while the worker does not receive because worker.Options.ReceiveGate is closed (a paused queue, an open breaker: worker.Stats.Paused), else 0."))
	add(err)
	m.requests, err = meter.Int64ObservableCounter(metricFleetRequests, metric.WithUnit("{request}"),
		metric.WithDescription("DynamoDB calls the fleet controls made, by result (sqsworker.result: ok, error; a failed condition, how two processes meet, is ok)."))
	add(err)
	m.tokens, err = meter.Int64ObservableCounter(metricFleetTokens, metric.WithUnit("{token}"),
		metric.WithDescription("Rate-limit tokens this process took (fleet.Stats.Tokens)."))
	add(err)
	m.waits, err = meter.Int64ObservableCounter(metricFleetWaits, metric.WithUnit("{job}"),
		metric.WithDescription("Jobs that waited in-process for a rate-limit token, up to RateLimitOptions.MaxWait (fleet.Stats.TokenWaits)."))
	add(err)
	m.waiting, err = meter.Int64ObservableUpDownCounter(metricFleetWaiting, metric.WithUnit("{job}"),
		metric.WithDescription("Jobs waiting in-process now, each holding a handler, by sqsworker.control: rate_limit (for a token, fleet.Stats.WaitingForToken) or cap (for a slot, fleet.Stats.WaitingForSlot)."))
	add(err)
	m.snoozed, err = meter.Int64ObservableCounter(metricFleetSnoozed, metric.WithUnit("{job}"),
		metric.WithDescription("Jobs snoozed (hidden, no attempt counted) by a fleet control, by sqsworker.control: rate_limit (no token due soon), cap (its key's slots all taken), breaker (open), pause (the queue paused, Pauser.Middleware)."))
	add(err)
	m.fallbacks, err = meter.Int64ObservableCounter(metricFleetFallbacks, metric.WithUnit("{job}"),
		metric.WithDescription("Jobs a rate limit or cap could not check because DynamoDB could not be asked, by sqsworker.fallback: open (run unchecked, FailOpen) or closed (snoozed for ErrorSnooze)."))
	add(err)
	m.slotsHeld, err = meter.Int64ObservableUpDownCounter(metricSlotsHeld, metric.WithUnit("{slot}"),
		metric.WithDescription("Cap slots this process holds now: its jobs running under a fleet-wide cap."))
	add(err)
	m.slotsLost, err = meter.Int64ObservableCounter(metricSlotsLost, metric.WithUnit("{slot}"),
		metric.WithDescription("Cap slots whose renewal found them gone while their job still ran (the cap may have been exceeded until it ended)."))
	add(err)
	m.unkeyed, err = meter.Int64ObservableCounter(metricFleetUnkeyed, metric.WithUnit("{message}"),
		metric.WithDescription("Messages a rate limit's or cap's key function gave no key (fleet.ByGroup: no MessageGroupId), shared, snoozed or refused as the control's Unkeyed option says (fleet.Stats.Unkeyed)."))
	add(err)
	m.queuePaused, err = meter.Int64ObservableGauge(metricQueuePaused, metric.WithUnit("1"),
		metric.WithDescription("1 while the queue (messaging.destination.name) is paused, as this process's Pauser last read its switch, else 0."))
	add(err)
	m.breakerState, err = meter.Int64ObservableGauge(metricBreakerState, metric.WithUnit("1"),
		metric.WithDescription("A circuit breaker's state: 1 for the state it is in (sqsworker.state: closed, open, half-open) and 0 for the others, per breaker (sqsworker.breaker)."))
	add(err)
	return errors.Join(errs...)
}

// FleetStatsSource is what ObserveFleet reads: *fleet.Fleet satisfies it.
type FleetStatsSource interface {
	Stats() fleet.Stats
}

// ObserveFleet reports the fleet controls' counters (fleet.Stats) through
// asynchronous instruments, read when the meter collects: DynamoDB
// requests by result, rate-limit tokens taken and jobs that waited for
// one, jobs waiting now for a token or a cap slot, jobs snoozed by each
// control, fallbacks when DynamoDB could not be asked, cap slots held and
// lost, messages without a key, each watched queue's pause switch and
// each breaker's state. Call
// Unregister on the result when f is gone.
func (in *Instrumentation) ObserveFleet(f FleetStatsSource) (metric.Registration, error) {
	m := &in.m.fleet
	base := in.attrs.get("").observe
	return in.m.meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		s := f.Stats()
		o.ObserveInt64(m.requests, s.Requests-s.RequestErrors, in.attrs.get("", attrResult.String("ok")).observe...)
		o.ObserveInt64(m.requests, s.RequestErrors, in.attrs.get("", attrResult.String("error")).observe...)
		o.ObserveInt64(m.tokens, s.Tokens, base...)
		o.ObserveInt64(m.waits, s.TokenWaits, base...)
		o.ObserveInt64(m.waiting, s.WaitingForToken, in.attrs.get("", attrControl.String("rate_limit")).observe...)
		o.ObserveInt64(m.waiting, s.WaitingForSlot, in.attrs.get("", attrControl.String("cap")).observe...)
		for control, n := range map[string]int64{"rate_limit": s.RateSnoozed, "cap": s.CapSnoozed, "breaker": s.BreakerSnoozed, "pause": s.PauseSnoozed} {
			o.ObserveInt64(m.snoozed, n, in.attrs.get("", attrControl.String(control)).observe...)
		}
		o.ObserveInt64(m.fallbacks, s.FailedOpen, in.attrs.get("", attrFallback.String("open")).observe...)
		o.ObserveInt64(m.fallbacks, s.FailedClosed, in.attrs.get("", attrFallback.String("closed")).observe...)
		o.ObserveInt64(m.slotsHeld, s.SlotsHeld, base...)
		o.ObserveInt64(m.slotsLost, s.SlotsLost, base...)
		o.ObserveInt64(m.unkeyed, s.Unkeyed, base...)
		for queue, paused := range s.Paused {
			o.ObserveInt64(m.queuePaused, flag(paused), in.attrs.get(queue).observe...)
		}
		for name, state := range s.Breakers {
			for _, st := range breakerStates {
				o.ObserveInt64(m.breakerState, flag(st == state), in.attrs.get("", attrBreaker.String(name), attrState.String(st)).observe...)
			}
		}
		return nil
	}, m.requests, m.tokens, m.waits, m.waiting, m.snoozed, m.fallbacks, m.slotsHeld, m.slotsLost, m.unkeyed, m.queuePaused, m.breakerState)
}

// flag is 1 for true, 0 for false.
func flag(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
