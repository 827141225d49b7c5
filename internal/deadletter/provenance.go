package deadletter

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/internal/sqslimit"
)

// Provenance is why and from where a message was dead-lettered. It has
// dlq.Provenance's fields, in the same order, so each converts to the other.
type Provenance struct {
	// SourceQueue is the queue the message failed in (its URL; a name or
	// ARN also works). Zero value in a Copier: the Target's SourceURL.
	SourceQueue string
	// Error is the handler's error text. A Copier truncates it (see
	// Options.MaxErrorBytes) and replaces characters SQS refuses.
	Error string
	// Attempt is the delivery that failed last (1 for the first). Zero value
	// in a Copier: the message's ApproximateReceiveCount.
	Attempt int
	// FirstReceived is when the message was first delivered. Zero value in
	// a Copier: the message's ApproximateFirstReceiveTimestamp, if it has one.
	FirstReceived time.Time
	// FailedAt is when the last attempt failed. Zero value in a Copier: now.
	FailedAt time.Time
	// Handler names the handler that failed, for people reading the DLQ.
	Handler string
}

// The message attributes that carry Provenance on a dead-lettered message
// (dlq's package doc lists them for users). All share the prefix
// AttrPrefix, so ReceiveMessage can ask for them with
// MessageAttributeNames: ["sqsworker.dlq.*"].
const (
	AttrPrefix        = "sqsworker.dlq."
	AttrSourceQueue   = AttrPrefix + "source"         // String: Provenance.SourceQueue
	AttrError         = AttrPrefix + "error"          // String: Provenance.Error
	AttrAttempt       = AttrPrefix + "attempt"        // Number: Provenance.Attempt
	AttrFirstReceived = AttrPrefix + "first-received" // String, RFC 3339 UTC: Provenance.FirstReceived
	AttrFailedAt      = AttrPrefix + "failed-at"      // String, RFC 3339 UTC: Provenance.FailedAt
	AttrHandler       = AttrPrefix + "handler"        // String: Provenance.Handler
	// AttrProvenance holds all of Provenance as one JSON object, used when
	// the message's own attributes leave no room for one attribute per field.
	AttrProvenance = AttrPrefix + "provenance"
	// AttrMessageID carries, on a dead-letter copy, the message's ID in the
	// queue it failed in (in the JSON form: "messageId"). A redrive that
	// sent that message tells by it that the copy came back: it failed
	// again.
	AttrMessageID = AttrPrefix + "message-id"
)

// timeLayout is RFC 3339 with milliseconds, as SQS's own timestamps have.
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// provenanceJSON is the shape of the AttrProvenance attribute.
type provenanceJSON struct {
	Source        string `json:"source,omitempty"`
	Error         string `json:"error,omitempty"`
	Attempt       int    `json:"attempt,omitempty"`
	FirstReceived string `json:"firstReceived,omitempty"`
	FailedAt      string `json:"failedAt,omitempty"`
	Handler       string `json:"handler,omitempty"`
	MessageID     string `json:"messageId,omitempty"`
}

// IsProvenanceAttribute reports whether a message attribute name is one
// a Copier writes.
func IsProvenanceAttribute(name string) bool { return strings.HasPrefix(name, AttrPrefix) }

// StripProvenance returns a copy of attrs without the provenance
// attributes, or nil when nothing is left.
func StripProvenance(attrs map[string]types.MessageAttributeValue) map[string]types.MessageAttributeValue {
	var out map[string]types.MessageAttributeValue
	for k, v := range attrs {
		if IsProvenanceAttribute(k) {
			continue
		}
		if out == nil {
			out = make(map[string]types.MessageAttributeValue, len(attrs))
		}
		out[k] = v
	}
	return out
}

