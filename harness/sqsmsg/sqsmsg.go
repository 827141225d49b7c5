// Package sqsmsg holds the small SQS message helpers the tests of several
// packages share: receiving one message as the worker does, and building
// message attributes.
package sqsmsg

import (
	"context"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// Receiver is the part of a client ReceiveOne uses.
type Receiver interface {
	ReceiveMessage(ctx context.Context, params *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
}

// ReceiveOne receives one message from url with every attribute, as the
// worker does, and fails the test unless exactly one arrives within 1 s.
func ReceiveOne(t testing.TB, c Receiver, url string) types.Message {
	t.Helper()
	out, err := c.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(url),
		MaxNumberOfMessages:         1,
		WaitTimeSeconds:             1,
		MessageAttributeNames:       []string{"All"},
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
	})
	if err != nil {
		t.Fatalf("receive from %s: %v", url, err)
	}
	if len(out.Messages) != 1 {
		t.Fatalf("receive from %s: got %d messages, want 1", url, len(out.Messages))
	}
	return out.Messages[0]
}

// UserAttributes returns n String attributes named u0…u(n-1) (nil for 0).
func UserAttributes(n int) map[string]types.MessageAttributeValue {
	if n == 0 {
		return nil
	}
	m := map[string]types.MessageAttributeValue{}
	for i := range n {
		m[fmt.Sprintf("u%d", i)] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(fmt.Sprintf("value-%d", i))}
	}
	return m
}

// WithAttributes sets a SendMessageInput's message attributes (for
// sqstest's MustSend).
func WithAttributes(attrs map[string]types.MessageAttributeValue) func(*sqs.SendMessageInput) {
	return func(in *sqs.SendMessageInput) { in.MessageAttributes = attrs }
}
