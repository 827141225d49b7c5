package sqsotel

import (
	"context"
	"errors"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/sqsworker/sqsworker/worker"
)

// The instruments' names. Prometheus sees them with dots as underscores, the
// unit as a suffix (_seconds, _bytes) and _total on counters; doc.go lists
// them.
const (
	metricMessages       = "sqsworker.messages"
	metricDeadLetters    = "sqsworker.dead_letters"
	metricProcess        = "messaging.process.duration"
	metricTimeInQueue    = "sqsworker.time_in_queue"
	metricSettle         = "sqsworker.settle.duration"
	metricConsumed       = "messaging.client.consumed.messages"
	metricInFlight       = "sqsworker.messages.in_flight"
	metricSettling       = "sqsworker.messages.settling"
	metricPrefetched     = "sqsworker.messages.prefetched"
	metricPrefetchTarget = "sqsworker.prefetch.target"
	metricReceives       = "sqsworker.receives"
	metricExtensions     = "sqsworker.heartbeat.extensions"
	metricLateExtensions = "sqsworker.heartbeat.late_extensions"
	metricLate           = "sqsworker.settlements.late"
	metricDeleteRetries  = "sqsworker.deletes.retried"
	metricHookDropped    = "sqsworker.hook.dropped"
	metricRequests       = "sqsworker.sqs.requests"
	metricBilled         = "sqsworker.sqs.billed_requests"
	metricPayload        = "sqsworker.sqs.payload"
	metricCost           = "sqsworker.cost.usd"
	metricCostPerMillion = "sqsworker.cost.usd_per_million_messages"
	metricReqPerMessage  = "sqsworker.sqs.requests_per_message"
	metricConcurrency    = "sqsworker.handler.slots"
	metricHandlerRuns    = "sqsworker.handler.runs"
	metricHandlerTime    = "sqsworker.handler.busy_time"
	metricCapacity       = "sqsworker.capacity"
	metricOldestAge      = "sqsworker.oldest_message.age"
	metricQueueDepth     = "sqsworker.queue.messages"
)

// The attributes sqsotel adds to OTel's messaging ones.
const (
	attrOutcome = attribute.Key("sqsworker.outcome")
	attrReason  = attribute.Key("sqsworker.reason")
	attrResult  = attribute.Key("sqsworker.result")
	attrState   = attribute.Key("sqsworker.state")
)

// durationBuckets are OTel's advised boundaries for messaging durations.
func durationBuckets() []float64 {
	return []float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}
}

// queueBuckets reach from milliseconds to SQS's 14-day retention.
func queueBuckets() []float64 {
	return []float64{0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600, 4 * 3600, 12 * 3600, 86400, 4 * 86400, 14 * 86400}
}

// instruments are the synchronous instruments the settlement hook records
// into, and the asynchronous ones ObserveWorker reports.
type instruments struct {
	meter metric.Meter

	messages, deadLetters      metric.Int64Counter
	process, inQueue, settling metric.Float64Histogram

	consumed, receives, extensions, lateExtensions, late, deleteRetries, dropped, requests, billed, payload metric.Int64ObservableCounter
	inFlight, settlingNow, prefetched, prefetchTarget                                                       metric.Int64ObservableUpDownCounter
	cost                                                                                                    metric.Float64ObservableCounter
	costPerMillion, reqPerMessage                                                                           metric.Float64ObservableGauge

	// The scaling signals.
	slots               metric.Int64ObservableUpDownCounter
	handlerRuns         metric.Int64ObservableCounter
	handlerTime         metric.Float64ObservableCounter
	capacity, oldestAge metric.Float64ObservableGauge
	queueDepth          metric.Int64ObservableUpDownCounter

	// The fleet controls (ObserveFleet) and the worker's paused state.
	fleet  fleetInstruments
	unique uniqueInstruments
}

