package worker

import (
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/internal/settle"
)

// Message is one received SQS message, as a handler sees it. The handler
// may read and change it freely: the runtime settles the message from its
// own copy, so nothing the handler does to its Message changes whether or
// how the message is deleted, retried or dead-lettered.
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
	// Raw is the message as the SDK returned it (a copy).
	Raw types.Message
}

// messageOf returns a handler's or a hook's copy of the runtime's message:
// a *settle.Message and a *Message are the same struct (settle.Message
// mirrors this type field for field; this conversion fails to compile if
// they drift apart).
func messageOf(m *settle.Message) *Message { return (*Message)(m.Copy()) }
