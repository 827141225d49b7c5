package worker_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sqsworker/sqsworker/harness/jsontest"
	"github.com/sqsworker/sqsworker/sqstest"
	"github.com/sqsworker/sqsworker/worker"
)

// TestJSONHandlerInWorker runs worker.JSON over the bodies of
// harness/jsontest (which the Lambda adapter's test shares): valid jobs
// are handled, the others go to the dead-letter queue after one attempt
// with the decode error as the reason.
func TestJSONHandlerInWorker(t *testing.T) {
	for _, allow := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			f := sqstest.For(t)
			src, dlqURL := f.MustCreateQueueWithDLQ(t, "orders", 5, nil)
			for _, c := range jsontest.Cases {
				f.MustSend(t, src, c.Body)
			}
			var mu sync.Mutex
			var got []jsontest.Job
			h := start(t, f, src, worker.JSON(func(ctx context.Context, job jsontest.Job, m *worker.Message) error {
				mu.Lock()
				defer mu.Unlock()
				got = append(got, job)
				return nil
			}, func(o *worker.JSONOptions) { o.AllowUnknownFields = allow }))
			time.Sleep(time.Minute)
			if err := h.stop(); err != nil {
				t.Fatal(err)
			}
			jsontest.Check(t, allow, got, f, src, dlqURL)
		})
	}
}
