package dlq_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
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

func ExampleMover_Move() {
	ctx := context.Background()
	client, err := sqstest.New()
	if err != nil {
		panic(err)
	}
	setup, err := dlq.Setup(ctx, client, dlq.SetupOptions{Name: "orders"})
	if err != nil {
		panic(err)
	}
	target := setup.Target()
	_, _ = client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(target.SourceURL), MessageBody: aws.String(`{"order":42}`)})

	// Receive as the worker does: with every attribute, so that the move
	// keeps them all.
	out, _ := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(target.SourceURL),
		MessageAttributeNames:       []string{"All"},
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
	})
	msg := out.Messages[0]

	mover, err := dlq.NewMover(client, target)
	if err != nil {
		panic(err)
	}
	err = mover.Move(ctx, msg, dlq.Provenance{
		Error:    "charge card: card declined",
		Attempt:  4,
		Handler:  "billing.Charge",
		FailedAt: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC),
	})
	if err != nil {
		panic(err)
	}

	fmt.Println("left in orders:", len(client.Messages(target.SourceURL)))
	dead := client.Messages(target.DLQURL)[0]
	p, _ := dlq.ParseProvenance(dead.Attributes)
	fmt.Println("body:", dead.Body)
	fmt.Println("error:", p.Error)
	fmt.Println("attempt:", p.Attempt, "handler:", p.Handler)
	fmt.Println("failed at:", p.FailedAt.Format(time.RFC3339))
	fmt.Println("from:", queueref.Name(p.SourceQueue))
	// Output:
	// left in orders: 0
	// body: {"order":42}
	// error: charge card: card declined
	// attempt: 4 handler: billing.Charge
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
