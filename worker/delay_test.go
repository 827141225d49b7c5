package worker_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/producer"
	"github.com/sqsworker/sqsworker/worker"
)

// A job sent with a 30-day delay runs once, on time, as attempt 1, and is
// never dead-lettered: the worker hides it and re-sends fresh copies until
// it is due, without running the handler or counting an attempt.
func TestThirtyDayDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, dlqURL := newQueue(t, 5, "30") // dlq.Setup's maxReceiveCount, SQS's default 4-day retention
		p, err := producer.New(f, src)
		if err != nil {
			t.Fatal(err)
		}
		sentAt := time.Now()
		due := sentAt.Add(30 * 24 * time.Hour)
		if _, err := p.SendBatch(context.Background(), []producer.Message{{Body: "invoice", Delay: due.Sub(sentAt)}}); err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var runs []time.Time
		var attempts []int
		h := start(t, f, src, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			mu.Lock()
			defer mu.Unlock()
			runs = append(runs, time.Now())
			attempts = append(attempts, m.Attempt)
			return nil
		}))
		before := f.Requests()
		time.Sleep(31 * 24 * time.Hour)
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(runs) != 1 || runs[0].Before(due) || runs[0].Sub(due) > time.Second || attempts[0] != 1 {
			t.Fatalf("ran at %v (due %v), attempts %v; want once, on time, as attempt 1", runs, due, attempts)
		}
		if n := len(f.Messages(dlqURL)); n != 0 {
			t.Fatalf("%d messages dead-lettered", n)
		}
		s := h.w.Stats()
		reqs := f.Requests()
		for k, v := range before {
			reqs[k] -= v
		}
		t.Logf("30-day delay: ran %v after its due time; %d waits; requests while waiting and running (this job alone, empty long polls included): %v",
			runs[0].Sub(due), s.Delayed, reqs)
	})
}

// A due time the worker cannot read sends the message to the DLQ with the
// reason; the handler never sees it.
func TestUnreadableDueTimeIsDeadLettered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, dlqURL := newQueue(t, 5, "30")
		f.MustSend(t, src, "job", func(in *sqs.SendMessageInput) {
			in.MessageAttributes = map[string]types.MessageAttributeValue{"sqsworker.due": {DataType: aws.String("String"), StringValue: aws.String("next tuesday")}}
		})
		ran := false
		h := start(t, f, src, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error { ran = true; return errors.New("x") }))
		time.Sleep(5 * time.Second)
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		dead := f.Messages(dlqURL)
		if ran || len(dead) != 1 || !attrContains(dead[0], "sqsworker.due") {
			t.Fatalf("handler ran: %v; DLQ %+v; want the message dead-lettered with the reason", ran, dead)
		}
	})
}
