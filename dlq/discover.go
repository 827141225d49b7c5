package dlq

import (
	"context"

	"github.com/sqsworker/sqsworker/internal/deadletter"
)

// ErrNoRedrivePolicy is wrapped by the error Discover returns for a queue
// without a RedrivePolicy (and so by the worker's and the Lambda adapter's
// for such a queue).
var ErrNoRedrivePolicy = deadletter.ErrNoRedrivePolicy

// ErrRedrivesToItself is wrapped by the error Discover returns for a queue
// whose RedrivePolicy names the queue itself as its dead-letter queue, and
// by Redrive's for a destination that is the dead-letter queue itself.
var ErrRedrivesToItself = deadletter.ErrRedrivesToItself

// Target is a queue's dead-letter queue as its RedrivePolicy names it.
type Target struct {
	// SourceURL and SourceARN identify the queue whose RedrivePolicy this is.
	SourceURL, SourceARN string
	// DLQURL and DLQARN identify the dead-letter queue.
	DLQURL, DLQARN string
	// MaxReceiveCount is the RedrivePolicy's maxReceiveCount: SQS moves a
	// message to the dead-letter queue itself when a receive would exceed it.
	MaxReceiveCount int
	// FIFO reports whether the source (and so the dead-letter queue) is a
	// FIFO queue.
	FIFO bool
	// MaxMessageSize is the dead-letter queue's MaximumMessageSize in bytes.
	// Zero means unknown; the runtimes then assume 256 KiB.
	MaxMessageSize int
	// SourceMaxMessageSize is the source queue's MaximumMessageSize in
	// bytes (zero: unknown). When it is larger than MaxMessageSize, a
	// failed message may be too large to copy to the dead-letter queue with
	// its reason (see "A dead-letter queue smaller than its source" in the
	// package doc).
	SourceMaxMessageSize int
}

// Discover reads the RedrivePolicy of queue (a name, URL or ARN, resolved
// on each call with queueref.Resolve) and resolves the dead-letter queue's
// ARN to its URL (GetQueueUrl with the ARN's name, account and region). A
// queue without a RedrivePolicy gives an error wrapping
// ErrNoRedrivePolicy; a RedrivePolicy naming the queue itself, one wrapping
// ErrRedrivesToItself; one naming a queue that does not exist, an error
// saying so. Each says what to do.
//
// Discover needs sqs:GetQueueAttributes on both queues and sqs:GetQueueUrl.
func Discover(ctx context.Context, client API, queue string) (Target, error) {
	t, err := deadletter.Discover(ctx, client, queue)
	return Target(t), err
}
