package sqstest

import (
	"bytes"
	"crypto/md5"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/internal/sqslimit"
)

type msgState int

const (
	stateVisible msgState = iota
	stateInflight
	stateDelayed
)

// message is one stored message. Every field is guarded by Fake.mu.
type message struct {
	removed  bool // deleted or moved; still in its queue's msgs until compact
	id       string
	body     string
	attrs    map[string]types.MessageAttributeValue
	md5Body  string
	md5Attrs string
	trace    string // AWSTraceHeader system attribute

	sent      time.Time // kept when redriven to a standard DLQ; reset by a FIFO DLQ
	visibleAt time.Time // end of the delay or of the visibility timeout

	receives     int
	firstReceive time.Time
	times        timesText // SentTimestamp's and ApproximateFirstReceiveTimestamp's text
	receivedAt   time.Time // time of the latest receive: the 12 h cap counts from it
	handle       string    // the latest receipt handle; "" before the first receive
	inflight     bool      // received and its visibility timeout has not ended

	groupID, dedupID, seq string
	dlqSource             string // ARN of the queue it was dead-lettered from
}

func (m *message) state(now time.Time) msgState {
	if now.Before(m.visibleAt) {
		if m.inflight {
			return stateInflight
		}
		return stateDelayed
	}
	return stateVisible
}

// settle marks an expired visibility timeout as over. f.mu must be held.
func (m *message) settle(now time.Time) {
	if m.inflight && !now.Before(m.visibleAt) {
		m.inflight = false
	}
}

// Receipt handles encode the queue name, the message ID and a nonce, so a
// handle names one receive of one message. Anything else is malformed.
// Making one costs one allocation (the handle) and reading one none: the
// fake's own cost is part of what the benchmarks measure.
func makeHandle(queueName, msgID string) string {
	var nonce [nonceBytes]byte
	binary.LittleEndian.PutUint64(nonce[:8], rand.Uint64())
	binary.LittleEndian.PutUint64(nonce[8:], rand.Uint64())
	var raw [192]byte
	b := append(raw[:0], handlePrefix...)
	b = append(b, queueName...)
	b = append(b, ':')
	b = append(b, msgID...)
	b = append(b, ':')
	b = hex.AppendEncode(b, nonce[:])
	var enc [256]byte
	return string(base64.RawURLEncoding.AppendEncode(enc[:0], b))
}

// handlePrefix starts every decoded receipt handle, and a random nonce of
// nonceBytes (in hex) ends it.
const (
	handlePrefix = "sqstest:"
	nonceBytes   = 16
)

// parseHandle returns the queue name and message ID in a handle, as slices
// of buf (which it may outgrow).
func parseHandle(h string, buf []byte) (queueName, msgID []byte, ok bool) {
	raw := buf[:0]
	var chunk [64]byte // a multiple of 4 characters: each chunk decodes alone
	for i := 0; i < len(h); i += len(chunk) {
		n := copy(chunk[:], h[i:])
		var err error
		if raw, err = base64.RawURLEncoding.AppendDecode(raw, chunk[:n]); err != nil {
			return nil, nil, false
		}
	}
	rest, found := bytes.CutPrefix(raw, []byte(handlePrefix))
	if !found {
		return nil, nil, false
	}
	queueName, rest, found = bytes.Cut(rest, []byte{':'})
	if !found {
		return nil, nil, false
	}
	msgID, nonce, found := bytes.Cut(rest, []byte{':'})
	if !found || len(nonce) != 2*nonceBytes || bytes.IndexByte(nonce, ':') >= 0 {
		return nil, nil, false // a truncated or altered handle, as SQS finds it
	}
	return queueName, msgID, true
}

func md5Hex(b []byte) string {
	sum := md5.Sum(b)
	return hex.EncodeToString(sum[:])
}

// md5OfAttributes computes MD5OfMessageAttributes as SQS does: attributes
// sorted by name, each encoded as length-prefixed name, data type, a
// transport byte (1 string, 2 binary) and length-prefixed value.
func md5OfAttributes(attrs map[string]types.MessageAttributeValue) string {
	if len(attrs) == 0 {
		return ""
	}
	names := make([]string, 0, len(attrs))
	for n := range attrs {
		names = append(names, n)
	}
	sort.Strings(names)
	var buf []byte
	putString := func(s string) {
		buf = binary.BigEndian.AppendUint32(buf, uint32(len(s)))
		buf = append(buf, s...)
	}
	for _, n := range names {
		v := attrs[n]
		putString(n)
		putString(aws.ToString(v.DataType))
		if v.BinaryValue != nil {
			buf = append(buf, 2)
			buf = binary.BigEndian.AppendUint32(buf, uint32(len(v.BinaryValue)))
			buf = append(buf, v.BinaryValue...)
		} else {
			buf = append(buf, 1)
			putString(aws.ToString(v.StringValue))
		}
	}
	return md5Hex(buf)
}

// validBody reports whether s has only the characters SQS accepts.
func validBody(s string) bool {
	for _, r := range s {
		switch {
		case r == 0x9 || r == 0xA || r == 0xD:
		case r >= 0x20 && r <= 0xD7FF:
		case r >= 0xE000 && r <= 0xFFFD:
		case r >= 0x10000 && r <= 0x10FFFF:
		default:
			return false
		}
	}
	return true
}

