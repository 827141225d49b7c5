package producer

import (
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/internal/sqslimit"
)

// Message is one message to send.
type Message struct {
	// Body is the message body; it must not be empty.
	Body string
	// Attributes are the message attributes (at most 10 in all, counting
	// the ones the producer adds: the due time of a delay over 15 minutes,
	// and the size attribute of an offloaded body). On a topic they are
	// SNS's message attributes, of the same shape: what filter policies
	// match, and what a subscribed queue gets with raw delivery (or, in
	// SNS's envelope, what fanout.Unwrap hands the handler).
	Attributes map[string]types.MessageAttributeValue
	// Delay postpones the first delivery. Up to 15 minutes SQS delays the
	// message itself (rounded up to whole seconds). Longer delays, up to a
	// year and more, are recorded as the message's due time in the
	// "sqsworker.due" attribute and need a consumer built on sqsworker,
	// which keeps the message hidden until then without running the
	// handler; see the package documentation. With Options.Schedule set,
	// a Delay over Options.ScheduleAfter goes to a one-time schedule
	// instead (FIFO queues included). Otherwise standard queues only: a
	// FIFO queue takes no per-message delay, and neither does a topic.
	// Zero value: no delay (the queue's own DelaySeconds applies).
	Delay time.Duration
	// GroupID is the message group ID (MessageGroupId): required on a FIFO
	// queue or topic, whose messages it keeps in order; on a standard
	// queue it is the tenant of SQS fair queues, and on a standard topic
	// too, which passes it on to the subscribed standard queues. At most
	// 128 ASCII letters, digits and punctuation.
	GroupID string
	// DeduplicationID is the FIFO deduplication ID. Zero value: none, which
	// needs ContentBasedDeduplication on the queue or topic. Set it so that
	// a send retried after a lost response is not enqueued twice. A
	// standard topic refuses it.
	DeduplicationID string
	// TraceHeader is sent as the AWSTraceHeader system attribute (an X-Ray
	// trace header), which does not count toward the 10 message attributes.
	// A topic's PublishBatch entries have no system attributes: there it is
	// left out (trace context goes before a message does).
	TraceHeader string
	// Subject is the subject of a message published to a topic: the
	// envelope's Subject for enveloped subscriptions (raw delivery drops
	// it). Zero value: none. Refused on a queue.
	Subject string

	// reserved counts attribute slots the producer will still fill after
	// the BeforeSend hooks (the offloader's size attribute).
	reserved int
	// added are the attributes SetAttribute added: dropped again when the
	// message is too large with them.
	added []string
}

// size is the message's size as SQS and SNS count it against their
// limits: the body plus every attribute's name, data type and value, in
// bytes.
func (m *Message) size() int { return sqslimit.MessageSize(m.Body, m.Attributes) }

// SetAttribute adds (or replaces) a message attribute if SQS's limit of 10
// attributes leaves room for it, counting the attributes the producer still
// has to add, and reports whether it did. BeforeSend hooks use it to attach
// context (a W3C traceparent, say): when the message is full, the
// attribute is left out and the message is sent without it, rather than
// failing the send. Likewise for size: an attribute it added is removed
// again before the send when the message would otherwise be over
// Options.MaxMessageSize (after the Offloader, if any, had its turn).
func (m *Message) SetAttribute(name string, v types.MessageAttributeValue) bool {
	_, had := m.Attributes[name]
	if !had && len(m.Attributes)+m.reserved >= sqslimit.MaxMessageAttributes {
		return false
	}
	if m.Attributes == nil {
		m.Attributes = map[string]types.MessageAttributeValue{}
	}
	m.Attributes[name] = v
	if !had {
		m.added = append(m.added, name)
	}
	return true
}

// dropAdded removes the attributes SetAttribute added, newest first, until
// the message's size is at most limit, and returns that size.
func (m *Message) dropAdded(limit int) int {
	size := m.size()
	for i := len(m.added) - 1; i >= 0 && size > limit; i-- {
		delete(m.Attributes, m.added[i])
		size = m.size()
	}
	m.added = nil
	return size
}

// WithDelay returns an option that sets Message.Delay, for the typed
// senders.
func WithDelay(d time.Duration) func(*Message) {
	return func(m *Message) { m.Delay = d }
}

// WithGroup returns an option that sets a message's GroupID (a FIFO group,
// or a standard queue's or topic's tenant) and DeduplicationID (FIFO only;
// "" for none), for the typed senders.
func WithGroup(groupID, deduplicationID string) func(*Message) {
	return func(m *Message) { m.GroupID, m.DeduplicationID = groupID, deduplicationID }
}

// Result is the outcome of sending one message.
type Result struct {
	// MessageID is the ID SQS (or SNS) gave the message, or, for a message
	// Options.Schedule took, the ID it returned (the one-time schedule's:
	// schedules.Jobs.Cancel and Reschedule take it); empty when it was not
	// sent.
	MessageID string
	// SequenceNumber is the FIFO sequence number; empty on standard queues
	// and topics.
	SequenceNumber string
	// Due is when the message becomes deliverable (or, for a delay over 15
	// minutes, when the consumer runs it): the send time plus Delay.
	Due time.Time
	// Offloaded reports that the body was stored elsewhere by
	// Options.Offloader and the message carries a pointer to it.
	Offloaded bool
	// Attempts is how many batch calls carried the message.
	Attempts int
	// Err is nil when SQS (or SNS) accepted the message, else why it was
	// not sent (after the retries that could help). A message with an Err
	// was not enqueued, unless a call's response was lost (then SQS may
	// hold it).
	Err error
}