func (m *instruments) init(meter metric.Meter) error {
	m.meter = meter
	var errs []error
	add := func(err error) { errs = append(errs, err) }
	var err error
	m.messages, err = meter.Int64Counter(metricMessages, metric.WithUnit("{message}"),
		metric.WithDescription("Messages settled, by outcome (sqsworker.outcome: deleted, retrying, dead-lettered, released, lost, abandoned, snoozed, delayed), as SQS confirmed them."))
	add(err)
	m.deadLetters, err = meter.Int64Counter(metricDeadLetters, metric.WithUnit("{message}"),
		metric.WithDescription("Messages moved to the dead-letter queue, by reason (sqsworker.reason: permanent, exhausted, other)."))
	add(err)
	m.process, err = meter.Float64Histogram(metricProcess, metric.WithUnit("s"), metric.WithExplicitBucketBoundaries(durationBuckets()...),
		metric.WithDescription("Duration of the handler's run on one message; error.type is set when it failed."))
	add(err)
	m.inQueue, err = meter.Float64Histogram(metricTimeInQueue, metric.WithUnit("s"), metric.WithExplicitBucketBoundaries(queueBuckets()...),
		metric.WithDescription("Time from SQS accepting a message (SentTimestamp, kept across retries and redrives) to its receive."))
	add(err)
	m.settling, err = meter.Float64Histogram(metricSettle, metric.WithUnit("s"), metric.WithExplicitBucketBoundaries(durationBuckets()...),
		metric.WithDescription("Time from the handler's return to SQS confirming the message's settlement."))
	add(err)

	m.consumed, err = meter.Int64ObservableCounter(metricConsumed, metric.WithUnit("{message}"),
		metric.WithDescription("Messages received (worker.Stats.Received)."))
	add(err)
	m.receives, err = meter.Int64ObservableCounter(metricReceives, metric.WithUnit("{call}"),
		metric.WithDescription("Receive calls by the number of messages they returned (messaging.batch.message_count, 0 to 10)."))
	add(err)
	m.extensions, err = meter.Int64ObservableCounter(metricExtensions, metric.WithUnit("{extension}"),
		metric.WithDescription("Heartbeat visibility extensions SQS confirmed on time."))
	add(err)
	m.lateExtensions, err = meter.Int64ObservableCounter(metricLateExtensions, metric.WithUnit("{extension}"),
		metric.WithDescription("Heartbeat visibility extensions SQS confirmed only after the deadline they were meant to move."))
	add(err)
	m.late, err = meter.Int64ObservableCounter(metricLate, metric.WithUnit("{message}"),
		metric.WithDescription("Settlements SQS confirmed only after the message's visibility deadline (a duplicate is likely)."))
	add(err)
	m.deleteRetries, err = meter.Int64ObservableCounter(metricDeleteRetries, metric.WithUnit("{delete}"),
		metric.WithDescription("Deletes sent again after a failed call or entry."))
	add(err)
	m.dropped, err = meter.Int64ObservableCounter(metricHookDropped, metric.WithUnit("{event}"),
		metric.WithDescription("Settlement events the hook missed because it fell behind (their outcomes are missing from sqsworker.messages)."))
	add(err)
	m.requests, err = meter.Int64ObservableCounter(metricRequests, metric.WithUnit("{request}"),
		metric.WithDescription("SQS calls the worker made, by API (rpc.method) and result (sqsworker.result: ok, throttled, transient, stale, maxed-out, fatal, invalid, canceled)."))
	add(err)
	m.billed, err = meter.Int64ObservableCounter(metricBilled, metric.WithUnit("{request}"),
		metric.WithDescription("SQS calls as SQS bills them (one per started 64 KiB of payload), by API (rpc.method)."))
	add(err)
	m.payload, err = meter.Int64ObservableCounter(metricPayload, metric.WithUnit("By"),
		metric.WithDescription("Message payload (bodies and message attributes) received and sent, by API (rpc.method)."))
	add(err)
	m.cost, err = meter.Float64ObservableCounter(metricCost, metric.WithUnit("{USD}"),
		metric.WithDescription("Estimated price of the worker's SQS requests so far, in US dollars (worker.Stats.Cost)."))
	add(err)
	m.inFlight, err = meter.Int64ObservableUpDownCounter(metricInFlight, metric.WithUnit("{message}"),
		metric.WithDescription("Messages held now: received and not yet settled (running, waiting, prefetched or awaiting SQS's confirmation)."))
	add(err)
	m.settlingNow, err = meter.Int64ObservableUpDownCounter(metricSettling, metric.WithUnit("{message}"),
		metric.WithDescription("Messages whose handler is done and whose settlement SQS has not confirmed yet."))
	add(err)
	m.prefetched, err = meter.Int64ObservableUpDownCounter(metricPrefetched, metric.WithUnit("{message}"),
		metric.WithDescription("Messages received ahead of a free handler now: leased, waiting in the worker's buffer (counted in sqsworker.messages.in_flight too)."))
	add(err)
	m.prefetchTarget, err = meter.Int64ObservableUpDownCounter(metricPrefetchTarget, metric.WithUnit("{message}"),
		metric.WithDescription("How many messages the worker aims to hold ahead of its handlers now (adaptive, at most Options.MaxPrefetch)."))
	add(err)
	m.costPerMillion, err = meter.Float64ObservableGauge(metricCostPerMillion, metric.WithUnit("{USD}"),
		metric.WithDescription("Estimated price of a million messages at the worker's rate of requests so far, in US dollars."))
	add(err)
	m.reqPerMessage, err = meter.Float64ObservableGauge(metricReqPerMessage, metric.WithUnit("{request}"),
		metric.WithDescription("SQS calls per message received so far."))
	add(err)
	m.slots, err = meter.Int64ObservableUpDownCounter(metricConcurrency, metric.WithUnit("{slot}"),
		metric.WithDescription("Handler slots (worker.Stats.Concurrency, Options.Concurrency); summed over the fleet, the slots of every worker."))
	add(err)
	m.handlerRuns, err = meter.Int64ObservableCounter(metricHandlerRuns, metric.WithUnit("{message}"),
		metric.WithDescription("Messages that held a handler slot and gave it back (worker.Stats.HandlerRuns)."))
	add(err)
	m.handlerTime, err = meter.Float64ObservableCounter(metricHandlerTime, metric.WithUnit("s"),
		metric.WithDescription("Total time messages held a handler slot (worker.Stats.HandlerTime): rate(busy_time) / rate(runs) is the mean handler time over any window."))
	add(err)
	m.capacity, err = meter.Float64ObservableGauge(metricCapacity, metric.WithUnit("{message}/s"),
		metric.WithDescription("Messages per second the worker can take with every slot busy: slots / mean handler time over the last one to two minutes (worker.Stats.Capacity)."))
	add(err)
	m.queueDepth, err = meter.Int64ObservableUpDownCounter(metricQueueDepth, metric.WithUnit("{message}"),
		metric.WithDescription("The queue's depth by sqsworker.state (visible, in_flight, delayed), as last read every worker.Options.BacklogInterval (worker.Stats.Backlog); absent when the worker does not read it."))
	add(err)
	m.oldestAge, err = meter.Float64ObservableGauge(metricOldestAge, metric.WithUnit("s"),
		metric.WithDescription("Age at receipt of the oldest message received for the first time in the last one to two minutes (worker.Stats.OldestAge)."))
	add(err)
	add(m.fleet.init(meter))
	add(m.unique.init(meter))
	return errors.Join(errs...)
}

