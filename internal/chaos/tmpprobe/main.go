package main

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

func main() {
	ctx := context.Background()
	c := sqs.New(sqs.Options{BaseEndpoint: aws.String("http://127.0.0.1:9480"), Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
	q, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(fmt.Sprintf("probe-%d", time.Now().UnixNano()))})
	if err != nil {
		panic(err)
	}
	u := q.QueueUrl
	c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: u, MessageBody: aws.String("x")})
	r, _ := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: u, VisibilityTimeout: 1})
	h := r.Messages[0].ReceiptHandle
	time.Sleep(2 * time.Second)
	cv, err := c.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: u, Entries: []types.ChangeMessageVisibilityBatchRequestEntry{{Id: aws.String("0"), ReceiptHandle: h, VisibilityTimeout: 5}}})
	fmt.Printf("CMVB after expiry: err=%v ok=%d failed=%+v\n", err, len(cv.Successful), cv.Failed)
	d, err := c.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: u, Entries: []types.DeleteMessageBatchRequestEntry{{Id: aws.String("0"), ReceiptHandle: h}}})
	fmt.Printf("DMB after: err=%v ok=%d failed=%+v\n", err, len(d.Successful), d.Failed)
	r2, _ := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: u, WaitTimeSeconds: 7})
	fmt.Printf("receive after: %d messages\n", len(r2.Messages))
}
