// Package xray reads and writes AWS X-Ray trace headers, the format of
// SQS's AWSTraceHeader system attribute.
package xray

import (
	"encoding/hex"
	"strings"

	"go.opentelemetry.io/otel/trace"
)

// Format writes sc as an AWS X-Ray trace header, the format of the
// AWSTraceHeader system attribute:
// Root=1-{8 hex digits}-{24 hex digits};Parent={16 hex digits};Sampled={0|1}.
// The 32 hex digits of the trace ID are split after the eighth, as X-Ray
// splits its own IDs.
func Format(sc trace.SpanContext) string {
	tid := sc.TraceID().String()
	sampled := "0"
	if sc.IsSampled() {
		sampled = "1"
	}
	return "Root=1-" + tid[:8] + "-" + tid[8:] + ";Parent=" + sc.SpanID().String() + ";Sampled=" + sampled
}

// Parse reads an AWS X-Ray trace header (the AWSTraceHeader system
// attribute) into a remote span context. It reports false when the header
// has no valid Root and Parent. Unknown fields (Lineage, …) are ignored;
// Sampled=1 marks the context sampled, anything else (0, ?, absent) not.
func Parse(header string) (trace.SpanContext, bool) {
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
