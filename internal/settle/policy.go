package settle

import (
	"log/slog"

	"github.com/sqsworker/sqsworker/retry"
)

// fifoReceiveFactor is how many times the policy's deliveries a FIFO
// queue's maxReceiveCount should allow: a message waiting behind up to 9
// others of its group (one receive) is released, and so received again,
// once per failed attempt of each of them.
const fifoReceiveFactor = 10

// CheckPolicy warns when SQS would dead-letter a message before the retry
// policy gives up, which moves it without provenance. The worker and the
// Lambda adapter check their queues with it.
func CheckPolicy(log *slog.Logger, queueURL string, fifo bool, maxReceiveCount int, policy retry.Policy) {
	attempts := retry.MaxDeliveries(policy)
	if fifo && maxReceiveCount >= attempts && maxReceiveCount < min(1000, fifoReceiveFactor*attempts) {
		log.Warn("sqsworker: on a FIFO queue a message's receive count also grows each time an earlier message of its group fails (it is released unprocessed), so SQS may dead-letter a message that never ran; raise maxReceiveCount (SQS allows up to 1000)",
			"queue", queueURL, "maxReceiveCount", maxReceiveCount, "policyAttempts", attempts, "suggested", min(1000, fifoReceiveFactor*attempts))
	}
	if maxReceiveCount > 0 && maxReceiveCount < attempts {
		log.Warn("sqsworker: the queue's maxReceiveCount is lower than the retry policy's attempts; SQS will dead-letter messages before the policy gives up (without provenance). Raise maxReceiveCount or shorten the policy",
			"queue", queueURL, "maxReceiveCount", maxReceiveCount, "policyAttempts", attempts)
	}
}
