package sqsdrain_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/harness/sqsdrain"
	"github.com/sqsworker/sqsworker/sqstest"
)

// A receive whose response is lost hides its messages; Drain waits for
// them and returns every message once.
func TestDrainWaitsForMessagesALostReceiveHid(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := sqstest.For(t)
		url := f.MustCreateQueue(t, "q", nil)
		for _, b := range []string{"a", "b", "c"} {
			f.MustSend(t, url, b)
		}
		f.InjectFault(sqstest.Fault{API: "ReceiveMessage", Code: "InternalError", AfterEffect: true, Times: 1})
		msgs, err := sqsdrain.Drain(context.Background(), &retrying{f}, url, time.Minute)
		if err != nil || len(msgs) != 3 {
			t.Fatalf("Drain read %d messages, %v; want all 3", len(msgs), err)
		}
		if n := len(f.Messages(url, "visible", "inflight")); n != 0 {
			t.Fatalf("%d messages left", n)
		}
	})
}

// Messages another consumer holds longer than maxWait are not read: Drain
// says how many.
func TestDrainSaysWhatItCouldNotRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := sqstest.For(t)
		url := f.MustCreateQueue(t, "q", nil)
		f.MustSend(t, url, "held")
		f.MustSend(t, url, "free")
		if _, err := f.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 1, VisibilityTimeout: 600}); err != nil {
			t.Fatal(err)
		}
		msgs, err := sqsdrain.Drain(context.Background(), f, url, 10*time.Second)
		var ne *sqsdrain.NotEmptyError
		if len(msgs) != 1 || !errors.As(err, &ne) || ne.Left != 1 {
			t.Fatalf("Drain read %d messages, %v; want 1 and a NotEmptyError with 1 left", len(msgs), err)
		}
	})
}

// retrying retries a failed receive once, as the SDK does.
type retrying struct{ *sqstest.Fake }

func (r *retrying) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	out, err := r.Fake.ReceiveMessage(ctx, in, optFns...)
	if err != nil {
		return r.Fake.ReceiveMessage(ctx, in, optFns...)
	}
	return out, err
}
