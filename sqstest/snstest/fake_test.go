package snstest_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"

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

// withDLQ creates the subscription's dead-letter queue "billing-dlq" (the
// topic may send to it) and returns its URL and RedrivePolicy.
func withDLQ(t *testing.T, queues *sqstest.Fake) (string, map[string]string) {
	t.Helper()
	arn := "arn:aws:sqs:us-east-1:000000000000:billing-dlq"
	policy, _, err := queuepolicy.GrantTopic("", arn, "arn:aws:sns:us-east-1:000000000000:orders")
	if err != nil {
		t.Fatal(err)
	}
	url := queues.MustCreateQueue(t, "billing-dlq", map[string]string{"Policy": policy})
	return url, map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"` + arn + `"}`}
}

// A delivery that fails with a server error or throttling is retried on
// SNS's schedule for SQS endpoints (3 at once, then 1 s, 1 s, then
// growing), not dead-lettered.
func TestTransientDeliveryErrorsAreRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		queues := sqstest.For(t)
		topics := snstest.For(t, queues)
		dlq, redrive := withDLQ(t, queues)
		topic, queue, _ := subscribed(t, queues, topics, redrive)
		queues.InjectFault(sqstest.Fault{API: "SendMessage", Code: "RequestThrottled", Times: 5})
		publish(t, topics, topic, "order 1")
		if st := topics.Stats(); st.Waiting != 1 || st.Retried != 3 || st.Delivered != 0 || st.DeadLettered != 0 {
			t.Fatalf("after 4 failed attempts: %+v; want 3 immediate retries made and the delivery waiting", st)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if n := len(queues.Messages(queue)); n != 0 {
			t.Fatalf("delivered after 1 s; the 5th attempt should have failed")
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if got := queues.Messages(queue); len(got) != 1 || got[0].Body != "order 1" {
			t.Fatalf("queue holds %+v after 2 s; want the message", got)
		}
		if st := topics.Stats(); st.Delivered != 1 || st.Retried != 5 || st.Waiting != 0 || st.DeadLettered != 0 || st.Lost != 0 {
			t.Errorf("stats %+v", st)
		}
		if n := len(queues.Messages(dlq)); n != 0 {
			t.Errorf("the subscription's DLQ got %d messages", n)
		}
	})
}

// failingQueue answers every SendMessage to one queue with a server error.
type failingQueue struct {
	*sqstest.Fake
	url string
}

func (q failingQueue) SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	if aws.ToString(in.QueueUrl) == q.url {
		return nil, &smithy.GenericAPIError{Code: "InternalError", Message: "We encountered an internal error.", Fault: smithy.FaultServer}
	}
	return q.Fake.SendMessage(ctx, in, optFns...)
}

// A server error that outlasts the retries sends the message to the
// subscription's dead-letter queue (with 20 retries instead of SNS's
// 100,015 over 23 days: TestRetrySchedule checks those).
func TestDeliveryDeadLetteredWhenRetriesRunOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		queues := sqstest.For(t)
		failing := failingQueue{Fake: queues, url: "https://sqs.us-east-1.amazonaws.com/000000000000/billing"}
		topics := snstest.For(t, failing, func(o *snstest.Options) { o.DeliveryRetries = 20 })
		dlq, redrive := withDLQ(t, queues)
		topic, _, _ := subscribed(t, queues, topics, redrive)
		publish(t, topics, topic, "order 2")
		// 3 at once, 1 s, 1 s, 10 growing to 20 s, then 5 × 20 s: over
		// 100 s in all, under 5 minutes.
		time.Sleep(time.Minute)
		synctest.Wait()
		if st := topics.Stats(); st.Retried >= 20 || st.Waiting != 1 || st.DeadLettered != 0 {
			t.Fatalf("after a minute: %+v; want the delivery still retried", st)
		}
		time.Sleep(4 * time.Minute)
		synctest.Wait()
		if st := topics.Stats(); st.Retried != 20 || st.Waiting != 0 || st.DeadLettered != 1 || st.Lost != 0 {
			t.Errorf("stats %+v; want 20 retries, then the dead-letter queue", st)
		}
		if got := queues.Messages(dlq); len(got) != 1 || got[0].Body != "order 2" {
			t.Errorf("the subscription's DLQ holds %+v", got)
		}
	})
}

// A delivery does not depend on the publisher's context: SNS has taken the
// message once Publish was accepted.
func TestDeliveryOutlivesThePublishContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		queues := sqstest.For(t)
		topics := snstest.For(t, queues)
		topic, queue, _ := subscribed(t, queues, topics, nil)
		queues.InjectFault(sqstest.Fault{API: "SendMessage", Latency: 2 * time.Second})
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if _, err := topics.Publish(ctx, &sns.PublishInput{TopicArn: aws.String(topic), Message: aws.String("order 3")}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if got := queues.Messages(queue); len(got) != 1 {
			t.Errorf("queue holds %d messages; want the delivery made although the publisher's context ended", len(got))
		}
		if st := topics.Stats(); st.Lost != 0 || st.Delivered != 1 {
			t.Errorf("stats %+v", st)
		}
	})
}
