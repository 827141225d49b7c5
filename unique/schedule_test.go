package unique_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sqsworker/sqsworker/producer"
	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/schedules"
	"github.com/sqsworker/sqsworker/schedules/schedulestest"
	"github.com/sqsworker/sqsworker/unique"
	"github.com/sqsworker/sqsworker/worker"
)

// A unique job sent 2 h ahead through a producer whose Options.Schedule
// makes one-time schedules: its key travels in the schedule's envelope,
// holds while the job waits, and is freed when the job succeeds (through
// Unwrap and the Store's Middleware) or is dead-lettered (Settled reads
// the key inside the envelope of the message as received).
func TestScheduledJobKeepsAndFreesItsKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, func(o *unique.Options) { o.Now = time.Now })
		sched, err := schedulestest.New(e.sqs)
		if err != nil {
			t.Fatal(err)
		}
		ctx, stop := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { _ = sched.Run(ctx); close(done) }()
		defer func() { stop(); <-done }()
		jobs, err := schedules.NewJobs(sched, "arn:aws:sqs:us-east-1:123456789012:jobs", func(o *schedules.Options) {
			o.RoleARN = "arn:aws:iam::123456789012:role/scheduler"
		})
		if err != nil {
			t.Fatal(err)
		}
		p, err := producer.New(e.sqs, e.url, func(o *producer.Options) {
			o.Schedule = func(ctx context.Context, due time.Time, m producer.Message) (string, error) {
				return jobs.At(ctx, "", due, m)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = p.Close(context.Background()) }()
		send := func(k unique.Key, body string) (producer.Result, error) {
			return e.store.Send(t.Context(), p, k, producer.Message{Body: body, Delay: 2 * time.Hour})
		}

		k := unique.Key{Name: "trial-end/42"}
		first, err := send(k, "end trial")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(first.MessageID, "job-") {
			t.Fatalf("MessageID %q; want the one-time job's ID", first.MessageID)
		}
		if _, err := send(k, "again"); !errors.Is(err, unique.ErrDuplicate) {
			t.Fatalf("second send while the scheduled job waits: %v; want ErrDuplicate", err)
		}
		if n := len(e.sqs.Messages(e.url)); n != 0 {
			t.Fatalf("%d messages in the queue while the job waits, want 0", n)
		}
		time.Sleep(2*time.Hour + time.Minute)
		synctest.Wait()

		var runs atomic.Int32
		var body string
		h := schedules.Unwrap()(e.store.Middleware(worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			runs.Add(1)
			body = m.Body
			if _, err := e.send(t, k, "during"); !errors.Is(err, unique.ErrDuplicate) {
				t.Errorf("send while the job runs: %v; want ErrDuplicate", err)
			}
			return nil
		})))
		runWorker(t, e, h.Handle, worker.Deleted)
		if runs.Load() != 1 || body != "end trial" {
			t.Fatalf("ran %d times with body %q; want once with the sent body", runs.Load(), body)
		}
		if _, err := send(k, "next"); err != nil {
			t.Fatalf("after the scheduled job succeeded its key is still held: %v", err)
		}

		// A scheduled job that is dead-lettered frees its key too.
		poison := unique.Key{Name: "poison/7"}
		if _, err := send(poison, "bad"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2*time.Hour + time.Minute)
		synctest.Wait()
		bad := schedules.Unwrap()(e.store.Middleware(worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			if m.Body == "bad" {
				return retry.Permanent(errors.New("bad input"))
			}
			return nil
		})))
		runWorker(t, e, bad.Handle, worker.DeadLettered)
		if n := len(e.sqs.Messages(e.dlq)); n != 1 {
			t.Fatalf("DLQ holds %d, want 1", n)
		}
		if _, err := e.send(t, poison, "retry"); err != nil {
			t.Fatalf("after the scheduled job was dead-lettered its key is still held: %v", err)
		}
	})
}
