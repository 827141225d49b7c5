package fanout_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/fanout"
	"github.com/sqsworker/sqsworker/internal/deadletter"
	"github.com/sqsworker/sqsworker/queueref"
	"github.com/sqsworker/sqsworker/sqstest"
	"github.com/sqsworker/sqsworker/sqstest/snstest"
)

func changeList(cs []dlq.Change) string {
	var out []string
	for _, c := range cs {
		out = append(out, c.String())
	}
	return strings.Join(out, "\n")
}

func TestSetupCreatesTheChainOnceThenChangesNothing(t *testing.T) {
	queues := sqstest.For(t)
	topics := snstest.For(t, queues)
	res := setupChain(t, topics, queues, "fulfilment")
	want := `created dead-letter queue fulfilment-dlq
created queue fulfilment
created topic rental-orders
created subscription dead-letter queue fulfilment-fanout-dlq
queue fulfilment: Policy (not set) → statement sqsworker-sns-rental-orders lets topic rental-orders send
subscription dead-letter queue fulfilment-fanout-dlq: Policy (not set) → statement sqsworker-sns-rental-orders lets topic rental-orders send
created subscription ` + res.Subscription.ARN
	if got := changeList(res.Changes); got != want {
		t.Errorf("changes:\n%s\nwant:\n%s", got, want)
	}
	if res.Subscription.DLQARN != res.FanoutDLQARN || res.Subscription.Raw || res.Subscription.QueueARN != res.Queue.QueueARN || res.TopicARN != "arn:aws:sns:us-east-1:000000000000:rental-orders" {
		t.Errorf("result %+v", res)
	}
	again := setupChain(t, topics, queues, "fulfilment")
	if len(again.Changes) != 0 || again.Subscription.ARN != res.Subscription.ARN || again.FanoutDLQURL != res.FanoutDLQURL {
		t.Errorf("second setup changed: %s", changeList(again.Changes))
	}
	// The chain delivers, and a delivery SNS cannot make is dead-lettered.
	publish(t, topics, res.TopicARN, "order 1", nil)
	if n := len(queues.Messages(res.Queue.QueueURL)); n != 1 {
		t.Errorf("the queue got %d messages", n)
	}
	if _, err := queues.SetQueueAttributes(context.Background(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(res.Queue.QueueURL), Attributes: map[string]string{"Policy": ""}}); err != nil {
		t.Fatal(err)
	}
	publish(t, topics, res.TopicARN, "order 2", nil)
	if d := queues.Messages(res.FanoutDLQURL); len(d) != 1 || !strings.Contains(d[0].Body, `"Message":"order 2"`) {
		t.Errorf("fan-out DLQ holds %+v", d)
	}
	// Setup puts the grant back.
	if fixed := setupChain(t, topics, queues, "fulfilment"); changeList(fixed.Changes) != "queue fulfilment: Policy (not set) → statement sqsworker-sns-rental-orders lets topic rental-orders send" {
		t.Errorf("repair: %s", changeList(fixed.Changes))
	}
}

func TestSetupChangesOnlyWhatIsAsked(t *testing.T) {
	queues, topics, res := chain(t, "billing")
	filter := `{"order-status":["confirmed","canceled"]}`
	again := setupChain(t, topics, queues, "billing", raw, func(o *fanout.SetupOptions) { o.FilterPolicy = filter })
	want := "subscription " + res.Subscription.ARN + ": RawMessageDelivery false → true\nsubscription " + res.Subscription.ARN + ": FilterPolicy (not set) → " + filter
	if got := changeList(again.Changes); got != want {
		t.Errorf("changes:\n%s\nwant:\n%s", got, want)
	}
	if !again.Subscription.Raw || again.Subscription.FilterPolicy != filter {
		t.Errorf("subscription %+v", again.Subscription)
	}
	// Without the options, they stay.
	if kept := setupChain(t, topics, queues, "billing"); len(kept.Changes) != 0 || !kept.Subscription.Raw {
		t.Errorf("a setup without options changed %s", changeList(kept.Changes))
	}
}

