package sqstest_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/sqstest"
)

// The fake is an *sqs.Client stand-in with its own clock: a message not
// deleted comes back when its visibility timeout ends, and after
// maxReceiveCount receives SQS's redrive moves it to the dead-letter queue.
// In a test, sqstest.For(t) makes one that is checked and closed with t.
func Example() {
	ctx := context.Background()
	f, err := sqstest.New()
	if err != nil {
		log.Fatal(err)
	}
	dead, _ := f.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("orders-dlq")})
	deadAttrs, _ := f.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: dead.QueueUrl, AttributeNames: []types.QueueAttributeName{"QueueArn"}})
	q, _ := f.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("orders"), Attributes: map[string]string{
		"VisibilityTimeout": "30",
		"RedrivePolicy":     fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":2}`, deadAttrs.Attributes["QueueArn"]),
	}})
	if _, err := f.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String("job 1")}); err != nil {
		log.Fatal(err)
	}
	for range 3 {
		out, err := f.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl,
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll}})
		if err != nil {
			log.Fatal(err)
		}
		if len(out.Messages) == 0 {
			fmt.Println("received nothing")
		}
		for _, m := range out.Messages {
			fmt.Printf("received %q, receive count %s\n", *m.Body, m.Attributes["ApproximateReceiveCount"])
		}
		f.Advance(31 * time.Second) // the visibility timeout ends, on the fake's clock
	}
	fmt.Println("in orders-dlq:", len(f.Messages(*dead.QueueUrl, "visible")))
	fmt.Println("requests:", f.Requests())
	// Output:
	// received "job 1", receive count 1
	// received "job 1", receive count 2
	// received nothing
	// in orders-dlq: 1
	// requests: map[CreateQueue:2 GetQueueAttributes:1 ReceiveMessage:3 SendMessage:1]
}
