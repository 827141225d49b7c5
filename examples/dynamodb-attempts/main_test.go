package main

import (
	"bytes"
	"testing"

	"github.com/sqsworker/sqsworker/harness/testenv"
)

// TestRun runs the example against the local SQS and DynamoDB (the
// emulators under make test, or the configured endpoints).
func TestRun(t *testing.T) {
	client, db := testenv.SQS(t), testenv.DynamoDB(t)
	var out bytes.Buffer
	err := run(t.Context(), &out, client, db)
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}
}