func TestSetupFIFOTopicMakesFIFOQueuesThroughout(t *testing.T) {
	queues := sqstest.For(t)
	topics := snstest.For(t, queues)
	res := setupChain(t, topics, queues, "ledger", func(o *fanout.SetupOptions) { o.Topic = "rental-orders.fifo" })
	if !res.FIFO || !strings.HasSuffix(res.Queue.QueueURL, "/ledger.fifo") || !strings.HasSuffix(res.Queue.DLQURL, "/ledger-dlq.fifo") ||
		!strings.HasSuffix(res.FanoutDLQURL, "/ledger-fanout-dlq.fifo") || !strings.HasSuffix(res.TopicARN, ":rental-orders.fifo") || res.Queue.MaxReceiveCount != deadletter.DefaultFIFOMaxReceiveCount {
		t.Errorf("FIFO chain %+v", res)
	}
	if _, err := fanout.Setup(context.Background(), topics, queues, fanout.SetupOptions{Topic: "plain", Queue: dlq.SetupOptions{Name: "x.fifo"}}); err == nil {
		t.Error("a FIFO queue on a standard topic was accepted")
	}
}

func TestSetupKeepsTheSubscriptionsDLQAndRefusesToLower(t *testing.T) {
	queues, topics, res := chain(t, "fulfilment", func(o *fanout.SetupOptions) { o.FanoutDLQName = "custom-dlq" })
	if queueref.Name(res.FanoutDLQURL) != "custom-dlq" {
		t.Fatalf("fan-out DLQ %s", res.FanoutDLQURL)
	}
	if again := setupChain(t, topics, queues, "fulfilment"); again.FanoutDLQURL != res.FanoutDLQURL || len(again.Changes) != 0 {
		t.Errorf("the subscription's DLQ was not kept: %s, %s", again.FanoutDLQURL, changeList(again.Changes))
	}
	_, err := fanout.Setup(context.Background(), topics, queues, fanout.SetupOptions{Topic: "rental-orders", Queue: dlq.SetupOptions{Name: "fulfilment"}, FanoutDLQRetention: 24 * 60 * 60 * 1e9})
	if !errors.Is(err, dlq.ErrWouldLower) {
		t.Errorf("lowering the fan-out DLQ's retention: %v", err)
	}
}

func TestSetupValidatesOptions(t *testing.T) {
	queues := sqstest.For(t)
	topics := snstest.For(t, queues)
	for _, o := range []fanout.SetupOptions{
		{Queue: dlq.SetupOptions{Name: "q"}},
		{Topic: "t"},
		{Topic: "t", Queue: dlq.SetupOptions{Name: "q"}, FilterPolicy: "[1]"},
		{Topic: "t", Queue: dlq.SetupOptions{Name: "q"}, FilterPolicyScope: "Body"},
		{Topic: "arn:aws:sqs:us-east-1:0:q", Queue: dlq.SetupOptions{Name: "q"}},
		{Topic: "t", Queue: dlq.SetupOptions{Name: "q"}, FilterPolicy: `{"order-status":"confirmed"}`},
		{Topic: "t", Queue: dlq.SetupOptions{Name: "q"}, FilterPolicy: `{"order":{"status":["x"]}}`, FilterPolicyScope: "MessageAttributes"},
		{Topic: "bad topic", Queue: dlq.SetupOptions{Name: "q"}},
		{Topic: "t", Queue: dlq.SetupOptions{Name: "bad queue"}},
		{Topic: "t", Queue: dlq.SetupOptions{Name: "q"}, FanoutDLQName: "q.dead"},
	} {
		if _, err := fanout.Setup(context.Background(), topics, queues, o); err == nil {
			t.Errorf("Setup(%+v) accepted", o)
		}
	}
	if n := queues.Requests(); len(n) != 0 {
		t.Errorf("invalid options made SQS calls: %v", n)
	}
}

