package readme

import (
	"context"
	"errors"
	"log"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/idempotency"
	"github.com/sqsworker/sqsworker/producer"
	"github.com/sqsworker/sqsworker/schedules"
	"github.com/sqsworker/sqsworker/schedules/schedulestest"
	"github.com/sqsworker/sqsworker/sqstest"
	"github.com/sqsworker/sqsworker/unique"
	"github.com/sqsworker/sqsworker/worker"
)

// docs/guides/unique-jobs.md.

func requestReport(ctx context.Context, keys *unique.Store, p *producer.Producer, account string) (string, error) {
	res, err := keys.Send(ctx, p, unique.Key{Name: "report/" + account}, producer.Message{Body: `{"account": "` + account + `"}`})
	if errors.Is(err, unique.ErrDuplicate) {
		return res.MessageID, nil // waiting, retrying or running; with Options.RecordJobID, the holding job's ID
	}
	return res.MessageID, err // nothing was sent when err != nil
}

func uniqueWorker(cfg aws.Config, queueURL string, h worker.Handler) (*unique.Store, *worker.Worker, error) {
	keys, err := unique.New(dynamodb.NewFromConfig(cfg), "sqsworker-unique", func(o *unique.Options) {
		o.Retention = 4 * 24 * time.Hour // the queue's MessageRetentionPeriod: bounds a lost job's key
		o.ReleaseConcurrency = 16        // releases keep up with the worker; call keys.Close after Run
	})
	if err != nil {
		return nil, nil, err // a missing table, a wrong key schema
	}
	// Middleware frees a succeeded job's key before its delete (and runs debounced jobs).
	w, err := worker.New(sqs.NewFromConfig(cfg), queueURL, keys.Middleware(h), func(o *worker.Options) {
		o.OnSettled = keys.Settled // frees the key once its job is deleted or dead-lettered
	})
	return keys, w, err
}

func requestReindex(ctx context.Context, keys *unique.Store, p *producer.Producer, site, settings string) (string, error) {
	res, err := keys.Send(ctx, p, unique.Key{Name: "reindex/" + site, Debounce: time.Second, MaxDelay: time.Minute}, producer.Message{Body: settings})
	return res.MessageID, err // the one job of the key, however many sends it took
}

func debouncedWorker(client *sqs.Client, queueURL string, keys *unique.Store, h worker.Handler) (*worker.Worker, error) {
	return worker.New(client, queueURL, worker.Chain(h, keys.Middleware), func(o *worker.Options) {
		o.OnSettled = keys.Settled // frees the key once the job is deleted or dead-lettered
	})
}

// docs/guides/schedules.md.

func TestNightlyReportOncePerTick(t *testing.T) {
	synctest.Test(t, func(t *testing.T) { // virtual time: a week in milliseconds
		time.Sleep(time.Until(time.Date(2026, 3, 25, 0, 0, 0, 0, time.UTC)))
		client := sqstest.For(t)
		setup, err := dlq.Setup(t.Context(), client, dlq.SetupOptions{Name: "reports"})
		if err != nil {
			t.Fatal(err)
		}
		sched, err := schedulestest.New(client, func(o *schedulestest.Options) {
			o.Deliveries = 2 // Scheduler delivers at least once: here every tick twice
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		go sched.Run(ctx)

		declared := []schedules.Schedule{{
			Name: "nightly-report", Expression: "cron(30 2 * * ? *)", TimeZone: "Europe/Paris",
			Queue: setup.QueueARN, Body: `{"report": "sales"}`,
		}}
		changes, err := schedules.Apply(ctx, sched, declared, func(o *schedules.Options) {
			o.RoleARN = "arn:aws:iam::123456789012:role/reports-scheduler"
		})
		if err != nil || len(changes) != 1 || changes[0].Action != "create" {
			t.Fatalf("Apply: %v, %v; want one create", changes, err)
		}

		var mu sync.Mutex
		claimed := map[string]string{} // tick → message ID; a DynamoDB conditional write in production
		dedup := func(ctx context.Context, tick, messageID string) (bool, error) {
			mu.Lock()
			defer mu.Unlock()
			if claimed[tick] == "" {
				claimed[tick] = messageID
			}
			return claimed[tick] == messageID, nil
		}
		var ran []time.Time
		report := worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			tick, _ := schedules.TickOf(m) // m.Body is the job's own body: {"report": "sales"}
			mu.Lock()
			ran = append(ran, tick.Time)
			mu.Unlock()
			return nil
		})
		w, err := worker.New(client, setup.QueueURL, worker.Chain(report,
			schedules.Unwrap(func(o *schedules.UnwrapOptions) { o.Dedup = dedup })))
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error)
		go func() { done <- w.Run(ctx) }()
		time.Sleep(time.Until(time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)))
		cancel()
		<-done

		// 02:30 in Paris on 25-28 March (01:30Z) and 30-31 March (00:30Z);
		// none on the 29th, when the clocks skip from 02:00 to 03:00.
		if len(ran) != 6 || w.Stats().Received != 12 {
			t.Fatalf("ran %d ticks of %d deliveries, want 6 of 12: %v", len(ran), w.Stats().Received, ran)
		}
	})
}

