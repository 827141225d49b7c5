package visibility_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/sqstest"
	"github.com/sqsworker/sqsworker/visibility"
)

// The public front keeps a message invisible past its timeout, tells its
// owner of a loss with ErrLost (the value the engine reports), and its stop
// returns that cause; New and Track refuse what they cannot use. The
// engine's behaviour is tested in internal/heartbeat.
func TestHeartbeatFront(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		f := sqstest.For(t)
		url := f.MustCreateQueue(t, "jobs", map[string]string{"VisibilityTimeout": "30"})
		if _, err := visibility.New(nil, url, 30*time.Second); err == nil {
			t.Error("New(nil client) succeeded")
		}
		if _, err := visibility.New(f, url, 30*time.Second, func(o *visibility.Options) { o.Threshold = time.Minute }); err == nil {
			t.Error("New with Threshold ≥ Extension succeeded")
		}
		hb, err := visibility.New(f, url, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := hb.Track("", time.Now(), nil); err == nil {
			t.Error("Track with an empty receipt handle succeeded")
		}
		hbCtx, stopHB := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- hb.Run(hbCtx) }()
		defer func() {
			stopHB()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		}()

		f.MustSend(t, url, "kept")
		f.MustSend(t, url, "deleted")
		out, err := f.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 2})
		if err != nil || len(out.Messages) != 2 {
			t.Fatalf("receive: %v, %d messages", err, len(out.Messages))
		}
		receivedAt := time.Now()
		causes := map[string]error{}
		stops := map[string]func() error{}
		for _, m := range out.Messages {
			body := aws.ToString(m.Body)
			stops[body], err = hb.Track(aws.ToString(m.ReceiptHandle), receivedAt, func(cause error) { causes[body] = cause })
			if err != nil {
				t.Fatal(err)
			}
			if body == "deleted" {
				if _, err := f.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
					t.Fatal(err)
				}
			}
		}
		time.Sleep(45 * time.Second) // past the 30 s timeout: extended at 20 s
		synctest.Wait()
		if c := causes["deleted"]; !errors.Is(c, visibility.ErrLost) {
			t.Errorf("deleted message: onLost got %v, want ErrLost", c)
		}
		if c := stops["deleted"](); !errors.Is(c, visibility.ErrLost) {
			t.Errorf("deleted message: stop = %v, want ErrLost", c)
		}
		if c, ok := causes["kept"]; ok {
			t.Errorf("kept message lost: %v", c)
		}
		if c := stops["kept"](); c != nil {
			t.Errorf("kept message: stop = %v, want nil", c)
		}
		if c := stops["kept"](); c != nil {
			t.Errorf("kept message: second stop = %v, want nil (idempotent)", c)
		}
		if visible, inflight := len(f.Messages(url, "visible")), len(f.Messages(url, "inflight")); visible != 0 || inflight != 1 {
			t.Errorf("queue: %d visible, %d in flight; want the kept message in flight", visible, inflight)
		}
	})
}
