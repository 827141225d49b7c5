package dlq

import (
	"context"
	"errors"
	"fmt"

	"github.com/sqsworker/sqsworker/internal/sqserr"
	"strings"

	"github.com/sqsworker/sqsworker/queueref"
)

// ErrNoRedrivePolicy is wrapped by the error Discover returns for a queue
// without a RedrivePolicy.
var ErrNoRedrivePolicy = errors.New("dlq: queue has no RedrivePolicy")

// ErrDLQNotFound is wrapped by the error Discover returns when the queue's
// RedrivePolicy names a dead-letter queue that does not exist.
var ErrDLQNotFound = errors.New("dlq: dead-letter queue does not exist")

// ErrRedrivesToItself is wrapped by the error Discover returns for a queue
// whose RedrivePolicy names the queue itself as its dead-letter queue, and
// by Redrive's for a destination that is the dead-letter queue itself.
var ErrRedrivesToItself = errors.New("dlq: queue's RedrivePolicy names the queue itself")

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

// Discover reads the RedrivePolicy of queue (a name, URL or ARN, resolved
// on each call with queueref.Resolve) and resolves the dead-letter queue's
// ARN to its URL (GetQueueUrl with the ARN's name, account and region). A
// queue without a RedrivePolicy gives an error wrapping
// ErrNoRedrivePolicy; a RedrivePolicy naming a queue that does not exist
// gives one wrapping ErrDLQNotFound; one naming the queue itself, one
// wrapping ErrRedrivesToItself. Each says what to do.
//
// Discover needs sqs:GetQueueAttributes on both queues and sqs:GetQueueUrl.
func Discover(ctx context.Context, client QueueAPI, queue string) (Target, error) {
	queueURL, err := queueref.Resolve(ctx, client, queue)
	if err != nil {
		return Target{}, err
	}
	t, _, err := discover(ctx, client, queueURL)
	return t, err
}

// selfRedriveError is the error for a RedrivePolicy that names its own queue.
func selfRedriveError(name, arn string) error {
	return wrap(ErrRedrivesToItself, nil, "queue %s's RedrivePolicy names the queue itself (%s) as its dead-letter queue: a failed job would be "+
		"\"dead-lettered\" back into the queue it failed in and run again and again; point deadLetterTargetArn at another queue "+
		"(`sqsworker setup %s` creates %s and sets it) or remove the RedrivePolicy", name, arn, name, defaultDLQName(name))
}

// defaultDLQName is the dead-letter queue name Setup gives queue name by
// default: name + "-dlq", before the ".fifo" suffix of a FIFO queue.
func defaultDLQName(name string) string {
	if base, ok := strings.CutSuffix(name, ".fifo"); ok {
		return base + "-dlq.fifo"
	}
	return name + "-dlq"
}

// discover is Discover that also returns the source queue's attributes.
func discover(ctx context.Context, client QueueAPI, queueURL string) (Target, map[string]string, error) {
	name := queueref.Name(queueURL)
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
	t.DLQARN, t.MaxReceiveCount = p.TargetARN, p.MaxReceiveCount
	if p.TargetARN == t.SourceARN {
		return t, src, selfRedriveError(name, p.TargetARN)
	}
	url, err := queueref.Resolve(ctx, client, p.TargetARN)
	if err != nil {
		if errors.Is(err, queueref.ErrInvalid) {
			return t, src, fmt.Errorf("queue %s's RedrivePolicy names dead-letter queue %q: %v; set deadLetterTargetArn to the ARN of the dead-letter queue", name, p.TargetARN, err)
		}
		if sqserr.NotExist(err) {
			return t, src, wrap(ErrDLQNotFound, err, "queue %s's RedrivePolicy names dead-letter queue %s, which does not exist; "+
				"create it (for example with `sqsworker setup`) or point the RedrivePolicy at an existing queue", name, p.TargetARN)
		}
		return t, src, fmt.Errorf("finding dead-letter queue %s of queue %s: %w", p.TargetARN, name, err)
	}
	if url == queueURL {
		return t, src, selfRedriveError(name, p.TargetARN)
	}
	t.DLQURL = url
	dlq, err := getAttributes(ctx, client, url, attrFifoQueue, attrMaxMessageSize)
	if err != nil {
		if sqserr.NotExist(err) {
			return t, src, wrap(ErrDLQNotFound, err, "dead-letter queue %s of queue %s does not exist; create it or fix the RedrivePolicy", p.TargetARN, name)
		}
		return t, src, fmt.Errorf("reading dead-letter queue %s of queue %s: %w", p.TargetARN, name, err)
	}
	if dlqFIFO := dlq[attrFifoQueue] == "true"; dlqFIFO != t.FIFO {
		return t, src, fmt.Errorf("queue %s is %s but its dead-letter queue %s is %s; SQS needs both of the same type: point the RedrivePolicy at %s",
			name, queueKind(t.FIFO), queueref.Name(url), queueKind(dlqFIFO), queueKind(t.FIFO))
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
