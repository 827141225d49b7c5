package worker_test

import (
	"context"
	"errors"
	"hash/fnv"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/harness/testenv"
	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/worker"
)

// emulatorQueue creates a source queue and its DLQ on the local SQS.
func emulatorQueue(t *testing.T, client *sqs.Client, prefix string, visibility int) (src, dlqURL string) {
	t.Helper()
	setup, err := dlq.Setup(t.Context(), client, dlq.SetupOptions{
		Name:              testenv.UniqueName(prefix),
		MaxReceiveCount:   10,
		VisibilityTimeout: time.Duration(visibility) * time.Second,
	})
	if err != nil {
		t.Fatalf("dlq.Setup: %v", err)
	}
	target := setup.Target()
	return target.SourceURL, target.DLQURL
}

// drain receives every message of a queue (deleting them) and returns the
// bodies, once each (testenv.Drain).
func drain(t *testing.T, client *sqs.Client, url string) []string {
	t.Helper()
	var bodies []string
	for _, m := range testenv.Drain(t, client, url) {
		bodies = append(bodies, aws.ToString(m.Body))
	}
	return bodies
}

func fate(body string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(body))
	return h.Sum32() % 100
}

// TestEmulatorTenThousandMessagesNoneLost runs the worker over 10,000
// messages on the emulator: 30% fail their first attempt, 2% are poison.
// At the end every message is either recorded as handled or in the DLQ.
func TestEmulatorTenThousandMessagesNoneLost(t *testing.T) {
	client := testenv.SQS(t)
	const n = 10_000
	src, dlqURL := emulatorQueue(t, client, "w10k", 30)
	testenv.SendBodies(t, client, src, n)

	var mu sync.Mutex
	handled := map[string]int{}
	var permanents atomic.Int64
	h := worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
		f := fate(m.Body)
		switch {
		case f < 2:
			permanents.Add(1)
			return retry.Permanent(errors.New("poison job " + m.Body))
		case f < 32 && m.Attempt == 1:
			return errors.New("transient failure")
		}
		mu.Lock()
		handled[m.Body]++
		mu.Unlock()
		return nil
	})
	w, err := worker.New(client, src, h, func(o *worker.Options) {
		o.Logger = quiet
		o.Concurrency = 50
		o.RetryPolicy = fixedPolicy(3, time.Second)
		o.WaitTime = 2 * time.Second
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	t0 := time.Now()
	go func() { done <- w.Run(ctx) }()
	deadline := time.After(3 * time.Minute)
	for {
		s := w.Stats()
		mu.Lock()
		settled := int64(len(handled)) + s.DeadLettered
		mu.Unlock()
		if settled >= n {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("Run ended early: %v", err)
		case <-deadline:
			t.Fatalf("not settled after 3 minutes: %+v", s)
		case <-time.After(200 * time.Millisecond):
		}
	}
	elapsed := time.Since(t0)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}

	dead := drain(t, client, dlqURL)
	left := drain(t, client, src)
	seen := map[string]bool{}
	for b := range handled {
		seen[b] = true
	}
	dupDLQ := 0
	for _, b := range dead {
		if seen[b] {
			dupDLQ++
		}
		seen[b] = true
	}
	duplicates := 0
	for _, c := range handled {
		duplicates += c - 1
	}
	lost := 0
	for i := range n {
		if !seen[strconv.Itoa(i)] {
			lost++
		}
	}
	s := w.Stats()
	t.Logf("10,000 messages in %v: done %d, in DLQ %d, lost %d, duplicates %d (handled twice) + %d (done and in DLQ), left in source %d; %.3f SQS requests per message; %+v",
		elapsed.Round(time.Millisecond), len(handled), len(dead), lost, duplicates, dupDLQ, len(left), s.Cost(worker.Pricing{}).RequestsPerMessage, s)
	if lost != 0 {
		t.Fatalf("%d messages lost", lost)
	}
	if len(left) != 0 {
		t.Errorf("%d messages still in the source queue after settling", len(left))
	}
	if int64(len(dead)) != permanents.Load() {
		t.Errorf("DLQ holds %d messages, handlers returned Permanent %d times", len(dead), permanents.Load())
	}
}

// TestEmulatorShutdownUnderLoad cancels a worker with 50 messages in
// flight: they finish and are deleted, and a second worker picks up the
// rest well before the visibility timeout (nothing is stranded invisible).
func TestEmulatorShutdownUnderLoad(t *testing.T) {
	client := testenv.SQS(t)
	const n = 300
	src, _ := emulatorQueue(t, client, "wshut", 60)
	testenv.SendBodies(t, client, src, n)

	var mu sync.Mutex
	handled := map[string]int{}
	record := func(body string) {
		mu.Lock()
		handled[body]++
		mu.Unlock()
	}
	var running atomic.Int64
	slow := worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
		running.Add(1)
		defer running.Add(-1)
		time.Sleep(2 * time.Second)
		record(m.Body)
		return nil
	})
	w1, err := worker.New(client, src, slow, func(o *worker.Options) {
		o.Logger = quiet
		o.Concurrency = 50
		o.ShutdownTimeout = 20 * time.Second
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx1, cancel1 := context.WithCancel(context.Background())
	done1 := make(chan error, 1)
	go func() { done1 <- w1.Run(ctx1) }()
	for running.Load() < 50 {
		time.Sleep(10 * time.Millisecond)
	}
	cancel1()
	stoppedAt := time.Now()
	if err := <-done1; err != nil {
		t.Fatalf("first worker: %v", err)
	}
	s1 := w1.Stats()
	if s1.InFlight != 0 || s1.Succeeded+s1.Released != s1.Received {
		t.Fatalf("first worker did not settle what it received: %+v", s1)
	}

	fast := worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
		record(m.Body)
		return nil
	})
	w2, err := worker.New(client, src, fast, func(o *worker.Options) {
		o.Logger = quiet
		o.Concurrency = 20
		o.WaitTime = time.Second
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx2, cancel2 := context.WithCancel(context.Background())
	done2 := make(chan error, 1)
	go func() { done2 <- w2.Run(ctx2) }()
	for {
		mu.Lock()
		got := len(handled)
		mu.Unlock()
		if got == n {
			break
		}
		if time.Since(stoppedAt) > 30*time.Second {
			t.Fatalf("second worker handled only %d of %d within 30s of the shutdown (visibility timeout 60s): messages stranded", got, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	pickedUp := time.Since(stoppedAt)
	cancel2()
	if err := <-done2; err != nil {
		t.Fatalf("second worker: %v", err)
	}
	dups := 0
	for _, c := range handled {
		dups += c - 1
	}
	t.Logf("first worker: %d handled, %d released; all %d done %v after the shutdown began (visibility timeout 60s); duplicates %d",
		s1.Succeeded, s1.Released, n, pickedUp.Round(time.Millisecond), dups)
	if s1.Succeeded < 50 {
		t.Errorf("first worker finished %d messages, want the 50 in flight to finish", s1.Succeeded)
	}
	if left := drain(t, client, src); len(left) != 0 {
		t.Errorf("%d messages left", len(left))
	}
}
