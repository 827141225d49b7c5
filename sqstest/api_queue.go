package sqstest

import (
	"context"
	"encoding/json"
	"sort"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// CreateQueue creates a queue, or returns the URL of an existing queue when
// every given attribute matches it (QueueNameExists otherwise).
func (f *Fake) CreateQueue(ctx context.Context, params *sqs.CreateQueueInput, optFns ...func(*sqs.Options)) (res *sqs.CreateQueueOutput, rerr error) {
	const op = "CreateQueue"
	c, err := f.begin(ctx, op)
	if err != nil {
		return nil, err
	}
	defer settle(ctx, c, &res, &rerr)
	name := aws.ToString(params.QueueName)
	base := strings.TrimSuffix(name, ".fifo")
	if !queueNameRE.MatchString(base) || len(name) > 80 {
		return nil, opError(op, invalidParameter("Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length (%q)", name))
	}
	fifoName := strings.HasSuffix(name, ".fifo")
	fifoAttr := false
	if v, ok := params.Attributes["FifoQueue"]; ok {
		b, err := boolAttr("FifoQueue", v)
		if err != nil {
			return nil, opError(op, err)
		}
		fifoAttr = b
	}
	if fifoName != fifoAttr {
		return nil, opError(op, invalidParameter("The name of a FIFO queue can only include alphanumeric characters, hyphens, or underscores, must end with .fifo suffix and be 1 to 80 in length; a queue named %q needs FifoQueue=%t", name, fifoName))
	}

	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	if q, ok := f.byName[name]; ok {
		for k, v := range params.Attributes {
			cur, _ := f.attribute(q, k)
			if !attrEqual(k, cur, v) {
				return nil, opError(op, errQueueNameExists(k))
			}
		}
		return &sqs.CreateQueueOutput{QueueUrl: aws.String(q.url)}, nil
	}
	q := newQueue(name, f.queueURL(name), f.queueARN(name), now)
	if err := f.setAttributes(q, params.Attributes, true); err != nil {
		return nil, opError(op, err)
	}
	f.queues[q.url], f.byName[name], f.byArn[q.arn] = q, q, q
	return &sqs.CreateQueueOutput{QueueUrl: aws.String(q.url)}, nil
}

// attrEqual compares attribute values as SQS does for CreateQueue: JSON
// policies by content, booleans case-insensitively.
func attrEqual(name, a, b string) bool {
	if a == b {
		return true
	}
	switch name {
	case "FifoQueue", "ContentBasedDeduplication":
		return strings.EqualFold(a, b)
	case "RedrivePolicy":
		x, errX := redriveKey(a)
		y, errY := redriveKey(b)
		return errX == nil && errY == nil && x == y
	}
	return false
}

// redriveKey normalises a RedrivePolicy for comparison.
func redriveKey(v string) (string, error) {
	if v == "" {
		return "", nil
	}
	var raw struct {
		Target string `json:"deadLetterTargetArn"`
		Count  any    `json:"maxReceiveCount"`
	}
	if err := json.Unmarshal([]byte(v), &raw); err != nil {
		return "", err
	}
	var n string
	switch c := raw.Count.(type) {
	case float64:
		n = strconv.FormatFloat(c, 'f', -1, 64)
	case string:
		n = c
	}
	return raw.Target + "|" + n, nil
}

// DeleteQueue deletes a queue and its messages.
func (f *Fake) DeleteQueue(ctx context.Context, params *sqs.DeleteQueueInput, optFns ...func(*sqs.Options)) (res *sqs.DeleteQueueOutput, rerr error) {
	const op = "DeleteQueue"
	c, q, err := f.enter(ctx, op, params.QueueUrl)
	if err != nil {
		return nil, err
	}
	defer settle(ctx, c, &res, &rerr)
	defer f.mu.Unlock()
	delete(f.queues, q.url)
	delete(f.byName, q.name)
	delete(f.byArn, q.arn)
	f.notifyLocked()
	return &sqs.DeleteQueueOutput{}, nil
}

// GetQueueUrl returns the URL of the named queue.
func (f *Fake) GetQueueUrl(ctx context.Context, params *sqs.GetQueueUrlInput, optFns ...func(*sqs.Options)) (res *sqs.GetQueueUrlOutput, rerr error) {
	const op = "GetQueueUrl"
	c, err := f.begin(ctx, op)
	if err != nil {
		return nil, err
	}
	defer settle(ctx, c, &res, &rerr)
	f.mu.Lock()
	defer f.mu.Unlock()
	if owner := aws.ToString(params.QueueOwnerAWSAccountId); owner != "" && owner != f.opts.AccountID {
		return nil, opError(op, errQueueDoesNotExist())
	}
	q, ok := f.byName[aws.ToString(params.QueueName)]
	if !ok {
		return nil, opError(op, errQueueDoesNotExist())
	}
	return &sqs.GetQueueUrlOutput{QueueUrl: aws.String(q.url)}, nil
}

// ListQueues lists queue URLs in name order, optionally by name prefix.
func (f *Fake) ListQueues(ctx context.Context, params *sqs.ListQueuesInput, optFns ...func(*sqs.Options)) (res *sqs.ListQueuesOutput, rerr error) {
	const op = "ListQueues"
	c, err := f.begin(ctx, op)
	if err != nil {
		return nil, err
	}
	defer settle(ctx, c, &res, &rerr)
	f.mu.Lock()
	defer f.mu.Unlock()
	prefix := aws.ToString(params.QueueNamePrefix)
	var names []string
	for n := range f.byName {
		if strings.HasPrefix(n, prefix) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	urls := make([]string, len(names))
	for i, n := range names {
		urls[i] = f.byName[n].url
	}
	page, next, err := paginate(urls, params.MaxResults, params.NextToken)
	if err != nil {
		return nil, opError(op, err)
	}
	return &sqs.ListQueuesOutput{QueueUrls: page, NextToken: next}, nil
}

// paginate returns one page of items; tokens are offsets.
func paginate(items []string, max *int32, token *string) ([]string, *string, error) {
	start := 0
	if t := aws.ToString(token); t != "" {
		n, err := strconv.Atoi(t)
		if err != nil || n < 0 || n > len(items) {
			return nil, nil, invalidParameter("Invalid NextToken %q.", t)
		}
		start = n
	}
	if max == nil {
		if start == 0 {
			return items, nil, nil
		}
		return items[start:], nil, nil
	}
	if *max < 1 || *max > 1000 {
		return nil, nil, invalidParameter("Value %d for parameter MaxResults is invalid. Reason: must be between 1 and 1000.", *max)
	}
	end := min(start+int(*max), len(items))
	var next *string
	if end < len(items) {
		next = aws.String(strconv.Itoa(end))
	}
	return items[start:end], next, nil
}

// GetQueueAttributes returns the requested attributes ("All" for every one).
func (f *Fake) GetQueueAttributes(ctx context.Context, params *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (res *sqs.GetQueueAttributesOutput, rerr error) {
	const op = "GetQueueAttributes"
	c, q, err := f.enter(ctx, op, params.QueueUrl)
	if err != nil {
		return nil, err
	}
	defer settle(ctx, c, &res, &rerr)
	defer f.mu.Unlock()
	q.expireLocked(f.now())
	names := attrNamesToStrings(params.AttributeNames)
	for _, n := range names {
		if n == "All" {
			names = allAttributeNames
			break
		}
		if !knownAttribute[n] {
			return nil, opError(op, invalidAttributeName(n))
		}
	}
	out := map[string]string{}
	for _, n := range names {
		if v, ok := f.attribute(q, n); ok {
			out[n] = v
		}
	}
	return &sqs.GetQueueAttributesOutput{Attributes: out}, nil
}

// SetQueueAttributes changes queue attributes; an invalid one changes none.
func (f *Fake) SetQueueAttributes(ctx context.Context, params *sqs.SetQueueAttributesInput, optFns ...func(*sqs.Options)) (res *sqs.SetQueueAttributesOutput, rerr error) {
	const op = "SetQueueAttributes"
	c, q, err := f.enter(ctx, op, params.QueueUrl)
	if err != nil {
		return nil, err
	}
	defer settle(ctx, c, &res, &rerr)
	defer f.mu.Unlock()
	if err := f.setAttributes(q, params.Attributes, false); err != nil {
		return nil, opError(op, err)
	}
	q.modified = f.now()
	f.notifyLocked()
	return &sqs.SetQueueAttributesOutput{}, nil
}

// PurgeQueue deletes every message in the queue. A second purge within 60
// seconds fails with PurgeQueueInProgress, as in SQS.
func (f *Fake) PurgeQueue(ctx context.Context, params *sqs.PurgeQueueInput, optFns ...func(*sqs.Options)) (res *sqs.PurgeQueueOutput, rerr error) {
	const op = "PurgeQueue"
	c, q, err := f.enter(ctx, op, params.QueueUrl)
	if err != nil {
		return nil, err
	}
	defer settle(ctx, c, &res, &rerr)
	defer f.mu.Unlock()
	now := f.now()
	if !q.lastPurge.IsZero() && now.Sub(q.lastPurge) < purgeInterval {
		return nil, opError(op, errPurgeInProgress(q.name))
	}
	q.lastPurge = now
	q.clearMessages()
	return &sqs.PurgeQueueOutput{}, nil
}

// ListDeadLetterSourceQueues lists the queues whose RedrivePolicy names
// the given queue as their dead-letter queue.
func (f *Fake) ListDeadLetterSourceQueues(ctx context.Context, params *sqs.ListDeadLetterSourceQueuesInput, optFns ...func(*sqs.Options)) (res *sqs.ListDeadLetterSourceQueuesOutput, rerr error) {
	const op = "ListDeadLetterSourceQueues"
	c, dlq, err := f.enter(ctx, op, params.QueueUrl)
	if err != nil {
		return nil, err
	}
	defer settle(ctx, c, &res, &rerr)
	defer f.mu.Unlock()
	var urls []string
	for _, q := range f.queues {
		if q.redrive != nil && q.redrive.targetARN == dlq.arn {
			urls = append(urls, q.url)
		}
	}
	sort.Strings(urls)
	page, next, err := paginate(urls, params.MaxResults, params.NextToken)
	if err != nil {
		return nil, opError(op, err)
	}
	if page == nil {
		page = []string{}
	}
	return &sqs.ListDeadLetterSourceQueuesOutput{QueueUrls: page, NextToken: next}, nil
}
