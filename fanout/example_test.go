package fanout_test

import (
	"context"
	"fmt"
	"log"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/fanout"
	"github.com/sqsworker/sqsworker/sqstest"
	"github.com/sqsworker/sqsworker/sqstest/snstest"
	"github.com/sqsworker/sqsworker/worker"
)

// Setup makes the whole chain — topic, queue and its dead-letter queue,
// the subscription with its own dead-letter queue, the queue policies —
// Lint finds nothing to fix in it, and Unwrap hands the handler the
// published message out of SNS's envelope.
func Example() {
	ctx := context.Background()
	queues, err := sqstest.New() // or sqs.NewFromConfig(cfg)
	if err != nil {
		log.Fatal(err)
	}
	topics, err := snstest.New(queues) // or sns.NewFromConfig(cfg)
	if err != nil {
		log.Fatal(err)
	}
	res, err := fanout.Setup(ctx, topics, queues, fanout.SetupOptions{Topic: "rental-orders", Queue: dlq.SetupOptions{Name: "billing"}})
	if err != nil {
		log.Fatal(err)
	}
	for _, c := range res.Changes {
		if c.Resource == "subscription" {
			fmt.Println("created subscription") // its ARN ends in a random ID
			continue
		}
		fmt.Println(c)
	}
	findings, err := fanout.Lint(ctx, topics, queues, res.Queue.QueueURL, fanout.LintOptions{Delivery: fanout.DeliveryEnvelope})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("findings:", len(findings))

	if _, err := topics.Publish(ctx, &sns.PublishInput{TopicArn: aws.String(res.TopicARN), Message: aws.String(`{"order":42}`)}); err != nil {
		log.Fatal(err)
	}
	out, err := queues.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(res.Queue.QueueURL)})
	if err != nil || len(out.Messages) != 1 {
		log.Fatal(err)
	}
	// A worker runs worker.Chain(handler, fanout.Unwrap()); here the
	// middleware is called by hand on the message as received.
	h := fanout.Unwrap()(worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
		fmt.Println("handler got:", m.Body, "from", m.SNS.TopicARN)
		return nil
	}))
	if err := h.Handle(ctx, &worker.Message{ID: *out.Messages[0].MessageId, Body: *out.Messages[0].Body}); err != nil {
		log.Fatal(err)
	}
	// Output:
	// created dead-letter queue billing-dlq
	// created queue billing
	// created topic rental-orders
	// created subscription dead-letter queue billing-fanout-dlq
	// queue billing: Policy (not set) → statement sqsworker-sns-rental-orders lets topic rental-orders send
	// subscription dead-letter queue billing-fanout-dlq: Policy (not set) → statement sqsworker-sns-rental-orders lets topic rental-orders send
	// created subscription
	// findings: 0
	// handler got: {"order":42} from arn:aws:sns:us-east-1:000000000000:rental-orders
}
