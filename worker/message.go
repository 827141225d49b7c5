package worker

import (
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// Message is one received SQS message, as a handler sees it.
type Message struct {
	// ID is the SQS message ID.
	ID string
	// Body is the message body.
	Body string
	// ReceiptHandle identifies this receive of the message.
	ReceiptHandle string
	// QueueURL is the queue the message was received from.
	QueueURL string
	// Attributes are the message's system attributes (SentTimestamp,
	// ApproximateReceiveCount, MessageGroupId, …).
	Attributes map[string]string
	// MessageAttributes are the attributes the sender set.
	MessageAttributes map[string]types.MessageAttributeValue
	// ReceiveCount is SQS's ApproximateReceiveCount: 1 on the first receive.
	ReceiveCount int
	// Attempt is the attempt number the retry policy uses: 1 for the first
	// attempt. It equals ReceiveCount unless Options.AttemptCounter counts
	// handler starts exactly (retry/dynamocounter).
	Attempt int
	// SentAt is when SQS accepted the message (kept across redrives).
	SentAt time.Time
	// FirstReceivedAt is when the message was first received.
	FirstReceivedAt time.Time
	// ReceivedAt is when this receive returned the message; SQS's 12-hour
	// visibility limit counts from it.
	ReceivedAt time.Time
	// GroupID is the FIFO message group ID, or "".
	GroupID string
	// SNS is the SNS metadata of a message SNS delivered in its envelope,
	// set by middleware that unwraps it (fanout.Unwrap); nil otherwise.
	SNS *SNSMetadata
	// Raw is the message as the SDK returned it.
	Raw types.Message
}

// NewMessage converts a received SDK message into a Message. Attempt is set
// to the receive count; the worker replaces it when an exact counter is
// configured. It is exported for adapters (such as Lambda) and tests.
func NewMessage(raw types.Message, queueURL string, receivedAt time.Time) *Message {
	m := &Message{
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
