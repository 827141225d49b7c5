package sqslambda_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/internal/deadletter"
	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/sqstest"
	"github.com/sqsworker/sqsworker/worker"
	"github.com/sqsworker/sqsworker/worker/sqslambda"
)

// pointerOffloader "stores" bodies by keeping them, as a test offloader.
type pointerOffloader struct{ stored []string }

func (o *pointerOffloader) OffloadBody(_ context.Context, body string) (string, map[string]types.MessageAttributeValue, error) {
	o.stored = append(o.stored, body)
	return "stored-body", map[string]types.MessageAttributeValue{"PayloadSize": {DataType: aws.String("Number"), StringValue: aws.String("1")}}, nil
}

// The Lambda adapter shares the worker's dead-letter copy: with a 256 KiB
// DLQ behind a 1 MiB queue its discovery warns; a 300 KiB permanent
// failure is reported as failed with its reason logged at ERROR when no
// offloader is set, and reaches the DLQ through the offloader when one is.
func TestLambdaDeadLetterCopyTooLargeForTheDLQ(t *testing.T) {
	f := sqstest.For(t)
	src, dlqURL := f.MustCreateQueueWithDLQ(t, "reports", 5, nil)
	if _, err := f.SetQueueAttributes(t.Context(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(dlqURL),
		Attributes: map[string]string{"MaximumMessageSize": "262144"}}); err != nil {
		t.Fatal(err)
	}
	f.MustSend(t, src, strings.Repeat("x", 300<<10))
	poison := worker.HandlerFunc(func(context.Context, *worker.Message) error {
		return retry.Permanent(errors.New("report template missing"))
	})

	var logs strings.Builder
	h := mustNew(t, poison, func(o *sqslambda.Options) {
		o.Client = f
		o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	ev := receiveEvent(t, f, src, 1)
	resp, err := h.Handle(t.Context(), ev)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.BatchItemFailures) != 1 {
		t.Errorf("failures %v; want the record reported as failed (kept in the queue)", resp.BatchItemFailures)
	}
	l := logs.String()
	if !strings.Contains(l, deadletter.CodeDLQMaxMessageSizeSmaller) {
		t.Errorf("no warning about the smaller dead-letter queue in %q", l)
	}
	if !strings.Contains(l, "level=ERROR") || !strings.Contains(l, "report template missing") {
		t.Errorf("no ERROR log with the reason in %q", l)
	}

	off := &pointerOffloader{}
	h = mustNew(t, poison, func(o *sqslambda.Options) {
		o.Client = f
		o.Logger = quiet
		o.DeadLetterOffloader = off
	})
	if resp, err := h.Handle(t.Context(), ev); err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("with an offloader: %+v, %v; want the record dead-lettered (not reported)", resp, err)
	}
	dead := f.Messages(dlqURL)
	if len(dead) != 1 || dead[0].Body != "stored-body" || !attrContains(dead[0], "report template missing") || len(off.stored) != 1 {
		t.Fatalf("DLQ %+v; want the pointer copy with its reason", dead)
	}
}
