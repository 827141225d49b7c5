package sqslambda_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/harness/testenv"
	"github.com/sqsworker/sqsworker/internal/queueurl"
	"github.com/sqsworker/sqsworker/queueref"
	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/worker"
	"github.com/sqsworker/sqsworker/worker/sqslambda"
)

// scenario is one run's record of what the shared job code saw.
type scenario struct {
	queueURL string

	mu       sync.Mutex
	attempts map[string][]time.Time
	done     map[string]bool
	wrongURL string
}

// The scenario's messages: ok-* succeed, flaky-* fail twice then succeed,
// poison-* are permanent, doomed-* always fail and exhaust the policy
// (2 retries 1 s apart, so attempt 3 is the last).
func scenarioBodies() []string {
	var out []string
	for i := range 8 {
		out = append(out, fmt.Sprintf("ok-%d", i))
	}
	for i := range 4 {
		out = append(out, fmt.Sprintf("flaky-%d", i))
	}
	for i := range 3 {
		out = append(out, fmt.Sprintf("poison-%d", i), fmt.Sprintf("doomed-%d", i))
	}
	return out
}

func scenarioPolicy() retry.Policy { return fixedPolicy(2, time.Second) }

// handler is the job code, identical for the worker and for Lambda.
func (s *scenario) handler() worker.Handler {
	return worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
		s.mu.Lock()
		s.attempts[m.Body] = append(s.attempts[m.Body], time.Now())
		if m.QueueURL != s.queueURL {
			s.wrongURL = m.QueueURL
		}
		s.mu.Unlock()
		switch {
		case strings.HasPrefix(m.Body, "poison"):
			return retry.Permanent(errors.New("cannot parse " + m.Body))
		case strings.HasPrefix(m.Body, "doomed"),
			strings.HasPrefix(m.Body, "flaky") && m.Attempt < 3:
			return errors.New("downstream unavailable")
		}
		s.mu.Lock()
		s.done[m.Body] = true
		s.mu.Unlock()
		return nil
	})
}

func (s *scenario) doneSet() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for b := range s.done {
		out = append(out, b)
	}
	slices.Sort(out)
	return out
}

// maxRetryGap returns the longest wait between two attempts of one message.
func (s *scenario) maxRetryGap() (time.Duration, time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	longest, shortest := time.Duration(0), time.Hour
	for _, ts := range s.attempts {
		for i := 1; i < len(ts); i++ {
			gap := ts[i].Sub(ts[i-1])
			longest, shortest = max(longest, gap), min(shortest, gap)
		}
	}
	return longest, shortest
}

func queueDepth(t *testing.T, client *sqs.Client, url string) int {
	t.Helper()
	out, err := client.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(url),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages, types.QueueAttributeNameApproximateNumberOfMessagesNotVisible},
	})
	if err != nil {
		t.Fatalf("GetQueueAttributes %s: %v", url, err)
	}
	a, _ := strconv.Atoi(out.Attributes[string(types.QueueAttributeNameApproximateNumberOfMessages)])
	b, _ := strconv.Atoi(out.Attributes[string(types.QueueAttributeNameApproximateNumberOfMessagesNotVisible)])
	return a + b
}

// drainWithProvenance receives and deletes every message of a queue and
// returns body → provenance (testenv.Drain).
func drainWithProvenance(t *testing.T, client *sqs.Client, url string) map[string]dlq.Provenance {
	t.Helper()
	got := map[string]dlq.Provenance{}
	for _, m := range testenv.Drain(t, client, url) {
		p, _ := dlq.ParseProvenance(m.MessageAttributes)
		got[aws.ToString(m.Body)] = p
	}
	return got
}