// checkAttributes validates message attributes and returns their size.
func checkAttributes(attrs map[string]types.MessageAttributeValue) (int, error) {
	if len(attrs) > sqslimit.MaxMessageAttributes {
		return 0, invalidParameter("Number of message attributes [%d] exceeds the allowed maximum [%d].", len(attrs), sqslimit.MaxMessageAttributes)
	}
	size := 0
	for name, v := range attrs {
		if name == "" || len(name) > 256 || strings.HasPrefix(strings.ToLower(name), "aws.") || strings.HasPrefix(strings.ToLower(name), "amazon.") {
			return 0, invalidParameter("Message attribute name '%s' is invalid: names must be 1-256 characters and not start with AWS. or Amazon.", name)
		}
		dt := aws.ToString(v.DataType)
		base, _, _ := strings.Cut(dt, ".")
		switch base {
		case "String", "Number":
			if v.StringValue == nil {
				return 0, invalidParameter("The message attribute '%s' with type '%s' must use field 'String'.", name, dt)
			}
			if base == "Number" {
				if _, err := strconv.ParseFloat(*v.StringValue, 64); err != nil {
					return 0, invalidParameter("Can't cast the value of message (user) attribute '%s' to a number.", name)
				}
			}
			if !validBody(*v.StringValue) {
				return 0, errInvalidMessageContents()
			}
			size += len(*v.StringValue)
		case "Binary":
			if v.BinaryValue == nil {
				return 0, invalidParameter("The message attribute '%s' with type 'Binary' must use field 'Binary'.", name)
			}
			size += len(v.BinaryValue)
		default:
			return 0, invalidParameter("The type of message (user) attribute '%s' is invalid. You must use only the following supported type prefixes: Binary, Number, String.", name)
		}
		size += len(name) + len(dt)
	}
	return size, nil
}

// selectAttributes returns the message attributes matched by names ("All",
// ".*", "prefix.*" or exact names).
func selectAttributes(attrs map[string]types.MessageAttributeValue, names []string) map[string]types.MessageAttributeValue {
	if len(attrs) == 0 || len(names) == 0 {
		return nil
	}
	out := map[string]types.MessageAttributeValue{}
	for n, v := range attrs {
		for _, want := range names {
			if want == "All" || want == ".*" || want == n ||
				(strings.HasSuffix(want, ".*") && strings.HasPrefix(n, strings.TrimSuffix(want, "*"))) {
				out[n] = v
				break
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// sysAttrNames are the system attributes a receive can ask for. A
// sysAttrSet holds bit i for sysAttrNames[i]; systemAttributes lists a
// message's values in the same order.
var sysAttrNames = [...]string{
	"SenderId", "SentTimestamp", "ApproximateReceiveCount", "ApproximateFirstReceiveTimestamp",
	"AWSTraceHeader", "MessageGroupId", "MessageDeduplicationId", "SequenceNumber", "DeadLetterQueueSourceArn",
}

// receiveCountAttr is ApproximateReceiveCount's bit.
const receiveCountAttr sysAttrSet = 1 << 2

// sysAttrSet is the set of system attributes a receive asked for: the
// names are read once per call, not once per message.
type sysAttrSet uint16

// wantedSysAttrs returns the set named by a receive's
// MessageSystemAttributeNames and (deprecated) AttributeNames; "All" names
// every one, and a name SQS does not know selects nothing.
func wantedSysAttrs(params *sqs.ReceiveMessageInput) sysAttrSet {
	var set sysAttrSet
	add := func(name string) {
		if name == "All" {
			set = 1<<len(sysAttrNames) - 1
			return
		}
		for i, n := range sysAttrNames {
			if n == name {
				set |= 1 << i
			}
		}
	}
	for _, n := range params.MessageSystemAttributeNames {
		add(string(n))
	}
	for _, n := range params.AttributeNames {
		add(string(n))
	}
	return set
}

// systemAttributes returns the system attributes of m that want names,
// or nil when it names none that m has.
func (f *Fake) systemAttributes(m *message, want sysAttrSet) map[string]string {
	if want == 0 {
		return nil
	}
	sent, first := m.times.of(m.sent, m.firstReceive)
	count := ""
	if want&receiveCountAttr != 0 {
		count = strconv.Itoa(m.receives)
	}
	vals := [len(sysAttrNames)]string{f.opts.AccountID, sent, count, first, m.trace, m.groupID, m.dedupID, m.seq, m.dlqSource}
	n := 0
	for i := range vals {
		if want&(1<<i) == 0 {
			vals[i] = ""
		} else if vals[i] != "" {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	out := make(map[string]string, n)
	for i, v := range vals {
		if v != "" {
			out[sysAttrNames[i]] = v
		}
	}
	return out
}

// timesText is a message's two times as SQS writes them in its system
// attributes (epoch milliseconds): formatted together, in one string, and
// again only when either changes.
type timesText struct {
	sent, first time.Time
	text        string // both, the sent time first
	split       int    // where the first receive's begins
}

// of returns sent and first in epoch milliseconds.
func (c *timesText) of(sent, first time.Time) (string, string) {
	if c.text == "" || !c.sent.Equal(sent) || !c.first.Equal(first) {
		var buf [40]byte
		b := strconv.AppendInt(buf[:0], sent.UnixMilli(), 10)
		split := len(b)
		b = strconv.AppendInt(b, first.UnixMilli(), 10)
		c.sent, c.first, c.text, c.split = sent, first, string(b), split
	}
	return c.text[:c.split], c.text[c.split:]
}

func (q *queue) nextSeq() string {
	q.seq++
	return fmt.Sprintf("%020d", q.seq)
}
