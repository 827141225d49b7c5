package sqsotel_test

import (
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sqsworker/sqsworker/worker"
)

// After the scripted scenario (success, retry, permanent, exhausted, long
// job) every metric equals the worker's Stats.
func TestMetricsMatchStats(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tel := newTelemetry(t)
		sc := runScenario(t, tel)
		s := sc.stats
		rm := tel.collect(t)
		q := map[string]string{"messaging.system": "aws_sqs", "messaging.destination.name": "jobs"}
		with := func(k, v string) map[string]string {
			m := map[string]string{k: v}
			for a, b := range q {
				m[a] = b
			}
			return m
		}
		check := func(what string, got float64, want int64) {
			t.Helper()
			if got != float64(want) {
				t.Errorf("%s = %v, Stats says %d", what, got, want)
			}
		}
		// The scenario's own expectations, so the comparison is not vacuous.
		if s.Received != 8 || s.Deleted != 4 || s.Retried != 2 || s.DeadLettered != 2 || s.Extensions < 2 {
			t.Fatalf("scenario: %+v; want 8 received, 4 deleted, 2 retried, 2 dead-lettered, extensions", s)
		}
		for outcome, n := range map[worker.Outcome]int64{
			worker.Deleted: s.Deleted, worker.Retrying: s.Retried, worker.DeadLettered: s.DeadLettered,
			worker.Released: s.Released, worker.Lost: s.Lost, worker.Abandoned: s.Abandoned, worker.Snoozed: s.Snoozed, worker.Delayed: s.Delayed,
		} {
			check("sqsworker.messages{"+outcome.String()+"}", value(t, rm, "sqsworker.messages", with("sqsworker.outcome", outcome.String())), n)
		}
		check("sqsworker.dead_letters", value(t, rm, "sqsworker.dead_letters", q), s.DeadLettered)
		check("sqsworker.dead_letters{permanent}", value(t, rm, "sqsworker.dead_letters", with("sqsworker.reason", "permanent")), 1)
		check("sqsworker.dead_letters{exhausted}", value(t, rm, "sqsworker.dead_letters", with("sqsworker.reason", "exhausted")), 1)
		check("messaging.process.duration count", value(t, rm, "messaging.process.duration", q), s.Succeeded+s.Failed)
		check("messaging.process.duration{error.type=_OTHER} count", value(t, rm, "messaging.process.duration", with("error.type", "_OTHER")), 3)
		check("messaging.process.duration{error.type=permanent} count", value(t, rm, "messaging.process.duration", with("error.type", "permanent")), 1)
		check("sqsworker.time_in_queue count", value(t, rm, "sqsworker.time_in_queue", q), s.Received)
		check("sqsworker.settle.duration count", value(t, rm, "sqsworker.settle.duration", q), s.Received)
		check("messaging.client.consumed.messages", value(t, rm, "messaging.client.consumed.messages", q), s.Received)
		check("sqsworker.messages.in_flight", value(t, rm, "sqsworker.messages.in_flight", q), s.InFlight)
		check("sqsworker.messages.settling", value(t, rm, "sqsworker.messages.settling", q), s.Settling)
		check("sqsworker.messages.prefetched", value(t, rm, "sqsworker.messages.prefetched", q), int64(s.Prefetched))
		check("sqsworker.prefetch.target", value(t, rm, "sqsworker.prefetch.target", q), int64(s.PrefetchTarget))
		for n, calls := range s.ReceiveSizes {
			check("sqsworker.receives{"+strconv.Itoa(n)+"}", value(t, rm, "sqsworker.receives", with("messaging.batch.message_count", strconv.Itoa(n))), calls)
		}
		check("sqsworker.heartbeat.extensions", value(t, rm, "sqsworker.heartbeat.extensions", q), s.Extensions)
		check("sqsworker.heartbeat.late_extensions", value(t, rm, "sqsworker.heartbeat.late_extensions", q), s.LateExtensions)
		check("sqsworker.settlements.late", value(t, rm, "sqsworker.settlements.late", q), s.SettledLate)
		check("sqsworker.deletes.retried", value(t, rm, "sqsworker.deletes.retried", q), s.DeleteRetried)
		check("sqsworker.hook.dropped", value(t, rm, "sqsworker.hook.dropped", q), s.HookDropped)
		check("sqsworker.sqs.requests", value(t, rm, "sqsworker.sqs.requests", q), s.TotalRequests())
		for api, results := range s.RequestResults {
			for result, n := range results {
				check("sqsworker.sqs.requests{"+api+","+result+"}", value(t, rm, "sqsworker.sqs.requests", map[string]string{"rpc.method": api, "sqsworker.result": result}), n)
			}
		}
		for api, n := range s.BilledRequests {
			check("sqsworker.sqs.billed_requests{"+api+"}", value(t, rm, "sqsworker.sqs.billed_requests", map[string]string{"rpc.method": api}), n)
		}
		for api, n := range s.PayloadBytes {
			check("sqsworker.sqs.payload{"+api+"}", value(t, rm, "sqsworker.sqs.payload", map[string]string{"rpc.method": api}), n)
		}
		c := s.Cost(worker.Pricing{})
		if got := value(t, rm, "sqsworker.cost.usd", q); got != c.USD {
			t.Errorf("sqsworker.cost.usd = %v, Stats.Cost says %v", got, c.USD)
		}
		if got := value(t, rm, "sqsworker.cost.usd_per_million_messages", q); got != c.USDPerMillionMessages {
			t.Errorf("sqsworker.cost.usd_per_million_messages = %v, Stats.Cost says %v", got, c.USDPerMillionMessages)
		}
		if got := value(t, rm, "sqsworker.sqs.requests_per_message", q); got != c.RequestsPerMessage {
			t.Errorf("sqsworker.sqs.requests_per_message = %v, Stats says %v", got, c.RequestsPerMessage)
		}
		if s.HandlerRuns == 0 || s.Capacity <= 0 || s.Concurrency == 0 {
			t.Fatalf("scenario: %+v; want handler runs measured", s)
		}
		paused := int64(0)
		if s.Paused {
			paused = 1
		}
		check("sqsworker.receiving.paused", value(t, rm, "sqsworker.receiving.paused", q), paused)
		check("sqsworker.handler.slots", value(t, rm, "sqsworker.handler.slots", q), int64(s.Concurrency))
		check("sqsworker.handler.runs", value(t, rm, "sqsworker.handler.runs", q), s.HandlerRuns)
		for name, want := range map[string]float64{
			"sqsworker.handler.busy_time": s.HandlerTime.Seconds(), "sqsworker.capacity": s.Capacity, "sqsworker.oldest_message.age": s.OldestAge.Seconds(),
		} {
			if got := value(t, rm, name, q); got != want {
				t.Errorf("%s = %v, Stats says %v", name, got, want)
			}
		}
	})
}

// With worker.Options.BacklogInterval the queue's depth is a gauge by
// state, equal to Stats.Backlog; without it, no such metric.
func TestQueueDepthMetric(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tel := newTelemetry(t)
		sc := runScenario(t, tel, func(o *worker.Options) { o.BacklogInterval = time.Minute })
		b := sc.stats.Backlog
		if b.At.IsZero() {
			t.Fatalf("Stats.Backlog = %+v; want a read", b)
		}
		rm := tel.collect(t)
		for state, want := range map[string]int64{"visible": b.Visible, "in_flight": b.InFlight, "delayed": b.Delayed} {
			got := value(t, rm, "sqsworker.queue.messages", map[string]string{"messaging.destination.name": "jobs", "sqsworker.state": state})
			if got != float64(want) {
				t.Errorf("sqsworker.queue.messages{%s} = %v, Stats.Backlog says %d", state, got, want)
			}
		}
	})
	synctest.Test(t, func(t *testing.T) {
		tel := newTelemetry(t)
		runScenario(t, tel)
		if _, ok := find(tel.collect(t), "sqsworker.queue.messages"); ok {
			t.Error("sqsworker.queue.messages reported without BacklogInterval")
		}
	})
}
