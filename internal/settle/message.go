package settle

import (
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/internal/schedule"
)

// Message is the runtime's own copy of a received message: what settlement
// reads. Handlers see worker.Message, a copy made with Detach; the fields
// mean what worker.Message's say, plus TraceHeader.
type Message struct {
	ID                string
	Body              string
	ReceiptHandle     string
	QueueURL          string
	Attributes        map[string]string
	MessageAttributes map[string]types.MessageAttributeValue
	ReceiveCount      int
	Attempt           int
	// Earlier is the attempts the job spent in earlier copies of its
	// message (schedule.AttemptsAttribute, set when a snooze was relayed
	// as a fresh copy); Attempt counted by receives includes them. ID is
	// then the job's first message ID (schedule.OriginAttribute), and
	// Raw.MessageId this copy's.
	Earlier         int
	SentAt          time.Time
	FirstReceivedAt time.Time
	ReceivedAt      time.Time
	GroupID         string
	// TraceHeader is the AWSTraceHeader system attribute, kept for the
	// dead-letter copy.
	TraceHeader string
	Raw         types.Message
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
	if origin := schedule.Origin(raw.MessageAttributes); origin != "" {
		m.ID = origin
	}
	m.Earlier = schedule.Attempts(raw.MessageAttributes)
	m.Attempt = max(m.ReceiveCount, 1) + m.Earlier
	m.SentAt = millis(raw.Attributes[string(types.MessageSystemAttributeNameSentTimestamp)])
	m.FirstReceivedAt = millis(raw.Attributes[string(types.MessageSystemAttributeNameApproximateFirstReceiveTimestamp)])
	m.GroupID = raw.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)]
	m.TraceHeader = raw.Attributes[string(types.MessageSystemAttributeNameAWSTraceHeader)]
	if len(raw.MessageAttributes) == 0 {
		// The runtime's copy has none; an empty map the SDK returned is
		// the handler's (Detach), so its additions reach nothing here.
		m.MessageAttributes = nil
	}
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

// Detach makes a handler's copy of m share nothing with m that settlement
// reads, so that nothing a handler does to its copy changes how m is
// settled, nor its dead-letter copy, nor (with events) its settlement
// event. The runtime has copied m's fields into its own struct, whose ID,
// Body, ReceiptHandle and Raw are given; Detach points raw's string
// pointers into that struct and returns the maps the copy holds:
//
//   - MessageAttributes: always a deep copy (the dead-letter copy is built
//     from m's): the map, the DataType and StringValue strings, the bytes
//     of BinaryValue and the list values are the copy's own. (A message
//     received without any gets the SDK's empty map, which m does not hold.)
//   - Attributes: m's own map when events is false (settlement reads only
//     what Parse took from it), else a copy, since the event shows m.
//   - raw's MD5 strings: m's when events is false, else the copy's own.
//
// Messages without attributes cost no allocation here.
func Detach(m *Message, raw *types.Message, id, body, handle *string, events bool) (map[string]string, map[string]types.MessageAttributeValue) {
	attrs := m.Attributes
	mattrs := m.Raw.MessageAttributes // nil or empty: m has none (Parse)
	switch {
	case m.MessageAttributes != nil:
		mattrs = cloneAttributes(m.MessageAttributes)
	case events && mattrs != nil:
		mattrs = map[string]types.MessageAttributeValue{}
	}
	raw.MessageId, raw.Body, raw.ReceiptHandle = repoint(m.Raw.MessageId, id), repoint(m.Raw.Body, body), repoint(m.Raw.ReceiptHandle, handle)
	if events {
		attrs = maps.Clone(attrs)
		if m.Raw.MD5OfBody != nil || m.Raw.MD5OfMessageAttributes != nil {
			md5 := new([2]string)
			raw.MD5OfBody = copyString(m.Raw.MD5OfBody, &md5[0])
			raw.MD5OfMessageAttributes = copyString(m.Raw.MD5OfMessageAttributes, &md5[1])
		}
	}
	raw.Attributes, raw.MessageAttributes = attrs, mattrs
	return attrs, mattrs
}

// repoint returns to when from is set, so a copy's Raw points into the copy.
func repoint(from, to *string) *string {
	if from == nil {
		return nil
	}
	return to
}

// copyString stores *from in slot and returns slot; nil for nil.
func copyString(from, slot *string) *string {
	if from == nil {
		return nil
	}
	*slot = *from
	return slot
}

// cloneAttributes returns a deep copy of attrs in at most three
// allocations besides the map: one array for every string a pointer
// reaches, one for every byte of the binary values (each value a capped
// slice of it, so appending to one cannot reach another), and the list
// values' slices (SQS reserves those; they are rare).
func cloneAttributes(attrs map[string]types.MessageAttributeValue) map[string]types.MessageAttributeValue {
	if attrs == nil {
		return nil
	}
	strs, bins := 0, 0
	for _, v := range attrs {
		if v.DataType != nil {
			strs++
		}
		if v.StringValue != nil {
			strs++
		}
		bins += len(v.BinaryValue)
		for _, b := range v.BinaryListValues {
			bins += len(b)
		}
	}
	var sbuf []string
	if strs > 0 {
		sbuf = make([]string, 0, strs)
	}
	var bbuf []byte
	if bins > 0 {
		bbuf = make([]byte, 0, bins)
	}
	str := func(p *string) *string {
		if p == nil {
			return nil
		}
		sbuf = append(sbuf, *p)
		return &sbuf[len(sbuf)-1]
	}
	bin := func(b []byte) []byte {
		if b == nil {
			return nil
		}
		start := len(bbuf)
		bbuf = append(bbuf, b...)
		return bbuf[start:len(bbuf):len(bbuf)]
	}
	c := make(map[string]types.MessageAttributeValue, len(attrs))
	for k, v := range attrs {
		v.DataType, v.StringValue, v.BinaryValue = str(v.DataType), str(v.StringValue), bin(v.BinaryValue)
		v.StringListValues = slices.Clone(v.StringListValues)
		if v.BinaryListValues != nil {
			l := make([][]byte, len(v.BinaryListValues))
			for i, b := range v.BinaryListValues {
				l[i] = bin(b)
			}
			v.BinaryListValues = l
		}
		c[k] = v
	}
	return c
}
