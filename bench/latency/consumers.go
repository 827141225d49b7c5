package main

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"gocloud.dev/pubsub/awssnssqs"

	"github.com/sqsworker/sqsworker/worker"
)

// job is what every consumer does with a message: note it, then take
// handlerTime.
type job struct {
	handlerTime time.Duration
	handled     atomic.Int64
	mu          sync.Mutex
	runs        map[string]int // by body: duplicates
}

func newJob(d time.Duration) *job { return &job{handlerTime: d, runs: map[string]int{}} }

func (j *job) do(ctx context.Context, body string) {
	j.mu.Lock()
	j.runs[body]++
	j.mu.Unlock()
	if j.handlerTime > 0 {
		t := time.NewTimer(j.handlerTime)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
	j.handled.Add(1)
}

// duplicates is how many runs were beyond each body's first.
func (j *job) duplicates() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	n := 0
	for _, r := range j.runs {
		n += r - 1
	}
	return n
}

// distinct is how many bodies ran at least once.
func (j *job) distinct() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.runs)
}

// consumer runs until ctx ends; extra reports consumer-specific figures.
type consumer func(ctx context.Context, client sqsAPI, url string, concurrency int, j *job) (extra map[string]float64, err error)

// sqsAPI is what the consumers need: the worker's API and a real client
// for gocloud.
type sqsAPI interface {
	worker.API
}

var quiet = slog.New(slog.DiscardHandler)

// runWorker is sqsworker with its defaults at the given concurrency.
func runWorker(ctx context.Context, client sqsAPI, url string, concurrency int, j *job) (map[string]float64, error) {
	w, err := worker.New(client, url, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
		j.do(ctx, m.Body)
		return nil
	}), func(o *worker.Options) { o.Concurrency = concurrency; o.Logger = quiet })
	if err != nil {
		return nil, err
	}
	err = w.Run(ctx)
	s := w.Stats()
	full := float64(s.ReceiveSizes[10])
	var receives float64
	for _, n := range s.ReceiveSizes {
		receives += float64(n)
	}
	extra := map[string]float64{"full_receives": full / max(receives, 1), "late_settlements": float64(s.SettledLate)}
	return extra, err
}

// runLoop is the minimal hand-written SDK loop: ⌈concurrency/10⌉
// goroutines, each receiving 10, handling them concurrently, and deleting
// them with one DeleteMessageBatch.
func runLoop(ctx context.Context, client sqsAPI, url string, concurrency int, j *job) (map[string]float64, error) {
	var wg sync.WaitGroup
	for range max(1, (concurrency+9)/10) {
		wg.Go(func() {
			for ctx.Err() == nil {
				out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 20})
				if err != nil || len(out.Messages) == 0 {
					continue
				}
				var hw sync.WaitGroup
				for _, m := range out.Messages {
					hw.Go(func() { j.do(ctx, aws.ToString(m.Body)) })
				}
				hw.Wait()
				in := &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url)}
				for i, m := range out.Messages {
					in.Entries = append(in.Entries, types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle})
				}
				client.DeleteMessageBatch(context.WithoutCancel(ctx), in)
			}
		})
	}
	wg.Wait()
	return nil, nil
}

// runGocloud is gocloud.dev/pubsub's awssnssqs driver with concurrency
// goroutines receiving and acking.
func runGocloud(ctx context.Context, client sqsAPI, url string, concurrency int, j *job) (map[string]float64, error) {
	c, ok := client.(*sqs.Client)
	if !ok {
		return nil, errors.New("gocloud needs an *sqs.Client")
	}
	sub := awssnssqs.OpenSubscriptionV2(ctx, c, url, &awssnssqs.SubscriptionOptions{Raw: true})
	var wg sync.WaitGroup
	for range concurrency {
		wg.Go(func() {
			for {
				m, err := sub.Receive(ctx)
				if err != nil {
					return
				}
				j.do(ctx, string(m.Body))
				m.Ack()
			}
		})
	}
	wg.Wait()
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return nil, sub.Shutdown(sctx)
}
