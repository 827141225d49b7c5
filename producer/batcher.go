package producer

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Pending is a message handed to Enqueue, on its way to SQS (or SNS).
type Pending struct{ it *item }

// Done is closed once the message's Result is final.
func (p *Pending) Done() <-chan struct{} { return p.it.done }

// Wait blocks until the message's Result is final or ctx ends, and returns
// the Result with its Err (Result.Err is nil when SQS or SNS accepted it). When
// ctx ends first, the message is still on its way: Wait again, or Close.
func (p *Pending) Wait(ctx context.Context) (Result, error) {
	select {
	case <-p.it.done:
		return p.it.res, p.it.res.Err
	case <-ctx.Done():
		return Result{}, context.Cause(ctx)
	}
}

// Send sends one message through the background batcher, which gathers the
// messages of concurrent callers into batch calls, and waits for its
// result. A high-rate caller on one goroutine should use Enqueue (or
// SendBatch) instead: Send waits up to Linger for company on every call.
func (p *Producer) Send(ctx context.Context, m Message) (Result, error) {
	pd, err := p.Enqueue(ctx, m)
	if err != nil {
		return Result{Err: err}, err
	}
	return pd.Wait(ctx)
}

// Enqueue hands m to the background batcher and returns at once (or, when
// MaxPending messages wait already, once there is room or ctx ends). The
// BeforeSend hooks and the Offloader run here, with ctx. A batch goes out
// when it holds MaxBatch messages or the service's payload limit (1 MiB for
// SQS, 256 KiB for SNS), or when its first message has waited Linger. The
// returned Pending gives the message's Result; a message
// that fails is also counted in the error Close returns, so none is dropped
// silently. The error is non-nil only when m was not accepted at all (the
// producer is closed, ctx ended) — a message refused for its contents is
// accepted and fails in its Result.
func (p *Producer) Enqueue(ctx context.Context, m Message) (*Pending, error) {
	if p.isClosed() {
		return nil, ErrClosed
	}
	p.startOnce.Do(p.start)
	it := p.prepare(ctx, m)
	it.done = make(chan struct{})
	if it.res.Err == nil && it.sched != nil {
		p.schedule(ctx, it) // Options.Schedule, not the queue
	}
	if it.res.Err != nil || it.sched != nil {
		p.finish(it)
		return &Pending{it}, nil
	}
	// The lock is held only to register; the wait for room is not under
	// it, so Close (which closes p.closing) wakes a waiting Enqueue rather
	// than waiting for it. Close closes p.queue once every registered
	// Enqueue has returned.
	p.mu.RLock()
	if p.closed || p.queue == nil {
		p.mu.RUnlock()
		return nil, ErrClosed
	}
	p.enqueuing.Add(1)
	p.mu.RUnlock()
	defer p.enqueuing.Done()
	select {
	case <-p.closing: // not accepted, even if there is room now
		return nil, ErrClosed
	default:
	}
	select {
	case p.queue <- it:
		return &Pending{it}, nil
	case <-p.closing:
		return nil, ErrClosed
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// finish makes an enqueued item's result final.
func (p *Producer) finish(it *item) {
	p.count(it)
	switch {
	case it.res.Err == nil:
		p.st.enqueuedSent.Add(1)
	case p.st.enqueuedFailed.Add(1) == 1:
		err := it.res.Err
		p.st.firstEnqueuedErr.Store(&err)
	}
	close(it.done)
}

func (p *Producer) isClosed() bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.closed
}

func (p *Producer) start() {
	p.queue = make(chan *item, p.opts.MaxPending)
	go p.loop()
}

// loop gathers enqueued items into batches and hands each to a sender.
func (p *Producer) loop() {
	defer close(p.loopDone)
	var (
		batch []*item
		size  int
		timer = time.NewTimer(time.Hour)
	)
	timer.Stop()
	flush := func() {
		timer.Stop()
		if len(batch) == 0 {
			return
		}
		items := batch
		batch, size = nil, 0
		if p.fifo { // in order: one batch at a time
			p.sendEnqueued(items)
			return
		}
		if err := acquire(p.ctx, p.flights); err != nil {
			for _, it := range items {
				it.res.Err = err
				p.finish(it)
			}
			return
		}
		p.sending.Add(1)
		go func() {
			defer p.sending.Done()
			defer func() { <-p.flights }()
			p.sendEnqueued(items)
		}()
	}
	for {
		select {
		case it, ok := <-p.queue:
			if !ok {
				flush()
				p.sending.Wait()
				return
			}
			if len(batch) > 0 && size+it.size > p.maxPayload {
				flush()
			}
			batch = append(batch, it)
			size += it.size
			if len(batch) == 1 {
				timer.Reset(p.opts.Linger)
			}
			if len(batch) >= p.opts.MaxBatch {
				flush()
			}
		case <-timer.C:
			flush()
		}
	}
}

func (p *Producer) sendEnqueued(items []*item) {
	p.deliver(p.ctx, items)
	for _, it := range items {
		p.finish(it)
	}
}

// Close stops accepting messages, sends what the batcher holds, and waits
// for every call in flight, or for ctx to end: then the calls still in
// flight are cancelled, and every message accepted and not sent — in a
// call, waiting for one, or still queued — fails with an error that wraps
// the context's. Enqueue (and Send) calls waiting for room in a full queue
// return ErrClosed at once; their messages were not accepted. Close
// returns a *BatchError when any message given to Send or Enqueue was not
// sent, and ctx's error when the flush did not finish. Call Close once
// done with a Producer that used Send or Enqueue; SendBatch needs no
// background work, but is refused after Close too.
func (p *Producer) Close(ctx context.Context) error {
	p.startOnce.Do(func() { close(p.loopDone) }) // never started: nothing to flush
	p.mu.Lock()
	first := !p.closed
	if first {
		p.closed = true
		close(p.closing)
	}
	p.mu.Unlock()
	if first && p.queue != nil {
		p.enqueuing.Wait() // they return at once: p.closing is closed
		close(p.queue)
	}
	select {
	case <-p.loopDone:
	case <-ctx.Done():
		p.cancel(fmt.Errorf("producer: Close's deadline passed before the message was sent: %w", context.Cause(ctx)))
		<-p.loopDone
		return errors.Join(context.Cause(ctx), p.enqueuedError())
	}
	p.cancel(ErrClosed)
	return p.enqueuedError()
}

func (p *Producer) enqueuedError() error {
	n := p.st.enqueuedFailed.Load()
	if n == 0 {
		return nil
	}
	first := p.st.firstEnqueuedErr.Load()
	var err error
	if first != nil {
		err = *first
	}
	return &BatchError{Failed: int(n), Total: int(n + p.st.enqueuedSent.Load()), First: err}
}
