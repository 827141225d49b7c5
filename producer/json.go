package producer

import (
	"context"
	"encoding/json"
	"fmt"
)

// JSONSender sends jobs of type T as JSON message bodies, to a queue or a
// topic; worker.JSON[T] decodes them on the consuming side (behind
// fanout.Unwrap for a topic's enveloped subscription). Make one with JSON.
type JSONSender[T any] struct{ p *Producer }

// JSON returns a sender of T jobs through p. (Go methods cannot have type
// parameters, hence a function returning a typed sender.)
func JSON[T any](p *Producer) JSONSender[T] { return JSONSender[T]{p: p} }

// message returns the message that carries job: its JSON encoding as the
// body, with opts applied (WithDelay, WithGroup, or any func(*Message)).
func (s JSONSender[T]) message(job T, opts ...func(*Message)) (Message, error) {
	body, err := json.Marshal(job)
	if err != nil {
		return Message{}, fmt.Errorf("producer: encoding a %T job as JSON: %w", job, err)
	}
	m := Message{Body: string(body)}
	for _, fn := range opts {
		fn(&m)
	}
	return m, nil
}

// Send sends job through the background batcher and waits for its result
// (see Producer.Send).
func (s JSONSender[T]) Send(ctx context.Context, job T, opts ...func(*Message)) (Result, error) {
	m, err := s.message(job, opts...)
	if err != nil {
		return Result{Err: err}, err
	}
	return s.p.Send(ctx, m)
}

// Enqueue hands job to the background batcher (see Producer.Enqueue).
func (s JSONSender[T]) Enqueue(ctx context.Context, job T, opts ...func(*Message)) (*Pending, error) {
	m, err := s.message(job, opts...)
	if err != nil {
		return nil, err
	}
	return s.p.Enqueue(ctx, m)
}

// SendBatch sends jobs in batch calls (see Producer.SendBatch), with opts
// applied to every message. A job that does not encode fails in its Result.
func (s JSONSender[T]) SendBatch(ctx context.Context, jobs []T, opts ...func(*Message)) ([]Result, error) {
	msgs := make([]Message, len(jobs))
	errs := make([]error, len(jobs))
	for i, job := range jobs {
		msgs[i], errs[i] = s.message(job, opts...)
	}
	return s.p.sendBatch(ctx, msgs, errs)
}
