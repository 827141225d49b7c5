package sqsotel

import (
	"context"
	"errors"
	"fmt"
	neturl "net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/worker"
	"github.com/sqsworker/sqsworker/worker/sqslambda"
)

// scopeName is the instrumentation scope of the tracer and the meter (the
// package doc gives it to users).
const scopeName = "github.com/sqsworker/sqsworker/sqsotel"

// Options configures an Instrumentation. Every field's zero value selects
// the documented default; pass functions that set fields to New.
type Options struct {
	// TracerProvider makes the process spans. Zero value:
	// otel.GetTracerProvider(), the global one (a no-op until the
	// application installs an SDK).
	TracerProvider trace.TracerProvider
	// MeterProvider makes the instruments. Zero value:
	// otel.GetMeterProvider().
	MeterProvider metric.MeterProvider
	// Propagator reads the producer's context from a message's attributes.
	// Zero value: W3C Trace Context (traceparent, tracestate), what Inject
	// writes. The AWSTraceHeader system attribute (X-Ray) is read in any
	// case.
	Propagator propagation.TextMapPropagator
	// ParentFromMessage makes the producer's context the parent of the
	// process span, so producer and consumer share one trace. Zero value:
	// false — as OTel's messaging conventions advise, the process span
	// links to the producer's context and keeps the parent the handler's
	// context had (in Lambda, the invocation's span; in a worker, usually
	// none, so each message starts a trace).
	ParentFromMessage bool
	// Pricing prices the SQS requests in the cost metrics (see
	// worker.Stats.Cost). Zero value: worker.PriceStandard per million
	// requests, 64 KiB billing chunks.
	Pricing worker.Pricing
}

// Instrumentation traces and measures the messages of workers and Lambda
// handlers. Wire it in at three places: Middleware around the handler,
// OnSettled as the settlement hook, and ObserveWorker for the worker's
// counters. One Instrumentation serves any number of workers and queues; it
// is safe for concurrent use.
type Instrumentation struct {
	opts   Options
	tracer trace.Tracer
	m      instruments
	attrs  attrCache

	settledWired atomic.Bool // OnSettled was called: spans end there
	mu           sync.Mutex
	pending      map[string]*pendingSpan // by receipt handle, until settled
	inserts      int
	queues       map[string]*queueInfo // by queue URL
}

// pendingSpan is a process span whose handler has returned and whose
// settlement is not known yet.
type pendingSpan struct {
	span  trace.Span
	since time.Time
}

// New returns an Instrumentation. It fails only when the meter provider
// refuses an instrument.
func New(optFns ...func(*Options)) (*Instrumentation, error) {
	var o Options
	for _, fn := range optFns {
		fn(&o)
	}
	if o.TracerProvider == nil {
		o.TracerProvider = otel.GetTracerProvider()
	}
	if o.MeterProvider == nil {
		o.MeterProvider = otel.GetMeterProvider()
	}
	if o.Propagator == nil {
		o.Propagator = propagation.TraceContext{}
	}
	in := &Instrumentation{opts: o, tracer: o.TracerProvider.Tracer(scopeName), pending: map[string]*pendingSpan{}}
	if err := in.m.init(o.MeterProvider.Meter(scopeName)); err != nil {
		return nil, fmt.Errorf("sqsotel: %w", err)
	}
	return in, nil
}

// Middleware returns the worker.Middleware that runs each message's
// handler inside a process span: a CONSUMER span named "process QUEUE" with
// OTel's messaging attributes for aws_sqs, linked to the producer's span
// context found in the message (W3C traceparent message attribute, or the
// AWSTraceHeader system attribute). The handler's context carries the
// span, so the handler's own spans and outgoing calls are its children.
// With OnSettled wired, the span stays open until SQS has confirmed the
// message's fate and records it; without, it ends when the handler
// returns. A failure in the tracing SDK never fails the handler.
func (in *Instrumentation) Middleware() worker.Middleware {
	return func(next worker.Handler) worker.Handler {
		return worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			ctx, span := in.start(ctx, m)
			// The settlement names the message as received: key the span
			// by its handle now, as the handler may change its copy.
			handle := m.ReceiptHandle
			returned := false
			defer func() {
				if !returned { // the handler panicked; the runtime recovers it
					in.handlerDone(span, handle, worker.ErrPanic)
				}
			}()
			err := next.Handle(ctx, m)
			returned = true
			in.handlerDone(span, handle, err)
			return err
		})
	}
}

// start opens the process span; on a panic in the SDK it returns ctx
// without a span. The attributes a sampler may look at are given at the
// start (prebuilt per queue); the per-message ones only to a span that
// records.
func (in *Instrumentation) start(parent context.Context, m *worker.Message) (ctx context.Context, span trace.Span) {
	defer func() {
		if recover() != nil {
			ctx, span = parent, nil
		}
	}()
	ctx = parent
	q := in.queueOf(m.QueueURL)
	opts := q.startOptions
	producers := producerContexts(in.opts.Propagator, m.MessageAttributes, m.Attributes)
	if len(producers) > 0 {
		opts = append(opts[:len(opts):len(opts)], trace.WithLinks(links(producers)...))
		if in.opts.ParentFromMessage {
			ctx = trace.ContextWithRemoteSpanContext(ctx, producers[0])
		}
	}
	ctx, span = in.tracer.Start(ctx, q.spanName, opts...)
	if span.IsRecording() {
		span.SetAttributes(
			semconv.MessagingMessageID(m.ID),
			semconv.MessagingMessageBodySize(len(m.Body)),
			attribute.Int("sqsworker.attempt", m.Attempt),
		)
	}
	return ctx, span
}

