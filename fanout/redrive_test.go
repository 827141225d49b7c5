package fanout_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	snstypes "github.com/aws/aws-sdk-go-v2/service/sns/types"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/fanout"
	"github.com/sqsworker/sqsworker/sqstest"
	"github.com/sqsworker/sqsworker/sqstest/snstest"
)

// undeliverable publishes n messages while the queue's policy refuses the
// topic, so SNS puts each in the subscription's dead-letter queue, as it
// would on AWS; it returns the published bodies.
func undeliverable(t *testing.T, queues *sqstest.Fake, topics *snstest.Fake, res fanout.SetupResult, n int, group func(i int) string) []string {
	t.Helper()
	setQueue(t, queues, res.Queue.QueueURL, map[string]string{"Policy": ""})
	var bodies []string
	for i := range n {
		body := fmt.Sprintf("{\"order\":%d,\"note\":\"ünïcode\\n%d\"}", i, i)
		in := &sns.PublishInput{TopicArn: aws.String(res.TopicARN), Message: aws.String(body), MessageAttributes: map[string]snstypes.MessageAttributeValue{
			"n": {DataType: aws.String("Number"), StringValue: aws.String(fmt.Sprint(i))},
		}}
		if group != nil {
			in.MessageGroupId, in.MessageDeduplicationId = aws.String(group(i)), aws.String(fmt.Sprint("d", i))
		}
		if _, err := topics.Publish(context.Background(), in); err != nil {
			t.Fatal(err)
		}
		bodies = append(bodies, body)
	}
	if st := topics.Stats(); st.DeadLettered != n || len(queues.Messages(res.FanoutDLQURL)) != n {
		t.Fatalf("SNS dead-lettered %d of %d (%+v)", len(queues.Messages(res.FanoutDLQURL)), n, st)
	}
	// The cause is fixed: the queue lets the topic send again.
	setQueue(t, queues, res.Queue.QueueURL, map[string]string{"Policy": grantPolicy(t, res.Queue.QueueARN, res.TopicARN)})
	return bodies
}

// arrived checks the queue holds each body exactly once, with its attribute.
func arrived(t *testing.T, queues *sqstest.Fake, url string, bodies []string) {
	t.Helper()
	var got []string
	for _, m := range queues.Messages(url) {
		got = append(got, m.Body)
		if v := m.Attributes["n"].StringValue; v == nil {
			t.Errorf("message %q lost its attribute", m.Body)
		}
	}
	slices.Sort(got)
	want := slices.Clone(bodies)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("the queue holds %d messages, want the %d published once each, byte for byte", len(got), len(want))
	}
}

func TestRedriveMovesFiftyToTheSubscribedQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		queues, topics, res := chain(t, "fulfilment", raw)
		bodies := undeliverable(t, queues, topics, res, 50, nil)
		r, err := fanout.Redrive(context.Background(), queues, res.Subscription, dlq.RedriveOptions{})
		if err != nil || r.Moved != 50 || r.Method != "manual" {
			t.Fatalf("Redrive = %+v, %v", r, err)
		}
		arrived(t, queues, res.Queue.QueueURL, bodies)
		if n := len(queues.Messages(res.FanoutDLQURL)); n != 0 {
			t.Errorf("%d left behind", n)
		}
		if st := topics.Stats(); st.Delivered != 0 {
			t.Errorf("the redrive went through the topic (%d deliveries)", st.Delivered)
		}
	})
}

func TestRedriveInterruptedHalfwayThenRerun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		queues, topics, res := chain(t, "fulfilment", raw)
		bodies := undeliverable(t, queues, topics, res, 50, nil)
		ctx, cancel := context.WithCancel(context.Background())
		moved := 0
		_, err := fanout.Redrive(ctx, queues, res.Subscription, dlq.RedriveOptions{Rate: 20, OnMessage: func(_ dlq.Message, a string, _ error) {
			if a == "moved" {
				if moved++; moved == 25 {
					cancel()
				}
			}
		}})
		if err == nil || !errors.Is(err, context.Canceled) {
			t.Fatalf("interrupted redrive returned %v", err)
		}
		if in, left := len(queues.Messages(res.Queue.QueueURL)), len(queues.Messages(res.FanoutDLQURL)); in+left != 50 || in < 25 {
			t.Fatalf("after the interruption: %d in the queue, %d in the DLQ", in, left)
		}
		if _, err := fanout.Redrive(context.Background(), queues, res.Subscription, dlq.RedriveOptions{}); err != nil {
			t.Fatal(err)
		}
		arrived(t, queues, res.Queue.QueueURL, bodies)
		if n := len(queues.Messages(res.FanoutDLQURL)); n != 0 {
			t.Errorf("%d left behind", n)
		}
	})
}

func TestRedriveFIFOKeepsGroups(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		queues, topics, res := chain(t, "ledger", raw, func(o *fanout.SetupOptions) { o.Topic = "rental-orders.fifo" })
		undeliverable(t, queues, topics, res, 6, func(i int) string { return fmt.Sprint("car-", i%2) })
		if _, err := fanout.Redrive(context.Background(), queues, res.Subscription, dlq.RedriveOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, m := range queues.Messages(res.Queue.QueueURL) {
			if m.GroupID != "car-0" && m.GroupID != "car-1" {
				t.Errorf("message %q lost its group (%q)", m.Body, m.GroupID)
			}
		}
		if n := len(queues.Messages(res.Queue.QueueURL)); n != 6 {
			t.Errorf("%d of 6 moved", n)
		}
	})
}

func TestRedriveRefusesMoveTasks(t *testing.T) {
	queues, _, res := chain(t, "fulfilment")
	if _, err := fanout.Redrive(context.Background(), queues, res.Subscription, dlq.RedriveOptions{Method: "move-task"}); !errors.Is(err, fanout.ErrMoveTaskUnsupported) {
		t.Errorf("move task: %v", err)
	}
}
