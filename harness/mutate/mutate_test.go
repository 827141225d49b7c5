package main

import (
	"os"
	"strings"
	"testing"
)

// Every recorded mutation still applies to the code: its original text is
// where the list says. (make mutate runs the mutants; this only keeps the
// list from going stale unnoticed.)
func TestMutationsApply(t *testing.T) {
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	names := map[string]bool{}
	for i, m := range mutations {
		if names[m.Name] {
			t.Errorf("two mutations are named %s", m.Name)
		}
		names[m.Name] = true
		if len(m.Packages) == 0 || m.Run == "" || m.Why == "" || m.Original == m.Mutant {
			t.Errorf("mutation %s: it needs packages, a -run pattern, a why and a change", m.Name)
		}
		path, err := writeMutant(root, tmp, i, m)
		if err != nil {
			t.Errorf("mutation %s: %v", m.Name, err)
			continue
		}
		b, err := os.ReadFile(path)
		if err != nil || !strings.Contains(string(b), m.Mutant) {
			t.Errorf("mutation %s: the mutant lacks its change (%v)", m.Name, err)
		}
	}
	if len(mutations) < 12 {
		t.Errorf("%d mutations; the check keeps at least 12", len(mutations))
	}
}

func TestWriteMutantRefusesAmbiguousText(t *testing.T) {
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	m := Mutation{Name: "x", File: "internal/settle/engine.go", Original: "if !o.OK {", Mutant: "if false {"}
	if _, err := writeMutant(root, t.TempDir(), 0, m); err == nil || !strings.Contains(err.Error(), "Anchor") {
		t.Errorf("text found twice, no anchor: %v; want an error asking for an anchor", err)
	}
	m.Original = "no such text anywhere"
	if _, err := writeMutant(root, t.TempDir(), 0, m); err == nil {
		t.Error("text not found: no error")
	}
}
