package conformance

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

func dlqBehaviours() []behaviour {
	return []behaviour{
		{name: "RedriveToDLQAfterMaxReceiveCount", run: redriveToDLQ},
		{name: "FIFORedriveResetsEnqueueTime", run: fifoRedriveResetsEnqueueTime},
		{name: "ListDeadLetterSourceQueues", run: listDeadLetterSourceQueues},
		{name: "StartMessageMoveTaskRedrivesToSource", run: startMessageMoveTask},
	}
}

// redrivePipe creates a DLQ and a source queue (VisibilityTimeout 0, so a
// received message is visible again at once) whose RedrivePolicy targets it.
func (e *env) redrivePipe(prefix string, maxReceiveCount int) (source, dlq, dlqArn string) {
	dlq = e.createQueue(prefix+"dlq", nil)
	dlqArn = e.arn(dlq)
	source = e.createQueue(prefix, map[string]string{
		"VisibilityTimeout": "0",
		"RedrivePolicy":     redrivePolicy(dlqArn, maxReceiveCount),
	})
	return source, dlq, dlqArn
}

// A message received maxReceiveCount times and not deleted moves to the
// dead-letter queue on the next receive attempt: that receive returns
// nothing, and the DLQ holds the message with its MessageId, body, message
// attributes, SentTimestamp and ApproximateReceiveCount carried over.
func redriveToDLQ(e *env) {
	const maxReceives = 2
	source, dlq, _ := e.redrivePipe("redrive", maxReceives)
	attrs := map[string]types.MessageAttributeValue{"origin": stringAttr("conformance")}
	sent := e.sendInput(&sqs.SendMessageInput{QueueUrl: aws.String(source), MessageBody: aws.String("poison"), MessageAttributes: attrs})

	var sentAt time.Time
	for i := 1; i <= maxReceives; i++ {
		m := e.recvOne(source, fmt.Sprintf("receive %d of %d from the source", i, maxReceives))
		if n := receiveCount(m); n != i {
			e.t.Errorf("receive %d from the source: ApproximateReceiveCount %d", i, n)
		}
		sentAt = msAttr(e, m, "SentTimestamp")
	}
	e.wantEmpty(source, 1, fmt.Sprintf("receive %d from the source (past maxReceiveCount %d)", maxReceives+1, maxReceives))

	moved := e.recvEventually(dlq, "message in the DLQ", 30*time.Second)
	if aws.ToString(moved.MessageId) != aws.ToString(sent.MessageId) || aws.ToString(moved.Body) != "poison" {
		e.t.Errorf("DLQ message %s %q, want the sent %s %q", aws.ToString(moved.MessageId), aws.ToString(moved.Body), aws.ToString(sent.MessageId), "poison")
	}
	if got := moved.MessageAttributes["origin"]; aws.ToString(got.StringValue) != "conformance" {
		e.t.Errorf("DLQ message lost its message attribute: %v", moved.MessageAttributes)
	}
	if got := msAttr(e, moved, "SentTimestamp"); !got.Equal(sentAt) {
		e.t.Errorf("DLQ message SentTimestamp %v, want the original %v (a standard queue keeps the enqueue time on redrive)", got, sentAt)
	}
	// ApproximateReceiveCount is "the number of times a message has been
	// received across all queues but not deleted" (SQS API reference), so
	// the count carries over into the DLQ: past maxReceiveCount on the first
	// receive there. (Whether the receive attempt that triggered the move
	// counts is not documented; fauxqs counts it, so 3 and 4 are both seen.)
	if n := receiveCount(moved); n <= maxReceives {
		e.t.Errorf("first receive from the DLQ: ApproximateReceiveCount %d, want more than maxReceiveCount %d (the count is kept across queues)", n, maxReceives)
	}
	e.wantEmpty(source, 1, "the source after the move")
}

// A FIFO queue's redrive to its FIFO dead-letter queue resets the
// message's enqueue time (SentTimestamp) to the move, unlike a standard
// queue's (RedriveToDLQAfterMaxReceiveCount): AWS documents "For FIFO
// queues, the enqueue timestamp resets when the message is moved to a
// dead-letter queue", so the DLQ's retention counts from the move.
func fifoRedriveResetsEnqueueTime(e *env) {
	dlq := e.createFIFO("fiforedrivedlq", nil)
	source := e.createFIFO("fiforedrive", map[string]string{
		"VisibilityTimeout": "0",
		"RedrivePolicy":     redrivePolicy(e.arn(dlq), 1),
	})
	e.sendGroup(source, "g", "d1", "poison")
	sentAt := msAttr(e, e.recvOne(source, "the one allowed receive"), "SentTimestamp")
	e.sleep(1500 * time.Millisecond)
	before := time.Now().Add(-time.Second) // allow for the clocks' skew
	e.wantEmpty(source, 1, "receive past maxReceiveCount 1")
	moved := e.recvEventually(dlq, "message in the FIFO DLQ", 30*time.Second)
	if aws.ToString(moved.Body) != "poison" {
		e.t.Fatalf("FIFO DLQ holds %q, want the poison message", aws.ToString(moved.Body))
	}
	got := msAttr(e, moved, "SentTimestamp")
	if e.quirk(QuirkFIFORedriveKeepsEnqueueTime) {
		if !got.Equal(sentAt) {
			e.t.Errorf("quirk check: SentTimestamp in the FIFO DLQ is %v, not the original %v; the emulator now resets it (remove the quirk)", got, sentAt)
		}
		return
	}
	if !got.After(sentAt) || got.Before(before) {
		e.t.Errorf("SentTimestamp in the FIFO DLQ is %v (sent %v); want the time of the move, after %v", got, sentAt, before)
	}
}

