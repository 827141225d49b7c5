package deadletter

import (
	"time"

	"github.com/sqsworker/sqsworker/internal/sqslimit"
)

// DefaultMaxReceiveCount is dlq.Setup's maxReceiveCount for a new standard
// queue when none is given. It leaves room above SNS's default delivery
// policy (3 retries, so 4 deliveries) and meets AWS's advice of at least 5
// for Lambda consumers.
const DefaultMaxReceiveCount = 5

// DefaultFIFOMaxReceiveCount is dlq.Setup's maxReceiveCount for a new FIFO
// queue when none is given: RecommendedMaxReceiveCount for SNS's default
// delivery policy (4 deliveries) on a FIFO queue.
const DefaultFIFOMaxReceiveCount = FIFOReceiveFactor * defaultPolicyDeliveries

// defaultPolicyDeliveries is how many deliveries SNS's default delivery
// policy makes (3 retries after the first delivery).
const defaultPolicyDeliveries = 4

// FIFOReceiveFactor is how many receives per policy attempt a FIFO queue's
// maxReceiveCount should allow. When a message of a group fails, the
// messages received behind it in the same batch (up to 9) are released
// unprocessed to keep the group's order, and each release counts as a
// receive for them; so a message can be received up to ten times per
// attempt of its own.
const FIFOReceiveFactor = 10

// RecommendedMaxReceiveCount is the rule for a queue's maxReceiveCount given
// how many deliveries (attempts) the retry policy makes: at least attempts on
// a standard queue, so that SQS does not dead-letter a message before the
// policy gives up; FIFOReceiveFactor × attempts on a FIFO queue, at most
// sqslimit.MaxReceiveCount. dlq.Setup, dlq.Lint (and so `sqsworker doctor`)
// and the runtimes' start-up check all apply this rule.
func RecommendedMaxReceiveCount(attempts int, fifo bool) int {
	attempts = max(attempts, 1)
	if fifo {
		return min(sqslimit.MaxReceiveCount, FIFOReceiveFactor*attempts)
	}
	return min(sqslimit.MaxReceiveCount, attempts)
}

// DefaultHold is how long dlq's Inspect, Delete and Redrive keep the
// messages they received hidden, by default, before they release or delete
// them.
const DefaultHold = time.Minute

// DefaultRate is dlq's manual redrive's rate limit, in messages per second,
// when RedriveOptions.Rate is zero.
const DefaultRate = 100

// The finding codes dlq.Lint reports (the table in dlq's package doc says
// what each means). fanout.Lint matches CodeNoRedrivePolicy, and a Copier
// logs CodeDLQMaxMessageSizeSmaller with its warning.
const (
	CodeNoRedrivePolicy          = "no-redrive-policy"
	CodeInvalidRedrivePolicy     = "invalid-redrive-policy"
	CodeDLQMissing               = "dlq-missing"
	CodeDLQWrongType             = "dlq-wrong-type"
	CodeMaxReceiveCountLow       = "max-receive-count-low"
	CodeRetentionShort           = "retention-short"
	CodeDLQRetentionNotLonger    = "dlq-retention-not-longer"
	CodeVisibilityShort          = "visibility-too-short"
	CodeLambdaVisibility         = "lambda-visibility"
	CodeLambdaMaxReceiveCount    = "lambda-max-receive-count"
	CodeDLQNotEmpty              = "dlq-not-empty"
	CodeFIFOMaxReceiveCount      = "fifo-max-receive-count"
	CodeHandlerTimeoutOver12h    = "handler-timeout-over-12h"
	CodeIsDeadLetterQueue        = "is-dead-letter-queue"
	CodeDLQMaxMessageSizeSmaller = "dlq-max-message-size-smaller"
	CodeRedrivesToItself         = "redrives-to-itself"
)
