package visibility_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/sqstest"
	"github.com/sqsworker/sqsworker/visibility"
)

// A receive loop of your own, with a job that runs longer than the queue's
// visibility timeout: the heartbeat keeps the message invisible until the
// job is done, and cancels the job's context with a cause if it cannot.
// (The fake SQS stands in for an *sqs.Client; the example takes 1.2 s.)
func Example() {
	ctx := context.Background()
	client, err := sqstest.New() // or sqs.NewFromConfig(cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	q, _ := client.CreateQueue(ctx, &sqs.CreateQueueInput{
		QueueName:  aws.String("jobs"),
		Attributes: map[string]string{"VisibilityTimeout": "1"},
	})
	queueURL := aws.ToString(q.QueueUrl)
	client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &queueURL, MessageBody: aws.String("resize photo 42")})

	// One heartbeat per queue: extends every second, half a second before
	// each deadline (Extension 1 s, Threshold 500 ms by default).
	hb, err := visibility.New(client, queueURL, time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	hbCtx, stopHB := context.WithCancel(ctx)
	defer stopHB()
	go hb.Run(hbCtx)

	out, _ := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &queueURL, MaxNumberOfMessages: 10})
	receivedAt := time.Now()
	lost := 0
	for _, m := range out.Messages {
		jobCtx, cancel := context.WithCancelCause(ctx)
		stop, err := hb.Track(aws.ToString(m.ReceiptHandle), receivedAt, cancel)
		if err != nil {
			fmt.Println(err)
			return
		}

		err = job(jobCtx, aws.ToString(m.Body)) // 1.2 s: longer than the 1 s timeout
		cause := stop()                         // before deleting: no extension lands after this
		cancel(nil)
		if errors.Is(cause, visibility.ErrLost) {
			lost++ // another consumer may have it: leave it alone
			continue
		}

		// Still ours: another consumer sees nothing.
		other, _ := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &queueURL})
		fmt.Println("job:", err, "- other consumer received:", len(other.Messages))

		if err == nil {
			client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &queueURL, ReceiptHandle: m.ReceiptHandle})
		}
	}
	visible, inflight := len(client.Messages(queueURL, "visible")), len(client.Messages(queueURL, "inflight"))
	extended := client.Requests()["ChangeMessageVisibilityBatch"] > 0
	fmt.Println("extended:", extended, "- lost:", lost, "- left in queue:", visible+inflight)
	// Output:
	// job: <nil> - other consumer received: 0
	// extended: true - lost: 0 - left in queue: 0
}

// job stands for real work; it stops early when the heartbeat says the
// message is lost or reached the 12-hour limit.
func job(ctx context.Context, body string) error {
	select {
	case <-time.After(1200 * time.Millisecond):
		return nil
	case <-ctx.Done():
		if errors.Is(context.Cause(ctx), visibility.ErrLost) {
			return fmt.Errorf("%s: abandoned, another consumer may have it: %w", body, context.Cause(ctx))
		}
		return context.Cause(ctx)
	}
}
