package sqsotel_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/sqsworker/sqsworker/sqsotel"
	"github.com/sqsworker/sqsworker/worker"
)

// Every message sent with a trace context gets a CONSUMER process span per
// delivery, linked to its producer's span, carrying the retry, heartbeat
// and dead-letter events, ended when SQS confirmed the outcome.
func TestProcessSpansLinkedWithEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tel := newTelemetry(t)
		sc := runScenario(t, tel)

		want := map[string][]string{ // the settlement event of each delivery
			okJob:     {"sqsworker.delete"},
			fullJob:   {"sqsworker.delete"},
			flakyJob:  {"sqsworker.retry", "sqsworker.delete"},
			poisonJob: {"sqsworker.dead_letter"},
			doomedJob: {"sqsworker.retry", "sqsworker.dead_letter"},
			longJob:   {"sqsworker.delete"},
		}
		for job, events := range want {
			spans := processSpans(tel, sc.ids[job])
			if len(spans) != len(events) {
				t.Errorf("%s: %d process spans, want %d", job, len(spans), len(events))
				continue
			}
			for i, s := range spans {
				if s.Name() != "process jobs" {
					t.Errorf("%s: span name %q", job, s.Name())
				}
				for k, v := range map[string]string{
					"messaging.system": "aws_sqs", "messaging.operation.type": "process", "messaging.operation.name": "process",
					"messaging.destination.name": "jobs", "sqsworker.attempt": strconv.Itoa(i + 1),
				} {
					if got := attr(s.Attributes(), k); got != v {
						t.Errorf("%s #%d: %s = %q, want %q", job, i+1, k, got, v)
					}
				}
				links := s.Links()
				if len(links) == 0 || !sameSpan(links[0].SpanContext, sc.producer[job]) {
					t.Errorf("%s #%d: links %v, want the producer's span %v", job, i+1, links, sc.producer[job])
				}
				if job != fullJob && len(links) != 1 {
					t.Errorf("%s #%d: %d links; traceparent and AWSTraceHeader name the same span, so want 1", job, i+1, len(links))
				}
				if s.Parent().IsValid() {
					t.Errorf("%s #%d: parent %v; want a new trace linked to the producer (ParentFromMessage is off)", job, i+1, s.Parent())
				}
				names := eventNames(s)
				if len(names) == 0 || names[len(names)-1] != events[i] {
					t.Errorf("%s #%d: events %v, want last %s", job, i+1, names, events[i])
				}
				last := s.Events()[len(s.Events())-1]
				if !s.EndTime().Equal(last.Time) {
					t.Errorf("%s #%d: span ends at %v, its settlement event at %v", job, i+1, s.EndTime(), last.Time)
				}
				switch events[i] {
				case "sqsworker.retry":
					if got := attr(last.Attributes, "sqsworker.delay"); got != "5" {
						t.Errorf("%s #%d: retry delay %q, want 5 (s)", job, i+1, got)
					}
					if s.Status().Code != codes.Error || attr(s.Attributes(), "error.type") != "_OTHER" {
						t.Errorf("%s #%d: status %v, error.type %q", job, i+1, s.Status(), attr(s.Attributes(), "error.type"))
					}
				case "sqsworker.dead_letter":
					reason := attr(last.Attributes, "sqsworker.reason")
					if job == poisonJob && reason != "permanent failure" || job == doomedJob && !strings.HasPrefix(reason, "retries exhausted") {
						t.Errorf("%s: dead-letter reason %q", job, reason)
					}
					if s.Status().Code != codes.Error {
						t.Errorf("%s: status %v, want Error", job, s.Status())
					}
				}
			}
		}
		// The long job's span records each heartbeat extension, at its time.
		long := processSpans(tel, sc.ids[longJob])
		if len(long) == 1 {
			var beats []time.Time
			for _, e := range long[0].Events() {
				if e.Name == "sqsworker.heartbeat" {
					beats = append(beats, e.Time)
				}
			}
			if len(beats) < 2 || int64(len(beats)) != sc.stats.Extensions {
				t.Errorf("long job: %d heartbeat events, want the %d extensions (at least 2)", len(beats), sc.stats.Extensions)
			}
			for _, b := range beats {
				if b.Before(long[0].StartTime()) || b.After(long[0].EndTime()) {
					t.Errorf("heartbeat at %v outside the span %v-%v", b, long[0].StartTime(), long[0].EndTime())
				}
			}
		}
		// The chained hook saw every settlement.
		if len(sc.hooked) != int(sc.stats.Received) {
			t.Errorf("chained hook saw %d settlements, want %d", len(sc.hooked), sc.stats.Received)
		}
	})
}

