package sqsotel

import (
	"context"
	"encoding/hex"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/sqsworker/sqsworker/producer"
)

// maxAttributes is SQS's limit on message attributes per message.
const maxAttributes = 10

// AWSTraceHeader is the SQS system attribute that carries an AWS X-Ray trace
// header. It does not count against the 10 message attributes.
const AWSTraceHeader = string(types.MessageSystemAttributeNameAWSTraceHeader)

// MessageAttributeCarrier adapts SQS message attributes to a propagator
// (propagation.TextMapCarrier): Get reads String attributes, Set writes
// them. Set leaves a new key out when the message already has SQS's
// maximum of 10 attributes, so a propagator can never make a message that
// SQS refuses; overwriting an existing key is always allowed.
type MessageAttributeCarrier map[string]types.MessageAttributeValue

var _ propagation.TextMapCarrier = MessageAttributeCarrier(nil)

// Get returns the value of the String attribute key, or "".
func (c MessageAttributeCarrier) Get(key string) string {
	v, ok := c[key]
	if !ok || v.StringValue == nil {
		return ""
	}
	return *v.StringValue
}

// Set writes key as a String attribute, unless that would take the message
// past 10 attributes.
func (c MessageAttributeCarrier) Set(key, value string) {
	if _, ok := c[key]; !ok && len(c) >= maxAttributes {
		return
	}
	c[key] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(value)}
}

// Keys lists the attribute names.
func (c MessageAttributeCarrier) Keys() []string {
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
	c := MessageAttributeCarrier(attrs)
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
	if _, ok := sys[AWSTraceHeader]; ok {
		return sys
	}
	if sys == nil {
		sys = map[string]types.MessageSystemAttributeValue{}
	}
	sys[AWSTraceHeader] = types.MessageSystemAttributeValue{
		DataType: aws.String("String"), StringValue: aws.String(FormatXRay(trace.SpanContextFromContext(ctx))),
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
		m.TraceHeader = FormatXRay(sc)
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

// FormatXRay writes sc as an AWS X-Ray trace header, the format of the
// AWSTraceHeader system attribute:
// Root=1-{8 hex digits}-{24 hex digits};Parent={16 hex digits};Sampled={0|1}.
// The 32 hex digits of the trace ID are split after the eighth, as X-Ray
// splits its own IDs.
func FormatXRay(sc trace.SpanContext) string {
	tid := sc.TraceID().String()
	sampled := "0"
	if sc.IsSampled() {
		sampled = "1"
	}
	return "Root=1-" + tid[:8] + "-" + tid[8:] + ";Parent=" + sc.SpanID().String() + ";Sampled=" + sampled
}

// ParseXRay reads an AWS X-Ray trace header (the AWSTraceHeader system
// attribute) into a remote span context. It reports false when the header
// has no valid Root and Parent. Unknown fields (Lineage, …) are ignored;
// Sampled=1 marks the context sampled, anything else (0, ?, absent) not.
func ParseXRay(header string) (trace.SpanContext, bool) {
	var tid trace.TraceID
	var sid trace.SpanID
	var haveRoot, haveParent, sampled bool
	for field := range strings.SplitSeq(header, ";") {
		k, v, ok := strings.Cut(strings.TrimSpace(field), "=")
		if !ok {
			continue
		}
		switch k {
		case "Root":
			// 1-{8 hex}-{24 hex}
			version, rest, ok := strings.Cut(v, "-")
			if !ok || version != "1" || len(rest) != 33 || rest[8] != '-' {
				return trace.SpanContext{}, false
			}
			if _, err := hex.Decode(tid[:4], []byte(rest[:8])); err != nil {
				return trace.SpanContext{}, false
			}
			if _, err := hex.Decode(tid[4:], []byte(rest[9:])); err != nil {
				return trace.SpanContext{}, false
			}
			haveRoot = true
		case "Parent":
			if len(v) != 16 {
				return trace.SpanContext{}, false
			}
			if _, err := hex.Decode(sid[:], []byte(v)); err != nil {
				return trace.SpanContext{}, false
			}
			haveParent = true
		case "Sampled":
			sampled = v == "1"
		}
	}
	if !haveRoot || !haveParent {
		return trace.SpanContext{}, false
	}
	cfg := trace.SpanContextConfig{TraceID: tid, SpanID: sid, Remote: true}
	if sampled {
		cfg.TraceFlags = trace.FlagsSampled
	}
	sc := trace.NewSpanContext(cfg)
	return sc, sc.IsValid()
}

// producerContexts returns the span contexts a message carries: from its
// message attributes through p (W3C traceparent by default), then from its
// AWSTraceHeader system attribute when that names another span.
func producerContexts(p propagation.TextMapPropagator, attrs map[string]types.MessageAttributeValue, sys map[string]string) []trace.SpanContext {
	var out []trace.SpanContext
	if len(attrs) > 0 {
		if sc := trace.SpanContextFromContext(p.Extract(context.Background(), MessageAttributeCarrier(attrs))); sc.IsValid() {
			out = append(out, sc)
		}
	}
	if h := sys[AWSTraceHeader]; h != "" {
		if sc, ok := ParseXRay(h); ok && (len(out) == 0 || !sameSpan(out[0], sc)) {
			out = append(out, sc)
		}
	}
	return out
}

func sameSpan(a, b trace.SpanContext) bool {
	return a.TraceID() == b.TraceID() && a.SpanID() == b.SpanID()
}
