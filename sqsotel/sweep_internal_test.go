package sqsotel

import (
	"strconv"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace/noop"
)

// When more spans await their settlement than maxPending, the sweep ends
// the oldest ones (most likely those whose settlement was dropped), never
// a newer one.
func TestSweepEvictsTheOldest(t *testing.T) {
	in := &Instrumentation{pending: map[string]*pendingSpan{}}
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	const n = maxPending + 100
	for i := range n {
		in.pending[strconv.Itoa(i)] = &pendingSpan{span: noop.Span{}, since: base.Add(time.Duration(i) * time.Millisecond)}
	}
	now := base.Add(time.Hour)
	out := in.sweepLocked(now)
	if len(out) == 0 || len(in.pending) > maxPending {
		t.Fatalf("swept %d, %d left; want at most %d left", len(out), len(in.pending), maxPending)
	}
	newestSwept := base
	for _, p := range out {
		if p.since.After(newestSwept) {
			newestSwept = p.since
		}
	}
	for k, p := range in.pending {
		if !p.since.After(newestSwept) {
			t.Fatalf("span %s (since %v) kept while a newer one (%v) was swept", k, p.since, newestSwept)
		}
	}
	// Spans past pendingLimit go whatever their number.
	in.pending = map[string]*pendingSpan{"old": {span: noop.Span{}, since: base}, "new": {span: noop.Span{}, since: now}}
	if out := in.sweepLocked(base.Add(pendingLimit + time.Second)); len(out) != 1 || in.pending["new"] == nil {
		t.Errorf("swept %d; want only the span older than pendingLimit", len(out))
	}
}
