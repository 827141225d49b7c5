package producer

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/internal/sqserr"
	"github.com/sqsworker/sqsworker/internal/sqslimit"
)

// SendBatch sends msgs, any number of them, in SendMessageBatch calls of up
// to MaxBatch entries and 1 MiB, up to Concurrency calls at once (one at a
// time, in order, on a FIFO queue), retrying what can be retried. It
// returns one Result per message, in order, and a *BatchError when any
// message was not sent; it does not use the background batcher.
func (p *Producer) SendBatch(ctx context.Context, msgs []Message) ([]Result, error) {
	return p.sendBatch(ctx, msgs, nil)
}

// sendBatch is SendBatch with errors known before sending: msgs[i] fails
// with errs[i] when that is not nil.
func (p *Producer) sendBatch(ctx context.Context, msgs []Message, errs []error) ([]Result, error) {
	if p.isClosed() {
		return closedResults(len(msgs)), &BatchError{Failed: len(msgs), Total: len(msgs), First: ErrClosed}
	}
	items := make([]*item, len(msgs))
	var ready []*item
	for i, m := range msgs {
		if errs != nil && errs[i] != nil {
			items[i] = &item{res: Result{Err: errs[i]}}
			continue
		}
		items[i] = p.prepare(ctx, m)
		if items[i].res.Err == nil {
			ready = append(ready, items[i])
		}
	}
	p.deliver(ctx, ready)
	out := make([]Result, len(items))
	var berr *BatchError
	for i, it := range items {
		p.count(it)
		out[i] = it.res
		if it.res.Err != nil {
			if berr == nil {
				berr = &BatchError{Total: len(items), First: it.res.Err}
			}
			berr.Failed++
		}
	}
	if berr != nil {
		return out, berr
	}
	return out, nil
}

func closedResults(n int) []Result {
	out := make([]Result, n)
	for i := range out {
		out[i].Err = ErrClosed
	}
	return out
}

// count adds a finished item to the counters.
func (p *Producer) count(it *item) {
	if it.res.Err != nil {
		p.st.failed.Add(1)
		return
	}
	p.st.sent.Add(1)
	if it.delayed {
		p.st.delayed.Add(1)
	}
}

// deliver sends items until each is sent or has failed for good, setting
// their results.
func (p *Producer) deliver(ctx context.Context, items []*item) {
	b := p.opts.BackOff()
	for attempt := 1; len(items) > 0; attempt++ {
		retry := p.round(ctx, items)
		if len(retry) == 0 || attempt >= p.opts.MaxAttempts {
			return
		}
		wait := b.NextBackOff()
		if wait < 0 { // the BackOff gave up
			return
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			for _, it := range retry { // say why there is no next attempt
				if cause := context.Cause(ctx); !errors.Is(it.res.Err, cause) {
					it.res.Err = fmt.Errorf("%w; %w", it.res.Err, cause)
				}
			}
			return
		case <-t.C:
		}
		p.st.retried.Add(int64(len(retry)))
		items = retry
	}
}

// round sends every item once, in batches, and returns those whose failure a
// later attempt may fix.
func (p *Producer) round(ctx context.Context, items []*item) (retry []*item) {
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	for len(items) > 0 {
		n := sqslimit.Fit(min(len(items), p.opts.MaxBatch), sqslimit.MaxMessageSize, func(i int) int { return items[i].size })
		batch := items[:n]
		items = items[n:]
		if err := acquire(ctx, p.calls); err != nil {
			for _, it := range append(batch, items...) {
				it.res.Err = err
			}
			break
		}
		send := func() {
			defer func() { <-p.calls }()
			r := p.call(ctx, batch)
			mu.Lock()
			retry = append(retry, r...)
			mu.Unlock()
		}
		if p.fifo {
			send() // in order, one at a time
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			send()
		}()
	}
	wg.Wait()
	return retry
}

func acquire(ctx context.Context, sem chan struct{}) error {
	select {
	case sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// call makes one SendMessageBatch call for batch and records each entry's
// result; it returns the entries worth another attempt.
func (p *Producer) call(ctx context.Context, batch []*item) (retry []*item) {
	in := &sqs.SendMessageBatchInput{QueueUrl: aws.String(p.queueURL), Entries: make([]types.SendMessageBatchRequestEntry, len(batch))}
	for i, it := range batch {
		e := it.entry
		e.Id = aws.String(strconv.Itoa(i))
		in.Entries[i] = e
		it.res.Attempts++
	}
	cctx, cancel := context.WithTimeout(ctx, p.opts.CallTimeout)
	p.st.requests.Add(1)
	out, err := p.client.SendMessageBatch(cctx, in)
	cancel()
	if err != nil {
		err = fmt.Errorf("producer: SendMessageBatch to queue %s failed: %w", queueName(p.queueURL), err)
		if cause := context.Cause(ctx); cause != nil && !errors.Is(err, cause) {
			err = fmt.Errorf("%w; %w", err, cause) // e.g. Close's deadline passed
		}
		for _, it := range batch {
			it.res.Err = err
		}
		if ctx.Err() == nil && sqserr.Of(err).Retryable() {
			return batch
		}
		return nil
	}
	seen := make([]bool, len(batch))
	for _, s := range out.Successful {
		i, ok := entryIndex(s.Id, len(batch))
		if !ok {
			continue
		}
		seen[i] = true
		batch[i].res.MessageID, batch[i].res.SequenceNumber = aws.ToString(s.MessageId), aws.ToString(s.SequenceNumber)
		batch[i].res.Err = nil
	}
	for _, f := range out.Failed {
		i, ok := entryIndex(f.Id, len(batch))
		if !ok {
			continue
		}
		seen[i] = true
		batch[i].res.Err = fmt.Errorf("producer: SQS did not take the message: %w", sqserr.EntryError(f))
		if sqserr.OfEntry(f).Retryable() {
			retry = append(retry, batch[i])
		}
	}
	for i, ok := range seen {
		if !ok { // SQS did not report the entry: never count it as sent
			batch[i].res.Err = fmt.Errorf("producer: SQS reported no result for the message in its SendMessageBatch response")
			retry = append(retry, batch[i])
		}
	}
	return retry
}

func entryIndex(id *string, n int) (int, bool) {
	i, err := strconv.Atoi(aws.ToString(id))
	return i, err == nil && i >= 0 && i < n
}
