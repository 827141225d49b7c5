package sqslambda

import (
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/sqsworker/sqsworker/queueref"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// wireEvent is an SQS event as Lambda's event source mapping sends it to a
// function, field for field: names, casing and order as in the AWS Lambda
// documentation's sample events, every attribute value a string, message
// attributes with their (always present) list values.
type wireEvent struct {
	Records []wireRecord `json:"Records"`
}

type wireRecord struct {
	MessageID              string               `json:"messageId"`
	ReceiptHandle          string               `json:"receiptHandle"`
	Body                   string               `json:"body"`
	Attributes             map[string]string    `json:"attributes"`
	MessageAttributes      map[string]wireValue `json:"messageAttributes"`
	MD5OfMessageAttributes string               `json:"md5OfMessageAttributes,omitempty"`
	MD5OfBody              string               `json:"md5OfBody"`
	EventSource            string               `json:"eventSource"`
	EventSourceARN         string               `json:"eventSourceARN"`
	AWSRegion              string               `json:"awsRegion"`
}

type wireValue struct {
	StringValue      *string  `json:"stringValue,omitempty"`
	BinaryValue      []byte   `json:"binaryValue,omitempty"` // base64, as Lambda sends it
	StringListValues []string `json:"stringListValues"`
	BinaryListValues [][]byte `json:"binaryListValues"`
	DataType         string   `json:"dataType"`
}

// eventJSON returns the JSON payload Lambda would invoke a function with for
// msgs received from the queue queueARN.
func eventJSON(queueARN string, msgs []types.Message) ([]byte, error) {
	region := ""
	if a, err := queueref.ParseARN(queueARN); err == nil {
		region = a.Region
	}
	ev := wireEvent{Records: make([]wireRecord, len(msgs))}
	for i, m := range msgs {
		body := aws.ToString(m.Body)
		r := wireRecord{
			MessageID:              aws.ToString(m.MessageId),
			ReceiptHandle:          aws.ToString(m.ReceiptHandle),
			Body:                   body,
			Attributes:             map[string]string{},
			MessageAttributes:      map[string]wireValue{},
			MD5OfMessageAttributes: aws.ToString(m.MD5OfMessageAttributes),
			MD5OfBody:              aws.ToString(m.MD5OfBody),
			EventSource:            "aws:sqs",
			EventSourceARN:         queueARN,
			AWSRegion:              region,
		}
		if r.MD5OfBody == "" {
			sum := md5.Sum([]byte(body))
			r.MD5OfBody = hex.EncodeToString(sum[:])
		}
		for k, v := range m.Attributes {
			r.Attributes[k] = v
		}
		for k, v := range m.MessageAttributes {
			w := wireValue{
				StringValue:      v.StringValue,
				BinaryValue:      v.BinaryValue,
				StringListValues: v.StringListValues,
				BinaryListValues: v.BinaryListValues,
				DataType:         aws.ToString(v.DataType),
			}
			if w.StringListValues == nil {
				w.StringListValues = []string{}
			}
			if w.BinaryListValues == nil {
				w.BinaryListValues = [][]byte{}
			}
			r.MessageAttributes[k] = w
		}
		ev.Records[i] = r
	}
	return json.Marshal(ev)
}

// NewEvent returns the events.SQSEvent a Go function deployed on Lambda
// would receive for msgs, received (with all system and message
// attributes) from the queue whose ARN is queueARN: the payload is built as
// the event source mapping builds it and decoded as the Lambda Go runtime
// decodes it. RunLocal invokes functions with it; tests can too.
func NewEvent(queueARN string, msgs ...types.Message) (events.SQSEvent, error) {
	data, err := eventJSON(queueARN, msgs)
	if err != nil {
		return events.SQSEvent{}, fmt.Errorf("sqslambda: encoding the event: %w", err)
	}
	var ev events.SQSEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		return events.SQSEvent{}, fmt.Errorf("sqslambda: decoding the event: %w", err)
	}
	return ev, nil
}
