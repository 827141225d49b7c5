package worker_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/harness/testenv"
	"github.com/sqsworker/sqsworker/worker"
)

// TestEmulatorHandlerIgnoringContextAtShutdown is issue 37's third finding
// on the emulator: in a process that lives on after Run (an HTTP service
// embedding the worker), a handler that ignores its context at shutdown
// had its message come back after one visibility timeout; a second
// consumer ran it while the first handler still ran, and the first
// handler's success was dropped. Now the message stays leased until the
// handler returns, and its success deletes it: the handler ran once, with
// no overlap, and Run still returned within its bound.
func TestEmulatorHandlerIgnoringContextAtShutdown(t *testing.T) {
	client := testenv.SQS(t)
	src, _ := emulatorQueue(t, client, "stuck", 1) // a 1 s lease: it would come back at once
	quiet := slog.New(slog.DiscardHandler)

	var mu sync.Mutex
	starts, running, overlaps := 0, 0, 0
	began := make(chan struct{}, 1)
	shutdown := make(chan time.Time, 1)
	returned := make(chan struct{})
	job := func(ctx context.Context, m *worker.Message) error {
		mu.Lock()
		starts++
		first := starts == 1
		running++
		if running > 1 {
			overlaps++
		}
		mu.Unlock()
		defer func() { mu.Lock(); running--; mu.Unlock() }()
		if !first {
			time.Sleep(time.Second) // a second run (it should never happen)
			return nil
		}
		began <- struct{}{}
		// Ignores its context: returns success 4 s after the 1 s
		// ShutdownTimeout, long after Run has returned.
		at := <-shutdown
		time.Sleep(time.Until(at.Add(time.Second + 4*time.Second)))
		close(returned)
		return nil
	}
	w1, err := worker.New(client, src, worker.HandlerFunc(job), func(o *worker.Options) {
		o.Logger = quiet
		o.ShutdownTimeout = time.Second
		o.FlushTimeout = 2 * time.Second
		o.WaitTime = time.Second
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx1, stop1 := context.WithCancel(t.Context())
	done1 := make(chan error, 1)
	go func() { done1 <- w1.Run(ctx1) }()
	if _, err := client.SendMessage(t.Context(), &sqs.SendMessageInput{QueueUrl: aws.String(src), MessageBody: aws.String("stubborn")}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-began:
	case <-time.After(30 * time.Second):
		t.Fatal("the handler did not start within 30 s")
	}

	// Another consumer of the queue, running throughout: it would get the
	// message if its lease ended while the first handler runs.
	w2, err := worker.New(client, src, worker.HandlerFunc(job), func(o *worker.Options) { o.Logger = quiet; o.WaitTime = time.Second })
	if err != nil {
		t.Fatal(err)
	}
	ctx2, stop2 := context.WithCancel(t.Context())
	done2 := make(chan error, 1)
	go func() { done2 <- w2.Run(ctx2) }()
	defer func() {
		stop2()
		if err := <-done2; err != nil {
			t.Errorf("second worker: %v", err)
		}
	}()

	t0 := time.Now()
	shutdown <- t0
	stop1()
	var runErr error
	select {
	case runErr = <-done1:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return within 10 s (ShutdownTimeout 1 s + FlushTimeout 2 s)")
	}
	if d := time.Since(t0); d > 3*time.Second+500*time.Millisecond {
		t.Errorf("Run returned %v after its context ended; want within ShutdownTimeout + FlushTimeout (3 s)", d)
	}
	if !errors.Is(runErr, worker.ErrHandlersNotStopped) {
		t.Errorf("Run: %v; want ErrHandlersNotStopped", runErr)
	}
	select {
	case <-returned:
	case <-time.After(20 * time.Second):
		t.Fatal("the handler did not return")
	}
	deadline := time.Now().Add(15 * time.Second)
	for w1.Stats().Deleted != 1 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(3 * time.Second) // a second run would start now, if the message were still there
	mu.Lock()
	defer mu.Unlock()
	if starts != 1 || overlaps != 0 {
		t.Errorf("the handler started %d times, %d overlapping; want once, no overlap", starts, overlaps)
	}
	if s := w1.Stats(); s.Deleted != 1 || s.Abandoned != 0 || s.InFlight != 0 {
		t.Errorf("first worker: Deleted %d, Abandoned %d, InFlight %d; want the late success deleted", s.Deleted, s.Abandoned, s.InFlight)
	}
	if c, err := dlq.Count(t.Context(), client, src); err != nil || c.Total() != 0 {
		t.Errorf("the queue holds %+v (%v); want the message deleted", c, err)
	}
}
