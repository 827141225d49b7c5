package worker_test

import (
	"context"
	"errors"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/harness/testenv"
	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/worker"
)

// TestEmulatorDeliveryPolicySchedule runs a failing job on the emulator
// under a short delivery policy: the observed redeliveries follow the
// policy's schedule (not the 30 s visibility timeout), and after the last
// retry the job is in the DLQ with its reason.
func TestEmulatorDeliveryPolicySchedule(t *testing.T) {
	client := testenv.SQS(t)
	policy, err := retry.ParseDeliveryPolicy([]byte(`{"healthyRetryPolicy": {
		"minDelayTarget": 1, "maxDelayTarget": 4, "numRetries": 4,
		"numNoDelayRetries": 1, "backoffFunction": "exponential"}}`))
	if err != nil {
		t.Fatal(err)
	}
	policy.Jitter = "none"
	schedule := policy.Delays()

	src, dlqURL := emulatorQueue(t, client, "wpolicy", 30)
	if _, err := client.SendMessage(t.Context(), sendInput(src, "always fails")); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var at []time.Time
	w, err := worker.New(client, src, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
		mu.Lock()
		at = append(at, time.Now())
		mu.Unlock()
		return errors.New("downstream unavailable")
	}), func(o *worker.Options) {
		o.Logger = quiet
		o.RetryPolicy = policy
		o.WaitTime = time.Second
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	deadline := time.Now().Add(policy.Total() + 20*time.Second)
	for w.Stats().DeadLettered == 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	mu.Lock()
	defer mu.Unlock()
	if len(at) != len(schedule)+1 {
		t.Fatalf("handled %d times, want %d (1 + %d retries)", len(at), len(schedule)+1, len(schedule))
	}
	for i, want := range schedule {
		got := at[i+1].Sub(at[i])
		// SQS takes whole seconds: the worker rounds a delay up.
		nominal := time.Duration(math.Ceil(want.Seconds())) * time.Second
		t.Logf("retry %d: after %v (schedule %v, applied as %v)", i+1, got.Round(10*time.Millisecond), want, nominal)
		if got < nominal-100*time.Millisecond || got > nominal+1500*time.Millisecond {
			t.Errorf("retry %d came after %v, want %v (the schedule), well before the 30s visibility timeout", i+1, got, nominal)
		}
	}
	msgs, err := dlq.Inspect(t.Context(), client, dlqURL, dlq.InspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 1 || !msgs[0].HasProvenance {
		t.Fatalf("DLQ = %+v, want the job with provenance", msgs)
	}
	p := msgs[0].Provenance
	t.Logf("DLQ provenance: attempt %d, error %q", p.Attempt, p.Error)
	if p.Attempt != len(schedule)+1 {
		t.Errorf("provenance attempt %d, want %d", p.Attempt, len(schedule)+1)
	}
}

func sendInput(url, body string) *sqs.SendMessageInput {
	return &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body)}
}
