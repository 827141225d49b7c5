package sqstest

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// defaultMoveRate is the Fake's rate for move tasks that set none.
const defaultMoveRate = 500

// moveTask is a StartMessageMoveTask in progress or done. Guarded by Fake.mu.
type moveTask struct {
	handle      string
	source      string // DLQ ARN
	destination string // "" = each message's original source
	rate        int32  // messages per second
	explicit    bool   // rate given by the caller
	started     time.Time
	toMove      int64
	moved       int64
	status      string // RUNNING, COMPLETED, CANCELLED, FAILED
	failure     string
	seq         int
}

// StartMessageMoveTask starts moving the messages of a dead-letter queue
// back to their source queues, or to DestinationArn. The Fake moves them
// as its clock advances, at MaxNumberOfMessagesPerSecond (default 500).
func (f *Fake) StartMessageMoveTask(ctx context.Context, params *sqs.StartMessageMoveTaskInput, optFns ...func(*sqs.Options)) (res *sqs.StartMessageMoveTaskOutput, rerr error) {
	const op = "StartMessageMoveTask"
	c, err := f.begin(ctx, op)
	if err != nil {
		return nil, err
	}
	defer settle(ctx, c, &res, &rerr)
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	f.advanceTasksLocked(now)
	srcARN := aws.ToString(params.SourceArn)
	if srcARN == "" {
		return nil, opError(op, missingParameter("SourceArn"))
	}
	src, ok := f.byArn[srcARN]
	if !ok {
		return nil, opError(op, errResourceNotFound(fmt.Sprintf("The resource that you specified for the SourceArn parameter doesn't exist: %s", srcARN)))
	}
	if src.fifo {
		return nil, opError(op, errUnsupported("Message move tasks support only standard queues as the source."))
	}
	isDLQ := false
	for _, q := range f.queues {
		if q.redrive != nil && q.redrive.targetARN == src.arn {
			isDLQ = true
		}
	}
	if !isDLQ {
		return nil, opError(op, invalidParameter("Value %s for parameter SourceArn is invalid. Reason: Source queue must be configured as a Dead Letter Queue.", srcARN))
	}
	dest := aws.ToString(params.DestinationArn)
	if dest != "" {
		if _, ok := f.byArn[dest]; !ok {
			return nil, opError(op, errResourceNotFound(fmt.Sprintf("The resource that you specified for the DestinationArn parameter doesn't exist: %s", dest)))
		}
	}
	t := &moveTask{source: srcARN, destination: dest, rate: defaultMoveRate, started: now, status: "RUNNING"}
	if r := params.MaxNumberOfMessagesPerSecond; r != nil {
		if *r < 1 || *r > 500 {
			return nil, opError(op, invalidParameter("Value %d for parameter MaxNumberOfMessagesPerSecond is invalid. Reason: must be between 1 and 500.", *r))
		}
		t.rate, t.explicit = *r, true
	}
	for _, other := range f.tasks {
		if other.source == srcARN && other.status == "RUNNING" {
			return nil, opError(op, invalidParameter("There is already a task running. Only one active task is allowed for a source queue arn at a given time."))
		}
	}
	for _, m := range src.msgs {
		if m.state(now) == stateVisible {
			t.toMove++
		}
	}
	f.taskSeq++
	t.seq = f.taskSeq
	t.handle = makeHandle(src.name, "task")
	f.tasks[t.handle] = t
	return &sqs.StartMessageMoveTaskOutput{TaskHandle: aws.String(t.handle)}, nil
}

// advanceTasksLocked moves as many messages as running tasks' rates allow
// by now. f.mu must be held.
func (f *Fake) advanceTasksLocked(now time.Time) {
	for _, t := range f.tasks {
		if t.status != "RUNNING" {
			continue
		}
		src, ok := f.byArn[t.source]
		if !ok {
			t.status, t.failure = "FAILED", "AWS.SimpleQueueService.NonExistentQueue"
			continue
		}
		allowed := int64(now.Sub(t.started).Seconds()*float64(t.rate)) + 1 - t.moved
		before := t.moved
		src.expireLocked(now)
		for _, m := range append([]*message(nil), src.msgs...) {
			if allowed <= 0 || t.moved >= t.toMove {
				break
			}
			m.settle(now)
			if m.state(now) != stateVisible {
				continue
			}
			destARN := t.destination
			if destARN == "" {
				destARN = m.dlqSource
			}
			dest, ok := f.byArn[destARN]
			if !ok {
				t.status, t.failure = "FAILED", fmt.Sprintf("destination queue %s does not exist", destARN)
				break
			}
			src.remove(m)
			moved := &message{
				id: f.newID(), body: m.body, attrs: m.attrs, md5Body: m.md5Body, md5Attrs: m.md5Attrs,
				trace: m.trace, sent: now, visibleAt: now, groupID: m.groupID,
			}
			dest.add(moved)
			t.moved++
			allowed--
		}
		if t.status == "RUNNING" && (t.moved >= t.toMove || visibleCount(src, now) == 0) {
			t.status = "COMPLETED"
		}
		if t.moved > before {
			f.notifyLocked()
		}
	}
}

