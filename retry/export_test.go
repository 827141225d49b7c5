package retry

// The limits of a delivery policy, for the tests.
const (
	SNSMaxDelayTarget = snsMaxDelayTarget
	SQSMaxDelayTarget = sqsMaxDelayTarget
	SNSMaxRetries     = snsMaxRetries
	SQSMaxRetries     = sqsMaxRetries
	SNSMaxTotal       = snsMaxTotal
)
