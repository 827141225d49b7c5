package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/sqsworker/sqsworker/harness/testenv"
)

// TestRun runs the example against the local SQS and S3 (the emulator under
// make test, or the configured endpoints).
func TestRun(t *testing.T) {
	client, s3c := testenv.SQS(t), testenv.S3(t)
	var out bytes.Buffer
	err := run(t.Context(), &out, client, s3c)
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}
	// 20 full batches of thumbnails, then the delayed job and the report:
	// together, or apart when the report's upload to S3 outlasts the
	// batcher's 20 ms linger.
	if !regexp.MustCompile(`202 jobs sent in 2[12] SendMessageBatch calls`).MatchString(out.String()) {
		t.Error("output lacks 202 jobs sent in 21 or 22 calls")
	}
	for _, want := range []string{"1 offloaded to S3, 1 with a due time", "handled the report: 2097152 bytes", "due at "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
}