func deploySchedules(ctx context.Context, cfg aws.Config, queueARN, schedulerDLQ string) error {
	declared := []schedules.Schedule{
		{Name: "nightly-report", Expression: "cron(30 2 * * ? *)", TimeZone: "Europe/Paris",
			Queue: queueARN, Body: `{"report": "sales"}`, Overlap: "skip"},
		{Name: "warm-cache", Expression: "rate(15 minutes)", Queue: queueARN,
			Body: `{"warm": "catalog"}`, FlexibleWindow: 5 * time.Minute},
	}
	changes, err := schedules.Apply(ctx, scheduler.NewFromConfig(cfg), declared, func(o *schedules.Options) {
		o.Group = "reports" // Apply deletes whatever else the group holds
		o.RoleARN = "arn:aws:iam::123456789012:role/reports-scheduler"
		o.DLQ = schedulerDLQ // where Scheduler puts a delivery it gave up on
	})
	for _, c := range changes {
		log.Printf("%s %s %v", c.Action, c.Name, c.Fields) // create, update (with the fields), delete
	}
	return err // schedules.ErrInvalid: refused before any call, the message says what to fix
}

func scheduledWorker(cfg aws.Config, queueURL string, h worker.Handler) (*worker.Worker, error) {
	once, err := idempotency.New(dynamodb.NewFromConfig(cfg), "reports-idempotency", func(o *idempotency.Options) {
		o.KeyPrefix = "tick"
		o.Key = schedules.TickKey // the schedule's ARN and the tick's time
	})
	if err != nil {
		return nil, err
	}
	return worker.New(sqs.NewFromConfig(cfg), queueURL, worker.Chain(h, schedules.Unwrap(), once.Wrap))
}

func fleetWideTicks(cfg aws.Config, queueURL string, h worker.Handler) (*worker.Worker, error) {
	unwrap := schedules.Unwrap(func(o *schedules.UnwrapOptions) {
		o.DynamoDB = dynamodb.NewFromConfig(cfg)
		o.Table = "reports-idempotency" // an idempotency table (idempotency.CreateTable makes one)
		o.Lease = time.Minute           // a process killed mid-run blocks its schedule at most this long
		o.OnSkip = func(ctx context.Context, t schedules.Tick, reason string) {
			log.Printf("skipped %s at %s: %s", t.Schedule, t.Time, reason) // "duplicate" or "overlap"
		}
	})
	return worker.New(sqs.NewFromConfig(cfg), queueURL, worker.Chain(h, unwrap))
}

func remindUnpaid(ctx context.Context, jobs *schedules.Jobs, orderID string, due time.Time) error {
	_, err := jobs.At(ctx, "remind-"+orderID, due, producer.Message{Body: `{"remind": "` + orderID + `"}`})
	return err // the same ID and content again is a no-op; other content under a pending ID is refused
}

func orderPaid(ctx context.Context, jobs *schedules.Jobs, orderID string) error {
	cancelled, err := jobs.Cancel(ctx, "remind-"+orderID)
	if err == nil && !cancelled {
		log.Printf("the reminder of %s fired, or fires within the minute: its handler checks the order", orderID)
	}
	return err
}

// The snippets are compiled, not called.
func scheduledProducer(client producer.API, queueURL string, jobs *schedules.Jobs) (*producer.Producer, error) {
	return producer.New(client, queueURL, func(o *producer.Options) {
		o.Schedule = func(ctx context.Context, due time.Time, m producer.Message) (string, error) {
			return jobs.At(ctx, "", due, m) // "": a random ID, the Result's MessageID
		}
	})
}

var _ = []any{requestReport, uniqueWorker, deploySchedules, scheduledWorker, fleetWideTicks, remindUnpaid, orderPaid, scheduledProducer}

var _ = []any{requestReindex, debouncedWorker}
