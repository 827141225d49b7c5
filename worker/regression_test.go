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

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/harness/sqsfake"
	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/sqstest"
	"github.com/sqsworker/sqsworker/worker"
)

// A FIFO head that exhausts its retries is dead-lettered, and the group goes
// on with the next message instead of releasing it once more: each release
// costs the waiting message a receive, and enough of them make SQS
// dead-letter it before it ever ran.
func TestFIFODeadLetteredHeadLetsGroupGoOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := sqstest.For(t)
		src, dlqURL := f.MustCreateQueueWithDLQ(t, "orders.fifo", 4, map[string]string{"VisibilityTimeout": "30"})
		f.MustSend(t, src, "poison", sqsfake.Group("g", "1"))
		f.MustSend(t, src, "good", sqsfake.Group("g", "2"))
		var mu sync.Mutex
		var ran []string
		h := start(t, f, src, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			mu.Lock()
			ran = append(ran, m.Body)
			mu.Unlock()
			if m.Body == "poison" {
				return errors.New("fails")
			}
			return nil
		}), func(o *worker.Options) { o.RetryPolicy = fixedPolicy(3, time.Second) })
		time.Sleep(2 * time.Minute)
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		var dead []string
		for _, m := range f.Messages(dlqURL) {
			dead = append(dead, m.Body)
		}
		if got := fmt.Sprint(ran); got != "[poison poison poison poison good]" {
			t.Errorf("ran %s, want the poison's 4 attempts then good", got)
		}
		if fmt.Sprint(dead) != "[poison]" {
			t.Errorf("DLQ holds %v, want only the poison", dead)
		}
	})
}

// A FIFO message waiting behind an earlier message of its group is kept
// invisible from its receive on: when the earlier message's delete unlocks
// the group, no other consumer can take the waiting one (even with slow
// heartbeat calls), so it runs once.
func TestFIFOWaitingMessageKeptInvisible(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := sqstest.For(t)
		src, _ := f.MustCreateQueueWithDLQ(t, "orders.fifo", 10, map[string]string{"VisibilityTimeout": "5"})
		f.MustSend(t, src, "m1", sqsfake.Group("g", "1"))
		f.MustSend(t, src, "m2", sqsfake.Group("g", "2"))
		f.InjectFault(sqstest.Fault{API: "ChangeMessageVisibilityBatch", Latency: 600 * time.Millisecond})
		var runs atomic.Int64
		h := start(t, f, src, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			if m.Body == "m1" {
				time.Sleep(8 * time.Second)
				return nil
			}
			runs.Add(1)
			time.Sleep(3 * time.Second)
			return nil
		}))
		var other atomic.Int64
		stopOther := make(chan struct{})
		go func() { // another consumer polls briefly and often
			for {
				select {
				case <-stopOther:
					return
				case <-time.After(100 * time.Millisecond):
				}
				out, err := f.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(src), MaxNumberOfMessages: 10})
				if err == nil {
					other.Add(int64(len(out.Messages)))
				}
			}
		}()
		time.Sleep(30 * time.Second)
		close(stopOther)
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		if other.Load() != 0 || runs.Load() != 1 {
			t.Errorf("another consumer received %d messages the worker held; m2 ran %d times (want 0 and 1)", other.Load(), runs.Load())
		}
	})
}

// The heartbeat holds a message from its receive on, also while a slow
// attempt counter (DynamoDB throttled) decides its attempt number.
func TestSlowAttemptCounterMessageKeptInvisible(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, _ := newQueue(t, 10, "5")
		f.MustSend(t, src, "job")
		var runs atomic.Int64
		var once atomic.Bool
		h := start(t, f, src, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			runs.Add(1)
			time.Sleep(2 * time.Second)
			return nil
		}), func(o *worker.Options) {
			o.AttemptCounter = attemptFunc(func(ctx context.Context, id string, rc int) (int, error) {
				if once.CompareAndSwap(false, true) {
					time.Sleep(8 * time.Second)
				}
				return rc, nil
			})
		})
		time.Sleep(30 * time.Second)
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		if runs.Load() != 1 {
			t.Errorf("job ran %d times; want 1", runs.Load())
		}
	})
}

