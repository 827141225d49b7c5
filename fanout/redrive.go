package fanout

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/queueref"
)

// ErrMoveTaskUnsupported is wrapped by Redrive's error for the method
// "move-task": SQS's message move tasks do not take a dead-letter
// queue whose source is an SNS subscription.
var ErrMoveTaskUnsupported = errors.New("fanout: message move tasks cannot redrive a subscription's dead-letter queue")

// Target returns the dlq.Target that describes a subscription's
// dead-letter queue (QueueURL, ARN) and the subscribed queue (SourceURL,
// SourceARN), for dlq.Inspect and dlq.Redrive.
//
// It needs sqs:GetQueueUrl and sqs:GetQueueAttributes on both queues.
func Target(ctx context.Context, client dlq.API, sub Subscription) (dlq.Target, error) {
	if sub.DLQARN == "" {
		return dlq.Target{}, fmt.Errorf("%w: the subscription of queue %s to topic %s has no dead-letter queue (RedrivePolicy)", ErrNoSubscription, queueref.Name(sub.QueueARN), topicName(sub.TopicARN))
	}
	t := dlq.Target{SourceARN: sub.QueueARN, DLQARN: sub.DLQARN}
	for _, q := range []struct {
		arn string
		url *string
	}{{sub.QueueARN, &t.SourceURL}, {sub.DLQARN, &t.DLQURL}} {
		a, err := queueref.ParseARN(q.arn)
		if err != nil {
			return dlq.Target{}, err
		}
		out, err := client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(a.Name), QueueOwnerAWSAccountId: aws.String(a.Account)})
		if err != nil {
			return dlq.Target{}, fmt.Errorf("finding queue %s of the subscription to topic %s: %w", a.Name, topicName(sub.TopicARN), err)
		}
		*q.url = aws.ToString(out.QueueUrl)
	}
	out, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(t.DLQURL),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameFifoQueue, sqstypes.QueueAttributeNameMaximumMessageSize}})
	if err != nil {
		return dlq.Target{}, fmt.Errorf("reading dead-letter queue %s: %w", queueref.Name(t.DLQURL), err)
	}
	t.FIFO = out.Attributes["FifoQueue"] == "true"
	_, _ = fmt.Sscan(out.Attributes["MaximumMessageSize"], &t.MaxMessageSize)
	return t, nil
}

// Redrive moves the messages of a subscription's dead-letter queue to the
// subscribed queue — not back to the topic, which would deliver them again
// to every other subscriber — with dlq.Redrive's manual move: body and
// message attributes as they are (an enveloped delivery stays an envelope,
// for Unwrap), FIFO group IDs kept, each message deleted from the
// dead-letter queue only after its send succeeded, at opts.Rate, with
// opts.Filter, opts.DryRun and opts.Max. An interrupted redrive leaves every
// message in one queue or (a send confirmed but not yet deleted) both,
// never neither; running it again moves the rest.
//
// opts.Destination defaults to the subscribed queue. The method "move-task"
// is refused (ErrMoveTaskUnsupported): SQS's move tasks take only
// dead-letter queues of SQS queues; "auto" means the manual move.
//
// It needs dlq.Redrive's permissions for the manual move.
func Redrive(ctx context.Context, client dlq.API, sub Subscription, opts dlq.RedriveOptions) (dlq.RedriveResult, error) {
	if opts.Method == "move-task" {
		return dlq.RedriveResult{}, fmt.Errorf("%w; use the manual move (method \"manual\")", ErrMoveTaskUnsupported)
	}
	t, err := Target(ctx, client, sub)
	if err != nil {
		return dlq.RedriveResult{}, err
	}
	opts.Method = "manual"
	if opts.Destination == "" {
		opts.Destination = t.SourceURL
	}
	return dlq.Redrive(ctx, client, t, opts)
}
