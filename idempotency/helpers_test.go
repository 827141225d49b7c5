package idempotency_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/idempotency"
	"github.com/sqsworker/sqsworker/worker"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// errDark is what a consumer that has "crashed" gets from every call: it
// stands for a process that no longer reaches AWS.
var errDark = errors.New("test: this consumer is dark (simulated crash)")

// twist wraps an SQS client the way the scenarios need: it gives every
// received message whose body is in sameID the same message ID (as if SQS
// delivered one message several times), drops whole DeleteMessageBatch calls
// (as if the process died before its delete), and goes dark (every call
// fails: a crashed consumer). It satisfies worker.API, sqslambda.API and
// sqslambda.LocalAPI.
type twist struct {
	worker.API
	sameID      map[string]string // body → the ID every copy gets
	dropDeletes atomic.Int64      // DeleteMessageBatch calls still to drop
	dark        atomic.Bool
}

func (c *twist) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	if c.dark.Load() {
		return nil, errDark
	}
	out, err := c.API.ReceiveMessage(ctx, in, optFns...)
	if err != nil {
		return out, err
	}
	for i, m := range out.Messages {
		if id, ok := c.sameID[aws.ToString(m.Body)]; ok {
			out.Messages[i].MessageId = aws.String(id)
		}
	}
	return out, nil
}

func (c *twist) DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	if c.dark.Load() {
		return nil, errDark
	}
	if c.dropDeletes.Add(-1) >= 0 { // pretend it went out, as a crash right after the handler would leave it
		out := &sqs.DeleteMessageBatchOutput{}
		for _, e := range in.Entries {
			out.Successful = append(out.Successful, types.DeleteMessageBatchResultEntry{Id: e.Id})
		}
		return out, nil
	}
	return c.API.DeleteMessageBatch(ctx, in, optFns...)
}

func (c *twist) ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	if c.dark.Load() {
		return nil, errDark
	}
	return c.API.ChangeMessageVisibilityBatch(ctx, in, optFns...)
}

func (c *twist) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	if c.dark.Load() {
		return nil, errDark
	}
	return c.API.SendMessageBatch(ctx, in, optFns...)
}

// darkDB wraps a DynamoDB client for one consumer, which can go dark.
type darkDB struct {
	idempotency.API
	dark *atomic.Bool
}

func (d darkDB) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if d.dark.Load() {
		return nil, errDark
	}
	return d.API.PutItem(ctx, in, optFns...)
}

func (d darkDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if d.dark.Load() {
		return nil, errDark
	}
	return d.API.UpdateItem(ctx, in, optFns...)
}

func (d darkDB) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	if d.dark.Load() {
		return nil, errDark
	}
	return d.API.DeleteItem(ctx, in, optFns...)
}

// mustGuard is idempotency.New, failing t on error.
func mustGuard(t testing.TB, db idempotency.API, table string, optFns ...func(*idempotency.Options)) *idempotency.Guard {
	t.Helper()
	g, err := idempotency.New(db, table, append([]func(*idempotency.Options){func(o *idempotency.Options) { o.Logger = quiet }}, optFns...)...)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// running is a started worker.
type running struct {
	w      *worker.Worker
	cancel context.CancelFunc
	done   chan error

	mu      sync.Mutex
	settled []worker.Settlement
}

// startWorker runs a worker over queue until stop.
func startWorker(t testing.TB, client worker.API, queue string, h worker.Handler, optFns ...func(*worker.Options)) *running {
	t.Helper()
	r := &running{done: make(chan error, 1)}
	opts := append([]func(*worker.Options){func(o *worker.Options) {
		o.Logger = quiet
		o.WaitTime = time.Second
		o.OnSettled = func(s worker.Settlement) {
			r.mu.Lock()
			r.settled = append(r.settled, s)
			r.mu.Unlock()
		}
	}}, optFns...)
	w, err := worker.New(client, queue, h, opts...)
	if err != nil {
		t.Fatal(err)
	}
	r.w = w
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { r.done <- w.Run(ctx) }()
	return r
}

// stop ends the worker and returns Run's error.
func (r *running) stop() error {
	r.cancel()
	return <-r.done
}

// outcomes counts the settlements by outcome.
func (r *running) outcomes() map[worker.Outcome]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := map[worker.Outcome]int{}
	for _, s := range r.settled {
		n[s.Outcome]++
	}
	return n
}

// waitFor polls cond every 100 ms (virtual time under synctest, real time
// against the emulators) until it holds; it fails t after timeout.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