// TestEmulatorWorkerAndLambdaAgree runs the same job code over the same
// messages twice on the emulator, once with worker.Worker and once as a
// Lambda function through RunLocal, with a 30 s visibility timeout and a
// retry policy of 1 s. Both end in the same state, and failed messages come
// back after about the policy's delay, not the visibility timeout.
func TestEmulatorWorkerAndLambdaAgree(t *testing.T) {
	client := testenv.SQS(t)
	bodies := scenarioBodies()
	setup := func(prefix string) dlq.Target {
		setup, err := dlq.Setup(t.Context(), client, dlq.SetupOptions{
			Name: testenv.UniqueName(prefix), MaxReceiveCount: 10, VisibilityTimeout: 30 * time.Second,
		})
		if err != nil {
			t.Fatalf("dlq.Setup: %v", err)
		}
		target := setup.Target()
		for _, b := range bodies {
			if _, err := client.SendMessage(t.Context(), &sqs.SendMessageInput{QueueUrl: aws.String(target.SourceURL), MessageBody: aws.String(b)}); err != nil {
				t.Fatal(err)
			}
		}
		return target
	}
	wq, lq := setup("lamw"), setup("laml")
	ws := &scenario{queueURL: wq.SourceURL, attempts: map[string][]time.Time{}, done: map[string]bool{}}
	ls := &scenario{queueURL: lq.SourceURL, attempts: map[string][]time.Time{}, done: map[string]bool{}}
	if arn, _ := queueref.ParseARN(lq.SourceARN); queueurl.FromARN(arn) == lq.SourceURL {
		t.Logf("note: the emulator's queue URL equals the public form; GetQueueUrl resolution is not exercised")
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errs := make(chan error, 2)
	start := time.Now()

	w, err := worker.New(client, wq.SourceURL, ws.handler(), func(o *worker.Options) {
		o.Logger = quiet
		o.RetryPolicy = scenarioPolicy()
		o.WaitTime = 2 * time.Second
		o.HandlerName = "scenario"
	})
	if err != nil {
		t.Fatal(err)
	}
	go func() { errs <- w.Run(ctx) }()

	fn := mustNew(t, ls.handler(), func(o *sqslambda.Options) {
		o.Logger = quiet
		o.Client = client
		o.RetryPolicy = scenarioPolicy()
		o.Concurrency = 10
		o.HandlerName = "scenario"
	})
	go func() {
		errs <- sqslambda.RunLocal(ctx, client, lq.SourceURL, fn.Handle, func(o *sqslambda.LocalOptions) {
			o.Logger = quiet
			o.ReportBatchItemFailures = true
			o.FunctionTimeout = 5 * time.Second
			o.WaitTime = 2 * time.Second
		})
	}()

	wantDone := []string{}
	wantDLQ := []string{}
	for _, b := range bodies {
		if strings.HasPrefix(b, "ok") || strings.HasPrefix(b, "flaky") {
			wantDone = append(wantDone, b)
		} else {
			wantDLQ = append(wantDLQ, b)
		}
	}
	slices.Sort(wantDone)
	slices.Sort(wantDLQ)
	settled := func(s *scenario, target dlq.Target) bool {
		return len(s.doneSet()) == len(wantDone) && queueDepth(t, client, target.DLQURL) == len(wantDLQ) && queueDepth(t, client, target.SourceURL) == 0
	}
	for !settled(ws, wq) || !settled(ls, lq) {
		if time.Since(start) > 25*time.Second {
			t.Fatalf("not settled after 25s: worker done %d, lambda done %d (want %d)", len(ws.doneSet()), len(ls.doneSet()), len(wantDone))
		}
		select {
		case err := <-errs:
			t.Fatalf("a runtime stopped early: %v", err)
		case <-time.After(200 * time.Millisecond):
		}
	}
	took := time.Since(start)
	cancel()
	for range 2 {
		if err := <-errs; err != nil {
			t.Errorf("runtime: %v", err)
		}
	}

	for name, run := range map[string]struct {
		s *scenario
		t dlq.Target
	}{"worker": {ws, wq}, "lambda": {ls, lq}} {
		if got := run.s.doneSet(); !slices.Equal(got, wantDone) {
			t.Errorf("%s done %v, want %v", name, got, wantDone)
		}
		dead := drainWithProvenance(t, client, run.t.DLQURL)
		var deadBodies []string
		for b, p := range dead {
			deadBodies = append(deadBodies, b)
			reason := "retries exhausted after 3 attempts"
			if strings.HasPrefix(b, "poison") {
				reason = "permanent failure"
			}
			if !strings.Contains(p.Error, reason) || p.Handler != "scenario" || p.SourceQueue != run.t.SourceURL {
				t.Errorf("%s: %s in the DLQ with provenance %+v, want reason %q from %s", name, b, p, reason, run.t.SourceURL)
			}
		}
		slices.Sort(deadBodies)
		if !slices.Equal(deadBodies, wantDLQ) {
			t.Errorf("%s DLQ %v, want %v", name, deadBodies, wantDLQ)
		}
		if left := drainWithProvenance(t, client, run.t.SourceURL); len(left) != 0 {
			t.Errorf("%s left %d messages in the source", name, len(left))
		}
		if run.s.wrongURL != "" {
			t.Errorf("%s handler saw QueueURL %s, want %s", name, run.s.wrongURL, run.s.queueURL)
		}
		longest, shortest := run.s.maxRetryGap()
		t.Logf("%s: %d done, %d dead-lettered; retries came back after %v to %v (policy 1s, visibility timeout 30s)",
			name, len(wantDone), len(wantDLQ), shortest.Round(10*time.Millisecond), longest.Round(10*time.Millisecond))
		if longest > 6*time.Second {
			t.Errorf("%s: a failed message came back only after %v; with a 1s policy it must come back within a few seconds, not the 30s visibility timeout", name, longest)
		}
		if shortest < 900*time.Millisecond {
			t.Errorf("%s: a failed message came back after %v, before the policy's 1s delay", name, shortest)
		}
	}
	t.Logf("both runs settled in %v", took.Round(10*time.Millisecond))
}
