package sqslambda_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/sqstest"
	"github.com/sqsworker/sqsworker/worker"
	"github.com/sqsworker/sqsworker/worker/sqslambda"
)

// jsonJob is the job type of the JSON handler test, as in the worker's.
type jsonJob struct {
	OrderID string `json:"order_id"`
	Qty     int    `json:"qty"`
}

// jsonCase is one body of worker/testdata/json_cases.json, shared with the
// worker's test of the same handler.
type jsonCase struct {
	Body         string `json:"body"`
	Reason       string `json:"reason"`
	UnknownField bool   `json:"unknownField"`
}

// TestJSONHandlerInLambda runs worker.JSON behind the Lambda adapter (with
// RunLocal as the event source mapping) over the bodies the worker's test
// uses, and expects the same outcome: valid jobs handled, the others in the
// dead-letter queue after one attempt with the decode error as the reason.
func TestJSONHandlerInLambda(t *testing.T) {
	data, err := os.ReadFile("../testdata/json_cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []jsonCase
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	for _, allow := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			f := sqstest.New()
			src, dlqURL := f.MustCreateQueueWithDLQ(t, "orders", 5, map[string]string{"VisibilityTimeout": "30"})
			for _, c := range cases {
				f.MustSend(t, src, c.Body)
			}
			var mu sync.Mutex
			var got []jsonJob
			h := worker.JSON(func(ctx context.Context, job jsonJob, m *worker.Message) error {
				mu.Lock()
				defer mu.Unlock()
				got = append(got, job)
				return nil
			}, func(o *worker.JSONOptions) { o.AllowUnknownFields = allow })
			fn, err := sqslambda.New(h, func(o *sqslambda.Options) { o.Client, o.Logger = f, quiet })
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() {
				done <- sqslambda.RunLocal(ctx, f, src, fn.Handle, func(o *sqslambda.LocalOptions) {
					o.Logger, o.ReportBatchItemFailures = quiet, true
				})
			}()
			time.Sleep(time.Minute)
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}

			reasons := map[string]string{}
			for _, m := range f.Messages(dlqURL) {
				p, _ := dlq.ParseProvenance(m.Attributes)
				reasons[m.Body] = p.Error
				if p.Attempt != 1 {
					t.Errorf("%s dead-lettered after attempt %d, want 1 (a permanent failure)", m.Body, p.Attempt)
				}
			}
			handled := 0
			for _, c := range cases {
				want := c.Reason
				if allow && c.UnknownField {
					want = ""
				}
				if want == "" {
					handled++
					if r, dead := reasons[c.Body]; dead {
						t.Errorf("AllowUnknownFields %v: %s dead-lettered: %s", allow, c.Body, r)
					}
					continue
				}
				if r, dead := reasons[c.Body]; !dead || !strings.Contains(r, want) || !strings.Contains(r, "is not a valid sqslambda_test.jsonJob") {
					t.Errorf("AllowUnknownFields %v: %s: DLQ reason %q, want one containing %q", allow, c.Body, r, want)
				}
			}
			if len(got) != handled {
				t.Errorf("AllowUnknownFields %v: handler ran %d times (%v), want %d", allow, len(got), got, handled)
			}
			if n := len(f.Messages(src)); n != 0 {
				t.Errorf("source still holds %d messages", n)
			}
		})
	}
}