// ParseProvenance reads Provenance back from a dead-lettered message's
// attributes, in either form a Copier writes. It reports false when attrs hold
// no provenance (for example a message SQS's own redrive moved).
func ParseProvenance(attrs map[string]types.MessageAttributeValue) (Provenance, bool) {
	str := func(name string) (string, bool) {
		v, ok := attrs[name]
		if !ok || v.StringValue == nil {
			return "", false
		}
		return *v.StringValue, true
	}
	parseTime := func(s string) time.Time {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return time.Time{}
		}
		return t
	}
	var p Provenance
	found := false
	if s, ok := str(AttrProvenance); ok {
		var j provenanceJSON
		if json.Unmarshal([]byte(s), &j) == nil {
			p = Provenance{SourceQueue: j.Source, Error: j.Error, Attempt: j.Attempt,
				FirstReceived: parseTime(j.FirstReceived), FailedAt: parseTime(j.FailedAt), Handler: j.Handler}
			found = true
		}
	}
	if s, ok := str(AttrSourceQueue); ok {
		p.SourceQueue, found = s, true
	}
	if s, ok := str(AttrError); ok {
		p.Error, found = s, true
	}
	if s, ok := str(AttrAttempt); ok {
		if n, err := strconv.Atoi(s); err == nil {
			p.Attempt, found = n, true
		}
	}
	if s, ok := str(AttrFirstReceived); ok {
		p.FirstReceived, found = parseTime(s), true
	}
	if s, ok := str(AttrFailedAt); ok {
		p.FailedAt, found = parseTime(s), true
	}
	if s, ok := str(AttrHandler); ok {
		p.Handler, found = s, true
	}
	return p, found
}

// SourceMessageID returns the message ID a dead-letter copy had in the
// queue it failed in (AttrMessageID, or the JSON form's messageId), or "".
func SourceMessageID(attrs map[string]types.MessageAttributeValue) string {
	if v, ok := attrs[AttrMessageID]; ok && v.StringValue != nil {
		return *v.StringValue
	}
	if v, ok := attrs[AttrProvenance]; ok && v.StringValue != nil {
		var j provenanceJSON
		if json.Unmarshal([]byte(*v.StringValue), &j) == nil {
			return j.MessageID
		}
	}
	return ""
}

// FormatTime formats a provenance time as the attributes carry it: RFC
// 3339 UTC with milliseconds, "" for the zero time.
func FormatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(timeLayout)
}

func stringAttr(s string) types.MessageAttributeValue {
	return types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(s)}
}

// separateAttributes returns Provenance as one attribute per non-empty field.
func separateAttributes(p Provenance) map[string]types.MessageAttributeValue {
	out := map[string]types.MessageAttributeValue{}
	add := func(name, v string) {
		if v != "" {
			out[name] = stringAttr(v)
		}
	}
	add(AttrSourceQueue, p.SourceQueue)
	add(AttrError, p.Error)
	if p.Attempt > 0 {
		out[AttrAttempt] = types.MessageAttributeValue{DataType: aws.String("Number"), StringValue: aws.String(strconv.Itoa(p.Attempt))}
	}
	add(AttrFirstReceived, FormatTime(p.FirstReceived))
	add(AttrFailedAt, FormatTime(p.FailedAt))
	add(AttrHandler, p.Handler)
	return out
}

// jsonAttribute returns Provenance and the message's source ID packed into
// the AttrProvenance attribute.
func jsonAttribute(p Provenance, id string) map[string]types.MessageAttributeValue {
	b, _ := json.Marshal(provenanceJSON{
		Source: p.SourceQueue, Error: p.Error, Attempt: p.Attempt,
		FirstReceived: FormatTime(p.FirstReceived), FailedAt: FormatTime(p.FailedAt), Handler: p.Handler,
		MessageID: id,
	})
	return map[string]types.MessageAttributeValue{AttrProvenance: stringAttr(string(b))}
}

// attributesSize is what message attributes count toward SQS's message size
// limit: each name, data type and value.
func attributesSize(attrs map[string]types.MessageAttributeValue) int {
	return sqslimit.MessageSize("", attrs)
}

// provenanceMode says how a Copier attached provenance to a message.
type provenanceMode int

