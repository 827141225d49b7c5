package sqstest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// MustCreateQueue creates a queue with the given attributes (nil for SQS's
// defaults) and returns its URL; it fails t on error.
func (f *Fake) MustCreateQueue(t testing.TB, name string, attrs map[string]string) string {
	t.Helper()
	out, err := f.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		t.Fatalf("sqstest: create queue %s: %v", name, err)
	}
	return aws.ToString(out.QueueUrl)
}

// MustCreateQueueWithDLQ creates a dead-letter queue named name+"-dlq" (before
// a ".fifo" suffix) and a queue named name whose RedrivePolicy sends a
// message there after maxReceiveCount receives. attrs apply to the source
// queue. A FIFO name creates a FIFO pair. It returns both URLs.
func (f *Fake) MustCreateQueueWithDLQ(t testing.TB, name string, maxReceiveCount int, attrs map[string]string) (queueURL, dlqURL string) {
	t.Helper()
	dlqName, fifo := name+"-dlq", false
	if base, ok := strings.CutSuffix(name, ".fifo"); ok {
		dlqName, fifo = base+"-dlq.fifo", true
	}
	var dlqAttrs map[string]string
	if fifo {
		dlqAttrs = map[string]string{"FifoQueue": "true"}
	}
	dlqURL = f.MustCreateQueue(t, dlqName, dlqAttrs)
	src := map[string]string{
		"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":%d}`, f.queueARN(dlqName), maxReceiveCount),
	}
	if fifo {
		src["FifoQueue"] = "true"
	}
	for k, v := range attrs {
		src[k] = v
	}
	return f.MustCreateQueue(t, name, src), dlqURL
}

// MustSend sends one message with body to queueURL and returns its ID; it
// fails t on error. optFns adjust the input before it is sent; a FIFO
// queue's message needs its group (and, without content-based
// deduplication, its deduplication ID):
//
//	f.MustSend(t, url, body, func(in *sqs.SendMessageInput) {
//		in.MessageGroupId, in.MessageDeduplicationId = aws.String("g"), aws.String("1")
//	})
func (f *Fake) MustSend(t testing.TB, queueURL, body string, optFns ...func(*sqs.SendMessageInput)) string {
	t.Helper()
	in := &sqs.SendMessageInput{QueueUrl: aws.String(queueURL), MessageBody: aws.String(body)}
	for _, fn := range optFns {
		fn(in)
	}
	out, err := f.SendMessage(context.Background(), in)
	if err != nil {
		t.Fatalf("sqstest: send to %s: %v", queueURL, err)
	}
	return aws.ToString(out.MessageId)
}

// MessageInfo is a snapshot of one stored message, for assertions.
type MessageInfo struct {
	ID         string
	Body       string
	Attributes map[string]types.MessageAttributeValue
	// State is where the message is in its lifecycle: "visible" (can be
	// received now), "inflight" (received; its visibility timeout runs) or
	// "delayed" (sent with a delay that has not ended).
	State        string
	ReceiveCount int
	Sent         time.Time
	VisibleAt    time.Time // when it becomes (or became) receivable
	GroupID      string
	// DeadLetterSourceARN is the ARN of the queue SQS's redrive moved the
	// message from, when it was dead-lettered by redrive.
	DeadLetterSourceARN string
}

// stateNames are MessageInfo.State's values.
var stateNames = map[msgState]string{stateVisible: "visible", stateInflight: "inflight", stateDelayed: "delayed"}

// Messages returns a snapshot of the queue's messages, in arrival order,
// without receiving any: every message, or with states given, those in one
// of them ("visible", "inflight", "delayed"; see MessageInfo.State). It
// returns nil for an unknown queue. len(f.Messages(url, "visible")) is the
// number of messages a receive could return now.
func (f *Fake) Messages(queueURL string, states ...string) []MessageInfo {
	f.mu.Lock()
	defer f.mu.Unlock()
	q, ok := f.queues[queueURL]
	if !ok {
		return nil
	}
	now := f.now()
	q.expireLocked(now)
	out := make([]MessageInfo, 0, len(q.msgs))
	for _, m := range q.msgs {
		m.settle(now)
		state := stateNames[m.state(now)]
		if len(states) > 0 && !slices.Contains(states, state) {
			continue
		}
		out = append(out, MessageInfo{
			ID: m.id, Body: m.body, Attributes: m.attrs, State: state, ReceiveCount: m.receives,
			Sent: m.sent, VisibleAt: m.visibleAt, GroupID: m.groupID, DeadLetterSourceARN: m.dlqSource,
		})
	}
	return out
}
