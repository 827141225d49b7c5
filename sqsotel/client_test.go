package sqsotel_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/sqsworker/sqsworker/producer"
	"github.com/sqsworker/sqsworker/sqstest"
	"github.com/sqsworker/sqsworker/worker"
)

// spansNamed returns the ended spans called name.
func spansNamed(tel *telemetry, name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range tel.spans.Ended() {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

// Both sides of OTel's messaging conventions: the producer's batch send
// makes a PRODUCER span "send jobs" whose context the messages carry, the
// worker's receives make CLIENT spans "receive jobs" linked to it, and the
// process spans link to it too; every span has server.address and
// server.port.
func TestClientSendAndReceiveSpans(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tel := newTelemetry(t)
		f := sqstest.For(t)
		src, _ := f.MustCreateQueueWithDLQ(t, "jobs", 5, map[string]string{"VisibilityTimeout": "30"})
		c := tel.ins.Client(f)
		p, err := producer.New(c, src)
		if err != nil {
			t.Fatal(err)
		}
		res, err := p.SendBatch(context.Background(), []producer.Message{{Body: "a"}, {Body: "b"}})
		if err != nil {
			t.Fatal(err)
		}
		sends := spansNamed(tel, "send jobs")
		if len(sends) != 1 {
			t.Fatalf("%d send spans, want 1", len(sends))
		}
		send := sends[0]
		want := map[string]string{
			"messaging.system": "aws_sqs", "messaging.operation.type": "send", "messaging.operation.name": "SendMessageBatch",
			"messaging.destination.name": "jobs", "aws.sqs.queue.url": src, "messaging.batch.message_count": "2",
			"server.address": "sqs.us-east-1.amazonaws.com", "server.port": "443",
		}
		for k, v := range want {
			if got := attr(send.Attributes(), k); got != v {
				t.Errorf("send span: %s = %q, want %q", k, got, v)
			}
		}
		if send.SpanKind() != trace.SpanKindProducer || send.Status().Code == codes.Error {
			t.Errorf("send span: kind %v, status %v", send.SpanKind(), send.Status())
		}

		w, err := worker.New(c, src, worker.Chain(worker.HandlerFunc(func(context.Context, *worker.Message) error { return nil }), tel.ins.Middleware()),
			func(o *worker.Options) { o.Logger = quiet; o.OnSettled = tel.ins.OnSettled(nil) })
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

		linked := 0
		for _, r := range spansNamed(tel, "receive jobs") {
			if r.SpanKind() != trace.SpanKindClient || attr(r.Attributes(), "messaging.operation.type") != "receive" ||
				attr(r.Attributes(), "server.address") != "sqs.us-east-1.amazonaws.com" || attr(r.Attributes(), "server.port") != "443" {
				t.Errorf("receive span: kind %v, attributes %v", r.SpanKind(), r.Attributes())
			}
			for _, l := range r.Links() {
				if sameSpan(l.SpanContext, send.SpanContext()) {
					linked++
				}
			}
		}
		if linked != 2 {
			t.Errorf("receive spans link %d times to the send span, want 2 (one per message)", linked)
		}
		for _, r := range res {
			spans := processSpans(tel, r.MessageID)
			if len(spans) != 1 || len(spans[0].Links()) != 1 || !sameSpan(spans[0].Links()[0].SpanContext, send.SpanContext()) {
				t.Fatalf("message %s: process spans %v; want one linked to the send span", r.MessageID, spans)
			}
			if a := spans[0].Attributes(); attr(a, "server.address") != "sqs.us-east-1.amazonaws.com" || attr(a, "server.port") != "443" {
				t.Errorf("process span lacks server.address/port: %v", a)
			}
		}
		// Every message was processed and deleted.
		for _, m := range f.Messages(src) {
			t.Errorf("left in the queue: %v", m.Body)
		}
	})
}

// A send span of one message names it; refused entries make it an error.
func TestClientSendSpanOfOneMessage(t *testing.T) {
	tel := newTelemetry(t)
	f := sqstest.For(t)
	src := f.MustCreateQueue(t, "jobs", nil)
	p, err := producer.New(tel.ins.Client(f), src)
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.SendBatch(context.Background(), []producer.Message{{Body: "a"}})
	if err != nil {
		t.Fatal(err)
	}
	s := spansNamed(tel, "send jobs")
	if len(s) != 1 || attr(s[0].Attributes(), "messaging.message.id") != res[0].MessageID || attr(s[0].Attributes(), "messaging.batch.message_count") != "" {
		t.Errorf("send span of one message: %v", s)
	}
}
