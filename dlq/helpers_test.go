package dlq

import (
	"context"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/internal/deadletter"
	"github.com/sqsworker/sqsworker/sqstest"
)

// receiver is the part of a client the tests receive with.
type receiver interface {
	ReceiveMessage(ctx context.Context, params *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
}

// receiveOne receives one message with every attribute, as the worker does.
func receiveOne(t testing.TB, c receiver, url string) types.Message {
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

// userAttrs returns n String attributes named u0…u(n-1).
func userAttrs(n int) map[string]types.MessageAttributeValue {
	if n == 0 {
		return nil
	}
	m := map[string]types.MessageAttributeValue{}
	for i := range n {
		m[fmt.Sprintf("u%d", i)] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(fmt.Sprintf("value-%d", i))}
	}
	return m
}

func withAttrs(attrs map[string]types.MessageAttributeValue) func(*sqs.SendMessageInput) {
	return func(in *sqs.SendMessageInput) { in.MessageAttributes = attrs }
}

// fakePair creates a queue and its DLQ in a fresh Fake and discovers them.
func fakePair(t *testing.T, name string) (*sqstest.Fake, Target) {
	t.Helper()
	f := sqstest.For(t)
	src, _ := f.MustCreateQueueWithDLQ(t, name, 5, nil)
	target, err := Discover(context.Background(), f, src)
	if err != nil {
		t.Fatalf("Discover: %v", err)
	}
	return f, target
}

// mover dead-letters messages as the runtimes do, with their provenance.
type mover struct{ m *deadletter.Mover }

// mustMover returns a mover to target's DLQ, failing t on error.
func mustMover(t testing.TB, client deadletter.MoveAPI, target Target, optFns ...func(*deadletter.Options)) mover {
	t.Helper()
	m, err := deadletter.NewMover(client, deadletter.Target(target), optFns...)
	if err != nil {
		t.Fatalf("NewMover: %v", err)
	}
	return mover{m}
}

// Move copies msg to the DLQ with provenance p, then deletes it.
func (m mover) Move(ctx context.Context, msg types.Message, p Provenance) error {
	return m.m.Move(ctx, msg, deadletter.Provenance(p))
}

func keys(m map[string]types.MessageAttributeValue) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
