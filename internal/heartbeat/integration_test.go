package heartbeat_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/harness/testenv"
)

// TestIntegrationKeepsLongJobInvisible runs against the local SQS emulator
// (or the endpoint in AWS_ENDPOINT_URL_SQS), in real time: a queue with a
// 2 s visibility timeout, one message "handled" for 10 s while a second
// consumer polls the whole time. The heartbeat must keep the message from
// the second consumer; then it is deleted once and the queue is empty.
func TestIntegrationKeepsLongJobInvisible(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIP (-short): 10 s real-time integration test against the local SQS emulator")
	}
	client := testenv.SQS(t)
	ctx := t.Context()
	q, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{
		QueueName:  aws.String(testenv.UniqueName("visibility-heartbeat")),
		Attributes: map[string]string{"VisibilityTimeout": "2"},
	})
	if err != nil {
		t.Fatalf("CreateQueue: %v", err)
	}
	url := q.QueueUrl
	t.Cleanup(func() { client.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: url}) })
	if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: url, MessageBody: aws.String("long job")}); err != nil {
		t.Fatalf("SendMessage: %v", err)
	}

	hb := newHB(t, client, *url, 2*time.Second) // extend every 1 s, 1 s before the deadline
	hbCtx, stopHB := context.WithCancel(ctx)
	hbDone := make(chan error, 1)
	go func() { hbDone <- hb.Run(hbCtx) }()
	defer func() {
		stopHB()
		if err := <-hbDone; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()

	out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl: url, WaitTimeSeconds: 5,
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameApproximateReceiveCount},
	})
	receivedAt := time.Now()
	if err != nil || len(out.Messages) != 1 {
		t.Fatalf("first consumer's receive: %v, %d messages; want 1", err, len(out.Messages))
	}
	m := out.Messages[0]
	if n := m.Attributes["ApproximateReceiveCount"]; n != "1" {
		t.Errorf("handler sees ApproximateReceiveCount %s, want 1", n)
	}
	var lostCause error
	var mu sync.Mutex
	lease := track(t, hb, aws.ToString(m.ReceiptHandle), receivedAt, func(cause error) {
		mu.Lock()
		lostCause = cause
		mu.Unlock()
	})

	// The second consumer polls for the whole job.
	pollCtx, stopPoll := context.WithCancel(ctx)
	var stolen []string
	var polls int
	pollDone := make(chan struct{})
	go func() {
		defer close(pollDone)
		for pollCtx.Err() == nil {
			out, err := client.ReceiveMessage(pollCtx, &sqs.ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
			if err != nil {
				continue // cancelled at the end
			}
			polls++
			for _, m := range out.Messages {
				stolen = append(stolen, aws.ToString(m.Body))
			}
		}
	}()

	time.Sleep(10 * time.Second) // the handler works, 5× the visibility timeout
	lease.Stop()
	stopPoll()
	<-pollDone
	if _, err := client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: url, ReceiptHandle: m.ReceiptHandle}); err != nil {
		t.Fatalf("DeleteMessage: %v", err)
	}

	mu.Lock()
	if lostCause != nil {
		t.Errorf("heartbeat lost the message: %v", lostCause)
	}
	mu.Unlock()
	if len(stolen) != 0 {
		t.Errorf("second consumer received %v during the job; the heartbeat did not keep it invisible", stolen)
	}
	if polls < 5 {
		t.Errorf("second consumer completed only %d polls in 10 s", polls)
	}
	s := hb.Stats()
	if s.Extended < 8 || s.Failures() != 0 || s.Lost != 0 || s.Tracked != 0 {
		t.Errorf("Stats = %+v, want ≥ 8 extensions (one a second), no failures, none tracked", s)
	}
	attrs, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: url, AttributeNames: []types.QueueAttributeName{
		types.QueueAttributeNameApproximateNumberOfMessages, types.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
	}})
	if err != nil {
		t.Fatalf("GetQueueAttributes: %v", err)
	}
	for _, a := range []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages, types.QueueAttributeNameApproximateNumberOfMessagesNotVisible} {
		if v := attrs.Attributes[string(a)]; v != "0" {
			t.Errorf("%s = %s after the delete, want 0", a, v)
		}
	}
	after, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url, WaitTimeSeconds: 1})
	if err != nil || len(after.Messages) != 0 {
		t.Errorf("receive after the delete: %v, %d messages; want the queue empty", err, len(after.Messages))
	}
	t.Logf("second consumer: %d polls, %d messages; heartbeat %+v", polls, len(stolen), s)
}
