// Package uniqueattr is the message attribute a unique job carries
// (package unique writes it, the console shows it): "sqsworker.unique",
// a String of "<mode>:<token>:<key>".
package uniqueattr

import (
	"encoding/json"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/internal/schedenv"
)

// Name is the message attribute's name.
const Name = "sqsworker.unique"

// The modes in the attribute.
const (
	ModeSettled  = "s" // until settled
	ModePeriod   = "p" // for a period
	ModeDebounce = "d" // debounce
)

// Claim is what the attribute says: the key's mode, the claim's random
// token, and the key.
type Claim struct{ Mode, Token, Key string }

// Value is the attribute's value for c.
func (c Claim) Value() string { return c.Mode + ":" + c.Token + ":" + c.Key }

// Parse reads the claim from a message's attributes.
func Parse(attrs map[string]types.MessageAttributeValue) (Claim, bool) {
	v, ok := attrs[Name]
	if !ok || v.StringValue == nil {
		return Claim{}, false
	}
	return parseValue(*v.StringValue)
}

// ParseMessage reads the claim of a message as SQS delivered it: from
// its attributes, else from the envelope in its body where the sent
// message's attributes are — the SNS envelope of a queue subscribed to a
// topic without raw message delivery, or the envelope of a job a one-time
// schedule sent (a settlement reports the message as received, before
// fanout.Unwrap or schedules.Unwrap).
func ParseMessage(attrs map[string]types.MessageAttributeValue, body string) (Claim, bool) {
	if c, ok := Parse(attrs); ok {
		return c, true
	}
	if e, ok := schedenv.Parse(body); ok {
		a, ok := e.Attributes[Name]
		if !ok || a.DataType != "String" {
			return Claim{}, false
		}
		return parseValue(a.StringValue)
	}
	return fromEnvelope(body)
}

// fromEnvelope reads the claim from an SNS notification's envelope: its
// MessageAttributes hold {"Type": "String", "Value": ...} per attribute.
func fromEnvelope(body string) (Claim, bool) {
	if !strings.Contains(body, Name) { // most bodies: no JSON parse
		return Claim{}, false
	}
	var e struct {
		Type              string
		MessageAttributes map[string]struct{ Type, Value string }
	}
	if json.Unmarshal([]byte(body), &e) != nil || e.Type != "Notification" {
		return Claim{}, false
	}
	a, ok := e.MessageAttributes[Name]
	if !ok || a.Type != "String" {
		return Claim{}, false
	}
	return parseValue(a.Value)
}

func parseValue(s string) (Claim, bool) {
	mode, rest, ok1 := strings.Cut(s, ":")
	token, key, ok2 := strings.Cut(rest, ":")
	if !ok1 || !ok2 || key == "" || token == "" {
		return Claim{}, false
	}
	return Claim{Mode: mode, Token: token, Key: key}, true
}

// Describe says, for a person reading a dead-lettered message (its
// attributes and body as received), which unique key the job has and what
// its mode did with it ("" without one).
func Describe(attrs map[string]types.MessageAttributeValue, body string) string {
	c, ok := ParseMessage(attrs, body)
	if !ok {
		return ""
	}
	switch c.Mode {
	case ModeSettled:
		return c.Key + " (until settled: freed when the job was dead-lettered; redriven, it may run beside a newer job of the key)"
	case ModeDebounce:
		return c.Key + " (debounced: freed when the job was dead-lettered; redriven, it may run beside a newer job of the key)"
	case ModePeriod:
		return c.Key + " (for a period: held until its window ended, whatever became of the job)"
	}
	return c.Key
}
