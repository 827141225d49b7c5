package idempotency_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/harness/testenv"
	"github.com/sqsworker/sqsworker/idempotency"
	"github.com/sqsworker/sqsworker/worker"
)

// benchDB is the DynamoDB Local client of the benchmarks (quiet about the
// emulator's missing CRC32 headers on failed conditions).
func benchDB(b *testing.B) *dynamodb.Client {
	return dynamodb.New(testenv.DynamoDB(b).Options(), func(o *dynamodb.Options) { o.DisableValidateResponseChecksum = true })
}

func benchTable(b *testing.B, db *dynamodb.Client) string {
	table := testenv.UniqueName("sqsworker-idem-bench")
	if err := idempotency.CreateTable(context.Background(), db, table); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_, _ = db.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	})
	return table
}

// BenchmarkGuard measures what the Guard adds to one message, with a
// handler that does nothing, one message at a time: ns/op is the added
// latency, req/msg the DynamoDB requests, per path. Against DynamoDB Local
// the latency is its round trips; against the in-memory fake it is the
// Guard's own cost.
func BenchmarkGuard(b *testing.B) {
	b.Run("dynamodb-local", func(b *testing.B) {
		db := benchDB(b)
		table := benchTable(b, db)
		// The yardstick: one plain PutItem round trip.
		b.Run("baseline-putitem", func(b *testing.B) {
			for i := range b.N {
				if _, err := db.PutItem(context.Background(), &dynamodb.PutItemInput{
					TableName: aws.String(table),
					Item:      map[string]ddbtypes.AttributeValue{"key": &ddbtypes.AttributeValueMemberS{Value: "baseline-" + strconv.Itoa(i)}},
				}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(1, "req/msg")
		})
		benchGuardPaths(b, db, table)
	})
	b.Run("in-memory", func(b *testing.B) { benchGuardPaths(b, newFakeDB(), "t") })
}

func benchGuardPaths(b *testing.B, db idempotency.API, table string) {
	lease := fixedLease(time.Hour)
	noop := worker.HandlerFunc(ok)
	failing := worker.HandlerFunc(func(context.Context, *worker.Message) error { return errFailed })
	for _, path := range []string{"run", "failed", "duplicate-of-completed", "duplicate-in-progress"} {
		b.Run(path, func(b *testing.B) {
			var dark atomic.Bool
			// holder leaves records in progress: it "crashes" inside its lock,
			// so its release never arrives.
			holder := mustGuard(b, darkDB{API: db, dark: &dark}, table, func(o *idempotency.Options) { o.KeyPrefix = path })
			g := mustGuard(b, db, table, func(o *idempotency.Options) { o.KeyPrefix = path })
			ids := make([]string, b.N)
			for i := range ids { // the records each op meets: not timed
				ids[i] = testenv.UniqueName("m")
				switch path {
				case "duplicate-of-completed":
					_ = g.Wrap(noop).Handle(lease, msg(ids[i], ""))
				case "duplicate-in-progress":
					dark.Store(false)
					_ = holder.Wrap(worker.HandlerFunc(func(context.Context, *worker.Message) error {
						dark.Store(true)
						return errFailed
					})).Handle(lease, msg(ids[i], ""))
				}
			}
			h := noop
			if path == "failed" {
				h = failing
			}
			before := g.Stats().TotalRequests()
			b.ResetTimer()
			for i := range b.N {
				_ = g.Wrap(h).Handle(lease, msg(ids[i], ""))
			}
			b.StopTimer()
			b.ReportMetric(float64(g.Stats().TotalRequests()-before)/float64(b.N), "req/msg")
		})
	}
}

var errFailed = errors.New("failed")

// BenchmarkWorkerGuarded runs a worker over 2,000 messages at Concurrency
// 50 on fauxqs, with a no-op handler, plain and wrapped in a Guard on
// DynamoDB Local: throughput, requests per message, and the handler's time
// as the runtime saw it (the Guard's own time, for the guarded run).
func BenchmarkWorkerGuarded(b *testing.B) {
	client := testenv.SQS(b)
	db := benchDB(b)
	table := benchTable(b, db)
	const n, concurrency = 2000, 50
	for _, guarded := range []bool{false, true} {
		name := map[bool]string{false: "plain", true: "guarded"}[guarded]
		b.Run(name, func(b *testing.B) {
			var msgs, sqsReq, ddbReq int64
			var elapsed time.Duration
			var handlerTimes []time.Duration
			for range b.N {
				queues, err := dlq.Setup(context.Background(), client, dlq.SetupOptions{Name: testenv.UniqueName("idem-bench"), VisibilityTimeout: time.Minute})
				if err != nil {
					b.Fatal(err)
				}
				testenv.SendBodies(b, client, queues.QueueURL, n)
				var h worker.Handler = worker.HandlerFunc(ok)
				var g *idempotency.Guard
				if guarded {
					g = mustGuard(b, db, table)
					h = worker.Chain(h, g.Wrap)
				}
				var mu sync.Mutex
				var settled int
				all := make(chan struct{})
				w, err := worker.New(client, queues.QueueURL, h, func(o *worker.Options) {
					o.Logger = quiet
					o.Concurrency = concurrency
					o.WaitTime = time.Second
					o.OnSettled = func(s worker.Settlement) {
						mu.Lock()
						defer mu.Unlock()
						handlerTimes = append(handlerTimes, s.HandlerEnd.Sub(s.HandlerStart))
						if settled++; settled == n {
							close(all)
						}
					}
				})
				if err != nil {
					b.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				start := time.Now()
				go func() { done <- w.Run(ctx) }()
				<-all
				elapsed += time.Since(start)
				cancel()
				if err := <-done; err != nil {
					b.Fatal(err)
				}
				msgs += n
				sqsReq += w.Stats().TotalRequests()
				if g != nil {
					ddbReq += g.Stats().TotalRequests()
				}
				_, _ = client.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(queues.QueueURL)})
				_, _ = client.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(queues.DLQURL)})
			}
			slices.Sort(handlerTimes)
			pct := func(p float64) float64 {
				return float64(handlerTimes[int(p*float64(len(handlerTimes)-1))]) / float64(time.Millisecond)
			}
			b.ReportMetric(float64(msgs)/elapsed.Seconds(), "msgs/s")
			b.ReportMetric(float64(sqsReq)/float64(msgs), "sqs-req/msg")
			b.ReportMetric(float64(ddbReq)/float64(msgs), "ddb-req/msg")
			b.ReportMetric(pct(0.5), "handler-p50-ms")
			b.ReportMetric(pct(0.99), "handler-p99-ms")
		})
	}
}