func links(scs []trace.SpanContext) []trace.Link {
	out := make([]trace.Link, len(scs))
	for i, sc := range scs {
		out[i] = trace.Link{SpanContext: sc}
	}
	return out
}

// queueInfo is what the spans of one queue share: per operation (process,
// receive, send), the span name and the start options.
type queueInfo struct {
	spanName     string
	startOptions []trace.SpanStartOption
	receiveName  string
	receiveOpts  []trace.SpanStartOption
	sendName     string
	sendOpts     []trace.SpanStartOption
}

// queueOf returns the queue's shared span names and start options.
func (in *Instrumentation) queueOf(url string) *queueInfo {
	in.mu.Lock()
	defer in.mu.Unlock()
	if q, ok := in.queues[url]; ok {
		return q
	}
	base := []attribute.KeyValue{semconv.MessagingSystemAWSSQS}
	suffix := ""
	if name := queueName(url); name != "" {
		base = append(base, semconv.MessagingDestinationName(name), semconv.AWSSQSQueueURL(url))
		suffix = " " + name
	}
	if host, port, ok := serverOf(url); ok {
		base = append(base, semconv.ServerAddress(host), semconv.ServerPort(port))
	}
	with := func(kind trace.SpanKind, attrs ...attribute.KeyValue) []trace.SpanStartOption {
		return []trace.SpanStartOption{trace.WithSpanKind(kind), trace.WithAttributes(append(slices.Clip(base), attrs...)...)}
	}
	q := &queueInfo{
		spanName:     "process" + suffix,
		startOptions: with(trace.SpanKindConsumer, semconv.MessagingOperationTypeProcess, semconv.MessagingOperationName("process")),
		receiveName:  "receive" + suffix,
		receiveOpts:  with(trace.SpanKindClient, semconv.MessagingOperationTypeReceive, semconv.MessagingOperationName("ReceiveMessage")),
		sendName:     "send" + suffix,
		sendOpts:     with(trace.SpanKindProducer, semconv.MessagingOperationTypeSend, semconv.MessagingOperationName("SendMessageBatch")),
	}
	if in.queues == nil {
		in.queues = map[string]*queueInfo{}
	}
	in.queues[url] = q
	return q
}

// serverOf returns the host and port of a queue URL: server.address and
// server.port, the port being the scheme's when the URL gives none.
func serverOf(queueURL string) (string, int, bool) {
	u, err := neturl.Parse(queueURL)
	if err != nil || u.Hostname() == "" {
		return "", 0, false
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		return u.Hostname(), n, err == nil
	}
	switch u.Scheme {
	case "https":
		return u.Hostname(), 443, true
	case "http":
		return u.Hostname(), 80, true
	}
	return u.Hostname(), 0, false
}

// handlerDone records the handler's result and hands the span to the
// settlement hook (or ends it, without one).
func (in *Instrumentation) handlerDone(span trace.Span, handle string, err error) {
	if span == nil {
		return
	}
	defer func() { _ = recover() }()
	if err != nil {
		span.SetAttributes(semconv.ErrorTypeKey.String(errorType(err)))
		span.SetStatus(codes.Error, err.Error())
		span.RecordError(err)
	}
	if !in.settledWired.Load() || handle == "" || !span.IsRecording() {
		span.End()
		return
	}
	now := time.Now()
	span.AddEvent("sqsworker.handler.returned", trace.WithTimestamp(now))
	in.mu.Lock()
	in.pending[handle] = &pendingSpan{span: span, since: now}
	in.inserts++
	var stale []*pendingSpan
	if in.inserts%sweepEvery == 0 || len(in.pending) > maxPending {
		stale = in.sweepLocked(now)
	}
	in.mu.Unlock()
	for _, p := range stale {
		p.span.AddEvent("sqsworker.unsettled")
		p.span.End()
	}
}

const (
	// sweepEvery is how many handler returns pass between sweeps of spans
	// whose settlement never came (the hook dropped it).
	sweepEvery = 1024
	// maxPending bounds the spans awaiting their settlement; a sweep over
	// it keeps the newest pendingKeep.
	maxPending  = 1 << 16
	pendingKeep = maxPending - maxPending/8
	// pendingLimit is how long a span may await its settlement: longer
	// than SQS's 12-hour limit, after which no settlement can come.
	pendingLimit = 13 * time.Hour
)

