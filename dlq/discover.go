package dlq

import (
	"context"
	"errors"
	"fmt"

	"github.com/sqsworker/sqsworker/internal/sqserr"
)

// ErrNoRedrivePolicy is wrapped by the error Discover returns for a queue
// without a RedrivePolicy.
var ErrNoRedrivePolicy = errors.New("dlq: queue has no RedrivePolicy")

// ErrDLQNotFound is wrapped by the error Discover returns when the queue's
// RedrivePolicy names a dead-letter queue that does not exist.
var ErrDLQNotFound = errors.New("dlq: dead-letter queue does not exist")

// Target is a queue's dead-letter queue as its RedrivePolicy names it.
type Target struct {
	// SourceURL and SourceARN identify the queue whose RedrivePolicy this is.
	SourceURL, SourceARN string
	// QueueURL and ARN identify the dead-letter queue.
	QueueURL, ARN string
	// MaxReceiveCount is the RedrivePolicy's maxReceiveCount: SQS moves a
	// message to the dead-letter queue itself when a receive would exceed it.
	MaxReceiveCount int
	// FIFO reports whether the source (and so the dead-letter queue) is a
	// FIFO queue.
	FIFO bool
	// MaxMessageSize is the dead-letter queue's MaximumMessageSize in bytes.
	// Zero means unknown; the Mover then assumes DefaultMaxMessageSize.
	MaxMessageSize int
	// SourceMaxMessageSize is the source queue's MaximumMessageSize in
	// bytes (zero: unknown). When it is larger than MaxMessageSize, a
	// failed message may be too large to copy (see ErrTooLarge and
	// MoverOptions.Offloader); NewCopier warns.
	SourceMaxMessageSize int
}

// noPolicyError is the error for a queue without a RedrivePolicy.
type noPolicyError struct {
	queue     string
	retention string
}

func (e *noPolicyError) Error() string {
	return fmt.Sprintf("queue %s has no RedrivePolicy; failed jobs would be retried until retention expires (%s) and then lost; "+
		"set one (see dlq.Setup or `sqsworker setup`) or opt out explicitly with the worker's Options.AllowNoDLQ", e.queue, e.retention)
}

func (e *noPolicyError) Unwrap() error { return ErrNoRedrivePolicy }

// Discover reads queueURL's RedrivePolicy and resolves the dead-letter
// queue's ARN to its URL (GetQueueUrl with the name and account from the
// ARN). A queue without a RedrivePolicy gives an error wrapping
// ErrNoRedrivePolicy; a RedrivePolicy naming a queue that does not exist
// gives one wrapping ErrDLQNotFound. Both say what to do.
//
// Discover needs sqs:GetQueueAttributes on both queues and sqs:GetQueueUrl.
func Discover(ctx context.Context, client QueueAPI, queueURL string) (Target, error) {
	t, _, err := discover(ctx, client, queueURL)
	return t, err
}

// discover is Discover that also returns the source queue's attributes.
func discover(ctx context.Context, client QueueAPI, queueURL string) (Target, map[string]string, error) {
	name := QueueName(queueURL)
	src, err := getAttributes(ctx, client, queueURL, attrRedrivePolicy, attrQueueArn, attrFifoQueue, attrRetention, attrVisibilityTimeout, attrMaxMessageSize)
	if err != nil {
		if sqserr.NotExist(err) {
			return Target{}, nil, fmt.Errorf("queue %s does not exist (%s); check the URL, region and account: %w", name, queueURL, err)
		}
		return Target{}, nil, fmt.Errorf("reading the RedrivePolicy of queue %s: %w", name, err)
	}
	t := Target{SourceURL: queueURL, SourceARN: src[attrQueueArn], FIFO: src[attrFifoQueue] == "true", SourceMaxMessageSize: intAttr(src, attrMaxMessageSize)}
	if src[attrRedrivePolicy] == "" {
		retention, ok := secondsAttr(src, attrRetention)
		if !ok {
			retention = DefaultRetention
		}
		return t, src, &noPolicyError{queue: name, retention: humanDuration(retention)}
	}
	p, err := parseRedrivePolicy(src[attrRedrivePolicy])
	if err != nil {
		return t, src, fmt.Errorf("queue %s: %v; set a RedrivePolicy such as {\"deadLetterTargetArn\":\"arn:aws:sqs:REGION:ACCOUNT:%s-dlq\",\"maxReceiveCount\":5}", name, err, name)
	}
	t.ARN, t.MaxReceiveCount = p.TargetARN, p.MaxReceiveCount
	url, err := urlForARN(ctx, client, p.TargetARN)
	if err != nil {
		if sqserr.NotExist(err) {
			return t, src, wrap(ErrDLQNotFound, err, "queue %s's RedrivePolicy names dead-letter queue %s, which does not exist; "+
				"create it (for example with `sqsworker setup`) or point the RedrivePolicy at an existing queue", name, p.TargetARN)
		}
		return t, src, fmt.Errorf("finding dead-letter queue %s of queue %s: %w", p.TargetARN, name, err)
	}
	t.QueueURL = url
	dlq, err := getAttributes(ctx, client, url, attrFifoQueue, attrMaxMessageSize)
	if err != nil {
		if sqserr.NotExist(err) {
			return t, src, wrap(ErrDLQNotFound, err, "dead-letter queue %s of queue %s does not exist; create it or fix the RedrivePolicy", p.TargetARN, name)
		}
		return t, src, fmt.Errorf("reading dead-letter queue %s of queue %s: %w", p.TargetARN, name, err)
	}
	if dlqFIFO := dlq[attrFifoQueue] == "true"; dlqFIFO != t.FIFO {
		return t, src, fmt.Errorf("queue %s is %s but its dead-letter queue %s is %s; SQS needs both of the same type: point the RedrivePolicy at %s",
			name, queueKind(t.FIFO), QueueName(url), queueKind(dlqFIFO), queueKind(t.FIFO))
	}
	t.MaxMessageSize = intAttr(dlq, attrMaxMessageSize)
	return t, src, nil
}

func queueKind(fifo bool) string {
	if fifo {
		return "a FIFO queue"
	}
	return "a standard queue"
}
