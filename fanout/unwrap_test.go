package fanout_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/fanout"
	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/sqstest"
	"github.com/sqsworker/sqsworker/worker"
	"github.com/sqsworker/sqsworker/worker/sqslambda"
)

// seen records what a handler saw.
type seen struct {
	mu   sync.Mutex
	msgs []worker.Message
}

func (s *seen) handler() worker.Handler {
	return worker.HandlerFunc(func(_ context.Context, m *worker.Message) error {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.msgs = append(s.msgs, *m)
		return nil
	})
}

func (s *seen) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.msgs)
}

// runWorker runs a worker on url until cond holds.
func runWorker(t *testing.T, queues *sqstest.Fake, url string, h worker.Handler, cond func() bool) worker.Stats {
	t.Helper()
	w, err := worker.New(queues, url, h, func(o *worker.Options) { o.Logger = quiet })
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	for deadline := time.Now().Add(time.Minute); !cond() && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	return w.Stats()
}

func TestUnwrapInTheWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		queues, topics, res := chain(t, "fulfilment")
		publish(t, topics, res.TopicARN, `{"order":7}`, map[string]string{"order-status": "confirmed"})
		var s seen
		runWorker(t, queues, res.Queue.QueueURL, worker.Chain(s.handler(), fanout.Unwrap()), func() bool { return s.len() == 1 })
		m := s.msgs[0]
		if m.Body != `{"order":7}` || aws.ToString(m.MessageAttributes["order-status"].StringValue) != "confirmed" {
			t.Errorf("handler saw body %q, attributes %v", m.Body, m.MessageAttributes)
		}
		if m.SNS == nil || m.SNS.TopicARN != res.TopicARN || m.SNS.MessageID == "" || m.SNS.Subject != "rental" || m.SNS.Timestamp.IsZero() {
			t.Errorf("SNS metadata %+v", m.SNS)
		}
		// The receipt handle stays as received.
		if aws.ToString(m.Raw.ReceiptHandle) != m.ReceiptHandle || m.ReceiptHandle == "" {
			t.Errorf("receipt handle %q, raw %q", m.ReceiptHandle, aws.ToString(m.Raw.ReceiptHandle))
		}
	})
}

func TestUnwrapMalformedEnvelopeGoesToTheDLQWithTheReason(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		queues, _, res := chain(t, "fulfilment")
		queues.MustSend(t, res.Queue.QueueURL, `{"Type":"Notification","TopicArn":"arn:aws:sns:us-east-1:000000000000:rental-orders","MessageId":"x","Message":"m","Timestamp":"soon"}`)
		queues.MustSend(t, res.Queue.QueueURL, `plain text, not an envelope`)
		var s seen
		st := runWorker(t, queues, res.Queue.QueueURL, worker.Chain(s.handler(), fanout.Unwrap()), func() bool {
			return len(queues.Messages(res.Queue.DLQURL)) == 2
		})
		if s.len() != 0 || st.DeadLettered != 2 {
			t.Fatalf("handler ran %d times, %d dead-lettered", s.len(), st.DeadLettered)
		}
		reasons := map[string]bool{}
		for _, m := range queues.Messages(res.Queue.DLQURL) {
			p, ok := dlq.ParseProvenance(m.Attributes)
			if !ok || !strings.Contains(p.Error, "permanent failure: SNS envelope:") {
				t.Errorf("dead-lettered without the reason: %+v", p)
			}
			reasons[p.Error] = true
			if strings.HasPrefix(m.Body, "plain") && !strings.Contains(p.Error, "raw message delivery") {
				t.Errorf("a non-envelope's reason does not point at raw delivery: %s", p.Error)
			}
			if strings.Contains(m.Body, "soon") && !strings.Contains(p.Error, `Timestamp "soon"`) {
				t.Errorf("a broken envelope's reason does not say what is broken: %s", p.Error)
			}
		}
		if len(reasons) != 2 {
			t.Errorf("reasons %v", reasons)
		}
	})
}