// record adds one settlement to the synchronous instruments.
func (in *Instrumentation) record(s worker.Settlement) {
	queue, url := "", ""
	if s.Message != nil {
		url = s.Message.QueueURL
		queue = queueName(url)
	}
	ctx := context.Background()
	in.m.messages.Add(ctx, 1, in.attrs.get(queue, attrOutcome.String(s.Outcome.String())).add...)
	if s.Outcome == worker.DeadLettered {
		in.m.deadLetters.Add(ctx, 1, in.attrs.get(queue, attrReason.String(deadLetterReason(s.Reason))).add...)
	}
	if s.Message != nil && !s.Message.SentAt.IsZero() && !s.ReceivedAt.IsZero() {
		in.m.inQueue.Record(ctx, max(s.ReceivedAt.Sub(s.Message.SentAt).Seconds(), 0), in.attrs.get(queue).record...)
	}
	if !s.HandlerStart.IsZero() {
		errType := attribute.KeyValue{}
		if s.Err != nil {
			errType = semconv.ErrorTypeKey.String(errorType(s.Err))
		}
		in.m.process.Record(ctx, s.HandlerEnd.Sub(s.HandlerStart).Seconds(), in.attrs.get(queue, semconv.MessagingOperationName("process"), errType).record...)
		if !s.SettledAt.IsZero() {
			in.m.settling.Record(ctx, max(s.SettledAt.Sub(s.HandlerEnd).Seconds(), 0), in.attrs.get(queue).record...)
		}
	}
}

// StatsSource is what ObserveWorker reads: *worker.Worker satisfies it.
type StatsSource interface {
	Stats() worker.Stats
	QueueURL() string
}

