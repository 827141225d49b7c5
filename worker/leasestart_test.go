package worker_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sqsworker/sqsworker/sqstest"
	"github.com/sqsworker/sqsworker/worker"
)

// SQS starts a message's visibility timeout when it hands the message out,
// not when the receive's answer reaches the worker. An answer that takes 3 s
// on the wire (a loaded client machine, a slow network) leaves the worker 3
// s less than the queue's timeout: its heartbeat must count the lease from
// the receive's start, or it extends too late and the message runs twice.
func TestLeaseCountedFromTheReceiveNotItsAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, _ := newQueue(t, 10, "6")
		f.MustSend(t, src, "job")
		f.InjectFault(sqstest.Fault{API: "ReceiveMessage", AfterEffect: true, ResponseDelay: 3 * time.Second, Times: 1})
		var starts atomic.Int64
		h := start(t, f, src, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			starts.Add(1)
			time.Sleep(8 * time.Second)
			return nil
		}))
		time.Sleep(30 * time.Second)
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		if n := starts.Load(); n != 1 {
			t.Errorf("the job started %d times, want once: its lease ran out before the heartbeat extended it", n)
		}
		if s := h.w.Stats(); s.Deleted != 1 || s.Lost != 0 || s.SettledLate != 0 {
			t.Errorf("Stats: Deleted %d, Lost %d, SettledLate %d; want 1, 0, 0", s.Deleted, s.Lost, s.SettledLate)
		}
	})
}

// A long poll that waits longer than the visibility timeout it asks for
// must not leave the messages it brings with a lease that, counted from
// the receive's start, ended before they arrived: SQS hid them only when
// it handed them out, at the end of the wait. Such a lease made every
// message that arrived late in a long poll look settled late, a duplicate
// likely, and its first extension late.
func TestLongPollDoesNotOutwaitTheLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, _ := newQueue(t, 10, "5")
		var starts atomic.Int64
		h := start(t, f, src, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			starts.Add(1)
			if m.Body == "long" {
				time.Sleep(8 * time.Second) // needs extensions
			}
			return nil
		}), func(o *worker.Options) { o.WaitTime = 20 * time.Second })
		time.Sleep(12 * time.Second) // the queue stays empty through the first long polls
		f.MustSend(t, src, "short")
		time.Sleep(19 * time.Second)
		f.MustSend(t, src, "long")
		time.Sleep(30 * time.Second)
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		if n := starts.Load(); n != 2 {
			t.Errorf("handlers started %d times, want 2", n)
		}
		s := h.w.Stats()
		if s.Deleted != 2 || s.SettledLate != 0 || s.LateExtensions != 0 {
			t.Errorf("Stats: Deleted %d, SettledLate %d, LateExtensions %d; want 2, 0, 0", s.Deleted, s.SettledLate, s.LateExtensions)
		}
		if s.Extensions == 0 {
			t.Error("the 8 s job was never extended")
		}
	})
}
