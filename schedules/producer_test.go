package schedules_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/producer"
	"github.com/sqsworker/sqsworker/schedules"
	"github.com/sqsworker/sqsworker/worker"
)

// TestProducerScheduleSendsThroughJobs: a producer whose Options.Schedule
// is Jobs.At sends a job delayed 2 h as a one-time schedule: nothing in
// the queue while it waits, cancellable by the Result's MessageID, and
// otherwise delivered at its due time with its body and attributes (a
// BeforeSend hook's included) restored by Unwrap.
func TestProducerScheduleSendsThroughJobs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := start(t, 1)
		defer e.stop()
		ctx := context.Background()
		jobs, err := schedules.NewJobs(e.sched, e.arn, func(o *schedules.Options) { o.RoleARN = role })
		if err != nil {
			t.Fatal(err)
		}
		p, err := producer.New(e.sqs, e.url, func(o *producer.Options) {
			o.Schedule = func(ctx context.Context, due time.Time, m producer.Message) (string, error) {
				return jobs.At(ctx, "", due, m)
			}
			o.BeforeSend = append(o.BeforeSend, func(_ context.Context, m *producer.Message) error {
				m.SetAttribute("traceparent", sqstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String("00-abc-def-01")})
				return nil
			})
		})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = p.Close(ctx) }()
		now := time.Now()
		msg := func(body string) producer.Message {
			return producer.Message{Body: body, Delay: 2 * time.Hour, Attributes: map[string]sqstypes.MessageAttributeValue{
				"kind": {DataType: aws.String("String"), StringValue: aws.String("reminder")}}}
		}
		keep, err := p.Send(ctx, msg("keep"))
		if err != nil {
			t.Fatal(err)
		}
		res, err := p.SendBatch(ctx, []producer.Message{msg("cancel-me")})
		if err != nil {
			t.Fatal(err)
		}
		cancelled := res[0]
		if !strings.HasPrefix(keep.MessageID, "job-") || !keep.Due.Equal(now.Add(2*time.Hour)) {
			t.Fatalf("Result %+v; want a one-time job's ID, due in 2 h", keep)
		}
		if l, _ := schedules.List(ctx, e.sched, func(o *schedules.Options) { o.Group = "sqsworker-jobs" }); len(l) != 2 {
			t.Fatalf("%d pending one-time jobs, want 2", len(l))
		}
		if n := e.sqs.Requests()["SendMessageBatch"]; n != 0 {
			t.Errorf("%d SendMessageBatch calls; a scheduled job holds nothing in the queue", n)
		}
		if ok, err := jobs.Cancel(ctx, cancelled.MessageID); !ok || err != nil {
			t.Fatalf("Cancel(%s): %v, %v", cancelled.MessageID, ok, err)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		if n := len(e.sqs.Messages(e.url)); n != 0 {
			t.Fatalf("%d messages in the queue an hour before the due time, want 0", n)
		}
		time.Sleep(time.Hour + time.Minute)
		synctest.Wait()
		var mu sync.Mutex
		var got []string
		h := schedules.Unwrap()(worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			mu.Lock()
			defer mu.Unlock()
			tk, _ := schedules.TickOf(m)
			got = append(got, m.Body+" "+aws.ToString(m.MessageAttributes["kind"].StringValue)+" "+
				aws.ToString(m.MessageAttributes["traceparent"].StringValue)+" "+tk.Schedule)
			return nil
		}))
		e.drain(t, h)
		want := "keep reminder 00-abc-def-01 " + keep.MessageID
		if len(got) != 1 || got[0] != want {
			t.Fatalf("ran %q; want only %q", got, want)
		}
	})
}
