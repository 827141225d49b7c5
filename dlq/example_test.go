package dlq_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/queueref"
	"github.com/sqsworker/sqsworker/sqstest"
)

func ExampleDiscover() {
	ctx := context.Background()
	client, err := sqstest.New() // or sqs.NewFromConfig(cfg)
	if err != nil {
		panic(err)
	}

	setup, err := dlq.Setup(ctx, client, dlq.SetupOptions{Name: "orders", MaxReceiveCount: 5})
	if err != nil {
		panic(err)
	}
	target, err := dlq.Discover(ctx, client, setup.QueueURL)
	if err != nil {
		panic(err)
	}
	fmt.Println("dead-letter queue:", target.DLQURL)
	fmt.Println("maxReceiveCount:", target.MaxReceiveCount)

	// A queue without a RedrivePolicy is refused, with what to do.
	plain, _ := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("plain")})
	_, err = dlq.Discover(ctx, client, *plain.QueueUrl)
	fmt.Println(errors.Is(err, dlq.ErrNoRedrivePolicy))
	// Output:
	// dead-letter queue: https://sqs.us-east-1.amazonaws.com/000000000000/orders-dlq
	// maxReceiveCount: 5
	// true
}

// ParseProvenance reads why and from where a message was dead-lettered,
// here from a message received from the dead-letter queue directly
// (Inspect parses it into Message.Provenance).
func ExampleParseProvenance() {
	ctx := context.Background()
	client, target := deadLettered(ctx, "charge card: card declined")

	out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:              aws.String(target.DLQURL),
		MessageAttributeNames: []string{"All"},
	})
	if err != nil || len(out.Messages) != 1 {
		panic(err)
	}
	dead := out.Messages[0]
	p, ok := dlq.ParseProvenance(dead.MessageAttributes)
	fmt.Println("provenance:", ok)
	fmt.Println("body:", aws.ToString(dead.Body))
	fmt.Println("error:", p.Error)
	fmt.Println("attempt:", p.Attempt, "handler:", p.Handler)
	fmt.Println("failed at:", p.FailedAt.Format(time.RFC3339))
	fmt.Println("from:", queueref.Name(p.SourceQueue))
	// Output:
	// provenance: true
	// body: {"order":1}
	// error: charge card: card declined
	// attempt: 1 handler: billing.Charge
	// failed at: 2025-03-01T12:00:00Z
	// from: orders
}

func ExampleSetup() {
	ctx := context.Background()
	client, err := sqstest.New()
	if err != nil {
		panic(err)
	}

	res, err := dlq.Setup(ctx, client, dlq.SetupOptions{Name: "orders", MaxReceiveCount: 8})
	if err != nil {
		panic(err)
	}
	for _, c := range res.Changes {
		fmt.Println(c)
	}
	// Again without options: existing settings are kept, nothing changes.
	res, _ = dlq.Setup(ctx, client, dlq.SetupOptions{Name: "orders"})
	fmt.Println("changes:", len(res.Changes), "maxReceiveCount:", res.MaxReceiveCount)
	// Lowering maxReceiveCount needs AllowLowering.
	_, err = dlq.Setup(ctx, client, dlq.SetupOptions{Name: "orders", MaxReceiveCount: 3})
	fmt.Println(errors.Is(err, dlq.ErrWouldLower))
	// Output:
	// created dead-letter queue orders-dlq
	// created queue orders
	// changes: 0 maxReceiveCount: 8
	// true
}
