package dlq_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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

// TestIntegrationRedriveWhileJobsFailAgain is issue 37's first finding on
// the emulator: three poison jobs in the dead-letter queue, a worker that
// still rejects them, and a redrive. The redrive used to move the jobs'
// fresh dead-letter copies again and again (each job ran hundreds of times);
// now it ends, reporting 3 moved and 3 that came back, and each job ran
// once more.
func TestIntegrationRedriveWhileJobsFailAgain(t *testing.T) {
	c := testenv.SQS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	setup, err := dlq.Setup(ctx, c, dlq.SetupOptions{Name: testenv.UniqueName("dlq-back"), VisibilityTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	target := setup.Target()

	var mu sync.Mutex
	runs := map[string]int{}
	ran := func() (map[string]int, int) {
		mu.Lock()
		defer mu.Unlock()
		out, n := map[string]int{}, 0
		for k, v := range runs {
			out[k], n = v, n+v
		}
		return out, n
	}
	h := worker.HandlerFunc(func(_ context.Context, m *worker.Message) error {
		mu.Lock()
		runs[m.Body]++
		mu.Unlock()
		return retry.Permanent(errors.New("poison: the order refers to a product that does not exist"))
	})
	w, err := worker.New(c, target.SourceURL, h, func(o *worker.Options) {
		o.Logger = slog.New(slog.DiscardHandler)
		o.WaitTime = time.Second
	})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(runCtx) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s (worker %+v)", what, w.Stats())
			}
		}
	}

	for i := range 3 {
		if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(target.SourceURL), MessageBody: aws.String(fmt.Sprintf("order-%d", i))}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor("the 3 jobs dead-lettered", func() bool { return w.Stats().DeadLettered == 3 })
	mu.Lock()
	clear(runs)
	mu.Unlock()

	// The redrive, while the worker still fails them. After each batch it
	// waits for the worker to have dead-lettered what it moved, so that
	// the copies are back before the redrive reaches the end of the queue
	// (a copy that comes back after the end is simply left there).
	var last dlq.Progress
	res, err := dlq.Redrive(ctx, c, target, dlq.RedriveOptions{
		Progress: func(p dlq.Progress) {
			last = p
			if p.Scanned > 30 {
				t.Errorf("the redrive has scanned %d messages of a dead-letter queue of 3: it is going round", p.Scanned)
				cancel()
				return
			}
			waitFor("the moved jobs dead-lettered again", func() bool { return w.Stats().DeadLettered >= 3+int64(p.Moved) })
		},
	})
	if err != nil {
		t.Fatalf("Redrive: %v (%+v)", err, res)
	}
	if res.Method != "manual" || res.Moved != 3 || res.CameBack != 3 || !res.Done {
		t.Errorf("result = %+v; want 3 moved and 3 came back, done", res)
	}
	if last.CameBack != 3 || !last.Done {
		t.Errorf("last progress = %+v", last)
	}
	got, total := ran()
	if total != 3 || got["order-0"] != 1 || got["order-1"] != 1 || got["order-2"] != 1 {
		t.Errorf("the handler ran %v after the first failures; want each job once more", got)
	}
	n, err := dlq.Count(ctx, c, target.DLQURL)
	if err != nil {
		t.Fatal(err)
	}
	if n.Visible+n.InFlight != 3 {
		t.Errorf("the dead-letter queue holds %+v, want the 3 that came back", n)
	}
	msgs, err := dlq.Inspect(ctx, c, target.DLQURL, dlq.InspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if !m.HasProvenance || m.Provenance.Error == "" {
			t.Errorf("message %s came back without its reason: %+v", m.ID, m.Provenance)
		}
	}
}
