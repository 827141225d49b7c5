package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsworker/sqsworker/internal/harness/testenv"
	"github.com/sqsworker/sqsworker/worker"
	"github.com/sqsworker/sqsworker/worker/sqslambda"
)

// TestDemo runs the local mode against the local SQS (the emulator under
// make test, or the configured endpoint).
func TestDemo(t *testing.T) {
	client := testenv.SQS(t)
	policy, err := retryPolicy("")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err = runDemo(t.Context(), &out, client, policy)
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"order A-4 has no items", "not an order", "ok: 4 orders processed"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

// TestJobOnAnEvent runs the job code on an SQS event as Lambda delivers it,
// without any AWS: the bad orders and the flaky one's first attempt are
// reported in the partial batch response.
func TestJobOnAnEvent(t *testing.T) {
	var ev events.SQSEvent
	for i, body := range samples {
		ev.Records = append(ev.Records, events.SQSMessage{
			MessageId:      string(rune('a' + i)),
			ReceiptHandle:  "h",
			Body:           body,
			Attributes:     map[string]string{"ApproximateReceiveCount": "1"},
			EventSource:    "aws:sqs",
			EventSourceARN: "arn:aws:sqs:eu-west-1:123456789012:orders",
		})
	}
	h, err := sqslambda.New(worker.HandlerFunc(processOrder), func(o *sqslambda.Options) { o.Logger = quietLog() })
	if err != nil {
		t.Fatal(err)
	}
	resp, err := h.Handle(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(resp)
	want := `{"batchItemFailures":[{"itemIdentifier":"b"},{"itemIdentifier":"d"},{"itemIdentifier":"e"}]}`
	if string(got) != want {
		t.Errorf("response %s, want %s", got, want)
	}
}

func TestRetryPolicyFromTheEnvironment(t *testing.T) {
	if _, err := retryPolicy(`{"healthyRetryPolicy":{"numRetries":"three"}}`); err == nil {
		t.Error("a malformed SQSWORKER_RETRY_POLICY was accepted")
	}
	p, err := retryPolicy("")
	if err != nil {
		t.Fatal(err)
	}
	if _, again := p.Delay(5); again {
		t.Error("the default policy should give up after 4 retries")
	}
}

func quietLog() *slog.Logger { return slog.New(slog.DiscardHandler) }
