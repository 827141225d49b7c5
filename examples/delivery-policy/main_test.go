package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/sqsworker/sqsworker/harness/testenv"
)

// TestRun runs the example against the local SQS (the emulator under make
// test, or the configured endpoint). It takes about the policy's 6 s.
func TestRun(t *testing.T) {
	client := testenv.SQS(t)
	var out bytes.Buffer
	err := run(t.Context(), &out, client)
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"flaky     retry 2 at", "throttled retry 1 at", "broken    retry 3 at", "retries exhausted after 4 attempts"} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("output lacks %q", line)
		}
	}
}
