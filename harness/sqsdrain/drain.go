// Package sqsdrain reads a queue to its end, for tests and the chaos suite:
// every message once, none missed because a receive's response was lost.
package sqsdrain

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// API is what Drain calls, with the SDK's signatures.
type API interface {
	ReceiveMessage(ctx context.Context, params *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessageBatch(ctx context.Context, params *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
	GetQueueAttributes(ctx context.Context, params *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
}

var _ API = (*sqs.Client)(nil)

// Visibility is the visibility timeout of Drain's own receives: how long a
// receive whose response was lost hides its messages from Drain.
const Visibility = 2 * time.Second

// NotEmptyError is Drain's error when the queue still counts messages
// after maxWait: they were in flight with another consumer (or with a
// receive whose response was lost) or delayed, and Drain could not read
// them.
type NotEmptyError struct {
	Queue string
	Left  int // messages the queue still counts, visible, in flight or delayed
}

func (e *NotEmptyError) Error() string {
	return fmt.Sprintf("sqsdrain: %s still counts %d messages that could not be read; wait for their visibility timeout or retry delay, or drain again", e.Queue, e.Left)
}

// Drain receives every message of the queue at url, deleting each, and
// returns them once each (by message ID), in the order first received,
// with all their attributes. It returns once the queue counts no message,
// visible, in flight or delayed: a receive whose response the server lost
// hides its messages for Visibility, and Drain waits for them rather than
// miss them. When maxWait passes first it returns what it read and a
// *NotEmptyError.
func Drain(ctx context.Context, client API, url string, maxWait time.Duration) ([]types.Message, error) {
	seen := map[string]types.Message{}
	var order []string
	deadline := time.Now().Add(maxWait)
	result := func() []types.Message {
		msgs := make([]types.Message, len(order))
		for i, id := range order {
			msgs[i] = seen[id]
		}
		return msgs
	}
	for {
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10,
			WaitTimeSeconds: 1, VisibilityTimeout: int32(Visibility / time.Second), MessageAttributeNames: []string{"All"},
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll}})
		if err != nil {
			return result(), fmt.Errorf("sqsdrain: receiving from %s: %w", url, err)
		}
		if len(out.Messages) == 0 {
			left, err := Count(ctx, client, url)
			if err != nil {
				return result(), err
			}
			if left == 0 {
				return result(), nil
			}
			if time.Now().After(deadline) {
				return result(), &NotEmptyError{Queue: url, Left: left}
			}
			continue
		}
		in := &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url)}
		for i, m := range out.Messages {
			id := aws.ToString(m.MessageId)
			if _, dup := seen[id]; !dup {
				order = append(order, id)
			}
			seen[id] = m
			in.Entries = append(in.Entries, types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle})
		}
		// A delete that fails leaves its messages to come back; they are
		// received again (and counted once) until one succeeds.
		if _, err := client.DeleteMessageBatch(ctx, in); err != nil {
			return result(), fmt.Errorf("sqsdrain: deleting drained messages from %s: %w", url, err)
		}
	}
}

// Count returns every message the queue counts: visible, in flight and
// delayed.
func Count(ctx context.Context, client API, url string) (int, error) {
	a, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{
		types.QueueAttributeNameApproximateNumberOfMessages, types.QueueAttributeNameApproximateNumberOfMessagesNotVisible, types.QueueAttributeNameApproximateNumberOfMessagesDelayed}})
	if err != nil {
		return 0, fmt.Errorf("sqsdrain: counting %s: %w", url, err)
	}
	left := 0
	for _, v := range a.Attributes {
		n, _ := strconv.Atoi(v)
		left += n
	}
	return left, nil
}
