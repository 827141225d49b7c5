package s3payload_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/fanout"
	"github.com/sqsworker/sqsworker/producer"
	"github.com/sqsworker/sqsworker/s3payload"
	"github.com/sqsworker/sqsworker/sqstest"
	"github.com/sqsworker/sqsworker/sqstest/snstest"
	"github.com/sqsworker/sqsworker/worker"
)

// A producer for an SNS topic offloads as one for a queue does, within
// SNS's 256 KiB: the pointer reaches every subscribed queue, and the
// Store's middleware reads the body back, behind fanout.Unwrap on an
// enveloped subscription.
func TestOffloadThroughATopic(t *testing.T) {
	ctx := t.Context()
	queues := sqstest.For(t)
	topics := snstest.For(t, queues)
	var subscribed []fanout.SetupResult
	for _, q := range []struct {
		name string
		raw  bool
	}{{"fulfilment", true}, {"billing", false}} {
		res, err := fanout.Setup(ctx, topics, queues, fanout.SetupOptions{Topic: "reports", Queue: dlq.SetupOptions{Name: q.name}, RawMessageDelivery: aws.Bool(q.raw)})
		if err != nil {
			t.Fatal(err)
		}
		subscribed = append(subscribed, res)
	}
	s3c := newMemS3()
	store := newStore(t, s3c, func(o *s3payload.Options) { o.Threshold = 256 << 10 })
	p, err := producer.NewTopic(topics, subscribed[0].TopicARN, func(o *producer.Options) { o.Offloader = store })
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("quarterly figures; ", 1<<20/19) // about 1 MiB: four times SNS's limit
	res, err := p.SendBatch(ctx, []producer.Message{{Body: big}, {Body: "small"}})
	if err != nil {
		t.Fatal(err)
	}
	if !res[0].Offloaded || res[1].Offloaded || s3c.count() != 1 {
		t.Fatalf("offloaded %v %v, %d objects; want the large body in S3", res[0].Offloaded, res[1].Offloaded, s3c.count())
	}

	for i, chain := range []worker.Middleware{store.Middleware(), func(h worker.Handler) worker.Handler {
		return worker.Chain(h, fanout.Unwrap(), store.Middleware())
	}} {
		url := subscribed[i].Queue.QueueURL
		out, err := queues.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, MessageAttributeNames: []string{"All"}})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		h := chain(worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			got = append(got, m.Body)
			return nil
		}))
		for _, r := range out.Messages {
			m := &worker.Message{ID: aws.ToString(r.MessageId), Body: aws.ToString(r.Body), MessageAttributes: r.MessageAttributes, Raw: r}
			if err := h.Handle(ctx, m); err != nil {
				t.Fatalf("queue %s: %v", subscribed[i].Queue.QueueURL, err)
			}
		}
		if len(got) != 2 || !(got[0] == big && got[1] == "small" || got[1] == big && got[0] == "small") {
			t.Errorf("queue %d's handler got %d bodies (sizes %v); want the large one and the small one", i, len(got), lens(got))
		}
	}
}

func lens(ss []string) []int {
	var n []int
	for _, s := range ss {
		n = append(n, len(s))
	}
	return n
}
