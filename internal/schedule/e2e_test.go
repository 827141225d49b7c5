package schedule_test

import (
	"context"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/internal/schedule"
	"github.com/sqsworker/sqsworker/producer"
	"github.com/sqsworker/sqsworker/sqstest"
)

// TestThirtyDayDelayOnTheFake sends a job 30 days ahead with the producer
// and consumes the queue with a minimal loop that applies Decide the way
// the settlement core is to (hide, or re-send then delete, or run), on
// sqstest's SQS in virtual time: the job runs once, on time, as receive 1,
// and is never dead-lettered. It also counts what the delay cost.
func TestThirtyDayDelayOnTheFake(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const maxReceive = 5
		ctx := t.Context()
		f := sqstest.For(t)
		src, dlqURL := f.MustCreateQueueWithDLQ(t, "later", maxReceive, nil) // SQS's default 4-day retention
		p, err := producer.New(f, src)
		if err != nil {
			t.Fatal(err)
		}
		res, err := p.SendBatch(ctx, []producer.Message{{Body: "renew subscription 42", Delay: 30 * 24 * time.Hour}})
		if err != nil {
			t.Fatal(err)
		}
		due := res[0].Due

		var perJob, receives int
		var ran []time.Time
		var ranCount int
		for len(ran) == 0 {
			out, err := f.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
				QueueUrl: aws.String(src), MaxNumberOfMessages: 10, WaitTimeSeconds: 20,
				MessageAttributeNames:       []string{"All"},
				MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
			})
			if err != nil {
				t.Fatal(err)
			}
			receives++
			for _, m := range out.Messages {
				perJob++ // the receive that returned it
				now := time.Now()
				d, ok, err := schedule.Parse(m.MessageAttributes)
				if !ok || err != nil {
					t.Fatalf("message without a due time: %v %v", ok, err)
				}
				count, _ := strconv.Atoi(m.Attributes["ApproximateReceiveCount"])
				dec := schedule.Decide(schedule.Input{
					Due: d, Now: now, ReceivedAt: now,
					SentAt:          millis(m.Attributes["SentTimestamp"]),
					FirstReceivedAt: millis(m.Attributes["ApproximateFirstReceiveTimestamp"]),
					ReceiveCount:    count, MaxReceiveCount: maxReceive,
				})
				switch dec.Action {
				case schedule.Run:
					ran, ranCount = append(ran, now), count
					deleteMessage(ctx, t, f, src, m)
				case schedule.Hide:
					if _, err := f.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
						QueueUrl: aws.String(src), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: int32(dec.Delay / time.Second),
					}); err != nil {
						t.Fatal(err)
					}
				case schedule.Resend:
					if _, err := f.SendMessage(ctx, schedule.ResendInput(src, m, dec.Delay)); err != nil {
						t.Fatal(err)
					}
					perJob++
					deleteMessage(ctx, t, f, src, m)
				}
				if dec.Action != schedule.Run {
					perJob++ // the hide, or the delete after the re-send
				}
			}
		}
		late := ran[0].Sub(due)
		t.Logf("30-day delay: ran %v after its due time, as receive %d; %d requests for the job (its receives, hides, re-sends and deletes; the producer's send and the final delete not counted), %.2f per day; %d receive calls polled in all",
			late, ranCount, perJob, float64(perJob)/30, receives)
		if late < 0 || late > time.Second {
			t.Errorf("ran %v after its due time, want within 1 s", late)
		}
		if ranCount != 1 {
			t.Errorf("ran as receive %d of its copy, want 1 (attempt 1)", ranCount)
		}
		if n := len(f.Messages(dlqURL)); n != 0 {
			t.Errorf("the DLQ holds %d messages", n)
		}
		if n := len(f.Messages(src)); n != 0 {
			t.Errorf("the queue still holds %d messages", n)
		}
		// The package doc's formula: 5.96 requests a day on this queue, plus
		// the final approach.
		if perDay := float64(perJob) / 30; perDay < 5.5 || perDay > 6.5 {
			t.Errorf("%.2f requests per day, the formula says 5.96", perDay)
		}
	})
}

func deleteMessage(ctx context.Context, t *testing.T, f *sqstest.Fake, url string, m types.Message) {
	t.Helper()
	if _, err := f.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
		t.Fatal(err)
	}
}

func millis(s string) time.Time {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.UnixMilli(n)
}
