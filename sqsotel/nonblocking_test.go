package sqsotel_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/sqsworker/sqsworker/sqsotel"
	"github.com/sqsworker/sqsworker/sqstest"
	"github.com/sqsworker/sqsworker/worker"
)

// stuckSpans is a span exporter that blocks until released.
type stuckSpans struct {
	release chan struct{}
	calls   atomic.Int64
}

func (e *stuckSpans) ExportSpans(ctx context.Context, _ []sdktrace.ReadOnlySpan) error {
	e.calls.Add(1)
	<-e.release
	return nil
}
func (e *stuckSpans) Shutdown(context.Context) error { return nil }

// stuckMetrics is a metric exporter that blocks until released.
type stuckMetrics struct {
	release chan struct{}
	calls   atomic.Int64
}

func (e *stuckMetrics) Temporality(k sdkmetric.InstrumentKind) metricdata.Temporality {
	return sdkmetric.DefaultTemporalitySelector(k)
}
func (e *stuckMetrics) Aggregation(k sdkmetric.InstrumentKind) sdkmetric.Aggregation {
	return sdkmetric.DefaultAggregationSelector(k)
}
func (e *stuckMetrics) Export(ctx context.Context, _ *metricdata.ResourceMetrics) error {
	e.calls.Add(1)
	<-e.release
	return nil
}
func (e *stuckMetrics) ForceFlush(context.Context) error { return nil }
func (e *stuckMetrics) Shutdown(context.Context) error   { return nil }

// panicky is a span processor that panics on every span, at its start (in
// the handler's goroutine) and at its end (in the settlement hook's).
type panicky struct{}

func (panicky) OnStart(context.Context, sdktrace.ReadWriteSpan) { panic("span processor: OnStart") }
func (panicky) OnEnd(sdktrace.ReadOnlySpan)                     { panic("span processor: OnEnd") }
func (panicky) Shutdown(context.Context) error                  { return nil }
func (panicky) ForceFlush(context.Context) error                { return nil }

// deadlineRun runs 50 quick jobs and a long one (70 s on a 30 s visibility
// timeout) through a worker wired with ins, and checks that the deletes and
// the heartbeat keep their times: the quick jobs deleted within a second,
// the long job extended on time and deleted, nothing lost or late.
func deadlineRun(t *testing.T, ins *sqsotel.Instrumentation, next func(worker.Settlement)) worker.Stats {
	t.Helper()
	f := sqstest.For(t)
	src, _ := f.MustCreateQueueWithDLQ(t, "jobs", 10, map[string]string{"VisibilityTimeout": "30"})
	f.MustSend(t, src, longJob)
	for range 50 {
		f.MustSend(t, src, okJob)
	}
	w, err := worker.New(f, src, worker.Chain(worker.HandlerFunc(scenarioHandler), ins.Middleware()), func(o *worker.Options) {
		o.Logger = quiet
		o.Concurrency = 60
		o.OnSettled = ins.OnSettled(next)
		o.FlushTimeout = time.Second
	})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := ins.ObserveWorker(w)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Unregister()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- w.Run(ctx) }()
	time.Sleep(time.Second)
	if s := w.Stats(); s.Deleted != 50 || s.Failed != 0 {
		t.Errorf("after 1 s: %d deleted, %d failed; want the 50 quick jobs deleted, none failed", s.Deleted, s.Failed)
	}
	time.Sleep(80 * time.Second)
	s := w.Stats()
	if s.Deleted != 51 || s.Extensions < 2 || s.LateExtensions != 0 || s.Lost != 0 || s.SettledLate != 0 || s.Retried != 0 {
		t.Errorf("after 81 s: %+v; want 51 deleted, the long job extended on time, nothing lost, late or retried", s)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	return s
}

// A span exporter and a metric exporter that never return do not delay a
// delete or a heartbeat extension.
func TestStuckExportersDelayNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		spans := &stuckSpans{release: make(chan struct{})}
		metrics := &stuckMetrics{release: make(chan struct{})}
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sdktrace.NewSimpleSpanProcessor(spans)))
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(metrics, sdkmetric.WithInterval(time.Second))))
		ins, err := sqsotel.New(func(o *sqsotel.Options) { o.TracerProvider, o.MeterProvider = tp, mp })
		if err != nil {
			t.Fatal(err)
		}
		s := deadlineRun(t, ins, nil)
		if spans.calls.Load() == 0 || metrics.calls.Load() == 0 {
			t.Errorf("exporters called %d and %d times; the test needs them stuck", spans.calls.Load(), metrics.calls.Load())
		}
		if s.HookDropped != 0 {
			t.Logf("hook dropped %d events while stuck", s.HookDropped)
		}
		close(spans.release)
		close(metrics.release)
		_ = mp.Shutdown(context.Background())
		_ = tp.Shutdown(context.Background())
	})
}

// A span processor that panics at every span's start and end, and a
// chained hook that panics too, do not fail a handler or delay a delete;
// the metrics are still recorded and the chained hook still called.
func TestPanickingSDKAndHookDelayNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reader := sdkmetric.NewManualReader()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(panicky{}))
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
		ins, err := sqsotel.New(func(o *sqsotel.Options) { o.TracerProvider, o.MeterProvider = tp, mp })
		if err != nil {
			t.Fatal(err)
		}
		var hooked atomic.Int64
		s := deadlineRun(t, ins, func(worker.Settlement) {
			hooked.Add(1)
			panic("the application's hook")
		})
		if hooked.Load() != s.Received {
			t.Errorf("chained hook called %d times, want %d", hooked.Load(), s.Received)
		}
		var rm metricdata.ResourceMetrics
		if err := reader.Collect(context.Background(), &rm); err != nil {
			t.Fatal(err)
		}
		if got := value(t, rm, "sqsworker.messages", map[string]string{"sqsworker.outcome": "deleted"}); got != 51 {
			t.Errorf("sqsworker.messages{deleted} = %v, want 51", got)
		}
	})
}
