package sqsotel_test

// The README's OpenTelemetry snippets, compiled here (the library's module,
// where examples/readme compiles the others, cannot import this one);
// examples/readme checks that each appears verbatim in the README.

import (
	"context"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/sqsworker/sqsworker/sqsotel"
	"github.com/sqsworker/sqsworker/worker"
)

// README: Observability.

func instrument(client *sqs.Client, queueURL string, h worker.Handler) (*worker.Worker, error) {
	ins, err := sqsotel.New() // the global TracerProvider and MeterProvider
	if err != nil {
		return nil, err
	}
	// ins.Client adds a span per receive (and per send: pass it to producer.New too).
	w, err := worker.New(ins.Client(client), queueURL, worker.Chain(h, ins.Middleware()), func(o *worker.Options) {
		o.OnSettled = ins.OnSettled(nil) // pass your own hook here: a worker has one
	})
	if err != nil {
		return nil, err
	}
	_, err = ins.ObserveWorker(w) // Stats as metrics
	return w, err
}

func send(ctx context.Context, client *sqs.Client, queueURL, body string) error {
	in := &sqs.SendMessageInput{QueueUrl: aws.String(queueURL), MessageBody: aws.String(body)}
	_, err := client.SendMessage(ctx, sqsotel.InjectInput(ctx, in)) // traceparent and AWSTraceHeader
	return err
}

func servePrometheus() error {
	exporter, err := otelprom.New() // registers on prometheus.DefaultRegisterer
	if err != nil {
		return err
	}
	otel.SetMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter)))
	http.Handle("GET /metrics", promhttp.Handler())
	return http.ListenAndServe("127.0.0.1:9464", nil)
}

var _, _, _ = instrument, send, servePrometheus
