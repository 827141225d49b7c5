package worker_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/sqstest"
	"github.com/sqsworker/sqsworker/worker"
)

// firstChangeAnsweredLate makes the first ChangeMessageVisibilityBatch take
// effect at once but answers it 2 s later, whatever the call's context says
// (a response already on the wire when the client's timeout passed, or a
// client starved of CPU, reads it late).
type firstChangeAnsweredLate struct {
	*sqstest.Fake
	calls atomic.Int64
}

func (c *firstChangeAnsweredLate) ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	if c.calls.Add(1) > 1 {
		return c.Fake.ChangeMessageVisibilityBatch(ctx, in, optFns...)
	}
	out, err := c.Fake.ChangeMessageVisibilityBatch(context.Background(), in, optFns...)
	time.Sleep(2 * time.Second)
	return out, err
}

// An extension SQS confirms only after the deadline it was to move left
// the message visible for a while: another consumer may have received it.
// The delete that follows, however punctual by the new deadline, is then a
// late settlement (Settlement.Late, Stats.SettledLate), so a second run of
// the job is explained, never silent.
func TestExtensionConfirmedLateMakesTheSettlementLate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, _ := newQueue(t, 10, "3")
		f.MustSend(t, src, "job")
		late := make(chan bool, 10)
		// The extension is sent at 2 s (1 s before the 3 s deadline) and
		// confirmed at 4 s; the handler ends at 3.5 s, its delete waits for
		// the extension and goes out at 4 s, before the new deadline (5 s).
		w, err := worker.New(&firstChangeAnsweredLate{Fake: f}, src, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			time.Sleep(3500 * time.Millisecond)
			return nil
		}), func(o *worker.Options) {
			o.Logger = quiet
			o.OnSettled = func(s worker.Settlement) { late <- s.Late }
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- w.Run(ctx) }()
		time.Sleep(15 * time.Second)
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if s := w.Stats(); s.Deleted != 1 || s.SettledLate != 1 || s.LateExtensions != 1 {
			t.Errorf("Stats: Deleted %d, SettledLate %d, LateExtensions %d; want 1, 1, 1", s.Deleted, s.SettledLate, s.LateExtensions)
		}
		if l := <-late; !l {
			t.Error("the settlement is reported on time, although the message's visibility ran out before its extension was confirmed")
		}
	})
}
