package schedules_test

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/scheduler"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/producer"
	"github.com/sqsworker/sqsworker/schedules"
	"github.com/sqsworker/sqsworker/schedules/schedulestest"
	"github.com/sqsworker/sqsworker/sqstest"
	"github.com/sqsworker/sqsworker/worker"
)

// countingAPI counts the Scheduler calls made through it.
type countingAPI struct {
	schedules.API
	creates atomic.Int64
}

func (c *countingAPI) CreateSchedule(ctx context.Context, in *scheduler.CreateScheduleInput, f ...func(*scheduler.Options)) (*scheduler.CreateScheduleOutput, error) {
	c.creates.Add(1)
	return c.API.CreateSchedule(ctx, in, f...)
}

// dueTomorrow is the BENCHMARKS.md measurement "jobs due in 24 hours",
// scaled down to n jobs: all sent at once, each due 24 h later (spread
// over one minute), run by one worker on a dlq.Setup queue (maxReceiveCount
// 5, retention 4 days). It returns the SQS calls by API from the first
// send to the last run, the most messages in flight (and delayed) at any
// of the samples taken every 5 minutes while they wait, and the Scheduler
// CreateSchedule calls.
type dueTomorrow struct {
	requests          map[string]int
	inflight, delayed int
	creates           int64
	ran               int
}

func measureDueTomorrow(t *testing.T, n int, viaScheduler bool) dueTomorrow {
	var res dueTomorrow
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		q := sqstest.For(t)
		setup, err := dlq.Setup(ctx, q, dlq.SetupOptions{Name: "reminders"})
		if err != nil {
			t.Fatal(err)
		}
		var ran atomic.Int64
		h := worker.Handler(worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			ran.Add(1)
			return nil
		}))
		var sched *schedulestest.Scheduler
		api := &countingAPI{}
		if viaScheduler {
			sched, err = schedulestest.New(q)
			if err != nil {
				t.Fatal(err)
			}
			api.API = sched
			go sched.Run(ctx)
			h = worker.Chain(h, schedules.Unwrap())
		}
		w, err := worker.New(q, setup.QueueURL, h)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- w.Run(ctx) }()
		synctest.Wait()
		before := q.Requests()

		start := time.Now()
		due := func(i int) time.Time { return start.Add(24*time.Hour + time.Duration(i)*time.Minute/time.Duration(n)) }
		if viaScheduler {
			jobs, err := schedules.NewJobs(api, setup.QueueARN, func(o *schedules.Options) { o.RoleARN = role })
			if err != nil {
				t.Fatal(err)
			}
			for i := range n {
				if _, err := jobs.At(ctx, fmt.Sprintf("remind-%d", i), due(i), producer.Message{Body: "remind"}); err != nil {
					t.Fatal(err)
				}
			}
		} else {
			p, err := producer.New(q, setup.QueueURL)
			if err != nil {
				t.Fatal(err)
			}
			msgs := make([]producer.Message, n)
			for i := range msgs {
				msgs[i] = producer.Message{Body: "remind", Delay: due(i).Sub(start)}
			}
			if _, err := p.SendBatch(ctx, msgs); err != nil {
				t.Fatal(err)
			}
		}
		for time.Since(start) < 24*time.Hour-5*time.Minute {
			time.Sleep(5 * time.Minute)
			synctest.Wait()
			res.inflight = max(res.inflight, len(q.Messages(setup.QueueURL, "inflight")))
			res.delayed = max(res.delayed, len(q.Messages(setup.QueueURL, "delayed")))
		}
		time.Sleep(10 * time.Minute) // every job due and run
		synctest.Wait()
		res.requests = q.Requests()
		for k, v := range before {
			res.requests[k] -= v
		}
		res.creates = api.creates.Load()
		res.ran = int(ran.Load())
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
	return res
}

// TestCostOfJobsDueTomorrow measures, for BENCHMARKS.md, n one-time jobs
// due in 24 hours sent the in-queue way (producer's long delay: the parked
// and re-hidden chain) and through Scheduler (schedules.Jobs): the
// requests per job and the messages in flight while they wait. Every job
// runs once either way; Scheduler's side holds nothing in flight.
func TestCostOfJobsDueTomorrow(t *testing.T) {
	const n = 1000
	idle := measureDueTomorrow(t, 0, false) // the worker's empty long polls for a day
	in := measureDueTomorrow(t, n, false)
	via := measureDueTomorrow(t, n, true)
	t.Logf("idle worker for the same day: %v (subtracted below)", idle.requests)
	// GetQueueUrl is the fake Scheduler resolving the queue's ARN; the
	// real one bills no such call to the queue's owner.
	delete(via.requests, "GetQueueUrl")
	for _, r := range []struct {
		name string
		d    dueTomorrow
	}{{"in-queue", in}, {"scheduler", via}} {
		if r.d.ran != n {
			t.Errorf("%s: %d of %d jobs ran", r.name, r.d.ran, n)
		}
		total := 0
		var parts []string
		for _, k := range sortedKeys(r.d.requests) {
			if v := r.d.requests[k] - idle.requests[k]; v != 0 {
				total += v
				parts = append(parts, fmt.Sprintf("%s %d", k, v))
			}
		}
		t.Logf("%s, %d jobs due in 24 h: SQS calls beyond idle %d (%.2f per job: %s); Scheduler CreateSchedule %d; most in flight %d, delayed %d",
			r.name, n, total, float64(total)/n, strings.Join(parts, ", "), r.d.creates, r.d.inflight, r.d.delayed)
	}
	if via.inflight != 0 || via.delayed != 0 {
		t.Errorf("through Scheduler %d messages were in flight and %d delayed while they waited; want 0", via.inflight, via.delayed)
	}
	if via.creates != n {
		t.Errorf("%d CreateSchedule calls for %d jobs", via.creates, n)
	}
	if in.inflight < n*9/10 {
		t.Errorf("in-queue: at most %d of %d jobs in flight while they waited; the parked chain hides them (want nearly all)", in.inflight, n)
	}
}

func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
