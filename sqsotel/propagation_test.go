package sqsotel_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"go.opentelemetry.io/otel/trace"

	"github.com/sqsworker/sqsworker/sqsotel"
)

// spanContext returns a context carrying a sampled span context, with a
// tracestate when state is not "".
func spanContext(t *testing.T, state string) context.Context {
	t.Helper()
	tid, _ := trace.TraceIDFromHex("5759e988bd862e3fe1be46a994272793")
	sid, _ := trace.SpanIDFromHex("53995c3f42cd8ad8")
	cfg := trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled}
	if state != "" {
		ts, err := trace.ParseTraceState(state)
		if err != nil {
			t.Fatal(err)
		}
		cfg.TraceState = ts
	}
	return trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(cfg))
}

func attrs(n int) map[string]types.MessageAttributeValue {
	m := map[string]types.MessageAttributeValue{}
	for i := range n {
		m["a"+strconv.Itoa(i)] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String("v")}
	}
	return m
}

// Inject never takes a message past SQS's 10 message attributes.
func TestInjectRespectsTheAttributeLimit(t *testing.T) {
	ctx := spanContext(t, "vendor=value")
	for _, c := range []struct {
		have           int
		ok, tracestate bool
	}{{0, true, true}, {8, true, true}, {9, true, false}, {10, false, false}} {
		m := attrs(c.have)
		ok := sqsotel.Inject(ctx, m)
		_, ts := m["tracestate"]
		if ok != c.ok || ts != c.tracestate || len(m) > 10 {
			t.Errorf("%d attributes: Inject = %v, tracestate %v, %d attributes; want %v, %v, at most 10", c.have, ok, ts, len(m), c.ok, c.tracestate)
		}
		if ok && *m["traceparent"].StringValue != "00-5759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-01" {
			t.Errorf("traceparent %q", *m["traceparent"].StringValue)
		}
	}
	if sqsotel.Inject(context.Background(), attrs(0)) {
		t.Error("Inject without a span context reported true")
	}
}

// InjectInput and InjectEntry add AWSTraceHeader, which does not count
// against the limit, so a full message still carries the context; an
// AWSTraceHeader already set (by the X-Ray SDK) is kept.
func TestInjectInputSetsAWSTraceHeader(t *testing.T) {
	ctx := spanContext(t, "")
	in := sqsotel.InjectInput(ctx, &sqs.SendMessageInput{MessageAttributes: attrs(10)})
	if _, ok := in.MessageAttributes["traceparent"]; ok || len(in.MessageAttributes) != 10 {
		t.Errorf("full message got traceparent: %v", in.MessageAttributes)
	}
	want := "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
	if got := aws.ToString(in.MessageSystemAttributes[sqsotel.AWSTraceHeader].StringValue); got != want {
		t.Errorf("AWSTraceHeader %q, want %q", got, want)
	}
	e := sqsotel.InjectEntry(ctx, &types.SendMessageBatchRequestEntry{MessageSystemAttributes: map[string]types.MessageSystemAttributeValue{
		sqsotel.AWSTraceHeader: {DataType: aws.String("String"), StringValue: aws.String("Root=1-00000000-000000000000000000000001;Parent=0000000000000001;Sampled=1")},
	}})
	if got := aws.ToString(e.MessageSystemAttributes[sqsotel.AWSTraceHeader].StringValue); got == want {
		t.Error("InjectEntry replaced an AWSTraceHeader the X-Ray SDK had set")
	}
	if _, ok := e.MessageAttributes["traceparent"]; !ok {
		t.Error("InjectEntry did not add traceparent")
	}
	if got := sqsotel.InjectInput(context.Background(), &sqs.SendMessageInput{}); got.MessageAttributes != nil || got.MessageSystemAttributes != nil {
		t.Errorf("without a span context InjectInput changed the input: %+v", got)
	}
}

func TestXRayRoundTrip(t *testing.T) {
	sc := trace.SpanContextFromContext(spanContext(t, ""))
	h := sqsotel.FormatXRay(sc)
	got, ok := sqsotel.ParseXRay(h)
	if !ok || got.TraceID() != sc.TraceID() || got.SpanID() != sc.SpanID() || !got.IsSampled() || !got.IsRemote() {
		t.Fatalf("ParseXRay(%q) = %v, %v; want %v", h, got, ok, sc)
	}
	for _, h := range []string{
		"Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=0;Lineage=a87bd80c:1|68fd508a:5",
		"Root=1-5759e988-bd862e3fe1be46a994272793; Parent=53995c3f42cd8ad8",
		"Parent=53995c3f42cd8ad8;Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=?",
	} {
		if sc, ok := sqsotel.ParseXRay(h); !ok || sc.IsSampled() {
			t.Errorf("ParseXRay(%q) = %v, %v; want valid, not sampled", h, sc, ok)
		}
	}
	for _, h := range []string{
		"", "Root=1-5759e988-bd862e3fe1be46a994272793", "Parent=53995c3f42cd8ad8",
		"Root=2-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8",
		"Root=1-5759e988bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8",
		"Root=1-5759e988-bd862e3fe1be46a99427279z;Parent=53995c3f42cd8ad8",
		"Root=1-00000000-000000000000000000000000;Parent=53995c3f42cd8ad8",
		"Root=1-5759e988-bd862e3fe1be46a994272793;Parent=0000000000000000",
		"Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad",
	} {
		if sc, ok := sqsotel.ParseXRay(h); ok {
			t.Errorf("ParseXRay(%q) = %v; want invalid", h, sc)
		}
	}
}

// FuzzParseXRay: the AWSTraceHeader comes from whoever sent the message.
func FuzzParseXRay(f *testing.F) {
	f.Add("Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1")
	f.Add("Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=0;Lineage=a87bd80c:1|68fd508a:5")
	f.Add(";;=;Root=;Parent=")
	f.Fuzz(func(t *testing.T, h string) {
		sc, ok := sqsotel.ParseXRay(h)
		if !ok {
			return
		}
		if !sc.IsValid() {
			t.Fatalf("ParseXRay(%q) reported a valid context: %v", h, sc)
		}
		again, ok := sqsotel.ParseXRay(sqsotel.FormatXRay(sc))
		if !ok || again.TraceID() != sc.TraceID() || again.SpanID() != sc.SpanID() || again.IsSampled() != sc.IsSampled() {
			t.Fatalf("round trip of %q: %v, %v; want %v", h, again, ok, sc)
		}
	})
}
