package deadletter

import (
	"context"
	"errors"
	"fmt"

	"github.com/sqsworker/sqsworker/internal/sqserr"
	"github.com/sqsworker/sqsworker/internal/sqslimit"
	"github.com/sqsworker/sqsworker/queueref"
)

// ErrNoRedrivePolicy is wrapped by the error Discover returns for a queue
// without a RedrivePolicy (dlq.ErrNoRedrivePolicy is this value).
var ErrNoRedrivePolicy = errors.New("dlq: queue has no RedrivePolicy")

// ErrDLQNotFound is wrapped by the error Discover returns when the queue's
// RedrivePolicy names a dead-letter queue that does not exist.
var ErrDLQNotFound = errors.New("dlq: dead-letter queue does not exist")

// ErrRedrivesToItself is wrapped by the error Discover returns for a queue
// whose RedrivePolicy names the queue itself as its dead-letter queue, and
// by dlq.Redrive's for a destination that is the dead-letter queue itself
// (dlq.ErrRedrivesToItself is this value).
var ErrRedrivesToItself = errors.New("dlq: queue's RedrivePolicy names the queue itself")

// Target is a queue's dead-letter queue as its RedrivePolicy names it. It
// has dlq.Target's fields, in the same order, so each converts to the
// other.
type Target struct {
	// SourceURL and SourceARN identify the queue whose RedrivePolicy this is.
	SourceURL, SourceARN string
	// DLQURL and DLQARN identify the dead-letter queue.
	DLQURL, DLQARN string
	// MaxReceiveCount is the RedrivePolicy's maxReceiveCount.
	MaxReceiveCount int
	// FIFO reports whether the source (and so the dead-letter queue) is a
	// FIFO queue.
	FIFO bool
	// MaxMessageSize is the dead-letter queue's MaximumMessageSize in bytes.
	// Zero means unknown; a Copier then assumes
	// sqslimit.DefaultMaxMessageSize.
	MaxMessageSize int
	// SourceMaxMessageSize is the source queue's MaximumMessageSize in
	// bytes (zero: unknown). When it is larger than MaxMessageSize, a
	// failed message may be too large to copy (ErrTooLarge,
	// Options.Offloader); NewCopier warns.
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
// with queueref.Resolve; a URL costs no call) and resolves the dead-letter
// queue's ARN to its URL. A queue without a RedrivePolicy gives an error
// wrapping ErrNoRedrivePolicy; a RedrivePolicy naming a queue that does
// not exist gives one wrapping ErrDLQNotFound; one naming the queue
// itself, one wrapping ErrRedrivesToItself. Each says what to do.
func Discover(ctx context.Context, client QueueAPI, queue string) (Target, error) {
	queueURL, err := queueref.Resolve(ctx, client, queue)
	if err != nil {
		return Target{}, err
	}
	t, _, err := DiscoverURL(ctx, client, queueURL)
	return t, err
}

// SelfRedriveError is the error for a RedrivePolicy of the queue called
// name that names the queue itself (arn).
func SelfRedriveError(name, arn string) error {
	return Wrap(ErrRedrivesToItself, nil, "queue %s's RedrivePolicy names the queue itself (%s) as its dead-letter queue: a failed job would be "+
		"\"dead-lettered\" back into the queue it failed in and run again and again; point deadLetterTargetArn at another queue "+
		"(`sqsworker setup %s` creates %s and sets it) or remove the RedrivePolicy", name, arn, name, DefaultDLQName(name))
}

// DiscoverURL is Discover for a queue URL, which also returns the source
// queue's attributes (RedrivePolicy, QueueArn, FifoQueue,
// MessageRetentionPeriod, VisibilityTimeout, MaximumMessageSize).
func DiscoverURL(ctx context.Context, client QueueAPI, queueURL string) (Target, map[string]string, error) {
	name := queueref.Name(queueURL)
	src, err := GetAttributes(ctx, client, queueURL, AttrRedrivePolicy, AttrQueueArn, AttrFifoQueue, AttrRetention, AttrVisibilityTimeout, AttrMaxMessageSize)
	if err != nil {
		if sqserr.NotExist(err) {
			return Target{}, nil, fmt.Errorf("queue %s does not exist (%s); check the URL, region and account: %w", name, queueURL, err)
		}
		return Target{}, nil, fmt.Errorf("reading the RedrivePolicy of queue %s: %w", name, err)
	}
	t := Target{SourceURL: queueURL, SourceARN: src[AttrQueueArn], FIFO: src[AttrFifoQueue] == "true", SourceMaxMessageSize: IntAttr(src, AttrMaxMessageSize)}
	if src[AttrRedrivePolicy] == "" {
		retention, ok := SecondsAttr(src, AttrRetention)
		if !ok {
			retention = sqslimit.DefaultRetention
		}
		return t, src, &noPolicyError{queue: name, retention: HumanDuration(retention)}
	}
	p, err := ParseRedrivePolicy(src[AttrRedrivePolicy])
	if err != nil {
		return t, src, fmt.Errorf("queue %s: %v; set a RedrivePolicy such as {\"deadLetterTargetArn\":\"arn:aws:sqs:REGION:ACCOUNT:%s-dlq\",\"maxReceiveCount\":5}", name, err, name)
	}
	t.DLQARN, t.MaxReceiveCount = p.TargetARN, p.MaxReceiveCount
	if p.TargetARN == t.SourceARN {
		return t, src, SelfRedriveError(name, p.TargetARN)
	}
	url, err := queueref.Resolve(ctx, client, p.TargetARN)
	if err != nil {
		if errors.Is(err, queueref.ErrInvalid) {
			return t, src, fmt.Errorf("queue %s's RedrivePolicy names dead-letter queue %q: %v; set deadLetterTargetArn to the ARN of the dead-letter queue", name, p.TargetARN, err)
		}
		if sqserr.NotExist(err) {
			return t, src, Wrap(ErrDLQNotFound, err, "queue %s's RedrivePolicy names dead-letter queue %s, which does not exist; "+
				"create it (for example with `sqsworker setup`) or point the RedrivePolicy at an existing queue", name, p.TargetARN)
		}
		return t, src, fmt.Errorf("finding dead-letter queue %s of queue %s: %w", p.TargetARN, name, err)
	}
	if url == queueURL {
		return t, src, SelfRedriveError(name, p.TargetARN)
	}
	t.DLQURL = url
	dlq, err := GetAttributes(ctx, client, url, AttrFifoQueue, AttrMaxMessageSize)
	if err != nil {
		if sqserr.NotExist(err) {
			return t, src, Wrap(ErrDLQNotFound, err, "dead-letter queue %s of queue %s does not exist; create it or fix the RedrivePolicy", p.TargetARN, name)
		}
		return t, src, fmt.Errorf("reading dead-letter queue %s of queue %s: %w", p.TargetARN, name, err)
	}
	if dlqFIFO := dlq[AttrFifoQueue] == "true"; dlqFIFO != t.FIFO {
		return t, src, fmt.Errorf("queue %s is %s but its dead-letter queue %s is %s; SQS needs both of the same type: point the RedrivePolicy at %s",
			name, QueueKind(t.FIFO), queueref.Name(url), QueueKind(dlqFIFO), QueueKind(t.FIFO))
	}
	t.MaxMessageSize = IntAttr(dlq, AttrMaxMessageSize)
	return t, src, nil
}
