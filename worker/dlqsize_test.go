package worker_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/internal/deadletter"
	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/sqstest"
	"github.com/sqsworker/sqsworker/worker"
)

// A dead-letter queue of 256 KiB behind a queue of 1 MiB, no offloader: New
// warns of the mismatch, and a 300 KiB permanent failure, which cannot be
// copied there, keeps its reason: the settlement's Reason and an ERROR log
// (with the message ID, which SQS's own redrive keeps) say why it failed
// and why it was not dead-lettered; the message stays in the queue.
func TestDeadLetterCopyTooLargeKeepsItsReason(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := sqstest.For(t)
		src, dlqURL := f.MustCreateQueueWithDLQ(t, "reports", 5, map[string]string{"VisibilityTimeout": "30"})
		if _, err := f.SetQueueAttributes(context.Background(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(dlqURL),
			Attributes: map[string]string{"MaximumMessageSize": "262144"}}); err != nil {
			t.Fatal(err)
		}
		id := f.MustSend(t, src, strings.Repeat("x", 300<<10))
		var logs syncBuffer
		var runs atomic.Int64
		var mu sync.Mutex
		var got []worker.Settlement
		h := start(t, f, src, worker.HandlerFunc(func(context.Context, *worker.Message) error {
			runs.Add(1)
			return retry.Permanent(errors.New("report template missing"))
		}), func(o *worker.Options) {
			o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			o.OnSettled = func(s worker.Settlement) { mu.Lock(); got = append(got, s); mu.Unlock() }
		})
		if l := logs.String(); !strings.Contains(l, "level=WARN") || !strings.Contains(l, deadletter.CodeDLQMaxMessageSizeSmaller) {
			t.Errorf("New logged %q; want a warning that the dead-letter queue is smaller than the queue", l)
		}
		time.Sleep(10 * time.Second)
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		if n := runs.Load(); n != 1 {
			t.Errorf("ran %d times within the visibility timeout, want once", n)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(got) != 1 || got[0].Outcome != worker.Retrying ||
			!strings.Contains(got[0].Reason, "not dead-lettered") || !strings.Contains(got[0].Reason, "MaximumMessageSize") || !strings.Contains(got[0].Reason, "report template missing") {
			t.Fatalf("settlements %+v; want Retrying, with the reason and why it was not dead-lettered", got)
		}
		var errLine string
		for line := range strings.SplitSeq(logs.String(), "\n") {
			if strings.Contains(line, "level=ERROR") {
				errLine = line
			}
		}
		if !strings.Contains(errLine, "report template missing") || !strings.Contains(errLine, id) {
			t.Errorf("ERROR log %q; want the reason and the message ID", errLine)
		}
		if n := len(f.Messages(src)); n != 1 {
			t.Errorf("%d messages in the queue, want the message kept (never deleted without a copy)", n)
		}
	})
}
