package worker_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/sqstest"
	"github.com/sqsworker/sqsworker/worker"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

func TestCostFormula(t *testing.T) {
	s := worker.Stats{
		Received:       1000,
		Requests:       map[string]int64{"ReceiveMessage": 100, "DeleteMessageBatch": 100, "SendMessageBatch": 1},
		PayloadBytes:   map[string]int64{"ReceiveMessage": 300 << 10, "SendMessageBatch": 200 << 10},
		BilledRequests: map[string]int64{"ReceiveMessage": 101, "DeleteMessageBatch": 100, "SendMessageBatch": 4},
	}
	c := s.Cost(worker.Pricing{})
	if c.Messages != 1000 || c.Requests != 201 || c.BilledRequests != 205 || c.PerMillionRequests != worker.PriceStandard {
		t.Fatalf("Cost = %+v", c)
	}
	if !near(c.USD, 205*0.40/1e6) || !near(c.USDPerMillionMessages, 0.205*0.40) || !near(c.RequestsPerMessage, 0.201) {
		t.Errorf("Cost = %+v; want $%g, $%g per million messages", c, 205*0.40/1e6, 0.205*0.40)
	}
	if got, want := c.PerMillion(500), 205.0/500*0.40; !near(got, want) {
		t.Errorf("PerMillion(500) = %g, want %g", got, want)
	}
	fifo := s.Cost(worker.Pricing{PerMillion: worker.PriceFIFO})
	if !near(fifo.USDPerMillionMessages, 0.205*0.50) {
		t.Errorf("FIFO: %+v", fifo)
	}
	// Another chunk size is estimated from the totals: max(calls, ⌈bytes/chunk⌉).
	est := s.Cost(worker.Pricing{ChunkBytes: 1 << 10})
	if want := int64(300 + 100 + 200); est.BilledRequests != want {
		t.Errorf("1 KiB chunks: billed %d, want %d", est.BilledRequests, want)
	}
	if c := (worker.Stats{}).Cost(worker.Pricing{}); c.USDPerMillionMessages != 0 || c.PerMillion(0) != 0 {
		t.Errorf("empty Stats: %+v", c)
	}
}

// The counting client counts calls by result and the payload SQS bills:
// a 150 KiB message received alone is 3 billed requests.
func TestRequestResultsAndPayload(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, _ := newQueue(t, 5, "30")
		big := strings.Repeat("x", 150<<10)
		attrs := map[string]types.MessageAttributeValue{"kind": {DataType: aws.String("String"), StringValue: aws.String("big")}}
		if _, err := f.SendMessage(t.Context(), &sqs.SendMessageInput{QueueUrl: aws.String(src), MessageBody: aws.String(big), MessageAttributes: attrs}); err != nil {
			t.Fatal(err)
		}
		f.InjectFault(sqstest.Fault{API: "ReceiveMessage", Code: "RequestThrottled", Times: 2})
		h := start(t, f, src, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			if m.Body == "poison" {
				return retry.Permanent(fmt.Errorf("bad"))
			}
			return nil
		}))
		time.Sleep(5 * time.Second)
		f.MustSend(t, src, "poison")
		time.Sleep(5 * time.Second)
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		s := h.w.Stats()
		for api, n := range s.Requests {
			var sum int64
			for _, k := range s.RequestResults[api] {
				sum += k
			}
			if sum != n {
				t.Errorf("%s: results %v add up to %d, want %d calls", api, s.RequestResults[api], sum, n)
			}
		}
		if got := s.RequestResults["ReceiveMessage"]["throttled"]; got != 2 {
			t.Errorf("throttled receives %d, want 2 (%v)", got, s.RequestResults)
		}
		wantRecv := int64(len(big) + len("kind") + len("String") + len("big") + len("poison"))
		if got := s.PayloadBytes["ReceiveMessage"]; got != wantRecv {
			t.Errorf("received payload %d bytes, want %d", got, wantRecv)
		}
		if got, want := s.BilledRequests["ReceiveMessage"], s.Requests["ReceiveMessage"]+2; got != want {
			t.Errorf("billed receives %d, want %d (the 150 KiB receive bills 3)", got, want)
		}
		if s.PayloadBytes["SendMessageBatch"] < int64(len("poison")) || s.BilledRequests["SendMessageBatch"] != 1 {
			t.Errorf("dead-letter copy: payload %d, billed %d", s.PayloadBytes["SendMessageBatch"], s.BilledRequests["SendMessageBatch"])
		}
		if got := s.BilledRequests["DeleteMessageBatch"]; got != s.Requests["DeleteMessageBatch"] {
			t.Errorf("deletes billed %d for %d calls", got, s.Requests["DeleteMessageBatch"])
		}
		c := s.Cost(worker.Pricing{})
		if c.BilledRequests != s.TotalRequests()+2 || c.Messages != 2 {
			t.Errorf("Cost = %+v for %+v", c, s)
		}
	})
}
