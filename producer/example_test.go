package producer_test

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/producer"
	"github.com/sqsworker/sqsworker/sqstest"
)

func ExampleProducer_SendBatch() {
	ctx := context.Background()
	client, err := sqstest.New() // or sqs.NewFromConfig(cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	out, _ := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("thumbnails")})
	p, err := producer.New(client, *out.QueueUrl)
	if err != nil {
		panic(err)
	}
	var msgs []producer.Message
	for i := range 25 {
		msgs = append(msgs, producer.Message{Body: fmt.Sprintf("photo-%d.jpg", i)})
	}
	res, err := p.SendBatch(ctx, msgs)
	if err != nil {
		panic(err) // a *BatchError: res[i].Err says which message failed, and why
	}
	st := p.Stats()
	fmt.Printf("sent %d messages in %d calls; first ID set: %v\n", st.Sent, st.Requests, res[0].MessageID != "")
	// Output: sent 25 messages in 3 calls; first ID set: true
}

// Order is a job type.
type Order struct {
	ID    string `json:"id"`
	Total int    `json:"total_cents"`
}

func ExampleJSON() {
	ctx := context.Background()
	client, err := sqstest.New()
	if err != nil {
		fmt.Println(err)
		return
	}
	out, _ := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("orders")})
	p, err := producer.New(client, *out.QueueUrl, func(o *producer.Options) {
		o.Now = func() time.Time { return time.Date(2026, 7, 1, 9, 0, 0, 0, time.UTC) }
	})
	if err != nil {
		panic(err)
	}
	defer p.Close(ctx) // flushes the batcher

	orders := producer.JSON[Order](p)
	res, err := orders.Send(ctx, Order{ID: "A-1", Total: 1299}, producer.WithDelay(48*time.Hour))
	if err != nil {
		panic(err)
	}
	fmt.Println("due", res.Due.Format(time.RFC3339))
	fmt.Println(client.Messages(*out.QueueUrl)[0].Body)
	// Output:
	// due 2026-07-03T09:00:00Z
	// {"id":"A-1","total_cents":1299}
}
