package dlq

import (
	"context"
	"testing"
	"testing/synctest"

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