const (
	provenanceNone     provenanceMode = iota // no room: moved without provenance
	provenanceSeparate                       // one attribute per field
	provenanceJSONMode                       // one JSON attribute
)

// attachProvenance returns the attributes to send: the user's own (any
// earlier provenance removed) plus p and the message's ID in its source
// queue (id, AttrMessageID), within SQS's ten-attribute limit and the given
// byte budget for the attributes added. The user's attributes always stay.
// The rule:
//
//   - the fields fit as separate attributes (count and bytes): use them,
//     with the message ID as one more if an attribute and the bytes are
//     left;
//   - else at least one attribute is free: one JSON attribute (with the
//     message ID), its error text shortened until it fits the byte budget;
//   - else no provenance: only the message ID if it fits, else nothing
//     (ten user attributes, or no bytes left).
//
// It also returns the provenance as attached (its error text possibly
// shortened).
func attachProvenance(user map[string]types.MessageAttributeValue, p Provenance, id string, budget int) (map[string]types.MessageAttributeValue, Provenance, provenanceMode) {
	out := StripProvenance(user)
	if out == nil {
		out = map[string]types.MessageAttributeValue{}
	}
	free := sqslimit.MaxMessageAttributes - len(out)
	if free <= 0 {
		return out, Provenance{}, provenanceNone
	}
	if sep := separateAttributes(p); len(sep) <= free && attributesSize(sep) <= budget {
		if idAttr := idAttribute(id); len(idAttr) > 0 && len(sep) < free && attributesSize(sep)+attributesSize(idAttr) <= budget {
			sep[AttrMessageID] = idAttr[AttrMessageID]
		}
		for k, v := range sep {
			out[k] = v
		}
		return out, p, provenanceSeparate
	}
	for {
		js := jsonAttribute(p, id)
		size := attributesSize(js)
		if size <= budget {
			for k, v := range js {
				out[k] = v
			}
			return out, p, provenanceJSONMode
		}
		if p.Error == "" {
			if idAttr := idAttribute(id); len(idAttr) > 0 && attributesSize(idAttr) <= budget {
				out[AttrMessageID] = idAttr[AttrMessageID]
			}
			return out, Provenance{}, provenanceNone
		}
		// Shorten the error by what is over, plus room for escaping and the
		// truncation marker; give it up when nothing useful is left.
		keep := len(p.Error) - (size - budget) - len(truncMarker)
		if keep < 16 {
			p.Error = ""
			continue
		}
		p.Error = truncate(p.Error, keep)
	}
}

// idAttribute returns the AttrMessageID attribute for id (none for "").
func idAttribute(id string) map[string]types.MessageAttributeValue {
	if id == "" {
		return nil
	}
	return map[string]types.MessageAttributeValue{AttrMessageID: stringAttr(id)}
}

const truncMarker = "… [truncated]"

// truncate shortens s to at most n bytes on a rune boundary, ending it with
// a marker when it cut anything.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len(truncMarker)
	if cut <= 0 {
		cut = n
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		return s[:cut]
	}
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + truncMarker
}

// sanitize makes s acceptable to SQS, which refuses characters outside
// #x9 | #xA | #xD | #x20–#xD7FF | #xE000–#xFFFD | #x10000–#x10FFFF in
// message bodies and attribute values; it replaces them with U+FFFD.
func sanitize(s string) string {
	ok := true
	for _, r := range s {
		if !validRune(r) {
			ok = false
			break
		}
	}
	if ok && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		if !validRune(r) {
			r = '\uFFFD'
		}
		b.WriteRune(r)
	}
	return b.String()
}

func validRune(r rune) bool {
	switch {
	case r == 0x9 || r == 0xA || r == 0xD:
		return true
	case r >= 0x20 && r <= 0xD7FF:
		return true
	case r >= 0xE000 && r <= 0xFFFD:
		return true
	case r >= 0x10000 && r <= 0x10FFFF:
		return true
	}
	return false
}
