package worker

import (
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/internal/settle"
)

// Message is one received SQS message, as a handler sees it. The handler
// may read and change it freely, through every pointer, map and slice it
// reaches (Raw included): it is the handler's own copy, and the runtime
// settles the message from a copy of its own, so nothing the handler does
// to its Message changes whether or how the message is deleted, retried or
// dead-lettered, nor the dead-letter copy, nor the Settlement reported.
type Message struct {
	// ID is the SQS message ID.
	ID string
	// Body is the message body.
	Body string
	// ReceiptHandle identifies this receive of the message.
	ReceiptHandle string
	// QueueURL is the queue the message was received from.
	QueueURL string
	// Attributes are the message's system attributes: those the worker
	// reads (ApproximateReceiveCount, SentTimestamp,
	// ApproximateFirstReceiveTimestamp, MessageGroupId, AWSTraceHeader,
	// each when SQS sets it) and those Options.SystemAttributes asks for.
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
	// ReceivedAt is when the receive that returned the message was made
	// (the call's start: SQS hid the message no earlier); the lease, and
	// SQS's 12-hour visibility limit, count from it.
	ReceivedAt time.Time
	// GroupID is the FIFO message group ID, or "".
	GroupID string
	// SNS is the SNS metadata of a message SNS delivered in its envelope,
	// set by middleware that unwraps it (fanout.Unwrap); nil otherwise.
	SNS *SNSMetadata
	// Raw is the message as the SDK returned it (a copy).
	Raw types.Message
}

// from makes m a view of the runtime's message s, sharing its maps and Raw:
// for the settlement hook, which gets the runtime's own copy once the
// runtime is done with it.
func (m *Message) from(s *settle.Message) {
	*m = Message{
		ID: s.ID, Body: s.Body, ReceiptHandle: s.ReceiptHandle, QueueURL: s.QueueURL,
		Attributes: s.Attributes, MessageAttributes: s.MessageAttributes,
		ReceiveCount: s.ReceiveCount, Attempt: s.Attempt,
		SentAt: s.SentAt, FirstReceivedAt: s.FirstReceivedAt, ReceivedAt: s.ReceivedAt,
		GroupID: s.GroupID, Raw: s.Raw,
	}
}

// handlerMessage returns the handler's copy of the job's message, held in
// the job (made once, when its handler starts), plus what settle.Detach
// copies so that the handler shares nothing with the runtime's copy that
// settlement reads.
func (j *job) handlerMessage() *Message {
	m := &j.handler
	m.from(&j.Msg)
	m.Attributes, m.MessageAttributes = settle.Detach(&j.Msg, &m.Raw, &m.ID, &m.Body, &m.ReceiptHandle, j.r.w.engine.Events)
	return m
}

// eventMessage is the public view of an event's message, which the
// runtime has given up: it shares its maps and Raw.
func eventMessage(ev *settle.Event) *Message {
	m := new(Message)
	m.from(ev.Message)
	return m
}
