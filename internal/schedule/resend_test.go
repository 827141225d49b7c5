package schedule

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

func TestResendInputCopiesTheMessage(t *testing.T) {
	due := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	msg := types.Message{
		Body: aws.String(`["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":"b","s3Key":"k"}]`),
		MessageAttributes: map[string]types.MessageAttributeValue{
			Attribute:             Value(due),
			"SQSLargePayloadSize": {DataType: aws.String("Number"), StringValue: aws.String("2097152")},
		},
		Attributes: map[string]string{"AWSTraceHeader": "Root=1-abc", "ApproximateReceiveCount": "3"},
	}
	in := ResendInput("https://q", msg, 899500*time.Millisecond)
	if aws.ToString(in.MessageBody) != aws.ToString(msg.Body) || len(in.MessageAttributes) != 2 {
		t.Errorf("copy differs: body %q, attributes %v", aws.ToString(in.MessageBody), in.MessageAttributes)
	}
	if in.DelaySeconds != 900 {
		t.Errorf("DelaySeconds = %d, want 900 (rounded up)", in.DelaySeconds)
	}
	if v := in.MessageSystemAttributes["AWSTraceHeader"]; aws.ToString(v.StringValue) != "Root=1-abc" {
		t.Errorf("trace header not kept: %v", in.MessageSystemAttributes)
	}
}
