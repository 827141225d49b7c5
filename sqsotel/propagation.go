package sqsotel

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/sqsworker/sqsworker/producer"
	"github.com/sqsworker/sqsworker/sqsotel/internal/xray"
)

// maxAttributes is SQS's limit on message attributes per message.
const maxAttributes = 10

// awsTraceHeader is the SQS system attribute that carries an AWS X-Ray trace
// header. It does not count against the 10 message attributes.
const awsTraceHeader = string(types.MessageSystemAttributeNameAWSTraceHeader)

// attrCarrier adapts SQS message attributes to a propagator
// (propagation.TextMapCarrier): Get reads String attributes, Set writes
// them. Set leaves a new key out when the message already has SQS's
// maximum of 10 attributes, so a propagator can never make a message that
// SQS refuses; overwriting an existing key is always allowed.
type attrCarrier map[string]types.MessageAttributeValue

var _ propagation.TextMapCarrier = attrCarrier(nil)

// Get returns the value of the String attribute key, or "".
func (c attrCarrier) Get(key string) string {
	v, ok := c[key]
	if !ok || v.StringValue == nil {
		return ""
	}
	return *v.StringValue
}

// Set writes key as a String attribute, unless that would take the message
// past 10 attributes.
func (c attrCarrier) Set(key, value string) {
	if _, ok := c[key]; !ok && len(c) >= maxAttributes {
		return
	}
	c[key] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(value)}
}

// Keys lists the attribute names.
func (c attrCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

// Inject writes the span context of ctx into attrs as W3C Trace Context
// message attributes: traceparent, and tracestate when there is one. It
// reports whether traceparent was written: false when ctx carries no valid
// span context, or when attrs already holds SQS's maximum of 10 message
// attributes (a message with 9 gets traceparent but not tracestate).
// attrs must not be nil. A producer that sends with the SDK calls it on the
// MessageAttributes of each SendMessageInput or batch entry, or uses
// InjectInput or InjectEntry, which also set AWSTraceHeader so that a
// message with no room left still carries the context.
func Inject(ctx context.Context, attrs map[string]types.MessageAttributeValue) bool {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return false
	}
	c := attrCarrier(attrs)
	traceFields(ctx, func(k, v string) { c.Set(k, v) })
	_, ok := attrs["traceparent"]
	return ok
}

// InjectInput adds the span context of ctx to a message about to be sent:
// the W3C message attributes (Inject), and the AWSTraceHeader system
// attribute in AWS X-Ray format unless the message already has one (the
// X-Ray SDK may have set it). It returns in, for chaining; without a valid
// span context in ctx it changes nothing.
func InjectInput(ctx context.Context, in *sqs.SendMessageInput) *sqs.SendMessageInput {
	injectMessage(ctx, &in.MessageAttributes, &in.MessageSystemAttributes)
	return in
}

// InjectEntry is InjectInput for an entry of SendMessageBatch.
func InjectEntry(ctx context.Context, e *types.SendMessageBatchRequestEntry) *types.SendMessageBatchRequestEntry {
	injectMessage(ctx, &e.MessageAttributes, &e.MessageSystemAttributes)
	return e
}

// injectMessage is InjectInput on a message's two attribute maps, made when
// nil.
func injectMessage(ctx context.Context, attrs *map[string]types.MessageAttributeValue, sys *map[string]types.MessageSystemAttributeValue) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return
	}
	if *attrs == nil {
		*attrs = map[string]types.MessageAttributeValue{}
	}
	Inject(ctx, *attrs)
	*sys = withXRay(ctx, *sys)
}

func withXRay(ctx context.Context, sys map[string]types.MessageSystemAttributeValue) map[string]types.MessageSystemAttributeValue {
	if _, ok := sys[awsTraceHeader]; ok {
		return sys
	}
	if sys == nil {
		sys = map[string]types.MessageSystemAttributeValue{}
	}
	sys[awsTraceHeader] = types.MessageSystemAttributeValue{
		DataType: aws.String("String"), StringValue: aws.String(xray.Format(trace.SpanContextFromContext(ctx))),
	}
	return sys
}

// BeforeSend is a producer.Options.BeforeSend hook that adds the span
// context of ctx to every message the producer sends, as InjectInput does:
// traceparent, then tracestate, as message attributes through
// Message.SetAttribute (which adds them only while SQS's 10 attributes
// leave room, counting the ones the producer still needs), and the
// AWSTraceHeader system attribute (Message.TraceHeader) unless already
// set. It never fails a message.
//
//	p, err := producer.New(client, queueURL, func(o *producer.Options) {
//		o.BeforeSend = append(o.BeforeSend, sqsotel.BeforeSend)
//	})
func BeforeSend(ctx context.Context, m *producer.Message) error {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return nil
	}
	traceFields(ctx, func(k, v string) {
		m.SetAttribute(k, types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)})
	})
	if m.TraceHeader == "" {
		m.TraceHeader = xray.Format(sc)
	}
	return nil
}

// traceFields passes the W3C Trace Context fields of ctx to set:
// traceparent first, since it matters more when only one fits.
func traceFields(ctx context.Context, set func(k, v string)) {
	fields := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, fields)
	for _, k := range []string{"traceparent", "tracestate"} {
		if v := fields.Get(k); v != "" {
			set(k, v)
		}
	}
}

// producerContexts returns the span contexts a message carries: from its
// message attributes through p (W3C traceparent by default), then from its
// AWSTraceHeader system attribute when that names another span.
func producerContexts(p propagation.TextMapPropagator, attrs map[string]types.MessageAttributeValue, sys map[string]string) []trace.SpanContext {
	var out []trace.SpanContext
	if len(attrs) > 0 {
		if sc := trace.SpanContextFromContext(p.Extract(context.Background(), attrCarrier(attrs))); sc.IsValid() {
			out = append(out, sc)
		}
	}
	if h := sys[awsTraceHeader]; h != "" {
		if sc, ok := xray.Parse(h); ok && (len(out) == 0 || !sameSpan(out[0], sc)) {
			out = append(out, sc)
		}
	}
	return out
}

func sameSpan(a, b trace.SpanContext) bool {
	return a.TraceID() == b.TraceID() && a.SpanID() == b.SpanID()
}
