package schedule

import (
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// ResendInput returns the SendMessage request for a Resend decision: a fresh
// copy of msg (received with MessageAttributeNames ["All"], so that its due
// time and any other attribute, such as an S3 payload pointer, come along)
// in queueURL, with DelaySeconds delay. The X-Ray trace header is kept too.
// The caller deletes msg only once this send has succeeded; a copy whose
// delete fails is sent again on its next receive, so a hop may duplicate a
// job but never lose it.
func ResendInput(queueURL string, msg types.Message, delay time.Duration) *sqs.SendMessageInput {
	in := &sqs.SendMessageInput{
		QueueUrl:          aws.String(queueURL),
		MessageBody:       msg.Body,
		MessageAttributes: msg.MessageAttributes,
		DelaySeconds:      int32(ceilSecond(max(delay, 0)) / time.Second),
	}
	if trace := msg.Attributes[string(types.MessageSystemAttributeNameAWSTraceHeader)]; trace != "" {
		in.MessageSystemAttributes = map[string]types.MessageSystemAttributeValue{
			string(types.MessageSystemAttributeNameForSendsAWSTraceHeader): {DataType: aws.String("String"), StringValue: aws.String(trace)},
		}
	}
	return in
}
