package worker_test

import (
	"context"
	"flag"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/harness/testenv"
	"github.com/sqsworker/sqsworker/sqstest"
	"github.com/sqsworker/sqsworker/worker"
)

// Each benchmark op processes benchMessages messages with a no-op handler
// at benchConcurrency, on a queue of its own; the custom metrics are per
// message. Each op has a fresh queue, so no op sees another's messages.
const benchConcurrency = 50

// benchMessages is -bench-messages: 5,000 unless set. Longer ops spread
// what a consumer costs once per run (the worker's start, its receives
// still waiting when the queue runs dry) over more messages:
//
//	/tmp/w.test -test.run '^$' -test.bench BenchmarkPipelineFloor -bench-messages 25000
var benchMessages = 5000

func init() {
	flag.IntVar(&benchMessages, "bench-messages", benchMessages, "messages per benchmark op (worker benchmarks)")
}

// benchClient is what the benchmarks need from an SQS backend.
type benchClient interface {
	worker.API
	SendMessageBatch(ctx context.Context, params *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
	CreateQueue(ctx context.Context, params *sqs.CreateQueueInput, optFns ...func(*sqs.Options)) (*sqs.CreateQueueOutput, error)
	DeleteQueue(ctx context.Context, params *sqs.DeleteQueueInput, optFns ...func(*sqs.Options)) (*sqs.DeleteQueueOutput, error)
}

// measure collects the per-message figures of one benchmark.
type measure struct {
	msgs             int
	elapsed          time.Duration
	requests         int64
	mallocs, cpuNano uint64
}

func (m *measure) rate() float64 { return float64(m.msgs) / m.elapsed.Seconds() }

func (m *measure) report(b *testing.B, prefix string) {
	b.ReportMetric(m.rate(), prefix+"msgs/s")
	b.ReportMetric(float64(m.requests)/float64(m.msgs), prefix+"req/msg")
	b.ReportMetric(float64(m.mallocs)/float64(m.msgs), prefix+"allocs/msg")
	b.ReportMetric(float64(m.cpuNano)/float64(m.msgs)/1000, prefix+"cpu-µs/msg")
}

type snapshot struct {
	at      time.Time
	mallocs uint64
	cpu     time.Duration
}

func snap() snapshot {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	return snapshot{at: time.Now(), mallocs: ms.Mallocs, cpu: cpu}
}

func (s snapshot) since(m *measure) {
	now := snap()
	m.elapsed += now.at.Sub(s.at)
	m.mallocs += now.mallocs - s.mallocs
	m.cpuNano += uint64(now.cpu - s.cpu)
}

func benchQueue(b *testing.B, c benchClient, name string) string {
	b.Helper()
	ctx := context.Background()
	dlqOut, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name + "-dlq")})
	if err != nil {
		b.Fatal(err)
	}
	attrs, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: dlqOut.QueueUrl, AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
	if err != nil {
		b.Fatal(err)
	}
	out, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: map[string]string{
		"VisibilityTimeout": "60",
		"RedrivePolicy":     `{"deadLetterTargetArn":"` + attrs.Attributes["QueueArn"] + `","maxReceiveCount":5}`,
	}})
	if err != nil {
		b.Fatal(err)
	}
	return aws.ToString(out.QueueUrl)
}

// workerRound processes benchMessages messages on a new queue with the
// worker and a no-op handler, adding what it measured to m.
func workerRound(b *testing.B, c benchClient, name string, m *measure) {
	url := benchQueue(b, c, name)
	defer dropQueue(c, url)
	testenv.SendBodies(b, c, url, benchMessages)
	var handled atomic.Int64
	all := make(chan struct{})
	w, err := worker.New(c, url, worker.HandlerFunc(func(context.Context, *worker.Message) error {
		if handled.Add(1) == int64(benchMessages) {
			close(all)
		}
		return nil
	}), func(o *worker.Options) {
		o.Logger = quiet
		o.Concurrency = benchConcurrency
		o.WaitTime = time.Second
	})
	if err != nil {
		b.Fatal(err)
	}
	before := w.Stats().TotalRequests()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	s := snap()
	go func() { done <- w.Run(ctx) }()
	<-all
	s.since(m)
	cancel()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	// Deletes flushed at shutdown belong to these messages: count them too.
	m.requests += w.Stats().TotalRequests() - before
	m.msgs += benchMessages
}