func TestUnwrapAllowRawPassesOtherMessages(t *testing.T) {
	var got *worker.Message
	h := worker.Chain(worker.HandlerFunc(func(_ context.Context, m *worker.Message) error { got = m; return nil }), fanout.Unwrap(func(o *fanout.UnwrapOptions) { o.AllowRaw = true }))
	m := &worker.Message{Body: "direct send", MessageAttributes: map[string]types.MessageAttributeValue{"k": {DataType: aws.String("String"), StringValue: aws.String("v")}}}
	if err := h.Handle(context.Background(), m); err != nil || got.Body != "direct send" || got.SNS != nil {
		t.Errorf("AllowRaw: %v, %+v", err, got)
	}
	// A broken envelope is still refused.
	err := h.Handle(context.Background(), &worker.Message{Body: `{"Type":"Notification","TopicArn":"x"}`})
	if !errors.Is(err, retry.ErrPermanent) || !errors.Is(err, fanout.ErrMalformedEnvelope) {
		t.Errorf("broken envelope with AllowRaw: %v", err)
	}
}

func TestUnwrapDoesNotTouchTheReceivedAttributes(t *testing.T) {
	received := map[string]types.MessageAttributeValue{"trace": {DataType: aws.String("String"), StringValue: aws.String("t1")}}
	body := `{"Type":"Notification","MessageId":"m","TopicArn":"arn:aws:sns:us-east-1:000000000000:t","Message":"hi","Timestamp":"2025-03-01T12:00:00Z","MessageAttributes":{"a":{"Type":"String","Value":"b"}}}`
	m := &worker.Message{Body: body, MessageAttributes: received, Raw: types.Message{Body: aws.String(body), MessageAttributes: received, ReceiptHandle: aws.String("rh")}, ReceiptHandle: "rh"}
	var got worker.Message
	h := worker.Chain(worker.HandlerFunc(func(_ context.Context, m *worker.Message) error { got = *m; return nil }), fanout.Unwrap())
	if err := h.Handle(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	if len(received) != 1 || len(m.Raw.MessageAttributes) != 1 || aws.ToString(m.Raw.Body) != body || m.ReceiptHandle != "rh" {
		t.Errorf("Unwrap changed the received message: %v, %+v", received, m.Raw)
	}
	if len(got.MessageAttributes) != 2 || got.Body != "hi" {
		t.Errorf("handler saw %+v", got)
	}
}

// TestUnwrapInTheLambdaAdapter runs the same middleware in sqslambda's
// local event source mapping: the enveloped message reaches the handler
// unwrapped, and a malformed one is dead-lettered with its reason.
func TestUnwrapInTheLambdaAdapter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		queues, topics, res := chain(t, "billing")
		publish(t, topics, res.TopicARN, `{"invoice":3}`, map[string]string{"order-status": "canceled"})
		queues.MustSend(t, res.Queue.QueueURL, `not an envelope`)
		var s seen
		fn, err := sqslambda.New(worker.Chain(s.handler(), fanout.Unwrap()), func(o *sqslambda.Options) {
			o.Client = queues
			o.Logger = quiet
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			done <- sqslambda.RunLocal(ctx, queues, res.Queue.QueueURL, fn.Handle, func(o *sqslambda.LocalOptions) {
				o.ReportBatchItemFailures = true
				o.Logger = quiet
			})
		}()
		for s.len() < 1 || len(queues.Messages(res.Queue.DLQURL)) < 1 {
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		m := s.msgs[0]
		if m.Body != `{"invoice":3}` || aws.ToString(m.MessageAttributes["order-status"].StringValue) != "canceled" || m.SNS == nil || m.SNS.TopicARN != res.TopicARN {
			t.Errorf("Lambda handler saw %q %v %+v", m.Body, m.MessageAttributes, m.SNS)
		}
		dead := queues.Messages(res.Queue.DLQURL)
		if p, _ := dlq.ParseProvenance(dead[0].Attributes); dead[0].Body != "not an envelope" || !strings.Contains(p.Error, "not an SNS envelope") {
			t.Errorf("DLQ holds %q with %q", dead[0].Body, p.Error)
		}
	})
}
