package producer_test

import (
	"context"
	"fmt"
	"log"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/fanout"
	"github.com/sqsworker/sqsworker/producer"
	"github.com/sqsworker/sqsworker/sqstest"
	"github.com/sqsworker/sqsworker/sqstest/snstest"
)

// A producer for an SNS topic sets each message's tenant as its
// MessageGroupId; SNS passes it to the standard queues subscribed to the
// topic (SQS fair queues), where the consumer reads it as
// worker.Message.GroupID — and can cap each tenant's running jobs with
// fleet.Cap keyed by fleet.ByGroup.
func ExampleNewTopic() {
	ctx := context.Background()
	queues, _ := sqstest.New()       // or sqs.NewFromConfig(cfg)
	topics, _ := snstest.New(queues) // or sns.NewFromConfig(cfg)
	res, err := fanout.Setup(ctx, topics, queues, fanout.SetupOptions{Topic: "invoices", Queue: dlq.SetupOptions{Name: "invoicing"}, RawMessageDelivery: aws.Bool(true)})
	if err != nil {
		log.Fatal(err)
	}
	p, err := producer.NewTopic(topics, res.TopicARN, func(o *producer.Options) {
		o.Linger = time.Second // a batch waits up to 1 s for company; Close sends it at once
	})
	if err != nil {
		log.Fatal(err)
	}
	type invoice struct {
		Tenant string `json:"tenant"`
		Amount int    `json:"amount"`
	}
	invoices := producer.JSON[invoice](p)
	for _, inv := range []invoice{{"acme", 120}, {"globex", 80}, {"acme", 45}} {
		if _, err := invoices.Enqueue(ctx, inv, producer.WithGroup(inv.Tenant, "")); err != nil {
			log.Fatal(err)
		}
	}
	if err := p.Close(ctx); err != nil { // one PublishBatch call
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
