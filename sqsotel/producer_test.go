package sqsotel_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"go.opentelemetry.io/otel/trace"

	"github.com/sqsworker/sqsworker/producer"
	"github.com/sqsworker/sqsworker/sqsotel"
	"github.com/sqsworker/sqsworker/sqstest"
	"github.com/sqsworker/sqsworker/worker"
)

// sqsotel.BeforeSend on the producer carries the producer's span to the
// worker's process span: through traceparent when the message has room,
// through AWSTraceHeader when its 10 attributes are taken.
func TestProducerBeforeSendLinks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tel := newTelemetry(t)
		f := sqstest.For(t)
		src, _ := f.MustCreateQueueWithDLQ(t, "jobs", 5, map[string]string{"VisibilityTimeout": "30"})
		p, err := producer.New(f, src, func(o *producer.Options) { o.BeforeSend = append(o.BeforeSend, sqsotel.BeforeSend) })
		if err != nil {
			t.Fatal(err)
		}
		full := map[string]types.MessageAttributeValue{}
		for i := range 10 {
			full["a"+strconv.Itoa(i)] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String("v")}
		}
		producers := map[string]trace.SpanContext{}
		ids := map[string]string{}
		for body, attrs := range map[string]map[string]types.MessageAttributeValue{"roomy": nil, "full": full} {
			ctx, span := tel.tp.Tracer("producer").Start(context.Background(), "send jobs", trace.WithSpanKind(trace.SpanKindProducer))
			res, err := p.Send(ctx, producer.Message{Body: body, Attributes: attrs})
			span.End()
			if err != nil {
				t.Fatal(err)
			}
			producers[body], ids[body] = span.SpanContext(), res.MessageID
		}
		if err := p.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex // handlers run concurrently
		carried := map[string]bool{}
		h := worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			mu.Lock()
			defer mu.Unlock()
			_, carried[m.Body] = m.MessageAttributes["traceparent"]
			return nil
		})
		w, err := worker.New(f, src, worker.Chain(h, tel.ins.Middleware()), func(o *worker.Options) {
			o.Logger = quiet
			o.OnSettled = tel.ins.OnSettled(nil)
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- w.Run(ctx) }()
		time.Sleep(5 * time.Second)
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if !carried["roomy"] || carried["full"] {
			t.Errorf("traceparent carried: %v; want it on the roomy message only", carried)
		}
		for body, sc := range producers {
			spans := processSpans(tel, ids[body])
			if len(spans) != 1 || len(spans[0].Links()) != 1 || !sameSpan(spans[0].Links()[0].SpanContext, sc) {
				t.Errorf("%s: spans %v; want one linked to the producer's span %v", body, spans, sc)
			}
		}
	})
}
