// Package schedenv is the envelope a job sent by an EventBridge Scheduler
// schedule carries in its body (Scheduler's SQS target sends a body and
// nothing else): the job's own body and message attributes, and
// Scheduler's context attributes. Package schedules writes and unwraps it;
// package uniqueattr reads a unique key from it in a message as received.
package schedenv

import (
	"encoding/json"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// Version is the envelope's format, in its "sqsworker" member.
const Version = "sqsworker.schedule/1"

// Envelope is the body a schedule sends.
type Envelope struct {
	V          string               `json:"sqsworker"`
	ARN        string               `json:"arn"`
	Time       string               `json:"time"`
	Attempt    string               `json:"attempt,omitempty"`
	Overlap    string               `json:"overlap,omitempty"`
	Body       string               `json:"body"`
	Attributes map[string]Attribute `json:"attributes,omitempty"`
}

// Attribute is one of the job's message attributes in the envelope.
type Attribute struct {
	DataType    string `json:"t"`
	StringValue string `json:"s,omitempty"`
	BinaryValue []byte `json:"b,omitempty"`
}

// Value is the attribute as SQS carries it.
func (a Attribute) Value() types.MessageAttributeValue {
	v := types.MessageAttributeValue{DataType: aws.String(a.DataType), BinaryValue: a.BinaryValue}
	if a.StringValue != "" || a.BinaryValue == nil {
		v.StringValue = aws.String(a.StringValue)
	}
	return v
}

// Parse reads the envelope of a body a schedule sent, and reports false
// for any other body (without a JSON parse for most).
func Parse(body string) (Envelope, bool) {
	var e Envelope
	if !strings.HasPrefix(body, `{"sqsworker":"`+Version+`"`) {
		return e, false
	}
	if json.Unmarshal([]byte(body), &e) != nil || e.V != Version {
		return e, false
	}
	return e, true
}

// Decode reads an envelope in any JSON layout (a schedule's stored input,
// say), and reports false for anything else.
func Decode(input string) (Envelope, bool) {
	var e Envelope
	if json.Unmarshal([]byte(input), &e) != nil || e.V != Version {
		return e, false
	}
	return e, true
}
