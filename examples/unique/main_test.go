package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sqsworker/sqsworker/examples/internal/exampleutil"
	"github.com/sqsworker/sqsworker/harness/testenv"
)

// TestRun runs the example against the local SQS and DynamoDB (the
// emulators under make test, or the configured endpoints). It takes a few
// seconds: one retry after a second.
func TestRun(t *testing.T) {
	client := testenv.SQS(t)
	db := testenv.DynamoDB(t)
	db = dynamodb.New(db.Options(), exampleutil.QuietChecksums)
	var out bytes.Buffer
	err := run(t.Context(), &out, client, db)
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"refused: job", "retrying", "ok: one report job at a time"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
}
