package dlq

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/internal/deadletter"
	"github.com/sqsworker/sqsworker/internal/sqserr"
	"github.com/sqsworker/sqsworker/queueref"
)

// SourcesOf returns the URLs of the queues whose RedrivePolicy names the
// queue dlq (a name, URL or ARN, resolved on each call with
// queueref.Resolve) as their dead-letter queue: none for a queue that is no
// queue's dead-letter queue. It asks SQS with ListDeadLetterSourceQueues;
// on endpoints without that call (local emulators) it reads the
// RedrivePolicy of every queue ListQueues returns.
//
// SourcesOf needs sqs:ListDeadLetterSourceQueues on the dead-letter queue,
// or sqs:ListQueues and sqs:GetQueueAttributes on every queue.
func SourcesOf(ctx context.Context, client API, dlq string) ([]string, error) {
	dlqURL, err := queueref.Resolve(ctx, client, dlq)
	if err != nil {
		return nil, err
	}
	var urls []string
	in := &sqs.ListDeadLetterSourceQueuesInput{QueueUrl: aws.String(dlqURL), MaxResults: aws.Int32(1000)}
	for {
		out, err := client.ListDeadLetterSourceQueues(ctx, in)
		if err != nil {
			if sqserr.Unsupported(err) {
				return scanSources(ctx, client, dlqURL)
			}
			return nil, fmt.Errorf("listing the source queues of %s: %w", queueref.Name(dlqURL), err)
		}
		urls = append(urls, out.QueueUrls...)
		if aws.ToString(out.NextToken) == "" {
			return urls, nil
		}
		in.NextToken = out.NextToken
	}
}

// scanSources is SourcesOf without ListDeadLetterSourceQueues.
func scanSources(ctx context.Context, client API, dlqURL string) ([]string, error) {
	a, err := deadletter.GetAttributes(ctx, client, dlqURL, deadletter.AttrQueueArn)
	if err != nil {
		return nil, fmt.Errorf("reading queue %s: %w", queueref.Name(dlqURL), err)
	}
	arn := a[deadletter.AttrQueueArn]
	var sources []string
	in := &sqs.ListQueuesInput{MaxResults: aws.Int32(1000)}
	for {
		page, err := client.ListQueues(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("listing queues to find the sources of %s: %w", queueref.Name(dlqURL), err)
		}
		for _, u := range page.QueueUrls {
			attrs, err := deadletter.GetAttributes(ctx, client, u, deadletter.AttrRedrivePolicy)
			if err != nil {
				if sqserr.NotExist(err) {
					continue // deleted meanwhile
				}
				return nil, fmt.Errorf("reading the RedrivePolicy of %s: %w", queueref.Name(u), err)
			}
			if p, err := deadletter.ParseRedrivePolicy(attrs[deadletter.AttrRedrivePolicy]); err == nil && p.TargetARN == arn {
				sources = append(sources, u)
			}
		}
		if aws.ToString(page.NextToken) == "" {
			return sources, nil
		}
		in.NextToken = page.NextToken
	}
}
