package sqslambda_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/harness/sqsfake"
	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/sqstest"
	"github.com/sqsworker/sqsworker/worker"
	"github.com/sqsworker/sqsworker/worker/sqslambda"
)

// Issue 24, item 4, on the Lambda side: a queue whose RedrivePolicy names
// the queue itself has no dead-letter queue to move a permanent failure
// to. The adapter refuses to "move" it into the queue it came from: the
// record is reported failed (it stays, and SQS's own redrive applies) and
// the log says what to fix.
func TestPermanentFailureOnASelfRedrivingQueueIsNotMovedIntoItself(t *testing.T) {
	f := sqstest.For(t)
	url := f.MustCreateQueue(t, "q2", nil)
	policy := `{"deadLetterTargetArn":"` + sqsfake.ARN(url) + `","maxReceiveCount":3}`
	if _, err := f.SetQueueAttributes(t.Context(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url), Attributes: map[string]string{"RedrivePolicy": policy}}); err != nil {
		t.Fatal(err)
	}
	f.MustSend(t, url, "poison")
	ev := receiveEvent(t, f, url, 1)
	var logs bytes.Buffer
	h := mustNew(t, worker.HandlerFunc(func(context.Context, *worker.Message) error {
		return retry.Permanent(errors.New("cannot decode"))
	}), func(o *sqslambda.Options) {
		o.Client = f
		o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	resp, err := h.Handle(t.Context(), ev)
	if err != nil {
		t.Fatal(err)
	}
	if got := failedIDs(resp); len(got) != 1 {
		t.Errorf("failed records = %v, want the poison record reported failed", got)
	}
	msgs := f.Messages(url)
	if len(msgs) != 1 || msgs[0].Body != "poison" || attrContains(msgs[0], "cannot decode") {
		t.Errorf("queue holds %+v; want the original message alone, not a dead-letter copy of it", msgs)
	}
	if !strings.Contains(logs.String(), "names the queue itself") {
		t.Errorf("log does not say the RedrivePolicy names the queue itself:\n%s", logs.String())
	}
}
