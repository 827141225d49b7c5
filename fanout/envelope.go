package fanout

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/internal/snstopic"
)

// ErrMalformedEnvelope matches, with errors.Is, every *EnvelopeError.
var ErrMalformedEnvelope = errors.New("fanout: not a well-formed SNS envelope")

// EnvelopeError says why a message body is not a well-formed SNS envelope.
type EnvelopeError struct {
	// Reason says what is wrong, in words for the dead-letter queue's reader.
	Reason string
	// Err is the underlying error, such as a *json.SyntaxError, or nil.
	Err error
}

// Error returns "SNS envelope: <reason>".
func (e *EnvelopeError) Error() string {
	if e.Err != nil {
		return "SNS envelope: " + e.Reason + ": " + e.Err.Error()
	}
	return "SNS envelope: " + e.Reason
}

// Unwrap returns the underlying error.
func (e *EnvelopeError) Unwrap() error { return e.Err }

// Is reports whether target is ErrMalformedEnvelope.
func (e *EnvelopeError) Is(target error) bool { return target == ErrMalformedEnvelope }

// Envelope is the JSON document SNS delivers to an SQS queue subscribed
// without raw message delivery: the published message and SNS's metadata.
type Envelope struct {
	// Type is "Notification" for a published message (SNS also sends
	// "SubscriptionConfirmation" to a queue of another account).
	Type string `json:"Type"`
	// MessageID is the SNS message ID.
	MessageID string `json:"MessageId"`
	// TopicARN is the topic the message was published to.
	TopicARN string `json:"TopicArn"`
	// Subject is the publish's Subject ("" when none; SNS may also send null).
	Subject string `json:"Subject,omitempty"`
	// Message is the published message, exactly as published.
	Message string `json:"Message"`
	// Timestamp is when SNS accepted the publish, RFC 3339.
	Timestamp string `json:"Timestamp"`
	// SequenceNumber is set by FIFO topics.
	SequenceNumber string `json:"SequenceNumber,omitempty"`
	// SignatureVersion, Signature and SigningCertURL sign the envelope.
	SignatureVersion string `json:"SignatureVersion,omitempty"`
	Signature        string `json:"Signature,omitempty"`
	SigningCertURL   string `json:"SigningCertURL,omitempty"`
	// UnsubscribeURL removes the subscription.
	UnsubscribeURL string `json:"UnsubscribeURL,omitempty"`
	// SubscribeURL confirms a subscription (Type "SubscriptionConfirmation").
	SubscribeURL string `json:"SubscribeURL,omitempty"`
	// MessageAttributes are the publish's message attributes.
	MessageAttributes map[string]EnvelopeAttribute `json:"MessageAttributes,omitempty"`
}

// EnvelopeAttribute is a message attribute in an SNS envelope: its type
// (String, Number, Binary or String.Array, with an optional ".label"
// suffix) and its value (base64 for Binary, a JSON array for String.Array).
type EnvelopeAttribute struct {
	Type  string `json:"Type"`
	Value string `json:"Value"`
}

// notification is the Type of an envelope carrying a published message.
const notification = "Notification"

// IsEnvelope reports whether body looks like an SNS envelope — a JSON
// object with "Type" and "TopicArn" members — whether or not it is a valid
// one. Unwrap's AllowRaw uses it to tell raw messages from broken
// envelopes.
func IsEnvelope(body string) bool {
	b := bytes.TrimSpace([]byte(body))
	if len(b) == 0 || b[0] != '{' {
		return false
	}
	var probe map[string]json.RawMessage
	if json.Unmarshal(b, &probe) != nil {
		return false
	}
	_, hasType := probe["Type"]
	_, hasTopic := probe["TopicArn"]
	return hasType && hasTopic
}

