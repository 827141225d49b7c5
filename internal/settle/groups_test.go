package settle_test

import (
	"slices"
	"testing"

	"github.com/sqsworker/sqsworker/internal/settle"
)

// A group's messages run one at a time, in order; a settlement that does
// not let the group go on hands back the rest, in order.
func TestGroupsKeepOrder(t *testing.T) {
	var g settle.Groups[string]
	var running []string
	for _, m := range []struct{ group, id string }{{"a", "a1"}, {"b", "b1"}, {"a", "a2"}, {"a", "a3"}, {"b", "b2"}} {
		if g.Admit(m.group, m.id) {
			running = append(running, m.id)
		}
	}
	if !slices.Equal(running, []string{"a1", "b1"}) {
		t.Fatalf("active %v, want the first of each group", running)
	}
	if next, ok, rest := g.Settled("a", "a1", true); !ok || next != "a2" || rest != nil {
		t.Fatalf("after a1 went on: next %q %v, rest %v; want a2", next, ok, rest)
	}
	if _, ok, rest := g.Settled("a", "a3", true); ok || rest != nil {
		t.Fatal("a message that is not its group's active one changed the group")
	}
	if _, ok, rest := g.Settled("a", "a2", false); ok || !slices.Equal(rest, []string{"a3"}) {
		t.Fatalf("after a2 failed: rest %v, want [a3] to release", rest)
	}
	if _, held := g.Active("a"); held {
		t.Fatal("group a still held after its rest was released")
	}
	if rest := g.Drain(); !slices.Equal(rest, []string{"b2"}) {
		t.Fatalf("drained %v, want [b2]", rest)
	}
	if active, ok := g.Active("b"); !ok || active != "b1" || g.Len() != 1 {
		t.Fatalf("group b: active %q %v, %d groups; want b1 still active", active, ok, g.Len())
	}
	if _, ok, rest := g.Settled("b", "b1", true); ok || len(rest) != 0 || g.Len() != 0 {
		t.Fatal("the last message of a group settled: the group must be forgotten")
	}
}
