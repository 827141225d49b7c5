package sqslambda_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/sqstest"
	"github.com/sqsworker/sqsworker/worker"
	"github.com/sqsworker/sqsworker/worker/sqslambda"
)

// processOrder is the job both examples run: the same code a worker.Worker
// would run.
var processOrder = worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
	var order struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(m.Body), &order); err != nil {
		return retry.Permanent(fmt.Errorf("not an order: %w", err))
	}
	fmt.Println("processed order", order.ID)
	return nil
})

// Handle turns the records of an SQS event into a partial batch response.
// Without Options.Client the Handler only reports failures: the bad record
// is listed, and SQS's redrive will move it to the dead-letter queue.
func ExampleHandler_Handle() {
	h, err := sqslambda.New(processOrder, func(o *sqslambda.Options) {
		o.Logger = slog.New(slog.DiscardHandler)
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	record := func(id, body string) events.SQSMessage {
		return events.SQSMessage{
			MessageId:      id,
			ReceiptHandle:  "handle-" + id,
			Body:           body,
			Attributes:     map[string]string{"ApproximateReceiveCount": "1"},
			EventSource:    "aws:sqs",
			EventSourceARN: "arn:aws:sqs:eu-west-1:123456789012:orders",
			AWSRegion:      "eu-west-1",
		}
	}
	resp, err := h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{
		record("m-1", `{"id":"A-1"}`),
		record("m-2", `oops`),
	}})
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	out, _ := json.Marshal(resp)
	fmt.Println(string(out))
	// Output:
	// processed order A-1
	// {"batchItemFailures":[{"itemIdentifier":"m-2"}]}
}

// RunLocal invokes a function the way Lambda's event source mapping would.
// With a client, the Handler moves the bad record to the dead-letter queue
// itself, with its reason, so nothing is reported and Lambda (here
// RunLocal) deletes the rest.
func ExampleRunLocal() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	quiet := slog.New(slog.DiscardHandler)

	f, err := sqstest.New() // or an *sqs.Client for LocalStack or the emulator
	if err != nil {
		fmt.Println(err)
		return
	}
	dead, _ := f.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("orders-dlq")})
	src, _ := f.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("orders"), Attributes: map[string]string{
		"VisibilityTimeout": "30",
		"RedrivePolicy":     `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:orders-dlq","maxReceiveCount":5}`,
	}})
	for _, body := range []string{`{"id":"A-1"}`, `oops`, `{"id":"A-2"}`} {
		_, _ = f.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: src.QueueUrl, MessageBody: aws.String(body)})
	}

	h, err := sqslambda.New(processOrder, func(o *sqslambda.Options) {
		o.Client = f
		o.Logger = quiet
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fn := func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		defer cancel() // one invocation is enough for this example
		return h.Handle(ctx, ev)
	}
	err = sqslambda.RunLocal(ctx, f, *src.QueueUrl, fn, func(o *sqslambda.LocalOptions) {
		o.ReportBatchItemFailures = true
		o.Logger = quiet
	})
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Println("left in orders:", len(f.Messages(*src.QueueUrl)))
	for _, m := range f.Messages(*dead.QueueUrl) {
		p, _ := dlq.ParseProvenance(m.Attributes)
		fmt.Printf("in orders-dlq: %q (%s)\n", m.Body, p.Error)
	}
	// Output:
	// processed order A-1
	// processed order A-2
	// left in orders: 0
	// in orders-dlq: "oops" (permanent failure: not an order: invalid character 'o' looking for beginning of value)
}