// loopRound is the baseline: a minimal hand-written SDK loop — receive 10,
// handle them concurrently, DeleteMessageBatch — with benchConcurrency/10
// goroutines, so at most benchConcurrency messages are handled at once.
func loopRound(b *testing.B, c benchClient, name string, m *measure) {
	url := benchQueue(b, c, name)
	defer dropQueue(c, url)
	testenv.SendBodies(b, c, url, benchMessages)
	var handled, requests atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	s := snap()
	for range benchConcurrency / 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
				requests.Add(1)
				if err != nil || len(out.Messages) == 0 {
					continue
				}
				var hw sync.WaitGroup
				for range out.Messages {
					hw.Add(1)
					go func() { hw.Done() }() // the no-op handler
				}
				hw.Wait()
				in := &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url)}
				for i, msg := range out.Messages {
					in.Entries = append(in.Entries, types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: msg.ReceiptHandle})
				}
				if _, err := c.DeleteMessageBatch(context.Background(), in); err != nil {
					b.Error(err)
				}
				requests.Add(1)
				if handled.Add(int64(len(out.Messages))) >= int64(benchMessages) {
					cancel()
				}
			}
		}()
	}
	wg.Wait()
	s.since(m)
	cancel()
	m.requests += requests.Load()
	m.msgs += benchMessages
}

func dropQueue(c benchClient, url string) {
	_, _ = c.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(url)})
}

// BenchmarkWorker measures the worker alone against the in-memory fake:
// with no latency (the worker's own cost) and with 10 ms per SQS call. One
// op is benchMessages messages; the metrics are per message.
func BenchmarkWorker(b *testing.B) {
	for _, lat := range []time.Duration{0, 10 * time.Millisecond} {
		b.Run(fmt.Sprintf("sqstest-%dms", lat/time.Millisecond), func(b *testing.B) {
			c := sqstest.For(b, func(o *sqstest.Options) { o.Latency = lat })
			var m measure
			for i := 0; b.Loop(); i++ {
				workerRound(b, c, fmt.Sprint("bench-", i), &m)
			}
			m.report(b, "")
		})
	}
}

// BenchmarkVersusSDKLoop compares the worker with the minimal hand-written
// loop at equal concurrency, in memory (sqstest-0ms: CPU alone) and where
// calls take time. Each op runs one worker round and one loop
// round back to back on fresh queues, so both meet the backend in the same
// state (the emulator speeds up as Node warms and slows as it ages); the
// metrics are reported side by side, with the worker's throughput as a
// multiple of the loop's.
func BenchmarkVersusSDKLoop(b *testing.B) {
	backends := []struct {
		name string
		new  func(b *testing.B) benchClient
	}{
		{"sqstest-0ms", func(b *testing.B) benchClient { return sqstest.For(b) }}, // CPU alone: the worker's cost against the loop's
		{"sqstest-10ms", func(*testing.B) benchClient {
			return sqstest.For(b, func(o *sqstest.Options) { o.Latency = 10 * time.Millisecond })
		}},
		{"fauxqs", func(b *testing.B) benchClient { return testenv.SQS(b) }},
	}
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			c := be.new(b)
			var mw, ml measure
			for i := 0; b.Loop(); i++ {
				workerRound(b, c, testenv.UniqueName("bw"), &mw)
				loopRound(b, c, testenv.UniqueName("bl"), &ml)
			}
			mw.report(b, "worker-")
			ml.report(b, "loop-")
			b.ReportMetric(mw.rate()/ml.rate(), "worker/loop")
			b.ReportMetric(float64(mw.cpuNano)/float64(mw.msgs)/(float64(ml.cpuNano)/float64(ml.msgs)), "worker/loop-cpu")
		})
	}
}

