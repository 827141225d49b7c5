package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/sqsworker/sqsworker/harness/testenv"
)

// TestRun runs the example against the local SQS and SNS (the emulator
// under make test, or the configured endpoints).
func TestRun(t *testing.T) {
	var out bytes.Buffer
	err := run(t.Context(), &out, testenv.SQS(t), testenv.SNS(t))
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"setup again: 0 changes", "published 6 orders in 1 request(s)", "rental-billing", "unwrapped from SNS message", "raw delivery",
		"dead-lettered by its handler: permanent failure: malformed order", "redrive: moved 2 of 2 (manual)",
		"every order is where it should be",
	} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("output lacks %q", line)
		}
	}
}
