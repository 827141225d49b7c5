package settle

import (
	"maps"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// Message mirrors worker.Message field for field, in the same order and
// with the same types, so that the worker and the Lambda adapter turn a
// *Message into a *worker.Message with a pointer conversion: one parse for
// both, and the compiler checks that the two types stay identical. Keep the
// field documentation in worker.Message.
type Message struct {
	ID                string
	Body              string
	ReceiptHandle     string
	QueueURL          string
	Attributes        map[string]string
	MessageAttributes map[string]types.MessageAttributeValue
	ReceiveCount      int
	Attempt           int
	SentAt            time.Time
	FirstReceivedAt   time.Time
	ReceivedAt        time.Time
	GroupID           string
	SNS               *SNSMetadata
	Raw               types.Message
}

// Parse reads a received SDK message. Attempt is the receive count until a
// counter replaces it (see CountAttempt).
func Parse(raw types.Message, queueURL string, receivedAt time.Time) Message {
	m := Message{
		ID:                aws.ToString(raw.MessageId),
		Body:              aws.ToString(raw.Body),
		ReceiptHandle:     aws.ToString(raw.ReceiptHandle),
		QueueURL:          queueURL,
		Attributes:        raw.Attributes,
		MessageAttributes: raw.MessageAttributes,
		ReceivedAt:        receivedAt,
		Raw:               raw,
	}
	m.ReceiveCount, _ = strconv.Atoi(raw.Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)])
	m.Attempt = max(m.ReceiveCount, 1)
	m.SentAt = millis(raw.Attributes[string(types.MessageSystemAttributeNameSentTimestamp)])
	m.FirstReceivedAt = millis(raw.Attributes[string(types.MessageSystemAttributeNameApproximateFirstReceiveTimestamp)])
	m.GroupID = raw.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)]
	return m
}

// millis parses an epoch-milliseconds attribute; zero time when absent.
func millis(s string) time.Time {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(n)
}

// ShallowCopy returns a copy of m whose strings and Raw pointers are its
// own but whose maps are m's: for a holder whose map changes m can bear.
func (m *Message) ShallowCopy() *Message {
	c := *m
	c.Raw.MessageId, c.Raw.Body, c.Raw.ReceiptHandle = repoint(m.Raw.MessageId, &c.ID), repoint(m.Raw.Body, &c.Body), repoint(m.Raw.ReceiptHandle, &c.ReceiptHandle)
	return &c
}

// repoint returns to when from is set, so a copy's Raw points into the copy.
func repoint(from, to *string) *string {
	if from == nil {
		return nil
	}
	return to
}

// Copy returns a copy of m that shares nothing the holder could change in
// place: its maps are its own, and its Raw's string pointers point into the
// copy itself. The runtime hands copies to handlers and hooks and settles
// from its own m, so nothing they do changes how the message is settled.
func (m *Message) Copy() *Message {
	c := *m
	c.Attributes = maps.Clone(m.Attributes)
	c.MessageAttributes = maps.Clone(m.MessageAttributes)
	c.Raw.Attributes = c.Attributes
	c.Raw.MessageAttributes = c.MessageAttributes
	c.Raw.MessageId, c.Raw.Body, c.Raw.ReceiptHandle = repoint(m.Raw.MessageId, &c.ID), repoint(m.Raw.Body, &c.Body), repoint(m.Raw.ReceiptHandle, &c.ReceiptHandle)
	return &c
}
