package settle

import (
	"log/slog"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/retry"
)

// CheckPolicy warns when SQS would dead-letter a message before the retry
// policy gives up, which moves it without provenance. The worker and the
// Lambda adapter check their queues with it.
func CheckPolicy(log *slog.Logger, queueURL string, fifo bool, maxReceiveCount int, policy retry.Policy) {
	attempts := retry.MaxDeliveries(policy)
	// The FIFO rule (dlq.RecommendedMaxReceiveCount) is the one Setup and
	// Lint apply too.
	suggested := dlq.RecommendedMaxReceiveCount(attempts, true)
	if fifo && maxReceiveCount >= attempts && maxReceiveCount < suggested {
		log.Warn("sqsworker: on a FIFO queue a message's receive count also grows each time an earlier message of its group fails (it is released unprocessed), so SQS may dead-letter a message that never ran; raise maxReceiveCount (SQS allows up to 1000)",
			"queue", queueURL, "maxReceiveCount", maxReceiveCount, "policyAttempts", attempts, "suggested", suggested)
	}
	if maxReceiveCount > 0 && maxReceiveCount < attempts {
		log.Warn("sqsworker: the queue's maxReceiveCount is lower than the retry policy's attempts; SQS will dead-letter messages before the policy gives up (without provenance). Raise maxReceiveCount or shorten the policy",
			"queue", queueURL, "maxReceiveCount", maxReceiveCount, "policyAttempts", attempts)
	}
}
