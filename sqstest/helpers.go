package sqstest

import (
	"context"
	"fmt"
	"strconv"
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
// fails t on error. For FIFO queues pass the group ID with SendGroup.
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

// SendGroup sets a FIFO message's group ID and deduplication ID for MustSend.
func SendGroup(groupID, dedupID string) func(*sqs.SendMessageInput) {
	return func(in *sqs.SendMessageInput) {
		in.MessageGroupId = aws.String(groupID)
		in.MessageDeduplicationId = aws.String(dedupID)
	}
}

// MessageState says where a stored message is in its lifecycle.
type MessageState string

// The states of a stored message.
const (
	Visible  MessageState = "visible"  // can be received now
	InFlight MessageState = "inflight" // received; its visibility timeout runs
	Delayed  MessageState = "delayed"  // sent with a delay that has not ended
)

// MessageInfo is a snapshot of one stored message, for assertions.
type MessageInfo struct {
	ID           string
	Body         string
	Attributes   map[string]types.MessageAttributeValue
	State        MessageState
	ReceiveCount int
	Sent         time.Time
	VisibleAt    time.Time // when it becomes (or became) receivable
	GroupID      string
	// DeadLetterSourceARN is the ARN of the queue SQS's redrive moved the
	// message from, when it was dead-lettered by redrive.
	DeadLetterSourceARN string
}

// Messages returns a snapshot of every message in the queue, in arrival
// order, without receiving any. It returns nil for an unknown queue.
func (f *Fake) Messages(queueURL string) []MessageInfo {
	f.mu.Lock()
	defer f.mu.Unlock()
	q, ok := f.queues[queueURL]
	if !ok {
		return nil
	}
	now := f.now()
	q.expireLocked(now)
	out := make([]MessageInfo, len(q.msgs))
	for i, m := range q.msgs {
		m.settle(now)
		state := map[msgState]MessageState{stateVisible: Visible, stateInflight: InFlight, stateDelayed: Delayed}[m.state(now)]
		out[i] = MessageInfo{
			ID: m.id, Body: m.body, Attributes: m.attrs, State: state, ReceiveCount: m.receives,
			Sent: m.sent, VisibleAt: m.visibleAt, GroupID: m.groupID, DeadLetterSourceARN: m.dlqSource,
		}
	}
	return out
}

// Count returns how many messages the queue holds in each state.
func (f *Fake) Count(queueURL string) (visible, inflight, delayed int) {
	for _, m := range f.Messages(queueURL) {
		switch m.State {
		case Visible:
			visible++
		case InFlight:
			inflight++
		case Delayed:
			delayed++
		}
	}
	return visible, inflight, delayed
}

// QueueARN returns the ARN of the queue at queueURL, or "" if there is none.
func (f *Fake) QueueARN(queueURL string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if q, ok := f.queues[queueURL]; ok {
		return q.arn
	}
	return ""
}

// ReceiveCount parses a received message's ApproximateReceiveCount
// attribute; 0 when absent.
func ReceiveCount(m types.Message) int {
	n, _ := strconv.Atoi(m.Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)])
	return n
}
