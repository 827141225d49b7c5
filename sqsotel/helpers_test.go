package sqsotel_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/sqsotel"
	"github.com/sqsworker/sqsworker/sqstest"
	"github.com/sqsworker/sqsworker/worker"
)

var quiet = slog.New(slog.DiscardHandler)

// telemetry is an OTel SDK with in-memory exporters and an Instrumentation
// on it.
type telemetry struct {
	spans  *tracetest.SpanRecorder
	tp     *sdktrace.TracerProvider
	reader *sdkmetric.ManualReader
	mp     *sdkmetric.MeterProvider
	ins    *sqsotel.Instrumentation
}

func newTelemetry(t *testing.T, optFns ...func(*sqsotel.Options)) *telemetry {
	t.Helper()
	tel := &telemetry{spans: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader()}
	tel.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tel.spans))
	tel.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(tel.reader))
	opts := append([]func(*sqsotel.Options){func(o *sqsotel.Options) {
		o.TracerProvider, o.MeterProvider = tel.tp, tel.mp
	}}, optFns...)
	ins, err := sqsotel.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	tel.ins = ins
	return tel
}

// collect reads every metric.
func (tel *telemetry) collect(t *testing.T) metricdata.ResourceMetrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := tel.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	return rm
}

// find returns the metric called name.
func find(rm metricdata.ResourceMetrics, name string) (metricdata.Metrics, bool) {
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				return m, true
			}
		}
	}
	return metricdata.Metrics{}, false
}

// matches reports whether set has every key=value of want.
func matches(set attribute.Set, want map[string]string) bool {
	for k, v := range want {
		got, ok := set.Value(attribute.Key(k))
		if !ok || got.String() != v {
			return false
		}
	}
	return true
}

// value sums the points of metric name whose attributes match want: the
// sum for counters and gauges, the count for histograms.
func value(t *testing.T, rm metricdata.ResourceMetrics, name string, want map[string]string) float64 {
	t.Helper()
	m, ok := find(rm, name)
	if !ok {
		t.Errorf("no metric %s", name)
		return 0
	}
	var v float64
	switch d := m.Data.(type) {
	case metricdata.Sum[int64]:
		for _, p := range d.DataPoints {
			if matches(p.Attributes, want) {
				v += float64(p.Value)
			}
		}
	case metricdata.Sum[float64]:
		for _, p := range d.DataPoints {
			if matches(p.Attributes, want) {
				v += p.Value
			}
		}
	case metricdata.Gauge[int64]:
		for _, p := range d.DataPoints {
			if matches(p.Attributes, want) {
				v += float64(p.Value)
			}
		}
	case metricdata.Gauge[float64]:
		for _, p := range d.DataPoints {
			if matches(p.Attributes, want) {
				v += p.Value
			}
		}
	case metricdata.Histogram[float64]:
		for _, p := range d.DataPoints {
			if matches(p.Attributes, want) {
				v += float64(p.Count)
			}
		}
	default:
		t.Fatalf("metric %s: unexpected data %T", name, m.Data)
	}
	return v
}

// fixedPolicy retries n times after d each.
func fixedPolicy(n int, d time.Duration) retry.Policy {
	return retry.PolicyFunc(func(attempt int) (time.Duration, bool) { return d, attempt <= n })
}

// The scenario's messages, by body: what the handler does with each.
const (
	okJob     = "ok"     // succeeds
	fullJob   = "full"   // succeeds; sent with 10 message attributes, so no room for traceparent
	flakyJob  = "flaky"  // fails once, then succeeds
	poisonJob = "poison" // retry.Permanent: to the DLQ at once
	doomedJob = "doomed" // fails every time: retried once, then exhausted
	longJob   = "long"   // runs 70 s on a 30 s visibility timeout: extended by the heartbeat
)

var jobs = []string{okJob, fullJob, flakyJob, poisonJob, doomedJob, longJob}

func scenarioHandler(ctx context.Context, m *worker.Message) error {
	switch m.Body {
	case flakyJob:
		if m.Attempt == 1 {
			return errors.New("flaky: try again")
		}
	case poisonJob:
		return retry.Permanent(errors.New("cannot parse"))
	case doomedJob:
		return fmt.Errorf("doomed: attempt %d", m.Attempt)
	case longJob:
		select {
		case <-time.After(70 * time.Second):
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	return nil
}

// scenario is what one run of the scripted scenario left.
type scenario struct {
	stats    worker.Stats
	producer map[string]trace.SpanContext // each job's producer span
	ids      map[string]string            // each job's message ID
	hooked   []worker.Settlement          // what the chained hook saw
}

// runScenario sends the jobs, each from a producer span whose context
// InjectInput adds, runs a worker with the instrumentation until every job
// is settled, and stops it. Call it inside a synctest bubble.
func runScenario(t *testing.T, tel *telemetry, optFns ...func(*worker.Options)) scenario {
	t.Helper()
	f := sqstest.For(t)
	src, _ := f.MustCreateQueueWithDLQ(t, "jobs", 10, map[string]string{"VisibilityTimeout": "30"})
	sc := scenario{producer: map[string]trace.SpanContext{}, ids: map[string]string{}}
	producer := tel.tp.Tracer("producer")
	for _, body := range jobs {
		ctx, span := producer.Start(context.Background(), "send jobs", trace.WithSpanKind(trace.SpanKindProducer))
		in := &sqs.SendMessageInput{QueueUrl: aws.String(src), MessageBody: aws.String(body)}
		if body == fullJob {
			in.MessageAttributes = map[string]types.MessageAttributeValue{}
			for i := range 10 {
				in.MessageAttributes["a"+strconv.Itoa(i)] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String("v")}
			}
		}
		sqsotel.InjectInput(ctx, in)
		out, err := f.SendMessage(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		sc.ids[body] = aws.ToString(out.MessageId)
		sc.producer[body] = span.SpanContext()
		span.End()
	}
	hooked := make(chan worker.Settlement, 100)
	opts := append([]func(*worker.Options){func(o *worker.Options) {
		o.Logger = quiet
		o.RetryPolicy = fixedPolicy(1, 5*time.Second)
		o.OnSettled = tel.ins.OnSettled(func(s worker.Settlement) { hooked <- s })
	}}, optFns...)
	w, err := worker.New(f, src, worker.Chain(worker.HandlerFunc(scenarioHandler), tel.ins.Middleware()), opts...)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := tel.ins.ObserveWorker(w)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reg.Unregister() })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- w.Run(ctx) }()
	time.Sleep(100 * time.Second)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	close(hooked)
	for s := range hooked {
		sc.hooked = append(sc.hooked, s)
	}
	sc.stats = w.Stats()
	return sc
}

// processSpans returns the ended process spans of the message, in start
// order.
func processSpans(tel *telemetry, id string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range tel.spans.Ended() {
		if s.SpanKind() == trace.SpanKindConsumer && attr(s.Attributes(), "messaging.message.id") == id {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b sdktrace.ReadOnlySpan) int { return a.StartTime().Compare(b.StartTime()) })
	return out
}

func attr(kvs []attribute.KeyValue, key string) string {
	for _, kv := range kvs {
		if string(kv.Key) == key {
			return kv.Value.String()
		}
	}
	return ""
}

// eventNames lists a span's events.
func eventNames(s sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, e := range s.Events() {
		out = append(out, e.Name)
	}
	return out
}
