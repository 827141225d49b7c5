package worker_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/worker"
)

// The queue's VisibilityTimeout lowered while a worker runs (12 s → 1 s)
// must not let SQS hand a running job to another handler: every receive
// asks for the visibility the heartbeat counts from.
func TestQueueVisibilityLoweredWhileRunning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, _ := newQueue(t, 10, "12")
		var mu sync.Mutex
		starts := map[string]int{}
		running := map[string]int{}
		overlaps := 0
		h := start(t, f, src, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			mu.Lock()
			starts[m.Body]++
			running[m.Body]++
			if running[m.Body] > 1 {
				overlaps++
			}
			mu.Unlock()
			time.Sleep(4 * time.Second)
			mu.Lock()
			running[m.Body]--
			mu.Unlock()
			return nil
		}))
		time.Sleep(time.Second)
		if _, err := f.SetQueueAttributes(context.Background(), &sqs.SetQueueAttributesInput{
			QueueUrl: aws.String(src), Attributes: map[string]string{"VisibilityTimeout": "1"},
		}); err != nil {
			t.Fatal(err)
		}
		for i := range 5 {
			f.MustSend(t, src, fmt.Sprint("job", i))
		}
		time.Sleep(30 * time.Second)
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		for i := range 5 {
			if n := starts[fmt.Sprint("job", i)]; n != 1 {
				t.Errorf("job%d started %d times, want once", i, n)
			}
		}
		if overlaps != 0 {
			t.Errorf("%d handler starts overlapped another run of the same job", overlaps)
		}
		if s := h.w.Stats(); s.Deleted != 5 || s.Lost != 0 || s.SettledLate != 0 {
			t.Errorf("Stats: Deleted %d, Lost %d, SettledLate %d; want 5, 0, 0", s.Deleted, s.Lost, s.SettledLate)
		}
		if n := len(f.Messages(src)); n != 0 {
			t.Errorf("%d messages left in the queue, want none", n)
		}
	})
}

// SQS counts visibility in whole seconds: a sub-second
// Options.VisibilityTimeout cannot be asked for, so New refuses it.
func TestSubSecondVisibilityTimeoutRefused(t *testing.T) {
	f, src, _ := newQueue(t, 5, "30")
	_, err := worker.New(f, src, worker.HandlerFunc(func(context.Context, *worker.Message) error { return nil }),
		func(o *worker.Options) { o.Logger = quiet; o.VisibilityTimeout = 500 * time.Millisecond })
	if err == nil || !strings.Contains(err.Error(), "whole seconds") {
		t.Fatalf("err = %v, want a refusal that explains whole seconds", err)
	}
}
