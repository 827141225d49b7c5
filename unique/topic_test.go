package unique_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/fanout"
	"github.com/sqsworker/sqsworker/harness/testenv"
	"github.com/sqsworker/sqsworker/producer"
	"github.com/sqsworker/sqsworker/unique"
	"github.com/sqsworker/sqsworker/worker"
)

// Unique keys through a topic (producer.NewTopic), on the SNS and SQS
// emulator: the key travels as a message attribute of the publish, so it
// reaches a raw subscription's messages as they are and an enveloped
// one's through fanout.Unwrap.
//
//   - Until settled, one subscribed queue (enveloped, its consumer
//     unwrapping): a second publish while the job waits is refused and
//     never published; the consumer's settlement frees the key; a publish
//     after it is accepted.
//   - For a period, two subscribed queues (one raw, one enveloped): one
//     publish per window, and each queue gets exactly that one.
func TestEmulatorUniqueThroughATopic(t *testing.T) {
	e := newEmulator(t, false)
	topics := testenv.SNS(t)
	ctx := t.Context()
	setup := func(topic, queue string, raw bool) fanout.SetupResult {
		t.Helper()
		res, err := fanout.Setup(ctx, topics, e.sqs, fanout.SetupOptions{
			Topic: topic, Queue: dlq.SetupOptions{Name: queue, VisibilityTimeout: 10 * time.Second}, RawMessageDelivery: aws.Bool(raw),
		})
		if err != nil {
			t.Fatalf("fanout.Setup %s → %s: %v", topic, queue, err)
		}
		return res
	}
	store, _ := e.process(t)

	t.Run("until settled, one subscription", func(t *testing.T) {
		sub := setup(testenv.UniqueName("uqtopic"), testenv.UniqueName("uqsub"), false)
		p, err := producer.NewTopic(topics, sub.TopicARN)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close(context.Background())
		k := unique.Key{Name: testenv.UniqueName("report")}
		if _, err := store.Send(ctx, p, k, producer.Message{Body: "first"}); err != nil {
			t.Fatal(err)
		}
		if _, err := store.Send(ctx, p, k, producer.Message{Body: "second"}); !errors.Is(err, unique.ErrDuplicate) {
			t.Fatalf("a second publish while the job waits: %v, want ErrDuplicate", err)
		}
		e.src = sub.Queue.QueueURL
		released := store.Stats().Released
		var bodies []string
		e.run(t, store, func(ctx context.Context, m *worker.Message) error {
			return worker.Chain(worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
				bodies = append(bodies, m.Body)
				return nil
			}), fanout.Unwrap()).Handle(ctx, m)
		}, func() bool { return store.Stats().Released == released+1 })
		if len(bodies) != 1 || bodies[0] != "first" {
			t.Errorf("the subscribed queue's consumer ran %q; want only the first publish", bodies)
		}
		if _, err := store.Send(ctx, p, k, producer.Message{Body: "third"}); err != nil {
			t.Errorf("a publish after the job was settled: %v", err)
		}
	})

	t.Run("for a period, two subscriptions", func(t *testing.T) {
		topic := testenv.UniqueName("uqtopic")
		subs := []fanout.SetupResult{setup(topic, testenv.UniqueName("uqraw"), true), setup(topic, testenv.UniqueName("uqenv"), false)}
		p, err := producer.NewTopic(topics, subs[0].TopicARN)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close(context.Background())
		k := unique.Key{Name: testenv.UniqueName("digest"), For: time.Minute}
		for i := range 3 {
			_, err := store.Send(ctx, p, k, producer.Message{Body: "digest"})
			if (i == 0) != (err == nil) || (i > 0 && !errors.Is(err, unique.ErrDuplicate)) {
				t.Fatalf("publish %d within the window: %v", i, err)
			}
		}
		time.Sleep(time.Second) // SNS delivers asynchronously
		for _, s := range subs {
			if got := testenv.Drain(t, e.sqs, s.Queue.QueueURL); len(got) != 1 {
				t.Errorf("queue %s got %d messages, want 1", s.Queue.QueueURL, len(got))
			}
		}
	})
}