// runningTasksLocked reports whether any move task is still running.
func (f *Fake) runningTasksLocked() bool {
	for _, t := range f.tasks {
		if t.status == "RUNNING" {
			return true
		}
	}
	return false
}

func visibleCount(q *queue, now time.Time) int {
	n := 0
	for _, m := range q.msgs {
		if m.state(now) == stateVisible {
			n++
		}
	}
	return n
}

// ListMessageMoveTasks lists a source queue's move tasks, newest first.
func (f *Fake) ListMessageMoveTasks(ctx context.Context, params *sqs.ListMessageMoveTasksInput, optFns ...func(*sqs.Options)) (res *sqs.ListMessageMoveTasksOutput, rerr error) {
	const op = "ListMessageMoveTasks"
	c, err := f.begin(ctx, op)
	if err != nil {
		return nil, err
	}
	defer settle(ctx, c, &res, &rerr)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.advanceTasksLocked(f.now())
	srcARN := aws.ToString(params.SourceArn)
	if _, ok := f.byArn[srcARN]; !ok {
		return nil, opError(op, errResourceNotFound(fmt.Sprintf("The resource that you specified for the SourceArn parameter doesn't exist: %s", srcARN)))
	}
	max := 1
	if params.MaxResults != nil {
		if *params.MaxResults < 1 || *params.MaxResults > 10 {
			return nil, opError(op, invalidParameter("Value %d for parameter MaxResults is invalid. Reason: must be between 1 and 10.", *params.MaxResults))
		}
		max = int(*params.MaxResults)
	}
	var ts []*moveTask
	for _, t := range f.tasks {
		if t.source == srcARN {
			ts = append(ts, t)
		}
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].seq > ts[j].seq })
	out := &sqs.ListMessageMoveTasksOutput{Results: []types.ListMessageMoveTasksResultEntry{}}
	for i, t := range ts {
		if i == max {
			break
		}
		e := types.ListMessageMoveTasksResultEntry{
			ApproximateNumberOfMessagesMoved:  t.moved,
			ApproximateNumberOfMessagesToMove: aws.Int64(t.toMove),
			SourceArn:                         aws.String(t.source),
			DestinationArn:                    nonEmpty(t.destination),
			StartedTimestamp:                  t.started.UnixMilli(),
			Status:                            aws.String(t.status),
			FailureReason:                     nonEmpty(t.failure),
		}
		if t.explicit {
			e.MaxNumberOfMessagesPerSecond = aws.Int32(t.rate)
		}
		if t.status == "RUNNING" {
			e.TaskHandle = aws.String(t.handle)
		}
		out.Results = append(out.Results, e)
	}
	return out, nil
}

// CancelMessageMoveTask stops a running move task; moved messages stay moved.
func (f *Fake) CancelMessageMoveTask(ctx context.Context, params *sqs.CancelMessageMoveTaskInput, optFns ...func(*sqs.Options)) (res *sqs.CancelMessageMoveTaskOutput, rerr error) {
	const op = "CancelMessageMoveTask"
	c, err := f.begin(ctx, op)
	if err != nil {
		return nil, err
	}
	defer settle(ctx, c, &res, &rerr)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.advanceTasksLocked(f.now())
	t, ok := f.tasks[aws.ToString(params.TaskHandle)]
	if !ok || t.status != "RUNNING" {
		return nil, opError(op, errResourceNotFound("The task handle does not name a running message move task."))
	}
	t.status = "CANCELLED"
	return &sqs.CancelMessageMoveTaskOutput{ApproximateNumberOfMessagesMoved: t.moved}, nil
}
