package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/examples/internal/exampleutil"
	"github.com/sqsworker/sqsworker/queueref"
	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/worker"
)

func main() {
	exampleutil.Main("delivery-policy", func(ctx context.Context, cfg aws.Config) error {
		return run(ctx, os.Stdout, sqs.NewFromConfig(cfg))
	})
}

const policyJSON = `{"healthyRetryPolicy": {"minDelayTarget": 1, "maxDelayTarget": 3, "numRetries": 3, "backoffFunction": "linear"}}`

// The jobs, by body.
const (
	flakyJob     = "flaky"     // fails attempts 1 and 2, succeeds on 3
	throttledJob = "throttled" // attempt 1 is told "retry after 2s" (retry.After)
	brokenJob    = "broken"    // fails every attempt
)

func run(ctx context.Context, out io.Writer, client *sqs.Client) error {
	policy, err := retry.ParseDeliveryPolicy([]byte(policyJSON))
	if err != nil {
		return err
	}
	policy.Jitter = "none"
	delays := policy.Delays()
	schedule := make([]time.Duration, len(delays)) // since the first failure
	var total time.Duration
	for i, d := range delays {
		total += d
		schedule[i] = total
		fmt.Fprintf(out, "retry %d: %v after attempt %d fails (%v after the first failure)\n", i+1, d, i+1, total)
	}
	fmt.Fprintf(out, "after attempt %d fails: the dead-letter queue\n", len(delays)+1)

	name := "sqsworker-policy-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	setup, err := dlq.Setup(ctx, client, dlq.SetupOptions{Name: name, MaxReceiveCount: len(delays) + 2})
	if err != nil {
		return err
	}
	target := setup.Target()
	defer exampleutil.DeleteQueues(ctx, client, target.SourceURL, target.DLQURL)
	findings, err := dlq.Lint(ctx, client, target.SourceURL, dlq.LintOptions{Schedule: policy})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "dlq.Lint of %s against the policy: %d finding(s)\n", queueref.Name(target.SourceURL), len(findings))
	for _, f := range findings {
		fmt.Fprintf(out, "  %s %s: %s\n", f.Severity, f.Code, f.Message)
		if f.Severity >= dlq.SeverityWarning {
			return fmt.Errorf("lint: %s; %s", f.Message, f.Fix)
		}
	}

	for _, body := range []string{flakyJob, throttledJob, brokenJob} {
		if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(target.SourceURL), MessageBody: aws.String(body)}); err != nil {
			return err
		}
	}

	var (
		mu        sync.Mutex
		firstFail = map[string]time.Time{}
		early     []string // retries that came before their schedule
		succeeded = map[string]int{}
	)
	h := worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
		mu.Lock()
		defer mu.Unlock()
		if t0, ok := firstFail[m.Body]; ok {
			at := time.Since(t0)
			want := schedule[m.Attempt-2]
			if m.Body == throttledJob {
				want = 2 * time.Second
			}
			fmt.Fprintf(out, "%-9s retry %d at +%.1fs (schedule +%.1fs)\n", m.Body, m.Attempt-1, at.Seconds(), want.Seconds())
			if at < want-100*time.Millisecond {
				early = append(early, fmt.Sprintf("%s retry %d came at %v, before its schedule %v", m.Body, m.Attempt-1, at, want))
			}
		}
		var err error
		switch {
		case m.Body == flakyJob && m.Attempt <= 2:
			err = errors.New("upstream timed out")
		case m.Body == throttledJob && m.Attempt == 1:
			// The downstream said when to come back: that delay, not the policy's.
			err = retry.After(2*time.Second, errors.New("rate limited (HTTP 429, Retry-After: 2)"))
		case m.Body == brokenJob:
			err = errors.New("dependency is down")
		}
		if err != nil {
			if _, ok := firstFail[m.Body]; !ok {
				firstFail[m.Body] = time.Now()
			}
			fmt.Fprintf(out, "%-9s attempt %d failed: %v\n", m.Body, m.Attempt, err)
			return err
		}
		succeeded[m.Body]++
		fmt.Fprintf(out, "%-9s attempt %d succeeded\n", m.Body, m.Attempt)
		return nil
	})
	w, err := worker.New(client, target.SourceURL, h, func(o *worker.Options) {
		o.RetryPolicy = policy
		o.HandlerName = "delivery-policy example"
	})
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- w.Run(runCtx) }()
	settled := func() bool {
		st := w.Stats()
		return st.Succeeded == 2 && st.DeadLettered == 1 && st.InFlight == 0
	}
	err = exampleutil.WaitFor(ctx, total+20*time.Second, settled)
	cancel()
	if rerr := <-runErr; err == nil {
		err = rerr
	}
	if err != nil {
		return fmt.Errorf("waiting for the jobs (%+v): %w", w.Stats(), err)
	}

	dead, err := dlq.Inspect(ctx, client, target.DLQURL, dlq.InspectOptions{})
	if err != nil {
		return err
	}
	for _, m := range dead {
		fmt.Fprintf(out, "dead-letter queue: %q, attempt %d: %s\n", m.Body, m.Provenance.Attempt, m.Provenance.Error)
	}
	mu.Lock()
	defer mu.Unlock()
	switch {
	case len(early) > 0:
		return errors.New(early[0])
	case succeeded[flakyJob] != 1 || succeeded[throttledJob] != 1 || succeeded[brokenJob] != 0:
		return fmt.Errorf("successes %v; want flaky and throttled once each", succeeded)
	case len(dead) != 1 || dead[0].Body != brokenJob || dead[0].Provenance.Attempt != len(delays)+1:
		return fmt.Errorf("the dead-letter queue holds %d message(s); want the broken job after %d attempts", len(dead), len(delays)+1)
	}
	fmt.Fprintln(out, "ok: retries on schedule; the broken job is in the dead-letter queue with its reason")
	return nil
}
