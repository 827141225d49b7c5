package dynamocounter_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sqsworker/sqsworker/retry/dynamocounter"
)

// Set up the table once (for example in a deployment step), then give the
// counter to the worker in place of the default receive count. This example
// needs AWS credentials or a local DynamoDB (AWS_ENDPOINT_URL_DYNAMODB), so it
// has no checked output.
func Example() {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	client := dynamodb.NewFromConfig(cfg)

	if err := dynamocounter.CreateTable(ctx, client, "orders-attempts"); err != nil {
		log.Fatal(err)
	}
	counter, err := dynamocounter.New(client, "orders-attempts", func(o *dynamocounter.Options) {
		o.TTL = 20 * 24 * time.Hour // longer than the queue's retention period
	})
	if err != nil {
		log.Fatal(err)
	}

	// What the worker does as it starts a handler:
	attempt, err := counter.Attempt(ctx, "6f2a0c9e-6a57-4f3c-9a3b-2f1b9e0c8d11", 1)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("attempt", attempt)
}
