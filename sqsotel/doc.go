// Package sqsotel is OpenTelemetry instrumentation for sqsworker: a process
// span per message linked to the producer's span, metrics for every stage
// of a message's life and for the SQS requests (and dollars) it costs, and
// the producer-side injection of the trace context. It lives in a module of
// its own (github.com/sqsworker/sqsworker/sqsotel) and depends on the
// OpenTelemetry API only, so the library's users who do not use it pull in
// nothing; the application brings the SDK and its exporters.
//
// # Wiring
//
// Three hooks, for a worker, and the client wrapper for the receive and send
// spans:
//
//	ins, err := sqsotel.New() // the global tracer and meter providers
//	client := ins.Client(sqs.NewFromConfig(cfg)) // receive and send spans
//	w, err := worker.New(client, queue, worker.Chain(handler, ins.Middleware()),
//		func(o *worker.Options) { o.OnSettled = ins.OnSettled(nil) })
//	reg, err := ins.ObserveWorker(w) // Stats as metrics; reg.Unregister() when done
//	freg, err := ins.ObserveFleet(f) // a *fleet.Fleet's Stats, when the worker uses fleet controls
//	ureg, err := ins.ObserveUnique(keys) // a *unique.Store's Stats, when the jobs carry unique keys
//	p, err := producer.New(client, queue) // its sends get "send QUEUE" spans
//
// and for a Lambda function the same middleware and hook:
//
//	fn, err := sqslambda.New(worker.Chain(handler, ins.Middleware()),
//		func(o *sqslambda.Options) { o.OnSettled = ins.OnSettled(nil) })
//
// The tracer and the meter are those of the instrumentation scope
// "github.com/sqsworker/sqsworker/sqsotel" (for views and filters in the
// SDK).
//
// A worker has a single settlement hook: pass yours to OnSettled, which calls
// it after its own work. The hook runs on the runtime's hook goroutine, never
// on the path of a delete or a heartbeat extension, so a slow or stuck
// exporter cannot delay either (when the hook falls 4,096 events behind the
// runtime drops events and counts them, sqsworker.hook.dropped); a panic in
// the SDK is recovered and fails neither the handler nor the hook.
//
// # Traces
//
// Each delivery of a message gets a span following OTel's messaging
// conventions for aws_sqs: kind CONSUMER, name "process QUEUE", attributes
// messaging.system=aws_sqs, messaging.operation.type and .name=process,
// messaging.destination.name, aws.sqs.queue.url, server.address and
// server.port (the queue URL's host and port, 443 for https),
// messaging.message.id, messaging.message.body.size, and sqsworker.attempt. The handler's context
// carries it. It starts when the handler starts and, with OnSettled wired,
// ends when SQS confirmed the message's fate, with these events:
//
//	sqsworker.handler.returned   the handler returned (its error is recorded; error.type set)
//	sqsworker.heartbeat          one per visibility extension, at its time
//	sqsworker.delete             the delete is confirmed
//	sqsworker.retry              the retry delay is set (sqsworker.delay in seconds, sqsworker.attempt)
//	sqsworker.snooze             the handler snoozed it (sqsworker.delay)
//	sqsworker.delayed            a job not due yet, hidden until its due time (sqsworker.delay)
//	sqsworker.dead_letter        moved to the dead-letter queue (sqsworker.reason)
//	sqsworker.release            made visible again unprocessed (shutdown, FIFO order)
//	sqsworker.lost, .abandoned   ownership lost, settlement not confirmed (sqsworker.reason)
//
// Each carries sqsworker.late=true when SQS confirmed it after the
// visibility deadline. Dead-lettered, lost and abandoned messages end with
// status Error, as do failed handlers. error.type is one of panic, timeout
// (worker.ErrHandlerTimeout), deadline (sqslambda.ErrDeadline), permanent
// (retry.Permanent), snoozed (retry.Snooze) or _OTHER.
//
// The span links to the producer's span context found in the message: the
// W3C traceparent (and tracestate) message attributes, read through
// Options.Propagator, and AWS's AWSTraceHeader system attribute in X-Ray
// format (both, when they name different spans). The conventions advise a
// link, which keeps a long-lived producer trace from growing a child per
// retry; Options.ParentFromMessage makes the producer's span the parent
// instead, for one trace end to end. The span's parent is otherwise the
// handler's context's span: in Lambda the invocation's span (when the
// function is instrumented), in a worker the span of the context given to
// Run — so do not give Run a context that carries a span.
//
// Client adds the two other sides of the conventions, with the same
// queue attributes: a CLIENT span "receive QUEUE" around each ReceiveMessage
// (operation type receive; messaging.batch.message_count, or
// messaging.message.id for one message; a link to each received message's
// producer context), and a PRODUCER span "send QUEUE" around each
// SendMessageBatch — the producer's sends and the worker's dead-letter
// copies (operation type send; the batch's count, or the one message's ID;
// links to the contexts the messages carry). A message sent without a
// context gets the send span's as its AWSTraceHeader system attribute,
// which takes none of SQS's 10 attributes and none of its size limit, so
// the process span links to the send span. A failed call sets error.type to
// SQS's error code.
//
// # Producing: Inject and SQS's 10 attributes
//
// The library's producer takes BeforeSend as a hook
// (producer.Options.BeforeSend); a producer on the SDK calls InjectInput or
// InjectEntry on each message it sends, or Inject on a message's
// attributes. They write traceparent, then tracestate, as String
// message attributes — but SQS allows 10 message attributes per message,
// and these never take a message past it: with 10 already, neither is
// written (Inject returns false); with 9, only traceparent. InjectInput and
// InjectEntry also write the AWSTraceHeader system attribute in X-Ray format
// (unless the X-Ray SDK already set it), which does not count against the
// 10, so a full message still carries its producer's context and the
// process span still links to it. A full message's dead-letter copy keeps
// its AWSTraceHeader (package dlq copies it).
//
// # Metrics
//
// OTel names, and the names Prometheus sees through OTel's Prometheus
// exporter. Every metric carries messaging.system=aws_sqs and
// messaging.destination.name (the queue). The first five come from the
// settlement hook (a worker and a Lambda function alike), the rest from
// ObserveWorker, read from worker.Stats at each collection:
//
//	sqsworker.messages{sqsworker.outcome}          sqsworker_messages_total                   deleted, retrying, dead-lettered, released, lost, abandoned, snoozed, delayed
//	sqsworker.dead_letters{sqsworker.reason}       sqsworker_dead_letters_total               permanent, exhausted, other
//	messaging.process.duration{error.type}         messaging_process_duration_seconds         the handler's run
//	sqsworker.time_in_queue                        sqsworker_time_in_queue_seconds            receive − SentTimestamp
//	sqsworker.settle.duration                      sqsworker_settle_duration_seconds          handler's return → SQS confirmed
//	messaging.client.consumed.messages             messaging_client_consumed_messages_total   messages received
//	sqsworker.messages.in_flight                   sqsworker_messages_in_flight               held now (includes prefetched)
//	sqsworker.messages.settling                    sqsworker_messages_settling                awaiting SQS's confirmation now
//	sqsworker.messages.prefetched                  sqsworker_messages_prefetched              received ahead of a free handler now
//	sqsworker.prefetch.target                      sqsworker_prefetch_target                  the adaptive prefetch's aim now
//	sqsworker.receives{messaging.batch.message_count} sqsworker_receives_total                receive calls by messages returned (0–10)
//	sqsworker.heartbeat.extensions                 sqsworker_heartbeat_extensions_total       extensions confirmed on time
//	sqsworker.heartbeat.late_extensions            sqsworker_heartbeat_late_extensions_total  extensions confirmed too late
//	sqsworker.settlements.late                     sqsworker_settlements_late_total           settlements confirmed after the deadline
//	sqsworker.deletes.retried                      sqsworker_deletes_retried_total            deletes sent again
//	sqsworker.hook.dropped                         sqsworker_hook_dropped_total               settlement events the hook missed
//	sqsworker.sqs.requests{rpc.method, sqsworker.result} sqsworker_sqs_requests_total         SQS calls by API and result
//	sqsworker.sqs.billed_requests{rpc.method}      sqsworker_sqs_billed_requests_total        calls as billed (64 KiB chunks)
//	sqsworker.sqs.payload{rpc.method}              sqsworker_sqs_payload_bytes_total          message payload moved
//	sqsworker.cost.usd                             sqsworker_cost_usd_total                   estimated price so far
//	sqsworker.cost.usd_per_million_messages        sqsworker_cost_usd_per_million_messages    estimated price of a million messages at this rate
//	sqsworker.sqs.requests_per_message             sqsworker_sqs_requests_per_message         calls per message received
//	sqsworker.handler.slots                        sqsworker_handler_slots                    handler slots (Options.Concurrency)
//	sqsworker.handler.runs                         sqsworker_handler_runs_total               messages that held a slot and gave it back
//	sqsworker.handler.busy_time                    sqsworker_handler_busy_time_seconds_total  time messages held a slot
//	sqsworker.capacity                             sqsworker_capacity                         messages/s with every slot busy (slots ÷ mean handler time)
//	sqsworker.oldest_message.age                   sqsworker_oldest_message_age_seconds       age at receipt of the oldest fresh message, last 1–2 min
//	sqsworker.queue.messages{sqsworker.state}      sqsworker_queue_messages                   the queue's depth: visible, in_flight, delayed (Options.BacklogInterval)
//	sqsworker.receiving.paused                     sqsworker_receiving_paused                 1 while Options.ReceiveGate keeps the worker from receiving
//
// The last six are the scaling signals (worker.Stats.Capacity and its
// neighbours; the queue's depth only when worker.Options.BacklogInterval
// is set): per-worker capacity, and, summed over the fleet,
// sum(rate(busy_time)) / sum(rate(runs)) is the mean handler time and
// sum(slots) / that mean the fleet's capacity. `sqsworker template
// --scaling` turns them into a KEDA, ECS or Lambda scaling configuration.
//
// # Fleet controls
//
// ObserveFleet(f) reports a *fleet.Fleet's counters (fleet.Stats) for the
// controls package fleet shares across a fleet of workers; these carry
// messaging.system only (a queue's pause switch also
// messaging.destination.name), since a control serves any queue:
//
//	sqsworker.fleet.requests{sqsworker.result}     sqsworker_fleet_requests_total             DynamoDB calls: ok, error
//	sqsworker.fleet.tokens                         sqsworker_fleet_tokens_total               rate-limit tokens taken
//	sqsworker.fleet.token_waits                    sqsworker_fleet_token_waits_total          jobs that waited in-process for a token
//	sqsworker.fleet.waiting{sqsworker.control}     sqsworker_fleet_waiting                    jobs waiting in-process now: rate_limit (a token), cap (a slot)
//	sqsworker.fleet.snoozed{sqsworker.control}     sqsworker_fleet_snoozed_total              jobs snoozed: rate_limit, cap (waiting for a slot), breaker, pause
//	sqsworker.fleet.fallbacks{sqsworker.fallback}  sqsworker_fleet_fallbacks_total            DynamoDB unreachable: open (run unchecked), closed (snoozed)
//	sqsworker.fleet.slots.held                     sqsworker_fleet_slots_held                 cap slots held now
//	sqsworker.fleet.slots.lost                     sqsworker_fleet_slots_lost_total           slots found gone at renewal
//	sqsworker.fleet.unkeyed                        sqsworker_fleet_unkeyed_total              messages a rate limit's or cap's key function gave no key (ByGroup: no MessageGroupId)
//	sqsworker.fleet.queue.paused                   sqsworker_fleet_queue_paused               1 while the queue is paused (as last read)
//	sqsworker.fleet.breaker.state{sqsworker.breaker, sqsworker.state} sqsworker_fleet_breaker_state  1 for the state each breaker is in, 0 for the others
//
// ObserveUnique(store) reports a *unique.Store's counters (unique.Stats):
//
//	sqsworker.unique.sends{sqsworker.result}      sqsworker_unique_sends_total               sends: claimed, refused (duplicate), debounced, failed_open, send_error
//	sqsworker.unique.keys.held                    sqsworker_unique_keys_held                 keys claimed minus keys freed by this process; summed over a table's processes, the keys held
//	sqsworker.unique.released                     sqsworker_unique_released_total            keys freed by a settled job or Release
//	sqsworker.unique.recovered                    sqsworker_unique_recovered_total           keys taken over after their expiry (a lost job, a release that never came)
//	sqsworker.unique.release_errors               sqsworker_unique_release_errors_total      failed releases: the key is held until its expiry
//	sqsworker.unique.requests{sqsworker.result}   sqsworker_unique_requests_total            DynamoDB calls: ok, error
//
// Alert on sqsworker_unique_release_errors_total and on
// sqsworker_unique_recovered_total (each is a key held past its job).
//
// Alert on a breaker left open (sqsworker_fleet_breaker_state{sqsworker_state="open"} == 1 for
// minutes), on rate(sqsworker_fleet_snoozed_total) against the receive rate
// (each snooze costs a receive, and on a FIFO queue counts toward its
// maxReceiveCount: see package fleet), on sqsworker_fleet_fallbacks_total,
// and on sqsworker_fleet_unkeyed_total when every message should carry a
// group.
//
// sqsworker.result is ok, throttled, transient, stale, maxed-out, fatal,
// invalid or canceled (worker.Stats.RequestResults). The cost follows
// worker.Stats.Cost: billed requests (each call one request per started
// 64 KiB of payload, at least one) × Options.Pricing's price per million.
//
// After Run returns, the settlement-hook metrics equal the worker's Stats
// (sqsworker.messages by outcome equals Deleted, Retried, DeadLettered, …)
// unless the hook dropped events, which sqsworker.hook.dropped shows.
//
// # Prometheus
//
// examples/prometheus in this module serves these metrics on /metrics with
// OTel's Prometheus exporter, chosen over a client_golang collector of our
// own because the instruments are OTel instruments already: the same code
// then feeds OTLP and Prometheus, and the exporter applies Prometheus's
// naming rules (units as suffixes, _total on counters). The one-liner:
//
//	exporter, err := otelprom.New() // go.opentelemetry.io/otel/exporters/prometheus
//	otel.SetMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter)))
//	http.Handle("/metrics", promhttp.Handler())
package sqsotel
