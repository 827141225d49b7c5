package sqsotel_test

import (
	"context"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/harness/testenv"
	"github.com/sqsworker/sqsworker/sqsotel"
	"github.com/sqsworker/sqsworker/sqstest"
	"github.com/sqsworker/sqsworker/worker"
)

// The instrumentation's overhead: each op runs one round of benchMessages
// messages through a plain worker and one through an instrumented worker,
// back to back, each on a fresh in-memory queue, with a no-op handler at
// Concurrency 50 (as worker's BenchmarkWorker). CPU and allocations are the
// whole process's from Run's start to its return (the settlement hook's
// tail included), per message.
const (
	benchMessages    = 5000
	benchConcurrency = 50
)

type cost struct{ msgs, mallocs, cpuNano float64 }

func usage() (mallocs uint64, cpu time.Duration) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ms.Mallocs, time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// backend makes a fresh queue with a dead-letter queue for one round and
// returns the client to reach it and a function that drops it.
type backend struct {
	name  string
	queue func(b *testing.B) (client worker.API, url string, drop func())
}

// round handles benchMessages messages with a worker and adds what it cost
// to c. With ins, the worker's settlement hook and Stats are instrumented,
// and with traced its handler too (Middleware); hook, when not nil, is the
// settlement hook instead.
func round(b *testing.B, be backend, ins *sqsotel.Instrumentation, traced bool, hook func(worker.Settlement), c *cost) {
	client, src, drop := be.queue(b)
	defer drop()
	if err := testenv.Send(context.Background(), client, src, benchMessages); err != nil {
		b.Fatal(err)
	}
	var handled atomic.Int64
	all := make(chan struct{})
	var h worker.Handler = worker.HandlerFunc(func(context.Context, *worker.Message) error {
		if handled.Add(1) == benchMessages {
			close(all)
		}
		return nil
	})
	opts := func(o *worker.Options) {
		o.Logger = quiet
		o.Concurrency = benchConcurrency
		o.WaitTime = time.Second
	}
	if hook != nil {
		plain := opts
		opts = func(o *worker.Options) { plain(o); o.OnSettled = hook }
	}
	if traced {
		h = worker.Chain(h, ins.Middleware())
	}
	if ins != nil {
		plain := opts
		opts = func(o *worker.Options) { plain(o); o.OnSettled = ins.OnSettled(nil) }
	}
	w, err := worker.New(client, src, h, opts)
	if err != nil {
		b.Fatal(err)
	}
	if ins != nil {
		reg, err := ins.ObserveWorker(w)
		if err != nil {
			b.Fatal(err)
		}
		defer reg.Unregister()
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	m0, c0 := usage()
	go func() { done <- w.Run(ctx) }()
	<-all
	cancel()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	m1, c1 := usage()
	c.msgs += benchMessages
	c.mallocs += float64(m1 - m0)
	c.cpuNano += float64(c1 - c0)
}

// emulator returns one client for every round on the emulator, so rounds
// reuse its connections.
var emulator = func() func(b *testing.B) *sqs.Client {
	var client *sqs.Client
	return func(b *testing.B) *sqs.Client {
		if client == nil {
			client = testenv.SQS(b)
		}
		return client
	}
}()

// backends: the in-memory fake (0 ms per call: the worker's own cost is all
// there is, so the overhead shows at its largest) and the emulator over
// HTTP (the SDK's client, its signing and its JSON, as with real SQS).
func backends() []backend {
	return []backend{
		{"sqstest", func(b *testing.B) (worker.API, string, func()) {
			f := sqstest.For(b)
			src, _ := f.MustCreateQueueWithDLQ(b, "bench", 5, map[string]string{"VisibilityTimeout": "60"})
			return f, src, func() {}
		}},
		{"fauxqs", func(b *testing.B) (worker.API, string, func()) {
			client := emulator(b)
			q, err := dlq.Setup(context.Background(), client, dlq.SetupOptions{Name: testenv.UniqueName("otel"), MaxReceiveCount: 5, VisibilityTimeout: time.Minute})
			if err != nil {
				b.Fatal(err)
			}
			return client, q.QueueURL, func() {
				for _, u := range []string{q.QueueURL, q.DLQURL} {
					_, _ = client.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(u)})
				}
			}
		}},
	}
}

// BenchmarkInstrumentation compares a plain worker with one instrumented
// four ways: an empty settlement hook (the runtime's own cost of delivering
// settlement events, whoever consumes them); metrics only (OnSettled and
// ObserveWorker, no Middleware); metrics and a span per message (every
// span sampled, exported in batches to a no-op exporter); and metrics with
// 10% of the traces sampled.
func BenchmarkInstrumentation(b *testing.B) {
	variants := []struct {
		name    string
		hook    bool             // an empty settlement hook, nothing else
		sampler sdktrace.Sampler // nil: no tracing
	}{
		{"empty-hook", true, nil},
		{"metrics", false, nil},
		{"metrics+traces", false, sdktrace.AlwaysSample()},
		{"metrics+traces-10pct", false, sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0.1))},
	}
	for _, be := range backends() {
		for _, v := range variants {
			b.Run(be.name+"/"+v.name, func(b *testing.B) {
				mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
				defer mp.Shutdown(context.Background())
				opts := func(o *sqsotel.Options) { o.MeterProvider, o.TracerProvider = mp, noop.NewTracerProvider() }
				if v.sampler != nil {
					tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(v.sampler), sdktrace.WithBatcher(tracetest.NewNoopExporter()))
					defer tp.Shutdown(context.Background())
					opts = func(o *sqsotel.Options) { o.MeterProvider, o.TracerProvider = mp, tp }
				}
				ins, err := sqsotel.New(opts)
				if err != nil {
					b.Fatal(err)
				}
				var plain, instrumented cost
				for b.Loop() {
					round(b, be, nil, false, nil, &plain)
					if v.hook {
						round(b, be, nil, false, func(worker.Settlement) {}, &instrumented)
					} else {
						round(b, be, ins, v.sampler != nil, nil, &instrumented)
					}
				}
				b.ReportMetric(plain.cpuNano/plain.msgs/1000, "plain-cpu-µs/msg")
				b.ReportMetric(instrumented.cpuNano/instrumented.msgs/1000, "cpu-µs/msg")
				b.ReportMetric(plain.mallocs/plain.msgs, "plain-allocs/msg")
				b.ReportMetric(instrumented.mallocs/instrumented.msgs, "allocs/msg")
				b.ReportMetric(100*(instrumented.cpuNano/plain.cpuNano-1), "cpu-overhead-%")
			})
		}
	}
}
