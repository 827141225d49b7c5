package sqsotel_test

import (
	"context"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/sqsworker/sqsworker/sqsotel"
	"github.com/sqsworker/sqsworker/worker"
)

// BenchmarkSettledHook is the settlement hook's own cost per event, with an
// SDK meter (metrics only).
func BenchmarkSettledHook(b *testing.B) {
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	defer mp.Shutdown(context.Background())
	ins, err := sqsotel.New(func(o *sqsotel.Options) { o.MeterProvider, o.TracerProvider = mp, noop.NewTracerProvider() })
	if err != nil {
		b.Fatal(err)
	}
	hook := ins.OnSettled(nil)
	now := time.Now()
	s := worker.Settlement{
		Message: &worker.Message{ID: "m", ReceiptHandle: "r", QueueURL: "https://sqs.us-east-1.amazonaws.com/1/jobs", SentAt: now.Add(-time.Second)},
		Outcome: worker.Deleted, Attempt: 1, ReceivedAt: now, HandlerStart: now, HandlerEnd: now.Add(time.Millisecond), SettledAt: now.Add(30 * time.Millisecond),
	}
	b.ReportAllocs()
	for b.Loop() {
		hook(s)
	}
}
