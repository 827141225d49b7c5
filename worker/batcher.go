package worker

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/cenkalti/backoff/v4"
	"golang.org/x/sync/errgroup"
)

// maxBatch is the most entries an SQS batch call carries.
const maxBatch = 10

// flushAttempts bounds how often one batch's failed entries are retried.
const flushAttempts = 5

// entry is one pending delete (timeout < 0) or visibility change.
type entry struct {
	handle  string
	timeout int32
}

// batcher gathers deletes or visibility changes into batch calls: a batch
// goes out when it has 10 entries or when its oldest entry has waited
// linger. Several batches may be in flight at once.
type batcher struct {
	name   string
	linger time.Duration
	send   func(ctx context.Context, batch []entry) ([]failure, error)
	onFail func(e entry, err error) // an entry that failed for good
	log    *slog.Logger

	mu      sync.Mutex
	pending []entry
	timer   *time.Timer
	closed  bool
	flights errgroup.Group
	ctx     context.Context
}

func newBatcher(ctx context.Context, name string, linger time.Duration, log *slog.Logger,
	send func(context.Context, []entry) ([]failure, error), onFail func(entry, error)) *batcher {
	b := &batcher{name: name, linger: linger, send: send, onFail: onFail, log: log, ctx: ctx}
	b.flights.SetLimit(16)
	return b
}

// add queues one entry. After close it is sent at once.
func (b *batcher) add(e entry) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.pending = append(b.pending, e)
	if len(b.pending) >= maxBatch || b.closed {
		b.flushLocked()
		return
	}
	if b.timer == nil {
		b.timer = time.AfterFunc(b.linger, func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			b.timer = nil
			b.flushLocked()
		})
	}
}

// flushLocked sends what is pending. b.mu must be held.
func (b *batcher) flushLocked() {
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
	}
	for len(b.pending) > 0 {
		n := min(len(b.pending), maxBatch)
		batch := append([]entry(nil), b.pending[:n]...)
		b.pending = b.pending[n:]
		b.flights.Go(func() error {
			b.deliver(batch)
			return nil
		})
	}
	b.pending = nil
}

// deliver sends one batch, retrying failed entries that may succeed later.
func (b *batcher) deliver(batch []entry) {
	bo := backoff.WithContext(backoff.WithMaxRetries(newFlushBackOff(), flushAttempts-1), b.ctx)
	for attempt := 1; ; attempt++ {
		failed, err := b.send(b.ctx, batch)
		if err == nil && len(failed) == 0 {
			return
		}
		var again []entry
		if err != nil {
			again = batch
		} else {
			for _, f := range failed {
				if f.retryable {
					again = append(again, f.e)
					err = f
				} else {
					b.onFail(f.e, f)
				}
			}
		}
		if len(again) == 0 {
			return
		}
		wait := bo.NextBackOff()
		if wait == backoff.Stop {
			for _, e := range again {
				b.onFail(e, err)
			}
			return
		}
		b.log.Warn("sqsworker: batch call failed; retrying", "call", b.name, "entries", len(again), "attempt", attempt, "err", err)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-b.ctx.Done():
			t.Stop()
		}
		batch = again
	}
}

// close sends everything pending and waits for every batch in flight.
func (b *batcher) close() {
	b.mu.Lock()
	b.closed = true
	b.flushLocked()
	b.mu.Unlock()
	_ = b.flights.Wait()
}

func newFlushBackOff() backoff.BackOff {
	e := backoff.NewExponentialBackOff()
	e.InitialInterval = 100 * time.Millisecond
	e.MaxInterval = 2 * time.Second
	e.MaxElapsedTime = 0
	return e
}

// failure is one entry a batch call reported as failed.
type failure struct {
	e         entry
	code, msg string
	retryable bool // not the sender's fault: may succeed when retried
}

func (f failure) Error() string { return f.code + ": " + f.msg }

// sendDeletes is the DeleteMessageBatch form of batcher.send.
func sendDeletes(client API, queueURL string) func(context.Context, []entry) ([]failure, error) {
	return func(ctx context.Context, batch []entry) ([]failure, error) {
		in := &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(queueURL), Entries: make([]types.DeleteMessageBatchRequestEntry, len(batch))}
		for i, e := range batch {
			in.Entries[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: aws.String(e.handle)}
		}
		out, err := client.DeleteMessageBatch(ctx, in)
		if err != nil {
			return nil, err
		}
		return failedEntries(batch, out.Failed), nil
	}
}

// sendChanges is the ChangeMessageVisibilityBatch form of batcher.send.
func sendChanges(client API, queueURL string) func(context.Context, []entry) ([]failure, error) {
	return func(ctx context.Context, batch []entry) ([]failure, error) {
		in := &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(queueURL), Entries: make([]types.ChangeMessageVisibilityBatchRequestEntry, len(batch))}
		for i, e := range batch {
			in.Entries[i] = types.ChangeMessageVisibilityBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: aws.String(e.handle), VisibilityTimeout: e.timeout}
		}
		out, err := client.ChangeMessageVisibilityBatch(ctx, in)
		if err != nil {
			return nil, err
		}
		return failedEntries(batch, out.Failed), nil
	}
}

// failedEntries maps a batch response's failures back to entries.
func failedEntries(batch []entry, failed []types.BatchResultErrorEntry) []failure {
	var out []failure
	for _, f := range failed {
		i, err := strconv.Atoi(aws.ToString(f.Id))
		if err != nil || i < 0 || i >= len(batch) {
			continue
		}
		out = append(out, failure{e: batch[i], code: aws.ToString(f.Code), msg: aws.ToString(f.Message), retryable: !f.SenderFault})
	}
	return out
}
