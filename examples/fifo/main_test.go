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
	if !strings.Contains(out.String(), "maxReceiveCount 40: 10 × the default policy's 4 attempts") {
		t.Errorf("the example does not apply the FIFO rule:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "account-b: applied in order [1 2 3 4]") {
		t.Error("output lacks account-b's order")
	}
}
