package sqslambda_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sqsworker/sqsworker/harness/jsontest"
	"github.com/sqsworker/sqsworker/sqstest"
	"github.com/sqsworker/sqsworker/worker"
	"github.com/sqsworker/sqsworker/worker/sqslambda"
)

// TestJSONHandlerInLambda runs worker.JSON behind the Lambda adapter (with
// RunLocal as the event source mapping) over the bodies the worker's test
// uses (harness/jsontest), and expects the same outcome: valid jobs
// handled, the others in the dead-letter queue after one attempt with the
// decode error as the reason.
func TestJSONHandlerInLambda(t *testing.T) {
	for _, allow := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			f := sqstest.For(t)
			src, dlqURL := f.MustCreateQueueWithDLQ(t, "orders", 5, map[string]string{"VisibilityTimeout": "30"})
			for _, c := range jsontest.Cases {
				f.MustSend(t, src, c.Body)
			}
			var mu sync.Mutex
			var got []jsontest.Job
			h := worker.JSON(func(ctx context.Context, job jsontest.Job, m *worker.Message) error {
				mu.Lock()
				defer mu.Unlock()
				got = append(got, job)
				return nil
			}, func(o *worker.JSONOptions) { o.AllowUnknownFields = allow })
			fn, err := sqslambda.New(h, func(o *sqslambda.Options) { o.Client, o.Logger = f, quiet })
			if err != nil {
				t.Fatal(err)
			}
			stop := startLocal(t, f, src, fn.Handle, reportFailures)
			time.Sleep(time.Minute)
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			jsontest.Check(t, allow, got, f, src, dlqURL)
		})
	}
}
