package sqslambda

import (
	"errors"
	"maps"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// errNoMessageID is returned by Handle when a record that must be reported
// as failed has no messageId.
var errNoMessageID = errors.New("sqslambda: a failed record has no messageId, so it cannot be reported alone; failing the whole batch so Lambda retries it")

// RawMessage converts a Lambda SQS record into the SDK message that
// ReceiveMessage would have returned for it: ID, receipt handle, body, MD5s,
// system attributes, and message attributes with their data types (String,
// Number, Binary and custom types such as "Number.float"). It is what
// worker.Message.Raw holds, so a dead-letter copy keeps all of it.
func RawMessage(r events.SQSMessage) types.Message {
	m := types.Message{
		MessageId:     aws.String(r.MessageId),
		ReceiptHandle: aws.String(r.ReceiptHandle),
		Body:          aws.String(r.Body),
	}
	if r.Md5OfBody != "" {
		m.MD5OfBody = aws.String(r.Md5OfBody)
	}
	if r.Md5OfMessageAttributes != "" {
		m.MD5OfMessageAttributes = aws.String(r.Md5OfMessageAttributes)
	}
	if len(r.Attributes) > 0 {
		m.Attributes = maps.Clone(r.Attributes)
	}
	if len(r.MessageAttributes) > 0 {
		m.MessageAttributes = make(map[string]types.MessageAttributeValue, len(r.MessageAttributes))
		for name, a := range r.MessageAttributes {
			v := types.MessageAttributeValue{DataType: aws.String(a.DataType), StringValue: a.StringValue}
			if a.BinaryValue != nil {
				v.BinaryValue = a.BinaryValue
			}
			// SQS reserves the list values and refuses empty ones on send;
			// Lambda always sends them as [].
			if len(a.StringListValues) > 0 {
				v.StringListValues = a.StringListValues
			}
			if len(a.BinaryListValues) > 0 {
				v.BinaryListValues = a.BinaryListValues
			}
			m.MessageAttributes[name] = v
		}
	}
	return m
}
