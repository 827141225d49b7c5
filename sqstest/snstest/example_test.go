package snstest_test

import (
	"context"
	"fmt"
	"log"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sns/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/sqstest"
	"github.com/sqsworker/sqsworker/sqstest/snstest"
)

// The SNS fake delivers into an sqstest fake as SNS delivers into SQS: only
// where the queue policy lets the topic send, through the subscription's
// filter policy, raw or in SNS's envelope. In a test, snstest.For(t,
// queues) makes one that is closed with t.
func Example() {
	ctx := context.Background()
	queues, err := sqstest.New()
	if err != nil {
		log.Fatal(err)
	}
	topics, err := snstest.New(queues)
	if err != nil {
		log.Fatal(err)
	}
	topic, _ := topics.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String("rental-orders")})
	q, _ := queues.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("billing")})
	attrs, _ := queues.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: q.QueueUrl, AttributeNames: []sqstypes.QueueAttributeName{"QueueArn"}})
	queueARN := attrs.Attributes["QueueArn"]
	_, err = topics.Subscribe(ctx, &sns.SubscribeInput{TopicArn: topic.TopicArn, Protocol: aws.String("sqs"), Endpoint: aws.String(queueARN),
		Attributes: map[string]string{"RawMessageDelivery": "true", "FilterPolicy": `{"order-status":["confirmed"]}`}})
	if err != nil {
		log.Fatal(err)
	}
	publish := func(body, status string) {
		_, err := topics.Publish(ctx, &sns.PublishInput{TopicArn: topic.TopicArn, Message: aws.String(body),
			MessageAttributes: map[string]types.MessageAttributeValue{"order-status": {DataType: aws.String("String"), StringValue: aws.String(status)}}})
		if err != nil {
			log.Fatal(err)
		}
	}

	publish("order 1", "confirmed") // the queue policy does not let the topic send yet
	policy := fmt.Sprintf(`{"Statement":[{"Effect":"Allow","Principal":{"Service":"sns.amazonaws.com"},"Action":"sqs:SendMessage","Resource":%q,"Condition":{"ArnEquals":{"aws:SourceArn":%q}}}]}`,
		queueARN, *topic.TopicArn)
	if _, err := queues.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: q.QueueUrl, Attributes: map[string]string{"Policy": policy}}); err != nil {
		log.Fatal(err)
	}
	publish("order 2", "confirmed")
	publish("order 3", "canceled") // filtered out

	for _, m := range queues.Messages(*q.QueueUrl) {
		fmt.Println("billing got:", m.Body)
	}
	s := topics.Stats()
	fmt.Printf("published %d, delivered %d, filtered %d, lost %d\n", s.Published, s.Delivered, s.Filtered, s.Lost)
	// Output:
	// billing got: order 2
	// published 3, delivered 1, filtered 1, lost 1
}
