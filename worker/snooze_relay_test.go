package worker_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/harness/testenv"
	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/worker"
)

// Waiting never brings a job to the dead-letter queue: a job snoozed far
// more often than the queue's maxReceiveCount (a fleet cap held for hours,
// say) is never moved there by SQS, its failures are counted exactly (the
// snoozes not among them), and it keeps one ID throughout.
func TestSnoozesNeverSpendTheReceiveBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, dlqURL := newQueue(t, 5, "30")
		f.MustSend(t, src, "job")
		var mu sync.Mutex
		var calls int
		var failedAt, doneAt []int
		ids := map[string]bool{}
		h := start(t, f, src, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			mu.Lock()
			defer mu.Unlock()
			calls++
			ids[m.ID] = true
			switch {
			case calls == 1 || calls == 32: // two real failures among 60 snoozes
				failedAt = append(failedAt, m.Attempt)
				return retry.After(time.Second, errors.New("downstream busy"))
			case calls < 63:
				return retry.Snooze(time.Minute, "cap full")
			}
			doneAt = append(doneAt, m.Attempt)
			return nil
		}))
		time.Sleep(3 * time.Hour)
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		if n := len(f.Messages(dlqURL)); n != 0 {
			t.Fatalf("%d messages dead-lettered; a job that waits must never reach the DLQ", n)
		}
		if fmt.Sprint(failedAt) != "[1 2]" || fmt.Sprint(doneAt) != "[3]" {
			t.Errorf("failures at attempts %v and success at %v; want [1 2] and [3] (snoozes do not count)", failedAt, doneAt)
		}
		if len(ids) != 1 {
			t.Errorf("the job was seen under %d IDs, want one", len(ids))
		}
		if s := h.w.Stats(); s.Snoozed != 60 || s.Deleted != 1 {
			t.Errorf("stats: %d snoozed, %d deleted; want 60 and 1", s.Snoozed, s.Deleted)
		}
	})
}

// The same on the emulator: jobs snoozed ten times on a queue whose
// maxReceiveCount is 3 all complete, none dead-lettered.
func TestEmulatorSnoozesNeverDeadLetter(t *testing.T) {
	client := testenv.SQS(t)
	setup, err := dlq.Setup(t.Context(), client, dlq.SetupOptions{Name: testenv.UniqueName("snooze"), MaxReceiveCount: 3, VisibilityTimeout: 30 * time.Second})
	if err != nil {
		t.Fatalf("dlq.Setup: %v", err)
	}
	src, dlqURL := setup.Target().SourceURL, setup.Target().DLQURL
	const jobs, snoozes = 5, 10
	testenv.SendBodies(t, client, src, jobs)
	var mu sync.Mutex
	seen := map[string]int{}
	var done atomic.Int64
	w, err := worker.New(client, src, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
		mu.Lock()
		seen[m.ID]++
		n := seen[m.ID]
		mu.Unlock()
		if n <= snoozes {
			return retry.Snooze(0, "wait")
		}
		done.Add(1)
		return nil
	}), func(o *worker.Options) { o.Logger = quiet })
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() { errc <- w.Run(ctx) }()
	deadline := time.Now().Add(60 * time.Second)
	for done.Load() < jobs && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if done.Load() != jobs {
		t.Fatalf("%d of %d jobs completed within 60 s; seen %v", done.Load(), jobs, seen)
	}
	if len(seen) != jobs {
		t.Errorf("the jobs were seen under %d IDs, want %d (a relayed copy keeps its job's ID)", len(seen), jobs)
	}
	if dead := drain(t, client, dlqURL); len(dead) != 0 {
		t.Errorf("%d jobs dead-lettered after %d snoozes each on maxReceiveCount 3: %v", len(dead), snoozes, dead)
	}
	if s := w.Stats(); s.Snoozed != jobs*snoozes {
		t.Errorf("%d snoozes counted, want %d", s.Snoozed, jobs*snoozes)
	}
}
