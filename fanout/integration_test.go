package fanout_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	snstypes "github.com/aws/aws-sdk-go-v2/service/sns/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/fanout"
	"github.com/sqsworker/sqsworker/harness/conformance"
	"github.com/sqsworker/sqsworker/harness/testenv"
	"github.com/sqsworker/sqsworker/producer"
	"github.com/sqsworker/sqsworker/worker"
)

// These run against the emulator (fauxqs serves SNS too).

func integrationSetup(t *testing.T, ctx context.Context, topics *sns.Client, queues *sqs.Client, o fanout.SetupOptions) fanout.SetupResult {
	t.Helper()
	res, err := fanout.Setup(ctx, topics, queues, o)
	if err != nil {
		t.Fatalf("fanout.Setup: %v", err)
	}
	t.Cleanup(func() {
		for _, u := range []string{res.Queue.QueueURL, res.Queue.DLQURL, res.FanoutDLQURL} {
			_, _ = queues.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(u)})
		}
	})
	return res
}

func TestIntegrationSetupTwiceChangesNothing(t *testing.T) {
	queues, topics := testenv.SQS(t), testenv.SNS(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	o := fanout.SetupOptions{Topic: testenv.UniqueName("rental-orders"), RawMessageDelivery: aws.Bool(true), FilterPolicy: `{"order-status":["confirmed"]}`}
	o.Queue.Name = testenv.UniqueName("fulfilment")
	first := integrationSetup(t, ctx, topics, queues, o)
	if len(first.Changes) < 6 {
		t.Errorf("first setup: %v", first.Changes)
	}
	again := integrationSetup(t, ctx, topics, queues, o)
	if len(again.Changes) != 0 || again.Subscription.ARN != first.Subscription.ARN {
		t.Errorf("second setup changed %v", again.Changes)
	}
	if fs, err := fanout.Lint(ctx, topics, queues, first.Queue.QueueURL, fanout.LintOptions{Delivery: fanout.DeliveryRaw}); err != nil || len(fs) != 0 {
		t.Errorf("Lint of the chain: %+v, %v", fs, err)
	}
}

// TestIntegrationFanOutToWorkers: one topic, a raw subscription and an
// enveloped one with a filter policy; 100 published messages with
// attributes; workers on both queues see the published bodies and
// attributes, and the filtered queue only what its policy accepts.
func TestIntegrationFanOutToWorkers(t *testing.T) {
	queues, topics := testenv.SQS(t), testenv.SNS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	topic := testenv.UniqueName("rental-orders")
	rawQ := integrationSetup(t, ctx, topics, queues, fanout.SetupOptions{Topic: topic, Queue: dlq.SetupOptions{Name: testenv.UniqueName("fulfilment")}, RawMessageDelivery: aws.Bool(true)})
	envQ := integrationSetup(t, ctx, topics, queues, fanout.SetupOptions{Topic: topic, Queue: dlq.SetupOptions{Name: testenv.UniqueName("billing")},
		FilterPolicy: `{"order-status":["confirmed","canceled"]}`})

	statuses := []string{"confirmed", "canceled", "pending", "confirmed"}
	want := map[string]string{} // body → status
	for i := range 100 {
		body := fmt.Sprintf(`{"order":%d,"car":"c-%d"}`, i, i%7)
		st := statuses[i%len(statuses)]
		want[body] = st
		if _, err := topics.Publish(ctx, &sns.PublishInput{TopicArn: aws.String(rawQ.TopicARN), Message: aws.String(body), MessageAttributes: map[string]snstypes.MessageAttributeValue{
			"order-status": {DataType: aws.String("String"), StringValue: aws.String(st)},
			"order":        {DataType: aws.String("Number"), StringValue: aws.String(strconv.Itoa(i))},
		}}); err != nil {
			t.Fatal(err)
		}
	}
	run := func(url string, h worker.Handler, n int, count func() int) {
		t.Helper()
		w, err := worker.New(queues, url, h, func(o *worker.Options) { o.Logger = quiet; o.WaitTime = time.Second })
		if err != nil {
			t.Fatal(err)
		}
		rctx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- w.Run(rctx) }()
		for deadline := time.Now().Add(30 * time.Second); count() < n && time.Now().Before(deadline); {
			time.Sleep(20 * time.Millisecond)
		}
		time.Sleep(1500 * time.Millisecond) // a filtered-out message would arrive by now
		stop()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	type got struct {
		body, status string
		sns          *worker.SNSMetadata
	}
	collect := func(mu *sync.Mutex, into *[]got) worker.Handler {
		return worker.HandlerFunc(func(_ context.Context, m *worker.Message) error {
			mu.Lock()
			defer mu.Unlock()
			*into = append(*into, got{m.Body, aws.ToString(m.MessageAttributes["order-status"].StringValue), m.SNS})
			return nil
		})
	}
	var mu sync.Mutex
	var rawGot, envGot []got
	count := func(s *[]got) func() int {
		return func() int { mu.Lock(); defer mu.Unlock(); return len(*s) }
	}
	run(rawQ.Queue.QueueURL, collect(&mu, &rawGot), 100, count(&rawGot))
	run(envQ.Queue.QueueURL, worker.Chain(collect(&mu, &envGot), fanout.Unwrap()), 75, count(&envGot))

	check := func(name string, gs []got, filtered bool) {
		t.Helper()
		seen := map[string]bool{}
		for _, g := range gs {
			if want[g.body] == "" || seen[g.body] || want[g.body] != g.status {
				t.Errorf("%s: unexpected %q (status %q)", name, g.body, g.status)
			}
			seen[g.body] = true
			if filtered && (g.sns == nil || g.sns.TopicARN != rawQ.TopicARN || g.sns.MessageID == "") {
				t.Errorf("%s: no SNS metadata on %q", name, g.body)
			}
		}
		n := 0
		for _, st := range want {
			if !filtered || st != "pending" {
				n++
			}
		}
		if len(seen) != n {
			t.Errorf("%s: the handler saw %d distinct messages, want %d", name, len(seen), n)
		}
	}
	check("raw", rawGot, false)
	check("enveloped, filtered", envGot, true)
}

// TestIntegrationRedriveFanoutDLQ: 50 messages in a subscription's
// dead-letter queue, put there the way SNS does (the envelope the queue
// would have got; fauxqs never fails a delivery itself), redriven to the
// subscribed queue, interrupted halfway and run again: each arrives once,
// byte for byte, and the worker unwraps them.
func TestIntegrationRedriveFanoutDLQ(t *testing.T) {
	queues, topics := testenv.SQS(t), testenv.SNS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res := integrationSetup(t, ctx, topics, queues, fanout.SetupOptions{Topic: testenv.UniqueName("rental-orders"), Queue: dlq.SetupOptions{Name: testenv.UniqueName("fulfilment")}})
	var bodies []string
	for i := range 50 {
		env, _ := json.Marshal(map[string]any{
			"Type": "Notification", "MessageId": fmt.Sprintf("sns-%d", i), "TopicArn": res.TopicARN, "Message": fmt.Sprintf(`{"order":%d}`, i),
			"Timestamp": time.Now().UTC().Format(time.RFC3339Nano), "SignatureVersion": "1", "Signature": "x", "SigningCertURL": "https://example.invalid/cert.pem",
			"UnsubscribeURL": "https://example.invalid/unsubscribe", "MessageAttributes": map[string]any{"order-status": map[string]string{"Type": "String", "Value": "confirmed"}},
		})
		bodies = append(bodies, string(env))
		if _, err := queues.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(res.FanoutDLQURL), MessageBody: aws.String(string(env))}); err != nil {
			t.Fatal(err)
		}
	}
	rctx, interrupt := context.WithCancel(ctx)
	moved := 0
	_, err := fanout.Redrive(rctx, queues, res.Subscription, dlq.RedriveOptions{Rate: 50, OnMessage: func(_ dlq.Message, a string, _ error) {
		if a == "moved" {
			if moved++; moved == 25 {
				interrupt()
			}
		}
	}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted redrive: %v", err)
	}
	if r, err := fanout.Redrive(ctx, queues, res.Subscription, dlq.RedriveOptions{}); err != nil || r.Moved+moved < 50 {
		t.Fatalf("second redrive: %+v, %v", r, err)
	}
	// Drain waits for messages a lost receive response hid.
	var got []string
	h := worker.Chain(worker.HandlerFunc(func(context.Context, *worker.Message) error { return nil }), fanout.Unwrap())
	for _, m := range testenv.Drain(t, queues, res.Queue.QueueURL) {
		got = append(got, aws.ToString(m.Body))
		// The worker's Unwrap takes the redriven envelope as SNS's own.
		if err := h.Handle(ctx, &worker.Message{Body: aws.ToString(m.Body)}); err != nil {
			t.Errorf("Unwrap of a redriven message: %v", err)
		}
	}
	slices.Sort(got)
	slices.Sort(bodies)
	if !slices.Equal(got, bodies) {
		t.Errorf("the queue got %d messages; want the 50 envelopes once each, byte for byte", len(got))
	}
	if c, _ := dlq.Count(ctx, queues, res.FanoutDLQURL); c.Total() != 0 {
		t.Errorf("left in the subscription's DLQ: %+v", c)
	}
}