// ObserveWorker reports w's counters (worker.Stats) through the asynchronous
// instruments, read when the meter collects: messages received, in flight
// and settling, receive calls by batch size, heartbeat extensions (on time
// and late), late settlements, delete retries, dropped hook events, SQS
// requests by API and result, billed requests and payload by API, and the
// estimated cost (total, and per million messages at the rate so far), and
// the scaling signals (handler slots, runs and busy time, capacity, age of
// the oldest fresh message, and the queue's depth when the worker reads it),
// and whether its ReceiveGate keeps it from receiving (paused).
// Call
// Unregister on the result when the worker is gone.
func (in *Instrumentation) ObserveWorker(w StatsSource) (metric.Registration, error) {
	queue := queueName(w.QueueURL())
	m := &in.m
	base := in.attrs.get(queue).observe
	return m.meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		s := w.Stats()
		o.ObserveInt64(m.consumed, s.Received, in.attrs.get(queue, semconv.MessagingOperationName("receive")).observe...)
		o.ObserveInt64(m.inFlight, s.InFlight, base...)
		o.ObserveInt64(m.settlingNow, s.Settling, base...)
		o.ObserveInt64(m.prefetched, int64(s.Prefetched), base...)
		o.ObserveInt64(m.prefetchTarget, int64(s.PrefetchTarget), base...)
		for n, calls := range s.ReceiveSizes {
			o.ObserveInt64(m.receives, calls, in.attrs.get(queue, semconv.MessagingBatchMessageCount(n)).observe...)
		}
		o.ObserveInt64(m.extensions, s.Extensions, base...)
		o.ObserveInt64(m.lateExtensions, s.LateExtensions, base...)
		o.ObserveInt64(m.late, s.SettledLate, base...)
		o.ObserveInt64(m.deleteRetries, s.DeleteRetried, base...)
		o.ObserveInt64(m.dropped, s.HookDropped, base...)
		for api, results := range s.RequestResults {
			for result, n := range results {
				o.ObserveInt64(m.requests, n, in.attrs.get(queue, semconv.RPCMethod(api), attrResult.String(result)).observe...)
			}
		}
		for api, n := range s.BilledRequests {
			o.ObserveInt64(m.billed, n, in.attrs.get(queue, semconv.RPCMethod(api)).observe...)
		}
		for api, n := range s.PayloadBytes {
			o.ObserveInt64(m.payload, n, in.attrs.get(queue, semconv.RPCMethod(api)).observe...)
		}
		c := s.Cost(in.opts.Pricing)
		o.ObserveFloat64(m.cost, c.USD, base...)
		o.ObserveFloat64(m.costPerMillion, c.USDPerMillionMessages, base...)
		o.ObserveFloat64(m.reqPerMessage, c.RequestsPerMessage, base...)
		o.ObserveInt64(m.slots, int64(s.Concurrency), base...)
		o.ObserveInt64(m.handlerRuns, s.HandlerRuns, base...)
		o.ObserveFloat64(m.handlerTime, s.HandlerTime.Seconds(), base...)
		o.ObserveFloat64(m.capacity, s.Capacity, base...)
		o.ObserveFloat64(m.oldestAge, s.OldestAge.Seconds(), base...)
		o.ObserveInt64(m.fleet.paused, flag(s.Paused), base...)
		if b := s.Backlog; !b.At.IsZero() {
			o.ObserveInt64(m.queueDepth, b.Visible, in.attrs.get(queue, attrState.String("visible")).observe...)
			o.ObserveInt64(m.queueDepth, b.InFlight, in.attrs.get(queue, attrState.String("in_flight")).observe...)
			o.ObserveInt64(m.queueDepth, b.Delayed, in.attrs.get(queue, attrState.String("delayed")).observe...)
		}
		return nil
	}, m.consumed, m.inFlight, m.settlingNow, m.prefetched, m.prefetchTarget, m.receives, m.extensions, m.lateExtensions, m.late, m.deleteRetries,
		m.dropped, m.requests, m.billed, m.payload, m.cost, m.costPerMillion, m.reqPerMessage,
		m.slots, m.handlerRuns, m.handlerTime, m.capacity, m.oldestAge, m.queueDepth, m.fleet.paused)
}

// attrCache keeps one measurement option per attribute combination, so
// recording allocates no attribute set.
type attrCache struct {
	mu sync.Mutex
	m  map[attrKey]*attrOpts
}

// attrOpts holds one attribute set as the option lists Add and Record
// take, so passing them allocates nothing.
type attrOpts struct {
	add    []metric.AddOption
	record []metric.RecordOption
	// observe is the option for observable instruments.
	observe []metric.ObserveOption
}

// attrKey is a queue and up to two extra attributes.
type attrKey struct {
	queue  string
	k1, k2 attribute.Key
	v1, v2 string
}

// get returns the option for the queue's base attributes plus extra (at
// most two; an empty KeyValue is skipped).
func (c *attrCache) get(queue string, extra ...attribute.KeyValue) *attrOpts {
	key := attrKey{queue: queue}
	for i, kv := range extra {
		switch i {
		case 0:
			key.k1, key.v1 = kv.Key, kv.Value.String()
		case 1:
			key.k2, key.v2 = kv.Key, kv.Value.String()
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if opt, ok := c.m[key]; ok {
		return opt
	}
	kvs := []attribute.KeyValue{semconv.MessagingSystemAWSSQS}
	if queue != "" {
		kvs = append(kvs, semconv.MessagingDestinationName(queue))
	}
	for _, kv := range extra {
		if kv.Key != "" {
			kvs = append(kvs, kv)
		}
	}
	opt := metric.WithAttributeSet(attribute.NewSet(kvs...))
	o := &attrOpts{add: []metric.AddOption{opt}, record: []metric.RecordOption{opt}, observe: []metric.ObserveOption{opt}}
	if c.m == nil {
		c.m = map[attrKey]*attrOpts{}
	}
	c.m[key] = o
	return o
}
