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
	if got := aws.ToString(in.MessageSystemAttributes["AWSTraceHeader"].StringValue); got != want {
		t.Errorf("AWSTraceHeader %q, want %q", got, want)
	}
	e := sqsotel.InjectEntry(ctx, &types.SendMessageBatchRequestEntry{MessageSystemAttributes: map[string]types.MessageSystemAttributeValue{
		"AWSTraceHeader": {DataType: aws.String("String"), StringValue: aws.String("Root=1-00000000-000000000000000000000001;Parent=0000000000000001;Sampled=1")},
	}})
	if got := aws.ToString(e.MessageSystemAttributes["AWSTraceHeader"].StringValue); got == want {
		t.Error("InjectEntry replaced an AWSTraceHeader the X-Ray SDK had set")
	}
	if _, ok := e.MessageAttributes["traceparent"]; !ok {
		t.Error("InjectEntry did not add traceparent")
	}
	if got := sqsotel.InjectInput(context.Background(), &sqs.SendMessageInput{}); got.MessageAttributes != nil || got.MessageSystemAttributes != nil {
		t.Errorf("without a span context InjectInput changed the input: %+v", got)
	}
}
