package worker_test

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
)

// jsonJob is the job type of the JSON handler tests.
type jsonJob struct {
	OrderID string `json:"order_id"`
	Qty     int    `json:"qty"`
}

// jsonCase is one body of testdata/json_cases.json, which the worker's
// and sqslambda's tests share so that both meet the same bodies: the DLQ
// reason it must get under strict decoding ("" means it is handled), and
// whether AllowUnknownFields lets it through.
type jsonCase struct {
	Body         string `json:"body"`
	Reason       string `json:"reason"`
	UnknownField bool   `json:"unknownField"`
}

func jsonCases(t *testing.T) []jsonCase {
	t.Helper()
	data, err := os.ReadFile("testdata/json_cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []jsonCase
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	return cases
}

func TestJSONHandlerInWorker(t *testing.T) {
	for _, allow := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			f := sqstest.New()
			src, dlqURL := f.MustCreateQueueWithDLQ(t, "orders", 5, nil)
			cases := jsonCases(t)
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
			w, err := worker.New(f, src, h, func(o *worker.Options) { o.Logger = quiet })
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error)
			go func() { done <- w.Run(ctx) }()
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
				body, want := c.Body, c.Reason
				if allow && c.UnknownField {
					want = ""
				}
				if want == "" {
					handled++
					if _, dead := reasons[body]; dead {
						t.Errorf("AllowUnknownFields %v: %s dead-lettered: %s", allow, body, reasons[body])
					}
					continue
				}
				if r, dead := reasons[body]; !dead || !strings.Contains(r, want) || !strings.Contains(r, "is not a valid worker_test.jsonJob") {
					t.Errorf("AllowUnknownFields %v: %s: DLQ reason %q, want one containing %q", allow, body, r, want)
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