// ListDeadLetterSourceQueues of a DLQ lists the queues whose RedrivePolicy
// targets it.
func listDeadLetterSourceQueues(e *env) {
	source, dlq, dlqArn := e.redrivePipe("lsrc", 3)
	other := e.createQueue("lsrc2", map[string]string{"RedrivePolicy": redrivePolicy(dlqArn, 5)})
	if e.quirk(QuirkNoDLQAdminActions) {
		_, err := e.api.ListDeadLetterSourceQueues(e.ctx(), &sqs.ListDeadLetterSourceQueuesInput{QueueUrl: aws.String(dlq)})
		e.wantCode(err, "InvalidAction", "quirk check: ListDeadLetterSourceQueues")
		return
	}
	e.eventually("ListDeadLetterSourceQueues", 30*time.Second, func() error {
		out, err := e.api.ListDeadLetterSourceQueues(e.ctx(), &sqs.ListDeadLetterSourceQueuesInput{QueueUrl: aws.String(dlq)})
		if err != nil {
			return err
		}
		got := slices.Sorted(slices.Values(out.QueueUrls))
		want := slices.Sorted(slices.Values([]string{source, other}))
		if !slices.Equal(got, want) {
			return fmt.Errorf("QueueUrls %v, want %v", got, want)
		}
		return nil
	})
	out, err := e.api.ListDeadLetterSourceQueues(e.ctx(), &sqs.ListDeadLetterSourceQueuesInput{QueueUrl: aws.String(source)})
	if err != nil || len(out.QueueUrls) != 0 {
		e.t.Errorf("ListDeadLetterSourceQueues of a queue that is no DLQ: %v, %v; want no queues", out, err)
	}
}

// StartMessageMoveTask on a DLQ without a DestinationArn moves its messages
// back to the queue they came from, as new messages (new MessageId, receive
// count starting again, so the source's maxReceiveCount does not bounce them
// straight back), and ListMessageMoveTasks reports the task COMPLETED.
func startMessageMoveTask(e *env) {
	source, dlq, dlqArn := e.redrivePipe("move", 1)
	sent := e.send(source, "redrive me")
	e.recvOne(source, "the one allowed receive")
	e.wantEmpty(source, 1, "receive past maxReceiveCount 1")

	if e.quirk(QuirkNoDLQAdminActions) {
		_, err := e.api.StartMessageMoveTask(e.ctx(), &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(dlqArn)})
		e.wantCode(err, "InvalidAction", "quirk check: StartMessageMoveTask")
		_, err = e.api.ListMessageMoveTasks(e.ctx(), &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(dlqArn)})
		e.wantCode(err, "InvalidAction", "quirk check: ListMessageMoveTasks")
		return
	}
	e.eventually("the message counted in the DLQ", 70*time.Second, func() error {
		if n := e.attributes(dlq, types.QueueAttributeNameApproximateNumberOfMessages)["ApproximateNumberOfMessages"]; n != "1" {
			return fmt.Errorf("DLQ ApproximateNumberOfMessages %q, want 1", n)
		}
		return nil
	})
	started, err := e.api.StartMessageMoveTask(e.ctx(), &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(dlqArn)})
	if err != nil {
		e.t.Fatalf("StartMessageMoveTask: %v", err)
	}
	if aws.ToString(started.TaskHandle) == "" {
		e.t.Errorf("StartMessageMoveTask returned no TaskHandle")
	}

	back := e.recvEventually(source, "the message back in the source queue", 60*time.Second)
	if aws.ToString(back.Body) != "redrive me" {
		e.t.Errorf("redriven body %q, want %q", aws.ToString(back.Body), "redrive me")
	}
	if aws.ToString(back.MessageId) == aws.ToString(sent.MessageId) {
		e.t.Errorf("redriven message kept MessageId %s; a move task enqueues a new message with a new MessageId", aws.ToString(back.MessageId))
	}
	if n := receiveCount(back); n != 1 {
		e.t.Errorf("first receive of the redriven message: ApproximateReceiveCount %d, want 1", n)
	}

	e.eventually("ListMessageMoveTasks reports the task completed", 60*time.Second, func() error {
		out, err := e.api.ListMessageMoveTasks(e.ctx(), &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(dlqArn)})
		if err != nil {
			return err
		}
		if len(out.Results) == 0 {
			return errors.New("no move tasks listed")
		}
		r := out.Results[0]
		if aws.ToString(r.Status) != "COMPLETED" || r.ApproximateNumberOfMessagesMoved != 1 {
			return fmt.Errorf("latest task status %q, moved %s; want COMPLETED, 1", aws.ToString(r.Status), strconv.FormatInt(r.ApproximateNumberOfMessagesMoved, 10))
		}
		if aws.ToString(r.SourceArn) != dlqArn {
			return fmt.Errorf("task SourceArn %q, want %q", aws.ToString(r.SourceArn), dlqArn)
		}
		return nil
	})
	e.wantEmpty(dlq, 1, "the DLQ after the move task")
}