// TestIntegrationPublisherTenants publishes 25 messages of three tenants
// through a producer for the topic (producer.NewTopic) on the emulator: topic → raw subscription →
// queue. Every message arrives, and with it its tenant as MessageGroupId
// — unless the backend declares that it drops a standard topic's groups
// (conformance.QuirkSNSNoStandardMessageGroupId: fauxqs 1.9.2), which
// snstest, held to the same suite, does not.
func TestIntegrationPublisherTenants(t *testing.T) {
	queues, topics := testenv.SQS(t), testenv.SNS(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res := integrationSetup(t, ctx, topics, queues, fanout.SetupOptions{Topic: testenv.UniqueName("tenant-events"),
		Queue: dlq.SetupOptions{Name: testenv.UniqueName("tenant-jobs")}, RawMessageDelivery: aws.Bool(true)})
	p, err := producer.NewTopic(topics, res.TopicARN)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	var msgs []producer.Message
	for i := range 25 {
		m := producer.Message{Body: fmt.Sprintf("job %d", i), GroupID: fmt.Sprintf("tenant-%d", i%3)}
		want[m.Body] = m.GroupID
		msgs = append(msgs, m)
	}
	if _, err := p.SendBatch(ctx, msgs); err != nil {
		t.Fatal(err)
	}
	if st := p.Stats(); st.Requests != 3 || st.Sent != 25 {
		t.Errorf("Stats = %+v; want 3 requests, 25 published", st)
	}
	got := map[string]string{}
	for tries := 0; tries < 10 && len(got) < len(want); tries++ {
		out, err := queues.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(res.Queue.QueueURL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll}})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range out.Messages {
			got[aws.ToString(m.Body)] = m.Attributes[string(sqstypes.MessageSystemAttributeNameMessageGroupId)]
			_, _ = queues.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(res.Queue.QueueURL), ReceiptHandle: m.ReceiptHandle})
		}
	}
	if conformance.SNSQuirksFor(testenv.Get(t).Backend)[conformance.QuirkSNSNoStandardMessageGroupId] {
		t.Logf("QUIRK %s: the groups do not arrive; checking the messages only", conformance.QuirkSNSNoStandardMessageGroupId)
		for body := range want {
			want[body] = ""
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("queue got body → MessageGroupId %v\nwant %v", got, want)
	}
}
