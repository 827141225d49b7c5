package schedule

import (
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// AttemptsAttribute is the message attribute that carries the attempts a
// job spent in earlier copies of its message: a Number attribute on a fresh
// copy the settlement engine sent in place of a snoozed message (a relay),
// so that waiting never spends the queue's receive budget while the job's
// attempt count goes on where it was. A job's attempt is this value plus
// what the attempt source counts for the copy in hand.
const AttemptsAttribute = "sqsworker.attempts"

// OriginAttribute is the message attribute that carries, on a relayed copy,
// the message ID of the job's first message: the job keeps one ID across
// its copies, so what is keyed by it (an idempotency key, the DynamoDB
// attempt counter, logs) sees one job.
const OriginAttribute = "sqsworker.origin"

// maxOriginLen bounds an origin ID (SQS message IDs are 36 characters).
const maxOriginLen = 128

// Origin returns the job's first message ID from attrs, or "" when the
// message is not a relayed copy (or the attribute is unreadable).
func Origin(attrs map[string]types.MessageAttributeValue) string {
	v, ok := attrs[OriginAttribute]
	if !ok || v.StringValue == nil || *v.StringValue == "" || len(*v.StringValue) > maxOriginLen {
		return ""
	}
	return *v.StringValue
}

// OriginValue is the attribute value recording the job's first message ID.
func OriginValue(id string) types.MessageAttributeValue {
	return types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(id)}
}

// maxAttempts bounds what Attempts reads: far above any policy (SNS allows
// 100 retries), low enough that a sum cannot overflow.
const maxAttempts = 1 << 20

// Attempts returns the attempts spent by earlier copies (zero when the
// attribute is absent, unreadable or out of range: the job then counts from
// its own receive count, as a message the library never relayed).
func Attempts(attrs map[string]types.MessageAttributeValue) int {
	v, ok := attrs[AttemptsAttribute]
	if !ok || v.StringValue == nil {
		return 0
	}
	n, err := strconv.Atoi(*v.StringValue)
	if err != nil || n < 0 || n > maxAttempts {
		return 0
	}
	return n
}

// AttemptsValue is the attribute value recording n spent attempts.
func AttemptsValue(n int) types.MessageAttributeValue {
	return types.MessageAttributeValue{DataType: aws.String("Number"), StringValue: aws.String(strconv.Itoa(max(n, 0)))}
}

// StripRelay returns a copy of attrs without the attributes a relay adds
// (AttemptsAttribute, OriginAttribute), or nil when nothing is left: a
// message sent without them starts as a job of its own, with a fresh
// attempt budget under its new message ID (dlq's manual redrive).
func StripRelay(attrs map[string]types.MessageAttributeValue) map[string]types.MessageAttributeValue {
	var out map[string]types.MessageAttributeValue
	for k, v := range attrs {
		if k == AttemptsAttribute || k == OriginAttribute {
			continue
		}
		if out == nil {
			out = make(map[string]types.MessageAttributeValue, len(attrs))
		}
		out[k] = v
	}
	return out
}