// sweepLocked removes spans that waited too long and, when more than
// maxPending wait, the oldest ones — those most likely to have lost their
// settlement — down to pendingKeep, so that an overload sorts them only
// once every maxPending−pendingKeep inserts.
func (in *Instrumentation) sweepLocked(now time.Time) []*pendingSpan {
	var out []*pendingSpan
	for k, p := range in.pending {
		if now.Sub(p.since) > pendingLimit {
			out = append(out, p)
			delete(in.pending, k)
		}
	}
	if len(in.pending) <= maxPending {
		return out
	}
	type entry struct {
		handle string
		p      *pendingSpan
	}
	all := make([]entry, 0, len(in.pending))
	for k, p := range in.pending {
		all = append(all, entry{k, p})
	}
	slices.SortFunc(all, func(a, b entry) int { return a.p.since.Compare(b.p.since) })
	for _, e := range all[:len(all)-pendingKeep] {
		out = append(out, e.p)
		delete(in.pending, e.handle)
	}
	return out
}

// OnSettled returns the settlement hook to set as worker.Options.OnSettled
// or sqslambda.Options.OnSettled: it records each settlement in the metrics,
// adds the heartbeat extensions and the outcome (delete, retry with its
// delay, dead-letter move with its reason, release, loss) to the message's
// process span as events, and ends the span at the moment SQS confirmed.
// Then it calls next, if not nil: a worker has one settlement hook, so
// chain yours here. The runtime calls the hook on a goroutine of its own,
// so a slow exporter never delays settlement or the heartbeat; a panic in
// the SDK is recovered and next still runs.
func (in *Instrumentation) OnSettled(next func(worker.Settlement)) func(worker.Settlement) {
	in.settledWired.Store(true)
	return func(s worker.Settlement) {
		in.settled(s)
		if next != nil {
			next(s)
		}
	}
}

func (in *Instrumentation) settled(s worker.Settlement) {
	defer func() { _ = recover() }()
	in.record(s)
	if s.Message == nil {
		return
	}
	in.mu.Lock()
	p := in.pending[s.Message.ReceiptHandle]
	delete(in.pending, s.Message.ReceiptHandle)
	in.mu.Unlock()
	if p == nil {
		return
	}
	span := p.span
	for _, t := range s.Extensions {
		span.AddEvent("sqsworker.heartbeat", trace.WithTimestamp(t))
	}
	at := s.SettledAt
	if at.IsZero() {
		at = time.Now()
	}
	name, attrs := settlementEvent(s)
	span.AddEvent(name, trace.WithTimestamp(at), trace.WithAttributes(attrs...))
	span.SetAttributes(attribute.String("sqsworker.outcome", s.Outcome.String()))
	switch s.Outcome {
	case worker.DeadLettered, worker.Lost, worker.Abandoned:
		span.SetStatus(codes.Error, s.Outcome.String()+": "+s.Reason)
	}
	span.End(trace.WithTimestamp(at))
}

// settlementEvent names the span event of a settlement.
func settlementEvent(s worker.Settlement) (string, []attribute.KeyValue) {
	attrs := []attribute.KeyValue{attribute.Bool("sqsworker.late", s.Late)}
	switch s.Outcome {
	case worker.Deleted:
		return "sqsworker.delete", attrs
	case worker.Retrying:
		return "sqsworker.retry", append(attrs, attribute.Float64("sqsworker.delay", s.Delay.Seconds()), attribute.Int("sqsworker.attempt", s.Attempt))
	case worker.Snoozed:
		return "sqsworker.snooze", append(attrs, attribute.Float64("sqsworker.delay", s.Delay.Seconds()))
	case worker.Delayed:
		return "sqsworker.delayed", append(attrs, attribute.Float64("sqsworker.delay", s.Delay.Seconds()))
	case worker.DeadLettered:
		return "sqsworker.dead_letter", append(attrs, attribute.String("sqsworker.reason", s.Reason))
	case worker.Released:
		return "sqsworker.release", attrs
	case worker.Lost:
		return "sqsworker.lost", append(attrs, attribute.String("sqsworker.reason", s.Reason))
	}
	return "sqsworker.abandoned", append(attrs, attribute.String("sqsworker.reason", s.Reason))
}

// errorType is the error.type of a handler error: low cardinality, as the
// conventions ask.
func errorType(err error) string {
	switch {
	case errors.Is(err, worker.ErrPanic):
		return "panic"
	case errors.Is(err, worker.ErrHandlerTimeout):
		return "timeout"
	case errors.Is(err, sqslambda.ErrDeadline):
		return "deadline"
	case errors.Is(err, retry.ErrPermanent):
		return "permanent"
	}
	if se := new(retry.SnoozeError); errors.As(err, &se) {
		return "snoozed"
	}
	return semconv.ErrorTypeOther.Value.AsString()
}

// deadLetterReason is the low-cardinality reason of a dead-letter move.
func deadLetterReason(reason string) string {
	switch {
	case strings.HasPrefix(reason, "permanent"):
		return "permanent"
	case strings.HasPrefix(reason, "retries exhausted"):
		return "exhausted"
	}
	return "other"
}

// queueName is the last path segment of a queue URL.
func queueName(url string) string {
	return url[strings.LastIndexByte(url, '/')+1:]
}