// BenchmarkPipelineFloor measures how far below the worker a consumer can
// go that works the way the worker must: receivers hand messages to a pool
// of handler goroutines, each handler gets a context it could be stopped
// by, and one goroutine deletes in batches of 10, with as many deletes in
// flight as the loop has (pipelineRound). The
// "attrs" pipeline also asks for the three system attributes the worker
// reads (ApproximateReceiveCount for retries and the dead-letter queue,
// SentTimestamp, ApproximateFirstReceiveTimestamp). Neither has leases, a
// heartbeat, flow control, confirmed settlement or accounting, so they are
// floors for the worker, not alternatives to it. Each op runs the loop,
// both pipelines and the worker, in an order rotated from op to op; the
// metrics are each one's CPU, throughput and allocations against the
// loop's.
func BenchmarkPipelineFloor(b *testing.B) {
	backends := []struct {
		name string
		new  func(b *testing.B) benchClient
	}{
		{"sqstest-0ms", func(b *testing.B) benchClient { return sqstest.For(b) }},
		{"fauxqs", func(b *testing.B) benchClient { return testenv.SQS(b) }},
	}
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			c := be.new(b)
			var loop, pipe, attrs, w measure
			rounds := []func(){
				func() { loopRound(b, c, testenv.UniqueName("fl"), &loop) },
				func() { pipelineRound(b, c, testenv.UniqueName("fp"), &pipe, false) },
				func() { pipelineRound(b, c, testenv.UniqueName("fa"), &attrs, true) },
				func() { workerRound(b, c, testenv.UniqueName("fw"), &w) },
			}
			for i := 0; b.Loop(); i++ {
				for k := range rounds {
					rounds[(i+k)%len(rounds)]()
				}
			}
			cpu := func(m *measure) float64 { return float64(m.cpuNano) / float64(m.msgs) }
			allocs := func(m *measure) float64 { return float64(m.mallocs) / float64(m.msgs) }
			loop.report(b, "loop-")
			for _, r := range []struct {
				name string
				m    *measure
			}{{"pipe", &pipe}, {"pipe-attrs", &attrs}, {"worker", &w}} {
				b.ReportMetric(cpu(r.m)/cpu(&loop), r.name+"/loop-cpu")
				b.ReportMetric(r.m.rate()/loop.rate(), r.name+"/loop-msgs")
				b.ReportMetric(allocs(r.m)/allocs(&loop), r.name+"/loop-allocs")
			}
		})
	}
}

// pipelineRound processes benchMessages messages on a new queue with the
// minimal pipelined consumer BenchmarkPipelineFloor describes, asking for
// the worker's system attributes when attrs is set, and adds what it
// measured to m.
func pipelineRound(b *testing.B, c benchClient, name string, m *measure, attrs bool) {
	url := benchQueue(b, c, name)
	defer dropQueue(c, url)
	testenv.SendBodies(b, c, url, benchMessages)
	var sys []types.MessageSystemAttributeName
	if attrs {
		sys = []types.MessageSystemAttributeName{types.MessageSystemAttributeNameApproximateReceiveCount,
			types.MessageSystemAttributeNameSentTimestamp, types.MessageSystemAttributeNameApproximateFirstReceiveTimestamp}
	}
	var deleted, requests atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	jobs := make(chan *string, benchConcurrency)
	handles := make(chan *string, benchConcurrency)
	var receivers, handlers sync.WaitGroup
	deleterDone := make(chan struct{})
	s := snap()
	for range benchConcurrency / 10 {
		receivers.Go(func() {
			for ctx.Err() == nil {
				out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10,
					WaitTimeSeconds: 1, MessageSystemAttributeNames: sys})
				requests.Add(1)
				if err != nil {
					continue
				}
				for _, msg := range out.Messages {
					jobs <- msg.ReceiptHandle
				}
			}
		})
	}
	for range benchConcurrency {
		handlers.Go(func() {
			for h := range jobs {
				_, stop := context.WithCancelCause(ctx) // the no-op handler's context
				stop(nil)
				handles <- h
			}
		})
	}
	go func() {
		defer close(deleterDone)
		// As many deletes in flight as the loop has: benchConcurrency/10.
		var deletes sync.WaitGroup
		slots := make(chan struct{}, benchConcurrency/10)
		in := &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url)}
		flush := func() {
			slots <- struct{}{}
			batch := in
			deletes.Go(func() {
				defer func() { <-slots }()
				if _, err := c.DeleteMessageBatch(context.Background(), batch); err != nil {
					b.Error(err)
				}
				requests.Add(1)
				if deleted.Add(int64(len(batch.Entries))) >= int64(benchMessages) {
					cancel()
				}
			})
			in = &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url)}
		}
		for h := range handles {
			in.Entries = append(in.Entries, types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(len(in.Entries))), ReceiptHandle: h})
			if len(in.Entries) == 10 {
				flush()
			}
		}
		if len(in.Entries) > 0 {
			flush()
		}
		deletes.Wait()
	}()
	<-ctx.Done()
	s.since(m)
	receivers.Wait()
	close(jobs)
	handlers.Wait()
	close(handles)
	<-deleterDone
	m.requests += requests.Load()
	m.msgs += benchMessages
}
