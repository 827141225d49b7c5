package deadletter

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/harness/sqsmsg"
	"github.com/sqsworker/sqsworker/harness/testenv"
)

// These tests run against the local SQS emulator (fauxqs, started by
// localstack/start.sh) or whatever AWS_ENDPOINT_URL_SQS names.

func integrationContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// integrationPair creates a queue called name (with ".fifo" for a FIFO
// pair) and its dead-letter queue with EnsureQueue, links them with a
// RedrivePolicy and discovers the pair.
func integrationPair(t *testing.T, c *sqs.Client, name string, fifo bool) Target {
	t.Helper()
	ctx := integrationContext(t)
	dlqName := DefaultDLQName(name)
	_, dlqAttrs, _, err := EnsureQueue(ctx, c, QueueSpec{Resource: "dead-letter queue", Name: dlqName, FIFO: fifo})
	if err != nil {
		t.Fatal(err)
	}
	policy := `{"deadLetterTargetArn":"` + dlqAttrs[AttrQueueArn] + `","maxReceiveCount":5}`
	url, _, _, err := EnsureQueue(ctx, c, QueueSpec{Resource: "queue", Name: name, FIFO: fifo, Set: map[string]string{AttrRedrivePolicy: policy}})
	if err != nil {
		t.Fatal(err)
	}
	target, err := Discover(ctx, c, url)
	if err != nil {
		t.Fatal(err)
	}
	return target
}

func TestIntegrationMove(t *testing.T) {
	c := testenv.SQS(t)
	ctx := integrationContext(t)
	target := integrationPair(t, c, testenv.UniqueName("dlq-move"), false)
	_, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(target.SourceURL), MessageBody: aws.String("pay 42"), MessageAttributes: sqsmsg.UserAttributes(3)})
	if err != nil {
		t.Fatal(err)
	}
	msg := sqsmsg.ReceiveOne(t, c, target.SourceURL)
	if err := mustMover(t, c, target).Move(ctx, msg, Provenance{Error: "card declined", Handler: "billing", Attempt: 4}); err != nil {
		t.Fatalf("Move: %v", err)
	}

	dead := sqsmsg.ReceiveOne(t, c, target.DLQURL)
	if aws.ToString(dead.Body) != "pay 42" {
		t.Errorf("body = %q", aws.ToString(dead.Body))
	}
	p, ok := ParseProvenance(dead.MessageAttributes)
	if !ok || p.Error != "card declined" || p.Handler != "billing" || p.Attempt != 4 || p.SourceQueue != target.SourceURL || p.FailedAt.IsZero() || p.FirstReceived.IsZero() {
		t.Errorf("provenance = %+v (found %v)", p, ok)
	}
	for name := range sqsmsg.UserAttributes(3) {
		if _, ok := dead.MessageAttributes[name]; !ok {
			t.Errorf("user attribute %s lost", name)
		}
	}
	c0, err := GetAttributes(ctx, c, target.SourceURL, AttrVisible, AttrNotVisible, AttrDelayed)
	if err != nil || IntAttr(c0, AttrVisible)+IntAttr(c0, AttrNotVisible)+IntAttr(c0, AttrDelayed) != 0 {
		t.Errorf("source counts = %+v, %v; want empty", c0, err)
	}
}

func TestIntegrationMoveFIFO(t *testing.T) {
	c := testenv.SQS(t)
	ctx := integrationContext(t)
	target := integrationPair(t, c, testenv.UniqueName("dlq-move")+".fifo", true)
	_, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(target.SourceURL), MessageBody: aws.String("x"),
		MessageGroupId: aws.String("customer-1"), MessageDeduplicationId: aws.String("d1")})
	if err != nil {
		t.Fatal(err)
	}
	msg := sqsmsg.ReceiveOne(t, c, target.SourceURL)
	if err := mustMover(t, c, target).Move(ctx, msg, Provenance{Error: "boom"}); err != nil {
		t.Fatalf("Move: %v", err)
	}
	dead := sqsmsg.ReceiveOne(t, c, target.DLQURL)
	if g := dead.Attributes["MessageGroupId"]; g != "customer-1" {
		t.Errorf("group = %q", g)
	}
	if d := dead.Attributes["MessageDeduplicationId"]; d != moveDeduplicationID(target.SourceARN, aws.ToString(msg.MessageId)) {
		t.Errorf("deduplication ID = %q", d)
	}
}

// On the emulator, a DLQ of 256 KiB behind a queue of 1 MiB: Move of a
// 300 KiB message refuses with ErrTooLarge and keeps it; with an offloader
// the pointer copy and its reason reach the DLQ.
func TestIntegrationMoveTooLargeForTheDLQ(t *testing.T) {
	c := testenv.SQS(t)
	ctx := integrationContext(t)
	res := integrationPair(t, c, testenv.UniqueName("dlq-size"), false)
	for _, u := range []string{res.SourceURL, res.DLQURL} {
		t.Cleanup(func() { _, _ = c.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(u)}) })
	}
	if _, err := c.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(res.SourceURL), Attributes: map[string]string{AttrMaxMessageSize: "1048576"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(res.DLQURL), Attributes: map[string]string{AttrMaxMessageSize: "262144"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(res.SourceURL), MessageBody: aws.String(strings.Repeat("x", 300<<10))}); err != nil {
		t.Fatalf("sending 300 KiB to the 1 MiB queue: %v", err)
	}
	target, err := Discover(ctx, c, res.SourceURL)
	if err != nil {
		t.Fatal(err)
	}
	if target.MaxMessageSize != 256<<10 || target.SourceMaxMessageSize != 1<<20 {
		t.Fatalf("Discover sizes %d / %d", target.MaxMessageSize, target.SourceMaxMessageSize)
	}
	msg := sqsmsg.ReceiveOne(t, c, res.SourceURL)
	log, _ := logBuffer()
	m, err := NewMover(c, target, func(o *Options) { o.Logger = log })
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Move(ctx, msg, permanent); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Move without an offloader: %v; want ErrTooLarge", err)
	}
	off := &memOffloader{}
	m, _ = NewMover(c, target, func(o *Options) { o.Logger = log; o.Offloader = off })
	if err := m.Move(ctx, msg, permanent); err != nil {
		t.Fatalf("Move with an offloader: %v", err)
	}
	dead := sqsmsg.ReceiveOne(t, c, res.DLQURL)
	if p, ok := ParseProvenance(dead.MessageAttributes); aws.ToString(dead.Body) != "pointer:obj0" || !ok || p.Error != permanent.Error {
		t.Errorf("DLQ copy %q with provenance %+v", aws.ToString(dead.Body), p)
	}
}
