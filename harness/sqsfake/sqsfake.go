// Package sqsfake holds small helpers for the library's tests on sqstest's
// Fake that its public API leaves to the caller: a FIFO send option and a
// queue's ARN without a call.
package sqsfake

import (
	"net/url"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// Group sets a FIFO message's group ID and deduplication ID, for
// sqstest.Fake.MustSend.
func Group(groupID, dedupID string) func(*sqs.SendMessageInput) {
	return func(in *sqs.SendMessageInput) {
		in.MessageGroupId = aws.String(groupID)
		in.MessageDeduplicationId = aws.String(dedupID)
	}
}

// ARN returns the ARN of the Fake's queue at queueURL, read from the URL the
// Fake gave it (https://sqs.REGION.amazonaws.com/ACCOUNT/NAME), without a
// call; "" for a URL of another form.
func ARN(queueURL string) string {
	u, err := url.Parse(queueURL)
	if err != nil {
		return ""
	}
	region, ok := strings.CutSuffix(strings.TrimPrefix(u.Host, "sqs."), ".amazonaws.com")
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	if !ok || !strings.HasPrefix(u.Host, "sqs.") || len(parts) != 2 {
		return ""
	}
	return "arn:aws:sqs:" + region + ":" + parts[0] + ":" + parts[1]
}
