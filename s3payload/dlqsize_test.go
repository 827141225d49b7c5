package s3payload_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/s3payload"
	"github.com/sqsworker/sqsworker/sqstest"
	"github.com/sqsworker/sqsworker/worker"
)

// A dead-letter queue of 256 KiB behind a source of 1 MiB: a 300 KiB
// permanent failure runs once and reaches the DLQ at once through the
// Store (worker.Options.DeadLetterOffloader), as a pointer in the extended
// clients' format, with its full reason.
func TestDeadLetterCopyTooLargeForTheDLQGoesThroughTheStore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := sqstest.For(t)
		src, dlqURL := f.MustCreateQueueWithDLQ(t, "reports", 5, nil)
		if _, err := f.SetQueueAttributes(t.Context(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(dlqURL),
			Attributes: map[string]string{"MaximumMessageSize": "262144"}}); err != nil {
			t.Fatal(err)
		}
		s3c := newMemS3()
		store := newStore(t, s3c)
		body := strings.Repeat("x", 300<<10)
		f.MustSend(t, src, body)

		var runs atomic.Int64
		h := worker.Chain(worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			runs.Add(1)
			return retry.Permanent(errors.New("report template missing"))
		}), store.Middleware())
		w, err := worker.New(f, src, h, func(o *worker.Options) {
			o.Logger = quiet
			o.DeadLetterOffloader = store
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- w.Run(ctx) }()
		time.Sleep(10 * time.Second)
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if n := runs.Load(); n != 1 {
			t.Errorf("the permanent failure ran %d times, want once", n)
		}
		if s := w.Stats(); s.DeadLettered != 1 {
			t.Errorf("Stats.DeadLettered = %d, want 1", s.DeadLettered)
		}
		dead := f.Messages(dlqURL)
		if len(dead) != 1 {
			t.Fatalf("DLQ holds %d messages, want the copy", len(dead))
		}
		p, size, ok, err := s3payload.Lookup(dead[0].Body, dead[0].Attributes)
		if !ok || err != nil || size != int64(len(body)) || !s3c.has(p.Bucket, p.Key) {
			t.Errorf("DLQ copy: pointer %v size %d (%v, %v), object there %v", p, size, ok, err, s3c.has(p.Bucket, p.Key))
		}
		if prov, _ := dlq.ParseProvenance(dead[0].Attributes); !strings.Contains(prov.Error, "report template missing") {
			t.Errorf("DLQ reason %q", prov.Error)
		}
		if n := len(f.Messages(src)); n != 0 {
			t.Errorf("%d messages left in the source", n)
		}
	})
}
