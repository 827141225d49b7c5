package fanout_test

import (
	"context"
	"fmt"
	"log"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

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

// A Publisher sets each message's tenant as its MessageGroupId; SNS passes
// it to the standard queues subscribed to the topic (SQS fair queues),
// where the consumer reads it as worker.Message.GroupID — and can cap each
// tenant's running jobs with fleet.Cap keyed by fleet.ByGroup.
func ExamplePublisher() {
	ctx := context.Background()
	queues, _ := sqstest.New() // or sqs.NewFromConfig(cfg)
	topics, _ := snstest.New(queues)
	res, err := fanout.Setup(ctx, topics, queues, fanout.SetupOptions{Topic: "invoices", Queue: dlq.SetupOptions{Name: "invoicing"}, RawMessageDelivery: aws.Bool(true)})
	if err != nil {
		log.Fatal(err)
	}
	p, err := fanout.NewPublisher(topics, res.TopicARN)
	if err != nil {
		log.Fatal(err)
	}
	type invoice struct {
		Tenant string `json:"tenant"`
		Amount int    `json:"amount"`
	}
	invoices := fanout.JSON[invoice](p)
	var msgs []fanout.Message
	for _, inv := range []invoice{{"acme", 120}, {"globex", 80}, {"acme", 45}} {
		m, err := invoices.Message(inv, fanout.WithGroup(inv.Tenant, ""))
		if err != nil {
			log.Fatal(err)
		}
		msgs = append(msgs, m)
	}
	if _, err := p.PublishBatch(ctx, msgs); err != nil { // one PublishBatch call
		log.Fatal(err)
	}
	fmt.Println("requests:", p.Stats().Requests)

	out, err := queues.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(res.Queue.QueueURL), MaxNumberOfMessages: 10,
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameMessageGroupId}})
	if err != nil {
		log.Fatal(err)
	}
	var got []string
	for _, m := range out.Messages {
		got = append(got, m.Attributes["MessageGroupId"]+" "+aws.ToString(m.Body))
	}
	slices.Sort(got)
	fmt.Println(strings.Join(got, "\n"))
	// Output:
	// requests: 1
	// acme {"tenant":"acme","amount":120}
	// acme {"tenant":"acme","amount":45}
	// globex {"tenant":"globex","amount":80}
}
