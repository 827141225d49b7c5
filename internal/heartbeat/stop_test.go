package heartbeat_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/internal/heartbeat"
	"github.com/sqsworker/sqsworker/sqstest"
)

type okClient struct{}

func (okClient) ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, _ ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	out := &sqs.ChangeMessageVisibilityBatchOutput{}
	for _, e := range in.Entries {
		out.Successful = append(out.Successful, types.ChangeMessageVisibilityBatchResultEntry{Id: e.Id})
	}
	return out, nil
}

// onLost may call Stop, also on another lease that is in the call the
// heartbeat is about to make: notices are delivered only once no lease is
// in a call, so that Stop returns instead of deadlocking Run.
func TestOnLostMayStopALeaseOfThePendingCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHB(t, okClient{}, "q", 30*time.Second)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		now := time.Now()
		l2 := trackUntil(t, h, "h2", now, now.Add(time.Second), nil) // due first: in the next call
		returned := make(chan struct{})
		trackUntil(t, h, "h1", now.Add(-12*time.Hour), now.Add(5*time.Second), func(error) { // 12 h used up
			l2.Stop() // a job holding several messages gives them all up
			close(returned)
		})
		go func() { _ = h.Run(ctx) }()
		select {
		case <-returned:
		case <-time.After(time.Minute):
			t.Fatalf("onLost's Stop of another lease never returned: Run is deadlocked (stats %+v)", h.Stats())
		}
	})
}

// Stop reports a loss the heartbeat found before Stop, even when onLost
// has not been called yet, so the owner never uses a stale receipt handle.
func TestStopReturnsTheCauseOfALoss(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := sqstest.For(t)
		url := f.MustCreateQueue(t, "q", map[string]string{"VisibilityTimeout": "30"})
		f.MustSend(t, url, "a")
		f.MustSend(t, url, "b")
		out, err := f.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 2})
		if err != nil || len(out.Messages) != 2 {
			t.Fatalf("receive: %v, %d messages", err, len(out.Messages))
		}
		received := time.Now()
		h := newHB(t, f, url, 30*time.Second)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() { _ = h.Run(ctx) }()
		lost := track(t, h, aws.ToString(out.Messages[0].ReceiptHandle), received, nil)
		kept := track(t, h, aws.ToString(out.Messages[1].ReceiptHandle), received, nil)
		if _, err := f.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: out.Messages[0].ReceiptHandle}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(25 * time.Second) // past the first extension
		if err := lost.Stop(); !errors.Is(err, heartbeat.ErrLost) {
			t.Fatalf("Stop of the deleted message's lease = %v, want ErrLost", err)
		}
		if err := kept.Stop(); err != nil {
			t.Fatalf("Stop of a held message's lease = %v, want nil", err)
		}
	})
}
