package producer_test

import (
	"context"
	"strconv"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/producer"
)

// entryFaults wraps a client and fails chosen entries of SendMessageBatch
// calls: fail returns the error entry for a body (nil: send it), and is
// asked again on every attempt.
type entryFaults struct {
	producer.API
	mu    sync.Mutex
	fail  func(body string, attempt int) *types.BatchResultErrorEntry
	tries map[string]int
	calls []int // entries per call
}

func (c *entryFaults) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	c.mu.Lock()
	if c.tries == nil {
		c.tries = map[string]int{}
	}
	c.calls = append(c.calls, len(in.Entries))
	pass := &sqs.SendMessageBatchInput{QueueUrl: in.QueueUrl}
	var failed []types.BatchResultErrorEntry
	for _, e := range in.Entries {
		body := aws.ToString(e.MessageBody)
		c.tries[body]++
		if f := c.fail(body, c.tries[body]); f != nil {
			f.Id = e.Id
			failed = append(failed, *f)
			continue
		}
		pass.Entries = append(pass.Entries, e)
	}
	c.mu.Unlock()
	out := &sqs.SendMessageBatchOutput{}
	if len(pass.Entries) > 0 {
		var err error
		if out, err = c.API.SendMessageBatch(ctx, pass, optFns...); err != nil {
			return nil, err
		}
	}
	out.Failed = append(out.Failed, failed...)
	return out, nil
}

func serverFault(code string) *types.BatchResultErrorEntry {
	return &types.BatchResultErrorEntry{Code: aws.String(code), Message: aws.String("injected"), SenderFault: false}
}

func senderFault(code string) *types.BatchResultErrorEntry {
	return &types.BatchResultErrorEntry{Code: aws.String(code), Message: aws.String("injected"), SenderFault: true}
}

func bodies(n int, prefix string) []producer.Message {
	msgs := make([]producer.Message, n)
	for i := range msgs {
		msgs[i] = producer.Message{Body: prefix + strconv.Itoa(i)}
	}
	return msgs
}
