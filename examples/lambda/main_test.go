package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/harness/testenv"
	"github.com/sqsworker/sqsworker/sqstest"
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

// Outside Lambda, without SQSWORKER_LOCAL, the program says what to set
// instead of failing in lambda.Start with two variable names.
func TestOutsideLambdaSaysWhatToSet(t *testing.T) {
	env := map[string]string{}
	err := inLambda(func(k string) string { return env[k] })
	if err == nil || !strings.Contains(err.Error(), "SQSWORKER_LOCAL=1") || !strings.Contains(err.Error(), "SQSWORKER_QUEUE_URL") {
		t.Errorf("outside Lambda: %v", err)
	}
	env["AWS_LAMBDA_RUNTIME_API"] = "127.0.0.1:9001"
	if err := inLambda(func(k string) string { return env[k] }); err != nil {
		t.Errorf("inside Lambda: %v", err)
	}
}

// Polling an existing queue prints what it polls, a line every interval
// while it polls, and what happened when Ctrl-C stops it.
func TestServeLocalSaysWhatItDoes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := sqstest.For(t)
		url := f.MustCreateQueue(t, "orders", nil)
		if _, err := f.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(samples[0])}); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		log := slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{ReplaceAttr: dropTime}))
		fn, err := sqslambda.New(worker.HandlerFunc(processOrder), func(o *sqslambda.Options) { o.Logger = quietLog() })
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second) // Ctrl-C after 2.5 min
		defer cancel()
		if err := serveLocal(ctx, f, url, fn, log, time.Minute); err != nil {
			t.Fatal(err)
		}
		got := out.String()
		for _, want := range []string{
			`msg="polling the queue as Lambda's event source mapping would; each batch is one invocation of the function; Ctrl-C stops" queue=orders`,
			`msg="still polling" queue=orders invocations=1`,
			`msg="stopped: no more polling; records received but not yet invoked were released to the queue`,
		} {
			if !strings.Contains(got, want) {
				t.Errorf("output lacks %q:\n%s", want, got)
			}
		}
		if n := strings.Count(got, "still polling"); n != 2 {
			t.Errorf("%d still-polling lines in 2.5 min, want 2:\n%s", n, got)
		}
		if n := len(f.Messages(url)); n != 0 {
			t.Errorf("%d messages left", n)
		}
	})
}
