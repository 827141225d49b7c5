package dlq

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/sqstest"
)

// cancelAfterSend cancels the redrive's context right after a confirmed
// SendMessageBatch, as a Ctrl-C at the worst moment would.
type cancelAfterSend struct {
	*sqstest.Fake
	cancel context.CancelFunc
}

func (c cancelAfterSend) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, o ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	out, err := c.Fake.SendMessageBatch(ctx, in, o...)
	c.cancel()
	return out, err
}

// An interrupt after a confirmed send still deletes the sent messages from
// the DLQ: a redrive leaves no message in both queues for that reason.
func TestRedriveInterruptAfterSendFinishesTheMove(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, target := fakePair(t, "orders")
		deadLetter(t, f, target, 5, nil, failedWith("boom"))
		ctx, cancel := context.WithCancel(context.Background())
		res, _ := Redrive(ctx, cancelAfterSend{f, cancel}, target, RedriveOptions{Method: "manual"})
		if res.Duplicated != 0 {
			t.Errorf("%d messages left in both queues by an interrupt after a confirmed send", res.Duplicated)
		}
		src, dlq := len(f.Messages(target.SourceURL)), len(f.Messages(target.DLQURL))
		if src+dlq != 5 || res.Moved != src {
			t.Errorf("source %d + DLQ %d (moved %d); want 5 messages in all, each in one queue", src, dlq, res.Moved)
		}
	})
}

// cancelInRetryWait cancels the redrive's context right after a
// SendMessageBatch that failed, while the batch layer waits to retry it.
type cancelInRetryWait struct {
	*sqstest.Fake
	cancel context.CancelFunc
}

func (c cancelInRetryWait) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, o ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	out, err := c.Fake.SendMessageBatch(ctx, in, o...)
	if err != nil {
		time.AfterFunc(time.Millisecond, c.cancel) // within the retry's backoff
	}
	return out, err
}

// A throttled redrive interrupted while it waits to send its batch again
// moved nothing: the batch stays in the dead-letter queue, and is not
// counted as moved (issue 37: counted so, its messages would be deleted
// from the DLQ unsent, in neither queue).
func TestRedriveInterruptInRetryWaitMovesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, target := fakePair(t, "orders")
		deadLetter(t, f, target, 5, nil, failedWith("boom"))
		f.InjectFault(sqstest.Fault{API: "SendMessageBatch", Code: "RequestThrottled"})
		ctx, cancel := context.WithCancel(context.Background())
		res, err := Redrive(ctx, cancelInRetryWait{f, cancel}, target, RedriveOptions{Method: "manual"})
		if err == nil || !errors.Is(err, context.Canceled) {
			t.Errorf("Redrive = %v; want it interrupted", err)
		}
		if res.Moved != 0 || res.Duplicated != 0 || res.Done {
			t.Errorf("result %+v; want nothing moved", res)
		}
		if src, dlq := len(f.Messages(target.SourceURL)), len(f.Messages(target.DLQURL)); src != 0 || dlq != 5 {
			t.Errorf("source %d, DLQ %d; want the 5 messages left in the DLQ", src, dlq)
		}
		if visible, inflight := len(f.Messages(target.DLQURL, "visible")), len(f.Messages(target.DLQURL, "inflight")); visible != 5 || inflight != 0 {
			t.Errorf("DLQ: %d visible, %d in flight; want the 5 released at once", visible, inflight)
		}
	})
}