// Setup says a subscription is pending instead of subscribing again: SNS
// lists it without an ARN, so its settings can be neither read nor set.
func TestSetupSaysSubscriptionIsPending(t *testing.T) {
	queues, topics, res := pendingChain(t, "fulfilment")
	o := fanout.SetupOptions{Topic: res.TopicARN} // the topic is in another account
	o.Queue.Name = "fulfilment"
	again, err := fanout.Setup(context.Background(), topics, queues, o)
	if !errors.Is(err, fanout.ErrSubscriptionPending) || !strings.Contains(err.Error(), "ConfirmSubscription") {
		t.Fatalf("Setup of a pending subscription: %v; want ErrSubscriptionPending saying how to confirm", err)
	}
	if again.Queue.QueueURL != res.Queue.QueueURL || again.FanoutDLQURL != res.FanoutDLQURL {
		t.Errorf("result so far %+v; want the queues", again)
	}
	list, err := topics.ListSubscriptionsByTopic(context.Background(), &sns.ListSubscriptionsByTopicInput{TopicArn: aws.String(res.TopicARN)})
	if err != nil || len(list.Subscriptions) != 1 {
		t.Fatalf("topic has %d subscriptions (%v); want the one pending", len(list.Subscriptions), err)
	}
	if err := topics.Confirm(res.Subscription.ARN); err != nil {
		t.Fatal(err)
	}
	if again, err = fanout.Setup(context.Background(), topics, queues, o); err != nil || again.Subscription.ARN != res.Subscription.ARN || len(again.Changes) != 0 {
		t.Errorf("Setup once confirmed: %+v, %v; want the subscription unchanged", again, err)
	}
}

// Setup on a queue whose policy lets everyone send adds the statement
// scoped to the topic, keeps the open one (other senders may rely on it),
// and says the queue is open; once the open statement is removed, SNS
// still delivers.
func TestSetupScopesAndReportsAnOpenQueuePolicy(t *testing.T) {
	queues := sqstest.For(t)
	topics := snstest.For(t, queues)
	url := queues.MustCreateQueue(t, "billing", nil)
	arn := "arn:aws:sqs:us-east-1:000000000000:billing"
	setQueue(t, queues, url, map[string]string{"Policy": openPolicy(arn)})
	res := setupChain(t, topics, queues, "billing")
	if !strings.Contains(changeList(res.Changes), "queue billing: Policy") {
		t.Errorf("no statement added to the open policy: %s", changeList(res.Changes))
	}
	if len(res.Findings) != 1 || res.Findings[0].Code != "queue-policy-open" || !strings.Contains(res.Findings[0].Message, "queue billing's policy lets everyone send") || res.Findings[0].Fix == "" {
		t.Fatalf("findings %+v", res.Findings)
	}
	a, err := queues.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{"Policy"}})
	if err != nil || !strings.Contains(a.Attributes["Policy"], `"Sid":"anyone"`) {
		t.Fatalf("open statement not kept: %v %v", a, err)
	}
	// Again: nothing to change, still reported.
	again := setupChain(t, topics, queues, "billing")
	if len(again.Changes) != 0 || len(again.Findings) != 1 {
		t.Errorf("second setup: changes %s, findings %+v", changeList(again.Changes), again.Findings)
	}
	// The owner removes the open statement: SNS still delivers.
	var doc map[string]any
	if err := json.Unmarshal([]byte(a.Attributes["Policy"]), &doc); err != nil {
		t.Fatal(err)
	}
	doc["Statement"] = doc["Statement"].([]any)[1:]
	closed, _ := json.Marshal(doc)
	setQueue(t, queues, url, map[string]string{"Policy": string(closed)})
	publish(t, topics, res.TopicARN, "order 1", nil)
	if n := len(queues.Messages(url)); n != 1 {
		t.Errorf("the queue got %d messages", n)
	}
	if clean := setupChain(t, topics, queues, "billing"); len(clean.Findings) != 0 {
		t.Errorf("findings on a closed policy: %+v", clean.Findings)
	}
}
