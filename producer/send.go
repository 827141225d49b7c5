package producer

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/sqsworker/sqsworker/internal/sqsbatch"
)

// SendBatch sends msgs, any number of them, in batch calls of up to
// MaxBatch entries and the service's payload limit (SendMessageBatch: 1
// MiB; PublishBatch: 256 KiB), up to Concurrency calls at once (one at a
// time, in order, on a FIFO queue or topic), retrying what can be retried. It
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
	var ready, routed []*item
	for i, m := range msgs {
		if errs != nil && errs[i] != nil {
			items[i] = &item{res: Result{Err: errs[i]}}
			continue
		}
		items[i] = p.prepare(ctx, m)
		switch {
		case items[i].res.Err != nil:
		case items[i].sched != nil:
			routed = append(routed, items[i])
		default:
			ready = append(ready, items[i])
		}
	}
	p.scheduleAll(ctx, routed)
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

// scheduleAll hands the routed items to Options.Schedule, up to
// Concurrency at once (one at a time, in order, on a FIFO queue).
func (p *Producer) scheduleAll(ctx context.Context, items []*item) {
	n := p.opts.Concurrency
	if p.fifo {
		n = 1
	}
	sem := make(chan struct{}, n)
	var wg sync.WaitGroup
	for _, it := range items {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			p.schedule(ctx, it)
		}()
	}
	wg.Wait()
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
// their results: the one batch layer (internal/sqsbatch) cuts the calls,
// maps the service's answer back to the messages and retries what may succeed
// later, with Options.MaxAttempts and Options.Retry.
func (p *Producer) deliver(ctx context.Context, items []*item) {
	if len(items) == 0 {
		return
	}
	entries := make([]sqsbatch.Entry, len(items))
	for i, it := range items {
		entries[i] = it.entry
	}
	concurrency := p.opts.Concurrency
	if p.fifo {
		concurrency = 1 // in order, one at a time
	}
	res := p.sender.Run(ctx, entries, sqsbatch.Policy{
		MaxAttempts: p.opts.MaxAttempts,
		Wait:        sqsbatch.WaitOf(p.opts.Retry.Delay),
		CallTimeout: p.opts.CallTimeout,
		MaxBatch:    p.opts.MaxBatch,
		Concurrency: concurrency,
		Gate: func(ctx context.Context, _ int) (func(), error) {
			if err := acquire(ctx, p.calls); err != nil {
				return nil, err
			}
			return func() { <-p.calls }, nil
		},
		OnCall: func(c sqsbatch.Call) {
			p.st.requests.Add(1)
			if c.Attempt > 1 {
				p.st.retried.Add(int64(c.Entries))
			}
		},
	})
	for i, it := range items {
		r := res[i]
		it.res.Attempts += r.Attempts
		switch {
		case r.OK:
			it.res.MessageID, it.res.SequenceNumber, it.res.Err = r.MessageID, r.SequenceNumber, nil
		case r.Attempts == 0:
			it.res.Err = r.Err // never sent: ctx ended first
		case r.Whole:
			it.res.Err = fmt.Errorf("producer: %s to %s %s failed: %w", p.sender.Op(), p.kind(), p.name, r.Err)
		case errors.Is(r.Err, sqsbatch.ErrNoResult):
			it.res.Err = fmt.Errorf("producer: %s reported no result for the message in its %s response: %w", p.service(), p.sender.Op(), r.Err)
		case p.topic:
			it.res.Err = fmt.Errorf("producer: SNS did not take the message for topic %s: %w", p.name, r.Err)
		default:
			it.res.Err = fmt.Errorf("producer: SQS did not take the message: %w", r.Err)
		}
		if it.res.Err != nil {
			if cause := context.Cause(ctx); cause != nil && !errors.Is(it.res.Err, cause) {
				it.res.Err = fmt.Errorf("%w; %w", it.res.Err, cause) // e.g. Close's deadline passed
			}
		}
	}
}

func acquire(ctx context.Context, sem chan struct{}) error {
	select {
	case sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
