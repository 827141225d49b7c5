package fanout_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/fanout"
	"github.com/sqsworker/sqsworker/producer"
	"github.com/sqsworker/sqsworker/sqstest"
)

// receiveAll drains a queue of the fake: body → MessageGroupId.
func receiveAll(t *testing.T, queues *sqstest.Fake, url string) map[string]string {
	t.Helper()
	got := map[string]string{}
	for {
		out, err := queues.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10,
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll}})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			return got
		}
		for _, m := range out.Messages {
			got[aws.ToString(m.Body)] = m.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)]
		}
	}
}

// Publishing is package producer's (producer.NewTopic); these tests send
// through whole chains that Setup made.

// On a standard topic a message's GroupID is its tenant: SNS passes it to
// the subscribed standard queue as MessageGroupId (an SQS fair queue).
// 25 messages take 3 PublishBatch calls.
func TestPublishingSendsTenantAsMessageGroupID(t *testing.T) {
	queues, topics, res := chain(t, "billing", raw)
	p, err := producer.NewTopic(topics, res.TopicARN)
	if err != nil {
		t.Fatal(err)
	}
	var msgs []producer.Message
	want := map[string]string{}
	for i := range 25 {
		m := producer.Message{Body: fmt.Sprintf("job %d", i), GroupID: fmt.Sprintf("tenant-%d", i%3)}
		if i == 24 {
			m.GroupID = "" // no tenant: none arrives
		}
		want[m.Body] = m.GroupID
		msgs = append(msgs, m)
	}
	out, err := p.SendBatch(context.Background(), msgs)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range out {
		if r.MessageID == "" || r.Attempts != 1 || r.Err != nil {
			t.Errorf("result %d = %+v", i, r)
		}
	}
	if st := p.Stats(); st != (producer.Stats{Requests: 3, Sent: 25}) {
		t.Errorf("Stats = %+v, want 3 requests and 25 published", st)
	}
	if got := receiveAll(t, queues, res.Queue.QueueURL); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("queue got body → MessageGroupId %v\nwant %v", got, want)
	}
}

// A FIFO topic needs a group on every message: one without is refused
// before any call, the others arrive in order with their group.
func TestPublishingToAFIFOTopic(t *testing.T) {
	queues, topics, res := chain(t, "ledger.fifo", raw, func(o *fanout.SetupOptions) { o.Topic = "ledger-events.fifo" })
	p, err := producer.NewTopic(topics, res.TopicARN)
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := p.SendBatch(context.Background(), []producer.Message{{Body: "no group", DeduplicationID: "d0"}}); !errors.Is(r[0].Err, producer.ErrInvalid) || !strings.Contains(r[0].Err.Error(), "needs a GroupID") {
		t.Errorf("a FIFO message without a group: %v; want ErrInvalid saying it needs a GroupID", r[0].Err)
	}
	if st := p.Stats(); st.Requests != 0 || st.Failed != 1 {
		t.Errorf("after a refused message: %+v; want no request, 1 failed", st)
	}
	j := producer.JSON[struct{ Step int }](p)
	for i := range 3 {
		r, err := j.Send(context.Background(), struct{ Step int }{i}, producer.WithGroup("account-7", fmt.Sprint("d", i)))
		if err != nil || r.SequenceNumber == "" {
			t.Fatalf("Send step %d: %+v, %v", i, r, err)
		}
	}
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	var got []string
	for {
		out, err := queues.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(res.Queue.QueueURL), MaxNumberOfMessages: 10,
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll}})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			break
		}
		for _, m := range out.Messages {
			got = append(got, aws.ToString(m.Body)+"@"+m.Attributes["MessageGroupId"])
			_, _ = queues.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(res.Queue.QueueURL), ReceiptHandle: m.ReceiptHandle})
		}
	}
	if strings.Join(got, " ") != `{"Step":0}@account-7 {"Step":1}@account-7 {"Step":2}@account-7` {
		t.Errorf("FIFO queue got %v", got)
	}
}
