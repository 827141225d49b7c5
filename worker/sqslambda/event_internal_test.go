package sqslambda

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// TestEventJSONWireFormat pins the payload RunLocal builds to the shape of
// the AWS Lambda documentation's sample SQS events: field names and order,
// string attribute values, list values always present, base64 binary.
func TestEventJSONWireFormat(t *testing.T) {
	msgs := []types.Message{{
		MessageId:     aws.String("059f36b4-87a3-44ab-83d2-661975830a7d"),
		ReceiptHandle: aws.String("AQEBhandle"),
		Body:          aws.String("Test message."),
		MD5OfBody:     aws.String("e4e68fb7bd0e697a0ae8f1bb342846b3"),
		Attributes: map[string]string{
			"ApproximateReceiveCount":          "1",
			"SentTimestamp":                    "1545082649183",
			"SenderId":                         "AIDAIENQZJOLO23YVJ4VO",
			"ApproximateFirstReceiveTimestamp": "1545082649185",
		},
	}, {
		MessageId:              aws.String("2e1424d4-f796-459a-8184-9c92662be6da"),
		ReceiptHandle:          aws.String("AQEBhandle2"),
		Body:                   aws.String("with attributes"),
		MD5OfMessageAttributes: aws.String("a0b1c2"),
		Attributes:             map[string]string{"ApproximateReceiveCount": "2", "MessageGroupId": "g1"},
		MessageAttributes: map[string]types.MessageAttributeValue{
			"bin": {DataType: aws.String("Binary"), BinaryValue: []byte("hi")},
			"str": {DataType: aws.String("String"), StringValue: aws.String("v")},
		},
	}}
	got, err := eventJSON("arn:aws:sqs:us-east-2:123456789012:my-queue", msgs)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"Records":[` +
		`{"messageId":"059f36b4-87a3-44ab-83d2-661975830a7d","receiptHandle":"AQEBhandle","body":"Test message.",` +
		`"attributes":{"ApproximateFirstReceiveTimestamp":"1545082649185","ApproximateReceiveCount":"1","SenderId":"AIDAIENQZJOLO23YVJ4VO","SentTimestamp":"1545082649183"},` +
		`"messageAttributes":{},"md5OfBody":"e4e68fb7bd0e697a0ae8f1bb342846b3","eventSource":"aws:sqs",` +
		`"eventSourceARN":"arn:aws:sqs:us-east-2:123456789012:my-queue","awsRegion":"us-east-2"},` +
		`{"messageId":"2e1424d4-f796-459a-8184-9c92662be6da","receiptHandle":"AQEBhandle2","body":"with attributes",` +
		`"attributes":{"ApproximateReceiveCount":"2","MessageGroupId":"g1"},` +
		`"messageAttributes":{"bin":{"binaryValue":"aGk=","stringListValues":[],"binaryListValues":[],"dataType":"Binary"},` +
		`"str":{"stringValue":"v","stringListValues":[],"binaryListValues":[],"dataType":"String"}},` +
		`"md5OfMessageAttributes":"a0b1c2","md5OfBody":"c2d900c011c138c4a68934fee2fdd344",` + // computed: the message had none
		`"eventSource":"aws:sqs",` +
		`"eventSourceARN":"arn:aws:sqs:us-east-2:123456789012:my-queue","awsRegion":"us-east-2"}]}`
	if string(got) != want {
		t.Errorf("event JSON\n got %s\nwant %s", got, want)
	}
}
