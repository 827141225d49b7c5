package fanout_test

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	snstypes "github.com/aws/aws-sdk-go-v2/service/sns/types"

	"github.com/sqsworker/sqsworker/fanout"
	"github.com/sqsworker/sqsworker/sqstest"
	"github.com/sqsworker/sqsworker/sqstest/snstest"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// chain sets up topic "rental-orders" → queue name on a fresh pair of fakes.
func chain(t *testing.T, name string, optFns ...func(*fanout.SetupOptions)) (*sqstest.Fake, *snstest.Fake, fanout.SetupResult) {
	t.Helper()
	queues := sqstest.For(t)
	topics := snstest.For(t, queues)
	res := setupChain(t, topics, queues, name, optFns...)
	return queues, topics, res
}

func setupChain(t *testing.T, topics fanout.API, queues *sqstest.Fake, name string, optFns ...func(*fanout.SetupOptions)) fanout.SetupResult {
	t.Helper()
	o := fanout.SetupOptions{Topic: "rental-orders"}
	o.Queue.Name = name
	for _, fn := range optFns {
		fn(&o)
	}
	res, err := fanout.Setup(context.Background(), topics, queues, o)
	if err != nil {
		t.Fatalf("fanout.Setup: %v", err)
	}
	return res
}

func raw(o *fanout.SetupOptions) { o.RawMessageDelivery = aws.Bool(true) }

func publish(t *testing.T, topics fanout.API, topicARN, msg string, attrs map[string]string) {
	t.Helper()
	p, ok := topics.(interface {
		Publish(ctx context.Context, params *sns.PublishInput, optFns ...func(*sns.Options)) (*sns.PublishOutput, error)
	})
	if !ok {
		t.Fatal("client cannot publish")
	}
	in := &sns.PublishInput{TopicArn: aws.String(topicARN), Message: aws.String(msg), Subject: aws.String("rental")}
	for k, v := range attrs {
		if in.MessageAttributes == nil {
			in.MessageAttributes = map[string]snstypes.MessageAttributeValue{}
		}
		in.MessageAttributes[k] = snstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
	}
	if _, err := p.Publish(context.Background(), in); err != nil {
		t.Fatalf("Publish: %v", err)
	}
}
