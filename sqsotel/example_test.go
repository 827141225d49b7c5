package sqsotel_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/sqsotel"
	"github.com/sqsworker/sqsworker/sqstest"
	"github.com/sqsworker/sqsworker/worker"
)

// A producer injects its span context into the message; the worker's
// process span links to it and records the message's fate.
func Example() {
	ctx := context.Background()
	// An OTel SDK: in production, an OTLP exporter behind a batch processor
	// (sdktrace.WithBatcher); here, an in-memory one.
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	ins, err := sqsotel.New(func(o *sqsotel.Options) { o.TracerProvider = tp })
	if err != nil {
		log.Fatal(err)
	}

	client, err := sqstest.New() // or sqs.NewFromConfig(cfg)
	if err != nil {
		log.Fatal(err)
	}
	queues, err := dlq.Setup(ctx, client, dlq.SetupOptions{Name: "orders"})
	if err != nil {
		log.Fatal(err)
	}

	// The producer: its span context travels in the message.
	sendCtx, send := tp.Tracer("shop").Start(ctx, "send orders", trace.WithSpanKind(trace.SpanKindProducer))
	in := &sqs.SendMessageInput{QueueUrl: aws.String(queues.QueueURL), MessageBody: aws.String(`{"order":42}`)}
	if _, err := client.SendMessage(sendCtx, sqsotel.InjectInput(sendCtx, in)); err != nil {
		log.Fatal(err)
	}
	send.End()

	// The consumer: middleware around the handler, the settlement hook,
	// and the worker's counters as metrics.
	handler := worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error { return nil })
	w, err := worker.New(client, queues.QueueURL, worker.Chain(handler, ins.Middleware()), func(o *worker.Options) {
		o.OnSettled = ins.OnSettled(nil) // or ins.OnSettled(yourHook)
	})
	if err != nil {
		log.Fatal(err)
	}
	reg, err := ins.ObserveWorker(w)
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Unregister()

	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- w.Run(runCtx) }()
	for w.Stats().Deleted == 0 {
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	if err := <-done; err != nil {
		log.Fatal(err)
	}

	for _, s := range spans.GetSpans() {
		if s.SpanKind != trace.SpanKindConsumer {
			continue
		}
		linked := len(s.Links) == 1 && s.Links[0].SpanContext.SpanID() == send.SpanContext().SpanID()
		fmt.Printf("%s: linked to the producer %v, ended with %s\n", s.Name, linked, s.Events[len(s.Events)-1].Name)
	}
	// Output:
	// process orders: linked to the producer true, ended with sqsworker.delete
}
