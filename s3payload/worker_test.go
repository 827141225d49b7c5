package s3payload_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/producer"
	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/s3payload"
	"github.com/sqsworker/sqsworker/sqstest"
	"github.com/sqsworker/sqsworker/worker"
)

var quiet = slog.New(slog.DiscardHandler)

// runWorker runs a worker over src until cond holds.
func runWorker(t *testing.T, f *sqstest.Fake, src string, store *s3payload.Store, h worker.Handler, cond func(worker.Stats) bool) {
	t.Helper()
	w, err := worker.New(f, src, h, func(o *worker.Options) {
		o.Logger = quiet
		o.OnSettled = store.Settled // deletes an object once its message is deleted
		o.RetryPolicy = retry.PolicyFunc(func(attempt int) (time.Duration, bool) { return 10 * time.Second, attempt < 3 })
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- w.Run(ctx) }()
	for !cond(w.Stats()) {
		time.Sleep(time.Second)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestLargePayloadThroughTheWorker sends 2 MiB bodies through the producer
// with a Store, and consumes them with the Store's middleware: the handler
// sees the body; after a failed attempt the object is still there for the
// retry; a dead-lettered message keeps its pointer, and so does its
// redrive; Settled (the worker's settlement hook) removes the object once
// SQS confirmed the message's delete.
func TestLargePayloadThroughTheWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := sqstest.For(t)
		src, dlqURL := f.MustCreateQueueWithDLQ(t, "reports", 5, nil)
		s3c := newMemS3()
		store := newStore(t, s3c)
		p, err := producer.New(f, src, func(o *producer.Options) { o.Offloader = store })
		if err != nil {
			t.Fatal(err)
		}
		big := strings.Repeat("0123456789abcdef", 2<<20/16) // 2 MiB
		res, err := p.SendBatch(t.Context(), []producer.Message{
			{Body: "flaky:" + big}, {Body: "poison:" + big}, {Body: "small"},
		})
		if err != nil {
			t.Fatal(err)
		}
		if !res[0].Offloaded || !res[1].Offloaded || res[2].Offloaded || s3c.count() != 2 {
			t.Fatalf("offloaded %v %v %v, %d objects; want the two large bodies in S3", res[0].Offloaded, res[1].Offloaded, res[2].Offloaded, s3c.count())
		}

		var mu sync.Mutex
		attempts := map[string]int{}
		h := worker.Chain(worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			kind, rest, _ := strings.Cut(m.Body, ":")
			mu.Lock()
			defer mu.Unlock()
			attempts[kind]++
			if kind != "small" && rest != big {
				return errors.New("handler got a truncated body")
			}
			switch {
			case kind == "flaky" && attempts[kind] == 1:
				return errors.New("downstream unavailable") // the retry must find the object
			case kind == "poison":
				return retry.Permanent(errors.New("report template missing"))
			}
			return nil
		}), store.Middleware())
		runWorker(t, f, src, store, h, func(s worker.Stats) bool { return s.Succeeded == 2 && s.DeadLettered == 1 })

		if attempts["flaky"] != 2 {
			t.Errorf("flaky ran %d times, want 2 (the retry found its object)", attempts["flaky"])
		}
		// The dead-lettered copy carries the pointer and the size attribute;
		// its object is still there.
		dead := f.Messages(dlqURL)
		if len(dead) != 1 {
			t.Fatalf("DLQ holds %d messages", len(dead))
		}
		dp, size, ok, err := s3payload.Lookup(dead[0].Body, dead[0].Attributes)
		if !ok || err != nil || size != int64(len("poison:"+big)) || !s3c.has(dp.Bucket, dp.Key) {
			t.Errorf("DLQ copy: pointer %v size %d (%v, %v), object there %v", dp, size, ok, err, s3c.has(dp.Bucket, dp.Key))
		}
		if prov, _ := dlq.ParseProvenance(dead[0].Attributes); !strings.Contains(prov.Error, "report template missing") {
			t.Errorf("DLQ reason %q", prov.Error)
		}

		if s3c.count() != 1 {
			t.Errorf("%d objects left, want only the dead-lettered message's", s3c.count())
		}

		// Redrive keeps the pointer: the fixed handler reads the body again.
		target, err := dlq.Discover(t.Context(), f, src)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := dlq.Redrive(t.Context(), f, target, dlq.RedriveOptions{Method: "manual"}); err != nil {
			t.Fatal(err)
		}
		moved := f.Messages(src)
		if len(moved) != 1 || moved[0].Body != dead[0].Body {
			t.Fatalf("redriven: %+v", moved)
		}
		var got string
		fixed := worker.Chain(worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			got = m.Body
			return nil
		}), store.Middleware())
		runWorker(t, f, src, store, fixed, func(s worker.Stats) bool { return s.Succeeded == 1 })
		if got != "poison:"+big {
			t.Errorf("redriven message read as %d bytes", len(got))
		}
		if s3c.count() != 0 {
			t.Errorf("%d objects left after every message was deleted", s3c.count())
		}
	})
}
