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
)

// maxBatch is the most entries an SQS batch call carries.
const maxBatch = 10

// flushAttempts bounds how often one batch's failed entries are retried.
const flushAttempts = 5

// entry is one pending delete (timeout < 0) or visibility change.
type entry struct {
	handle  string
	timeout int32
	// done, when set (buffered, capacity 1), receives the entry's final
	// result: nil once SQS confirmed it, else why it failed for good. An
	// entry with done goes out at once instead of lingering.
	done chan<- error
}

// finish reports e's final result to whoever waits for it.
func (e entry) finish(err error) {
	if e.done != nil {
		e.done <- err
	}
}

// batcher gathers deletes or visibility changes into batch calls: a batch
// is ready when it has 10 entries or when its oldest entry has waited
// linger. A fixed set of sender goroutines sends ready batches, so adding an
// entry never waits for a call in flight.
type batcher struct {
	name   string
	linger time.Duration
	send   func(ctx context.Context, batch []entry) ([]failure, error)
	onFail func(e entry, err error) // an entry that failed for good
	log    *slog.Logger
	ctx    context.Context

	mu      sync.Mutex
	cond    *sync.Cond
	pending []entry   // not yet a full batch
	ready   [][]entry // batches waiting for a sender
	timer   *time.Timer
	closed  bool
	senders sync.WaitGroup
}

// newBatcher returns a batcher with senders goroutines, so at most that many
// batch calls are in flight.
func newBatcher(ctx context.Context, name string, linger time.Duration, senders int, log *slog.Logger,
	send func(context.Context, []entry) ([]failure, error), onFail func(entry, error)) *batcher {
	b := &batcher{name: name, linger: linger, send: send, onFail: onFail, log: log, ctx: ctx}
	b.cond = sync.NewCond(&b.mu)
	for range max(senders, 1) {
		b.senders.Add(1)
		go b.sender()
	}
	return b
}

// add queues one entry. After close it sends the entry at once, itself.
func (b *batcher) add(e entry) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		b.deliver([]entry{e})
		return
	}
	defer b.mu.Unlock()
	b.pending = append(b.pending, e)
	if len(b.pending) >= maxBatch || e.done != nil {
		b.cutLocked()
		return
	}
	if b.timer == nil {
		b.timer = time.AfterFunc(b.linger, func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			b.timer = nil
			b.cutLocked()
		})
	}
}

// cutLocked turns what is pending into ready batches. b.mu must be held.
func (b *batcher) cutLocked() {
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
	}
	for len(b.pending) > 0 {
		n := min(len(b.pending), maxBatch)
		b.ready = append(b.ready, b.pending[:n:n])
		b.pending = b.pending[n:]
		b.cond.Signal()
	}
	b.pending = nil
}

// sender sends ready batches until the batcher is closed and drained.
func (b *batcher) sender() {
	defer b.senders.Done()
	b.mu.Lock()
	for {
		for len(b.ready) == 0 && !b.closed {
			b.cond.Wait()
		}
		if len(b.ready) == 0 {
			b.mu.Unlock()
			return
		}
		batch := b.ready[0]
		b.ready[0] = nil
		b.ready = b.ready[1:]
		b.mu.Unlock()
		b.deliver(batch)
		b.mu.Lock()
	}
}

// deliver sends one batch, retrying failed entries that may succeed later.
func (b *batcher) deliver(batch []entry) {
	bo := backoff.WithContext(backoff.WithMaxRetries(newFlushBackOff(), flushAttempts-1), b.ctx)
	for attempt := 1; ; attempt++ {
		failed, err := b.send(b.ctx, batch)
		var again []entry
		if err != nil {
			again = batch
		} else {
			refused := make([]bool, len(batch))
			for _, f := range failed {
				refused[f.idx] = true
				if f.retryable {
					again = append(again, f.e)
					err = f
				} else {
					b.onFail(f.e, f)
					f.e.finish(f)
				}
			}
			for i, e := range batch {
				if !refused[i] {
					e.finish(nil)
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
				e.finish(err)
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

// close sends everything pending and waits until every batch is sent.
func (b *batcher) close() {
	b.mu.Lock()
	b.closed = true
	b.cutLocked()
	b.cond.Broadcast()
	b.mu.Unlock()
	b.senders.Wait()
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
	idx       int // e's index in the batch
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
	seen := make([]bool, len(batch))
	for _, f := range failed {
		i, err := strconv.Atoi(aws.ToString(f.Id))
		if err != nil || i < 0 || i >= len(batch) || seen[i] {
			continue
		}
		seen[i] = true
		out = append(out, failure{e: batch[i], idx: i, code: aws.ToString(f.Code), msg: aws.ToString(f.Message), retryable: !f.SenderFault})
	}
	return out
}
