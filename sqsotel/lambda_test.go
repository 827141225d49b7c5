package sqsotel_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"go.opentelemetry.io/otel/trace"

	"github.com/sqsworker/sqsworker/sqsotel"
	"github.com/sqsworker/sqsworker/sqsotel/internal/xray"
	"github.com/sqsworker/sqsworker/worker"
	"github.com/sqsworker/sqsworker/worker/sqslambda"
)

// The same middleware and hook trace a Lambda function: each record gets a
// process span, child of the invocation's span, linked to its producer
// (through traceparent, or AWSTraceHeader alone), ended with its outcome.
func TestLambdaSpans(t *testing.T) {
	tel := newTelemetry(t)
	producerCtx := spanContext(t, "")
	producer := trace.SpanContextFromContext(producerCtx)
	withW3C := map[string]types.MessageAttributeValue{}
	sqsotel.Inject(producerCtx, withW3C)
	msg := func(id, body string, attrs map[string]types.MessageAttributeValue, sys map[string]string) types.Message {
		return types.Message{MessageId: aws.String(id), ReceiptHandle: aws.String("rh-" + id), Body: aws.String(body), MessageAttributes: attrs, Attributes: sys}
	}
	sys := map[string]string{"ApproximateReceiveCount": "1", "SentTimestamp": "1700000000000"}
	xray := map[string]string{"ApproximateReceiveCount": "2", "SentTimestamp": "1700000000000", "AWSTraceHeader": xray.Format(producer)}
	ev, err := sqslambda.NewEvent("arn:aws:sqs:us-east-1:123456789012:orders",
		msg("m1", "ok", withW3C, sys), msg("m2", "fail", nil, xray))
	if err != nil {
		t.Fatal(err)
	}
	var outcomes []worker.Outcome
	fn, err := sqslambda.New(worker.Chain(worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
		if m.Body == "fail" {
			return errors.New("downstream unavailable")
		}
		return nil
	}), tel.ins.Middleware()), func(o *sqslambda.Options) {
		o.Logger = quiet
		o.OnSettled = tel.ins.OnSettled(func(s worker.Settlement) { outcomes = append(outcomes, s.Outcome) })
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, invocation := tel.tp.Tracer("lambda").Start(context.Background(), "invocation")
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := fn.Handle(ctx, ev)
	invocation.End()
	if err != nil || len(resp.BatchItemFailures) != 1 {
		t.Fatalf("Handle: %+v, %v", resp, err)
	}
	if len(outcomes) != 2 {
		t.Fatalf("hook saw %v", outcomes)
	}
	for id, last := range map[string]string{"m1": "sqsworker.delete", "m2": "sqsworker.retry"} {
		spans := processSpans(tel, id)
		if len(spans) != 1 {
			t.Fatalf("%s: %d process spans", id, len(spans))
		}
		s := spans[0]
		if !sameSpan(s.Parent(), invocation.SpanContext()) {
			t.Errorf("%s: parent %v, want the invocation's span", id, s.Parent())
		}
		if len(s.Links()) != 1 || !sameSpan(s.Links()[0].SpanContext, producer) {
			t.Errorf("%s: links %v, want the producer's span", id, s.Links())
		}
		if names := eventNames(s); len(names) == 0 || names[len(names)-1] != last {
			t.Errorf("%s: events %v, want last %s", id, names, last)
		}
		if got := attr(s.Attributes(), "messaging.destination.name"); got != "orders" {
			t.Errorf("%s: destination %q", id, got)
		}
	}
}
