package worker_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sqsworker/sqsworker/harness/faultproxy"
	"github.com/sqsworker/sqsworker/harness/testenv"
	"github.com/sqsworker/sqsworker/worker"
)

// The settlement issue's acceptance on the emulator: 3,000 jobs, one
// worker (Concurrency 10, visibility 5 s, 2 ms jobs that always succeed),
// every 10th DeleteMessageBatch answered with SQS's throttling error by a
// proxy in front of fauxqs. Before the fix the jobs ran about 25,500 times
// and 2,500 of them ended in the DLQ; now every job runs once (give or take
// a rare redelivery), nothing is dead-lettered, and Stats shows the retried
// deletes.
func TestEmulatorThrottledDeletes(t *testing.T) {
	const jobs = 3000
	direct := testenv.SQS(t)
	src, dlqURL := emulatorQueue(t, direct, "throttled-deletes", 5)
	testenv.SendBodies(t, direct, src, jobs)

	p, err := faultproxy.Start(faultproxy.Options{
		Upstream: testenv.Get(t).SQS,
		Rules:    map[string]faultproxy.Rule{"DeleteMessageBatch": {Every: 10, EveryKind: faultproxy.Throttle}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	client := testenv.SQSAt(t, p.URL)

	var runs atomic.Int64
	w, err := worker.New(client, src, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
		runs.Add(1)
		time.Sleep(2 * time.Millisecond)
		return nil
	}), func(o *worker.Options) { o.Concurrency = 10; o.Logger = quiet; o.WaitTime = time.Second })
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	begin := time.Now()
	go func() { done <- w.Run(ctx) }()
	for w.Stats().Deleted < jobs && time.Since(begin) < 3*time.Minute {
		time.Sleep(100 * time.Millisecond)
	}
	elapsed := time.Since(begin)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	s := w.Stats()
	dead := len(drain(t, direct, dlqURL))
	t.Logf("%d jobs in %v: handler runs %d, deleted %d, delete entries retried %d, late %d, lost %d, abandoned %d, in DLQ %d; proxy: %s",
		jobs, elapsed.Round(time.Millisecond), runs.Load(), s.Deleted, s.DeleteRetried, s.SettledLate, s.Lost, s.Abandoned, dead, p.Summary())
	if runs.Load() > jobs+jobs/100 {
		t.Errorf("handlers ran %d times for %d jobs; want at most %d", runs.Load(), jobs, jobs+jobs/100)
	}
	if dead != 0 {
		t.Errorf("%d succeeded jobs reached the DLQ", dead)
	}
	if s.Deleted < jobs || s.DeleteRetried == 0 {
		t.Errorf("Stats = %+v; want every delete confirmed and the throttled ones retried", s)
	}
}
