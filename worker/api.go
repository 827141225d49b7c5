package worker

import (
	"context"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// API is the narrow set of SQS calls a Worker makes, with the SDK's exact
// signatures. *sqs.Client and *sqstest.Fake satisfy it.
type API interface {
	GetQueueAttributes(ctx context.Context, params *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
	GetQueueUrl(ctx context.Context, params *sqs.GetQueueUrlInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
	ReceiveMessage(ctx context.Context, params *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessage(ctx context.Context, params *sqs.DeleteMessageInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
	DeleteMessageBatch(ctx context.Context, params *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
	ChangeMessageVisibilityBatch(ctx context.Context, params *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error)
	SendMessage(ctx context.Context, params *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

var _ API = (*sqs.Client)(nil)

// The APIs counted in Stats.Requests.
const (
	apiGetQueueAttributes = iota
	apiGetQueueURL
	apiReceiveMessage
	apiDeleteMessage
	apiDeleteMessageBatch
	apiChangeMessageVisibilityBatch
	apiSendMessage
	numAPIs
)

var apiNames = [numAPIs]string{
	"GetQueueAttributes", "GetQueueUrl", "ReceiveMessage", "DeleteMessage",
	"DeleteMessageBatch", "ChangeMessageVisibilityBatch", "SendMessage",
}

// countingClient counts every call the worker and the packages it drives
// (heartbeat, dead-letter moves) make.
type countingClient struct {
	next  API
	calls [numAPIs]atomic.Int64
}

func (c *countingClient) GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	c.calls[apiGetQueueAttributes].Add(1)
	return c.next.GetQueueAttributes(ctx, in, optFns...)
}

func (c *countingClient) GetQueueUrl(ctx context.Context, in *sqs.GetQueueUrlInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error) {
	c.calls[apiGetQueueURL].Add(1)
	return c.next.GetQueueUrl(ctx, in, optFns...)
}

func (c *countingClient) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	c.calls[apiReceiveMessage].Add(1)
	return c.next.ReceiveMessage(ctx, in, optFns...)
}

func (c *countingClient) DeleteMessage(ctx context.Context, in *sqs.DeleteMessageInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error) {
	c.calls[apiDeleteMessage].Add(1)
	return c.next.DeleteMessage(ctx, in, optFns...)
}

func (c *countingClient) DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	c.calls[apiDeleteMessageBatch].Add(1)
	return c.next.DeleteMessageBatch(ctx, in, optFns...)
}

func (c *countingClient) ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	c.calls[apiChangeMessageVisibilityBatch].Add(1)
	return c.next.ChangeMessageVisibilityBatch(ctx, in, optFns...)
}

func (c *countingClient) SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	c.calls[apiSendMessage].Add(1)
	return c.next.SendMessage(ctx, in, optFns...)
}

// Stats is a snapshot of a Worker's counters since New.
type Stats struct {
	Received     int64 // messages received
	Succeeded    int64 // handler returned nil (deleted, or delete pending)
	Failed       int64 // handler returned an error, panicked or timed out
	Retried      int64 // failed messages given a retry delay
	DeadLettered int64 // messages moved to the dead-letter queue
	Released     int64 // messages made visible again unprocessed (shutdown, FIFO order)
	Lost         int64 // messages whose ownership was lost while running
	DeleteFailed int64 // deletes that failed for good (the message will be received again)
	InFlight     int64 // messages held right now
	// Requests counts SQS calls by API name, including the heartbeat's and
	// dead-letter moves'.
	Requests map[string]int64
}

// TotalRequests is the sum of Requests.
func (s Stats) TotalRequests() int64 {
	var n int64
	for _, v := range s.Requests {
		n += v
	}
	return n
}

// RequestsPerMessage is TotalRequests divided by Received (0 when nothing
// was received).
func (s Stats) RequestsPerMessage() float64 {
	if s.Received == 0 {
		return 0
	}
	return float64(s.TotalRequests()) / float64(s.Received)
}

type counters struct {
	received, succeeded, failed, retried, deadLettered, released, lost, deleteFailed, inFlight atomic.Int64
}