// With ParentFromMessage the producer's span is the process span's parent:
// one trace from producer to consumer.
func TestParentFromMessage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tel := newTelemetry(t, func(o *sqsotel.Options) { o.ParentFromMessage = true })
		sc := runScenario(t, tel)
		for _, job := range []string{okJob, fullJob} {
			spans := processSpans(tel, sc.ids[job])
			if len(spans) != 1 || !sameSpan(spans[0].Parent(), sc.producer[job]) || spans[0].SpanContext().TraceID() != sc.producer[job].TraceID() {
				t.Errorf("%s: spans %v; want one, child of the producer's span %v", job, spans, sc.producer[job])
			}
		}
	})
}

// The handler's context carries the process span.
func TestHandlerContextCarriesTheSpan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tel := newTelemetry(t)
		var inHandler trace.SpanContext
		h := tel.ins.Middleware()(worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			inHandler = trace.SpanContextFromContext(ctx)
			return nil
		}))
		m := &worker.Message{ID: "m1", Body: "x", ReceiptHandle: "r1", QueueURL: "https://sqs.eu-west-1.amazonaws.com/1/orders", Attempt: 1}
		if err := h.Handle(context.Background(), m); err != nil {
			t.Fatal(err)
		}
		ended := tel.spans.Ended()
		if len(ended) != 1 || !sameSpan(ended[0].SpanContext(), inHandler) || ended[0].Name() != "process orders" {
			t.Fatalf("ended %v, handler saw %v; without OnSettled the span ends when the handler returns", ended, inHandler)
		}
		if got := attr(ended[0].Attributes(), "aws.sqs.queue.url"); got != m.QueueURL {
			t.Errorf("aws.sqs.queue.url %q", got)
		}
	})
}

// A panicking handler's span records the panic.
func TestHandlerPanicRecorded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tel := newTelemetry(t)
		h := tel.ins.Middleware()(worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error { panic("boom") }))
		func() {
			defer func() { _ = recover() }()
			_ = h.Handle(context.Background(), &worker.Message{ID: "m", ReceiptHandle: "r"})
		}()
		ended := tel.spans.Ended()
		if len(ended) != 1 || ended[0].Status().Code != codes.Error || attr(ended[0].Attributes(), "error.type") != "panic" {
			t.Fatalf("ended %v; want one span with error.type panic", ended)
		}
	})
}

func sameSpan(a, b trace.SpanContext) bool {
	return a.TraceID() == b.TraceID() && a.SpanID() == b.SpanID()
}

// A handler may change its copy of the message, receipt handle included:
// the span is still found, and ended, by the settlement of the message as
// received (it stayed open until the 13-hour sweep).
func TestSpanEndsWhenTheHandlerChangesItsCopy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tel := newTelemetry(t)
		settled := tel.ins.OnSettled(nil)
		h := tel.ins.Middleware()(worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			m.ReceiptHandle, m.ID = "changed by the handler", "changed"
			return nil
		}))
		received := &worker.Message{ID: "m1", Body: "x", ReceiptHandle: "r1", QueueURL: "https://sqs.eu-west-1.amazonaws.com/1/orders", Attempt: 1}
		copied := *received
		if err := h.Handle(context.Background(), &copied); err != nil {
			t.Fatal(err)
		}
		if n := len(tel.spans.Ended()); n != 0 {
			t.Fatalf("%d spans ended before the settlement", n)
		}
		settled(worker.Settlement{Message: received, Outcome: worker.Deleted, SettledAt: time.Now()})
		if ended := tel.spans.Ended(); len(ended) != 1 || attr(ended[0].Attributes(), "sqsworker.outcome") != "deleted" {
			t.Fatalf("ended %v; want the message's span ended by its settlement", ended)
		}
	})
}
