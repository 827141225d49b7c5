package main

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/dlq"
)

// sqsAPI is every SQS call the demo makes: the worker's, dlq.Setup's,
// dlq.Inspect's and dlq.Redrive's, sending, and deleting its queues at the
// end. *sqs.Client satisfies it, and so does sqstest's in-memory fake.
type sqsAPI interface {
	dlq.API
	SendMessage(ctx context.Context, params *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	DeleteMessage(ctx context.Context, params *sqs.DeleteMessageInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
	DeleteQueue(ctx context.Context, params *sqs.DeleteQueueInput, optFns ...func(*sqs.Options)) (*sqs.DeleteQueueOutput, error)
}

var _ sqsAPI = (*sqs.Client)(nil)

// observed is the client the demo gives its worker: it passes every call
// through and reports the ChangeMessageVisibilityBatch entries that
// succeeded for the receipt handles the demo watches (the long job's): the
// heartbeat's extensions, as they happen on the wire. (Dead-letter moves
// come from the worker's settlement hook, Options.OnSettled.)
type observed struct {
	sqsAPI
	watched  func(receiptHandle string) (job int, ok bool)
	onExtend func(job int, seconds int32)
}

func (o *observed) ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	out, err := o.sqsAPI.ChangeMessageVisibilityBatch(ctx, in, optFns...)
	if err != nil {
		return out, err
	}
	ok := map[string]bool{}
	for _, s := range out.Successful {
		ok[aws.ToString(s.Id)] = true
	}
	for _, e := range in.Entries {
		if !ok[aws.ToString(e.Id)] || e.VisibilityTimeout == 0 {
			continue
		}
		if job, watched := o.watched(aws.ToString(e.ReceiptHandle)); watched {
			o.onExtend(job, e.VisibilityTimeout)
		}
	}
	return out, nil
}
