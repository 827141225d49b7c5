package xray_test

import (
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/sqsworker/sqsworker/sqsotel/internal/xray"
)

func TestRoundTrip(t *testing.T) {
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{0x57, 0x59, 0xe9, 0x88, 0xbd, 0x86, 0x2e, 0x3f, 0xe1, 0xbe, 0x46, 0xa9, 0x94, 0x27, 0x27, 0x93},
		SpanID:     trace.SpanID{0x53, 0x99, 0x5c, 0x3f, 0x42, 0xcd, 0x8a, 0xd8},
		TraceFlags: trace.FlagsSampled,
	})
	h := xray.Format(sc)
	got, ok := xray.Parse(h)
	if !ok || got.TraceID() != sc.TraceID() || got.SpanID() != sc.SpanID() || !got.IsSampled() || !got.IsRemote() {
		t.Fatalf("Parse(%q) = %v, %v; want %v", h, got, ok, sc)
	}
	for _, h := range []string{
		"Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=0;Lineage=a87bd80c:1|68fd508a:5",
		"Root=1-5759e988-bd862e3fe1be46a994272793; Parent=53995c3f42cd8ad8",
		"Parent=53995c3f42cd8ad8;Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=?",
	} {
		if sc, ok := xray.Parse(h); !ok || sc.IsSampled() {
			t.Errorf("Parse(%q) = %v, %v; want valid, not sampled", h, sc, ok)
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
		if sc, ok := xray.Parse(h); ok {
			t.Errorf("Parse(%q) = %v; want invalid", h, sc)
		}
	}
}

// FuzzParse: the AWSTraceHeader comes from whoever sent the message.
func FuzzParse(f *testing.F) {
	f.Add("Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1")
	f.Add("Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=0;Lineage=a87bd80c:1|68fd508a:5")
	f.Add(";;=;Root=;Parent=")
	f.Fuzz(func(t *testing.T, h string) {
		sc, ok := xray.Parse(h)
		if !ok {
			return
		}
		if !sc.IsValid() {
			t.Fatalf("Parse(%q) reported a valid context: %v", h, sc)
		}
		again, ok := xray.Parse(xray.Format(sc))
		if !ok || again.TraceID() != sc.TraceID() || again.SpanID() != sc.SpanID() || again.IsSampled() != sc.IsSampled() {
			t.Fatalf("round trip of %q: %v, %v; want %v", h, again, ok, sc)
		}
	})
}
