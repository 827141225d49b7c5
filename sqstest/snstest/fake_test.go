package snstest_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"

	"github.com/sqsworker/sqsworker/internal/queuepolicy"
	"github.com/sqsworker/sqsworker/sqstest"
	"github.com/sqsworker/sqsworker/sqstest/snstest"
)

// subscribed creates topic "orders" and queue "billing" on fresh fakes and
// subscribes the queue with attrs (raw delivery), letting the topic send.
func subscribed(t *testing.T, queues *sqstest.Fake, topics *snstest.Fake, attrs map[string]string) (topicARN, queueURL, subARN string) {
	t.Helper()
	ctx := context.Background()
	out, err := topics.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String("orders")})
	if err != nil {
		t.Fatal(err)
	}
	topicARN = aws.ToString(out.TopicArn)
	arn := "arn:aws:sqs:us-east-1:000000000000:billing"
	policy, _, err := queuepolicy.GrantTopic("", arn, topicARN)
	if err != nil {
		t.Fatal(err)
	}
	queueURL = queues.MustCreateQueue(t, "billing", map[string]string{"Policy": policy})
	all := map[string]string{"RawMessageDelivery": "true"}
	for k, v := range attrs {
		all[k] = v
	}
	sub, err := topics.Subscribe(ctx, &sns.SubscribeInput{TopicArn: out.TopicArn, Protocol: aws.String("sqs"), Endpoint: aws.String(arn),
		Attributes: all, ReturnSubscriptionArn: true})
	if err != nil {
		t.Fatal(err)
	}
	return topicARN, queueURL, aws.ToString(sub.SubscriptionArn)
}

func publish(t *testing.T, topics *snstest.Fake, topicARN, msg string) {
	t.Helper()
	if _, err := topics.Publish(context.Background(), &sns.PublishInput{TopicArn: aws.String(topicARN), Message: aws.String(msg)}); err != nil {
		t.Fatal(err)
	}
}

// A subscription of another account's queue gets nothing until it is
// confirmed.
func TestPendingSubscriptionGetsNothingUntilConfirmed(t *testing.T) {
	queues := sqstest.For(t)
	topics := snstest.For(t, queues, func(o *snstest.Options) { o.AccountID = "111122223333" })
	topic, queue, sub := subscribed(t, queues, topics, nil)
	publish(t, topics, topic, "before")
	if n := len(queues.Messages(queue)); n != 0 {
		t.Fatalf("a pending subscription got %d messages", n)
	}
	if err := topics.Confirm(sub); err != nil {
		t.Fatal(err)
	}
	publish(t, topics, topic, "after")
	if got := queues.Messages(queue); len(got) != 1 || got[0].Body != "after" {
		t.Errorf("once confirmed the queue holds %+v; want the message published after", got)
	}
	if err := topics.Confirm(topic + ":nope"); err == nil {
		t.Error("Confirm of an unknown subscription succeeded")
	}
}