// When the dead-letter copy is sent but deleting the original fails, the
// delete is retried; the handler does not run again and the DLQ holds one copy.
func TestDeadLetterDeleteFailureRetriesTheDelete(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, dlqURL := newQueue(t, 10, "30")
		f.MustSend(t, src, "poison")
		f.InjectFault(sqstest.Fault{API: "DeleteMessageBatch", Code: "InternalError", Times: 1})
		var calls atomic.Int64
		h := start(t, f, src, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			calls.Add(1)
			return retry.Permanent(errors.New("bad"))
		}))
		time.Sleep(2 * time.Minute)
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		if calls.Load() != 1 || len(f.Messages(dlqURL)) != 1 || len(f.Messages(src)) != 0 {
			t.Errorf("handler ran %d times, DLQ holds %d copies, source %d; want 1, 1, 0", calls.Load(), len(f.Messages(dlqURL)), len(f.Messages(src)))
		}
		if s := h.w.Stats(); s.DeadLettered != 1 {
			t.Errorf("Stats.DeadLettered = %d, want 1", s.DeadLettered)
		}
	})
}

// A FIFO group's next message starts only after the previous message's
// delete is confirmed: when that delete fails for good, the rest of the
// group is released and the order holds.
func TestFIFONextWaitsForTheDelete(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, _ := newFIFO(t)
		for i := range 3 {
			f.MustSend(t, src, fmt.Sprintf("m%d", i), sqsfake.Group("g", fmt.Sprint(i)))
		}
		remove := f.InjectFault(sqstest.Fault{API: "DeleteMessageBatch", Code: "InternalError"})
		var mu sync.Mutex
		var ran []string
		h := start(t, f, src, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			mu.Lock()
			ran = append(ran, m.Body)
			mu.Unlock()
			return nil
		}))
		time.Sleep(10 * time.Second)
		mu.Lock()
		if got := fmt.Sprint(ran); got != "[m0]" {
			t.Errorf("while m0's delete fails, ran %s; want only [m0]", got)
		}
		mu.Unlock()
		remove()
		time.Sleep(time.Minute)
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		if n := len(f.Messages(src)); n != 0 {
			t.Errorf("%d messages left", n)
		}
	})
}

// A FIFO group waiting for a delete SQS never confirms does not hold up
// shutdown: Run returns within ShutdownTimeout + FlushTimeout.
func TestFIFOUnconfirmedDeleteDoesNotHangShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, _ := newFIFO(t)
		for i := range 3 {
			f.MustSend(t, src, fmt.Sprintf("m%d", i), sqsfake.Group("g", fmt.Sprint(i)))
		}
		f.InjectFault(sqstest.Fault{API: "DeleteMessageBatch", Code: "InternalError"})
		h := start(t, f, src, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error { return nil }),
			func(o *worker.Options) { o.ShutdownTimeout = 3 * time.Second; o.FlushTimeout = 2 * time.Second })
		time.Sleep(5 * time.Second)
		begin := time.Now()
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(begin); d > 5*time.Second {
			t.Fatalf("Run took %v to return, want at most ShutdownTimeout + FlushTimeout (5s)", d)
		}
		if s := h.w.Stats(); s.Abandoned != 1 || s.Released != 2 || s.InFlight != 0 {
			t.Fatalf("Stats = %+v, want m0's delete abandoned, m1 and m2 released, nothing held", s)
		}
	})
}

// attemptFunc is an attempt counter that numbers attempts with a function
// and takes none back.
type attemptFunc func(ctx context.Context, messageID string, receiveCount int) (int, error)

func (f attemptFunc) Attempt(ctx context.Context, messageID string, receiveCount int) (int, error) {
	return f(ctx, messageID, receiveCount)
}

func (attemptFunc) Uncount(context.Context, string) error { return nil }