// ParseEnvelope parses and checks an SNS envelope: a JSON object with
// Type "Notification", a MessageId, an SNS topic ARN, a Message (a string,
// possibly empty), an RFC 3339 Timestamp and well-formed message
// attributes. Its errors are *EnvelopeError. It does not verify the
// signature: a queue's policy, which lets only the topic send (see Setup),
// is what keeps others from writing envelopes into it.
func ParseEnvelope(body string) (Envelope, error) {
	var raw struct {
		Envelope
		Subject *string          `json:"Subject"`
		Message *json.RawMessage `json:"Message"`
	}
	dec := json.NewDecoder(strings.NewReader(body))
	if err := dec.Decode(&raw); err != nil {
		return Envelope{}, &EnvelopeError{Reason: "the body is not a JSON object", Err: err}
	}
	if dec.More() {
		return Envelope{}, &EnvelopeError{Reason: "the body has more than one JSON value"}
	}
	e := raw.Envelope
	if raw.Subject != nil {
		e.Subject = *raw.Subject
	}
	switch {
	case e.Type == "":
		return Envelope{}, &EnvelopeError{Reason: "no Type"}
	case e.Type != notification:
		reason := fmt.Sprintf("Type %q, not %q", e.Type, notification)
		if e.Type == "SubscriptionConfirmation" {
			reason += fmt.Sprintf(": SNS asks to confirm the subscription to %s (a queue in another account); confirm it with ConfirmSubscription or its SubscribeURL", e.TopicARN)
		}
		return Envelope{}, &EnvelopeError{Reason: reason}
	case e.MessageID == "":
		return Envelope{}, &EnvelopeError{Reason: "no MessageId"}
	case raw.Message == nil:
		return Envelope{}, &EnvelopeError{Reason: "no Message"}
	}
	if err := json.Unmarshal(*raw.Message, &e.Message); err != nil {
		return Envelope{}, &EnvelopeError{Reason: "Message is not a string", Err: err}
	}
	if _, err := ParseTopicARN(e.TopicARN); err != nil {
		return Envelope{}, &EnvelopeError{Reason: "bad TopicArn", Err: err}
	}
	if _, err := time.Parse(time.RFC3339Nano, e.Timestamp); err != nil {
		return Envelope{}, &EnvelopeError{Reason: fmt.Sprintf("Timestamp %q is not an RFC 3339 time", e.Timestamp)}
	}
	for name, a := range e.MessageAttributes {
		if _, err := a.sqsValue(); err != nil {
			return Envelope{}, &EnvelopeError{Reason: fmt.Sprintf("message attribute %q", name), Err: err}
		}
	}
	return e, nil
}

// Time returns the envelope's Timestamp (zero if it does not parse).
func (e Envelope) Time() time.Time {
	t, _ := time.Parse(time.RFC3339Nano, e.Timestamp)
	return t
}

// SQSMessageAttributes returns the envelope's message attributes as SQS
// message attributes, as raw message delivery would set them: String and
// Number as they are, Binary decoded from base64, String.Array as a String
// of custom type "String.Array" holding the JSON array.
func (e Envelope) SQSMessageAttributes() map[string]types.MessageAttributeValue {
	if len(e.MessageAttributes) == 0 {
		return nil
	}
	out := make(map[string]types.MessageAttributeValue, len(e.MessageAttributes))
	for name, a := range e.MessageAttributes {
		if v, err := a.sqsValue(); err == nil {
			out[name] = v
		}
	}
	return out
}

// sqsValue converts one envelope attribute.
func (a EnvelopeAttribute) sqsValue() (types.MessageAttributeValue, error) {
	base, _, _ := strings.Cut(a.Type, ".")
	switch {
	case a.Type == "String.Array":
		var arr []any
		if err := json.Unmarshal([]byte(a.Value), &arr); err != nil {
			return types.MessageAttributeValue{}, fmt.Errorf("type String.Array but the value is not a JSON array: %w", err)
		}
		return types.MessageAttributeValue{DataType: aws.String(a.Type), StringValue: aws.String(a.Value)}, nil
	case base == "String" || base == "Number":
		return types.MessageAttributeValue{DataType: aws.String(a.Type), StringValue: aws.String(a.Value)}, nil
	case base == "Binary":
		b, err := base64.StdEncoding.DecodeString(a.Value)
		if err != nil {
			return types.MessageAttributeValue{}, fmt.Errorf("type Binary but the value is not base64: %w", err)
		}
		return types.MessageAttributeValue{DataType: aws.String(a.Type), BinaryValue: b}, nil
	}
	return types.MessageAttributeValue{}, fmt.Errorf("unknown type %q (SNS uses String, Number, Binary and String.Array)", a.Type)
}

// TopicARN is a parsed SNS topic ARN: arn:PARTITION:sns:REGION:ACCOUNT:NAME.
type TopicARN struct {
	Partition, Region, Account, Name string
}

// ParseTopicARN parses an SNS topic ARN.
func ParseTopicARN(s string) (TopicARN, error) {
	a, err := snstopic.Parse(s)
	return TopicARN(a), err
}

// String returns the ARN.
func (a TopicARN) String() string { return snstopic.ARN(a).String() }

// FIFO reports whether the ARN names a FIFO topic (name ending in ".fifo").
func (a TopicARN) FIFO() bool { return snstopic.ARN(a).FIFO() }
