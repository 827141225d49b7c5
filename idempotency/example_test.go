package idempotency_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/idempotency"
	"github.com/sqsworker/sqsworker/worker"
)

// Create the table once (for example in a deployment step), then wrap the
// handler: a charge whose message SQS delivers twice, or whose delete was
// lost, is made once. This example needs AWS credentials or local
// endpoints (AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL_DYNAMODB), so it has no
// checked output; examples/idempotency runs the same against the
// emulators.
func Example() {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	db := dynamodb.NewFromConfig(cfg)
	if err := idempotency.CreateTable(ctx, db, "orders-idempotency"); err != nil {
		log.Fatal(err)
	}
	guard, err := idempotency.New(db, "orders-idempotency", func(o *idempotency.Options) {
		o.KeyPrefix = "charge"                  // one prefix per handler sharing the table
		o.Key = idempotency.JSONKey("order_id") // the same order sent twice is one job
	})
	if err != nil {
		log.Fatal(err)
	}
	charge := worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
		var order struct {
			OrderID string `json:"order_id"`
		}
		if err := json.Unmarshal([]byte(m.Body), &order); err != nil {
			return err
		}
		// Pass the job's key on to the payment API as its idempotency key:
		// that covers a crash between the charge and the completed record.
		key, _ := idempotency.Key(ctx)
		return chargeOrder(ctx, order.OrderID, key)
	})
	w, err := worker.New(sqs.NewFromConfig(cfg), "orders", worker.Chain(charge, guard.Wrap))
	if err != nil {
		log.Fatal(err)
	}
	log.Fatal(w.Run(ctx))
}

// chargeOrder stands for a call to a payment API that takes an idempotency
// key.
func chargeOrder(ctx context.Context, orderID, idempotencyKey string) error { return nil }

// JSONKey keys a message by a value in its JSON body; numbers keep their
// text, objects are keyed by their JSON with sorted keys.
func ExampleJSONKey() {
	key := idempotency.JSONKey("order", "id")
	for _, body := range []string{`{"order": {"id": "A-17"}}`, `{"order": {"id": 17}}`, `{"order": {}}`} {
		k, err := key(&worker.Message{ID: "m-1", Body: body})
		fmt.Printf("%q %v\n", k, err)
	}
	// Output:
	// "A-17" <nil>
	// "17" <nil>
	// "" idempotency: message m-1 has no key at $.order.id in its body: no such field
}
