package dlq

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// DefaultMaxReceiveCount is Setup's maxReceiveCount when none is given. It
// leaves room above SNS's default delivery policy (3 retries, so 4
// deliveries) and meets AWS's advice of at least 5 for Lambda consumers.
const DefaultMaxReceiveCount = 5

// SetupOptions describes a queue and its dead-letter queue for Setup.
type SetupOptions struct {
	// Name is the queue's name (required). With FIFO the ".fifo" suffix is
	// added when missing; a name ending in ".fifo" makes a FIFO pair.
	Name string
	// FIFO makes both queues FIFO queues.
	FIFO bool
	// DLQName is the dead-letter queue's name. Zero value: Name + "-dlq"
	// (before the ".fifo" suffix of a FIFO queue).
	DLQName string
	// MaxReceiveCount is the RedrivePolicy's maxReceiveCount: set it to at
	// least the retry policy's attempts (numRetries + 1). Zero value:
	// DefaultMaxReceiveCount.
	MaxReceiveCount int
	// VisibilityTimeout is the queue's VisibilityTimeout. Zero value: left
	// as it is (SQS's default is 30 seconds).
	VisibilityTimeout time.Duration
	// Retention is the queue's MessageRetentionPeriod: long enough for the
	// whole retry schedule. Zero value: DefaultRetention (4 days, SQS's
	// default).
	Retention time.Duration
	// DLQRetention is the dead-letter queue's MessageRetentionPeriod. It
	// should be longer than Retention: SQS keeps a message's original enqueue
	// time when it moves it to the dead-letter queue. Zero value: MaxRetention
	// (14 days).
	DLQRetention time.Duration
	// ContentBasedDeduplication turns on content-based deduplication for a
	// FIFO queue (not its dead-letter queue, which gets explicit IDs).
	ContentBasedDeduplication bool
	// Attributes are further attributes for the queue, set as given.
	Attributes map[string]string
}

// Setup creates a queue and its dead-letter queue with a RedrivePolicy
// linking them, or brings existing ones to the given settings: running it
// again changes nothing. It returns the queue's Target.
//
// Setup needs sqs:CreateQueue, sqs:SetQueueAttributes,
// sqs:GetQueueAttributes and sqs:GetQueueUrl.
func Setup(ctx context.Context, client SetupAPI, opts SetupOptions) (Target, error) {
	if opts.Name == "" {
		return Target{}, errors.New("setup: no queue name given; set SetupOptions.Name")
	}
	name, dlqName := opts.Name, opts.DLQName
	base, hasSuffix := strings.CutSuffix(name, ".fifo")
	fifo := opts.FIFO || hasSuffix
	if fifo {
		name = base + ".fifo"
	}
	if dlqName == "" {
		dlqName = base + "-dlq"
	}
	if fifo && !strings.HasSuffix(dlqName, ".fifo") {
		dlqName += ".fifo"
	}
	if !fifo && strings.HasSuffix(dlqName, ".fifo") {
		return Target{}, fmt.Errorf("setup: dead-letter queue name %s ends in .fifo but queue %s is a standard queue; drop the suffix or set FIFO", dlqName, name)
	}
	mrc := opts.MaxReceiveCount
	if mrc == 0 {
		mrc = DefaultMaxReceiveCount
	}
	if mrc < 1 || mrc > 1000 {
		return Target{}, fmt.Errorf("setup: MaxReceiveCount %d is out of range; SQS allows 1 to 1000", mrc)
	}
	retention, dlqRetention := opts.Retention, opts.DLQRetention
	if retention == 0 {
		retention = DefaultRetention
	}
	if dlqRetention == 0 {
		dlqRetention = MaxRetention
	}
	for _, r := range []struct {
		what string
		d    time.Duration
	}{{"Retention", retention}, {"DLQRetention", dlqRetention}} {
		if r.d < time.Minute || r.d > MaxRetention || r.d%time.Second != 0 {
			return Target{}, fmt.Errorf("setup: %s %v is out of range; SQS allows whole seconds from 1 minute to 14 days", r.what, r.d)
		}
	}
	if v := opts.VisibilityTimeout; v < 0 || v > 12*time.Hour || v%time.Second != 0 {
		return Target{}, fmt.Errorf("setup: VisibilityTimeout %v is out of range; SQS allows whole seconds from 0 to 12 hours", v)
	}

	dlqURL, err := ensureQueue(ctx, client, dlqName, fifo, map[string]string{attrRetention: secondsString(dlqRetention)})
	if err != nil {
		return Target{}, err
	}
	dlqAttrs, err := getAttributes(ctx, client, dlqURL, attrQueueArn)
	if err != nil {
		return Target{}, fmt.Errorf("setup: reading the ARN of %s: %w", dlqName, err)
	}
	attrs := map[string]string{
		attrRedrivePolicy: fmt.Sprintf(`{"deadLetterTargetArn":%s,"maxReceiveCount":%d}`, strconv.Quote(dlqAttrs[attrQueueArn]), mrc),
		attrRetention:     secondsString(retention),
	}
	if opts.VisibilityTimeout > 0 {
		attrs[attrVisibilityTimeout] = secondsString(opts.VisibilityTimeout)
	}
	if fifo {
		attrs[attrContentDedup] = strconv.FormatBool(opts.ContentBasedDeduplication)
	}
	for k, v := range opts.Attributes {
		attrs[k] = v
	}
	url, err := ensureQueue(ctx, client, name, fifo, attrs)
	if err != nil {
		return Target{}, err
	}
	t, err := Discover(ctx, client, url)
	if err != nil {
		return Target{}, fmt.Errorf("setup: %w", err)
	}
	return t, nil
}

// ensureQueue creates a queue of the given type if it does not exist and
// sets attrs on it. Only the immutable FifoQueue goes to CreateQueue, so an
// existing queue with other settings is updated rather than refused.
func ensureQueue(ctx context.Context, client SetupAPI, name string, fifo bool, attrs map[string]string) (string, error) {
	in := &sqs.CreateQueueInput{QueueName: aws.String(name)}
	if fifo {
		in.Attributes = map[string]string{attrFifoQueue: "true"}
	}
	out, err := client.CreateQueue(ctx, in)
	if err != nil {
		return "", fmt.Errorf("setup: creating queue %s: %w", name, err)
	}
	url := aws.ToString(out.QueueUrl)
	if len(attrs) > 0 {
		if _, err := client.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url), Attributes: attrs}); err != nil {
			return "", fmt.Errorf("setup: configuring queue %s: %w", name, err)
		}
	}
	return url, nil
}
