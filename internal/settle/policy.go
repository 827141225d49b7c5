package settle

import (
	"context"
	"log/slog"

	"github.com/sqsworker/sqsworker/internal/deadletter"
	"github.com/sqsworker/sqsworker/retry"
)

// CheckPolicy warns when SQS would dead-letter a message before the retry
// policy gives up, which moves it without provenance. The worker and the
// Lambda adapter check their queues with it.
func CheckPolicy(log *slog.Logger, queueURL string, fifo bool, maxReceiveCount int, policy retry.Policy) {
	attempts := maxDeliveries(policy)
	// The FIFO rule (deadletter.RecommendedMaxReceiveCount) is the one
	// dlq.Setup and dlq.Lint apply too.
	suggested := deadletter.RecommendedMaxReceiveCount(attempts, true)
	if fifo && maxReceiveCount >= attempts && maxReceiveCount < suggested {
		log.Warn("sqsworker: on a FIFO queue a message's receive count also grows each time an earlier message of its group fails (it is released unprocessed), so SQS may dead-letter a message that never ran; raise maxReceiveCount (SQS allows up to 1000)",
			"queue", queueURL, "maxReceiveCount", maxReceiveCount, "policyAttempts", attempts, "suggested", suggested)
	}
	if maxReceiveCount > 0 && maxReceiveCount < attempts {
		log.Warn("sqsworker: the queue's maxReceiveCount is lower than the retry policy's attempts; SQS will dead-letter messages before the policy gives up (without provenance). Raise maxReceiveCount or shorten the policy",
			"queue", queueURL, "maxReceiveCount", maxReceiveCount, "policyAttempts", attempts)
	}
}

// DiscoverDLQ finds queueURL's dead-letter queue from its RedrivePolicy
// (deadletter.Discover) and returns the Copier that builds its dead-letter
// copies, after warning (CheckPolicy) when SQS would dead-letter a message
// before policy gives up. The worker and the Lambda adapter find their
// dead-letter queue with it; the error wraps deadletter.ErrNoRedrivePolicy
// (dlq.ErrNoRedrivePolicy) for a queue without one. copier configures the
// Copier (its Logger is log).
func DiscoverDLQ(ctx context.Context, client deadletter.QueueAPI, queueURL string, policy retry.Policy, log *slog.Logger, copier ...func(*deadletter.Options)) (*deadletter.Copier, error) {
	t, err := deadletter.Discover(ctx, client, queueURL)
	if err != nil {
		return nil, err
	}
	c, err := deadletter.NewCopier(t, append([]func(*deadletter.Options){func(o *deadletter.Options) { o.Logger = log }}, copier...)...)
	if err != nil {
		return nil, err
	}
	CheckPolicy(log, t.SourceURL, t.FIFO, t.MaxReceiveCount, policy)
	return c, nil
}
