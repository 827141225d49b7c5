package dlq_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/internal/deadletter"
	"github.com/sqsworker/sqsworker/queueref"
	"github.com/sqsworker/sqsworker/sqstest"
)

// deadLettered sets up orders and orders-dlq on a fake and dead-letters one
// message per reason with its provenance, as the worker does with
// retry.Permanent.
func deadLettered(ctx context.Context, reasons ...string) (*sqstest.Fake, dlq.Target) {
	client, err := sqstest.New()
	if err != nil {
		log.Fatal(err)
	}
	setup, err := dlq.Setup(ctx, client, dlq.SetupOptions{Name: "orders"})
	if err != nil {
		log.Fatal(err)
	}
	target := setup.Target()
	mover, err := deadletter.NewMover(client, deadletter.Target(target))
	if err != nil {
		log.Fatal(err)
	}
	for i, reason := range reasons {
		body := fmt.Sprintf(`{"order":%d}`, i+1)
		if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(target.SourceURL), MessageBody: aws.String(body)}); err != nil {
			log.Fatal(err)
		}
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(target.SourceURL), MessageAttributeNames: []string{"All"},
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll}})
		if err != nil || len(out.Messages) != 1 {
			log.Fatal(err)
		}
		err = mover.Move(ctx, out.Messages[0], deadletter.Provenance{Error: reason, Attempt: 1, Handler: "billing.Charge", FailedAt: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)})
		if err != nil {
			log.Fatal(err)
		}
	}
	return client, target
}

// Inspect shows what a dead-letter queue holds and why, without consuming
// it: the messages it received are released at once.
func ExampleInspect() {
	ctx := context.Background()
	client, target := deadLettered(ctx, "charge card: card declined", "order has no items")

	msgs, err := dlq.Inspect(ctx, client, target.DLQURL, dlq.InspectOptions{})
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range msgs {
		fmt.Printf("%s from %s, attempt %d: %s\n", m.Body, queueref.Name(m.Provenance.SourceQueue), m.Provenance.Attempt, m.Provenance.Error)
	}
	visible := len(client.Messages(target.DLQURL, "visible"))
	fmt.Println("still in orders-dlq:", visible)
	// Output:
	// {"order":1} from orders, attempt 1: charge card: card declined
	// {"order":2} from orders, attempt 1: order has no items
	// still in orders-dlq: 2
}

// Redrive moves dead-lettered messages back to their queue once the cause
// is fixed; a filter picks which (here the card declines, not the bad
// orders), and the manual move sends each before deleting it from the
// dead-letter queue, without the provenance attributes.
func ExampleRedrive() {
	ctx := context.Background()
	client, target := deadLettered(ctx, "charge card: card declined", "order has no items", "charge card: card declined")

	res, err := dlq.Redrive(ctx, client, target, dlq.RedriveOptions{Filter: dlq.Filter{ErrorContains: "card declined"}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s move: %d moved, %d left in place\n", res.Method, res.Moved, res.Skipped)
	for _, m := range client.Messages(target.SourceURL) {
		_, hasProvenance := dlq.ParseProvenance(m.Attributes)
		fmt.Println("back in orders:", m.Body, "provenance:", hasProvenance)
	}
	for _, m := range client.Messages(target.DLQURL) {
		fmt.Println("still in orders-dlq:", m.Body)
	}
	// Output:
	// manual move: 2 moved, 1 left in place
	// back in orders: {"order":1} provenance: false
	// back in orders: {"order":3} provenance: false
	// still in orders-dlq: {"order":2}
}
