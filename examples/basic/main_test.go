package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/sqsworker/sqsworker/harness/testenv"
)

// TestRun runs the example against the local SQS (the emulator under make
// test, or the configured endpoint).
func TestRun(t *testing.T) {
	client := testenv.SQS(t)
	var out bytes.Buffer
	err := run(t.Context(), &out, client)
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(out.String(), "handled \"resize photo-"); got != jobs {
		t.Errorf("%d jobs reported handled, want %d", got, jobs)
	}
}
