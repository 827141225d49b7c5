package worker_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/harness/sqsfake"
	"github.com/sqsworker/sqsworker/sqstest"
	"github.com/sqsworker/sqsworker/worker"
)

// lookupSpy records the region and owner of each GetQueueUrl call, as a
// client configured for us-east-1 would send it.
type lookupSpy struct {
	worker.API
	region, owner []string
}

func (s *lookupSpy) GetQueueUrl(ctx context.Context, in *sqs.GetQueueUrlInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error) {
	o := sqs.Options{Region: "us-east-1"}
	for _, fn := range optFns {
		fn(&o)
	}
	s.region, s.owner = append(s.region, o.Region), append(s.owner, aws.ToString(in.QueueOwnerAWSAccountId))
	return s.API.GetQueueUrl(ctx, in, optFns...)
}

// Issue 24, item 6: an ARN of another region names that region's queue;
// New looks it up there (and its DLQ, by the RedrivePolicy's ARN) rather
// than in the client's region.
func TestNewLooksAnARNUpInItsOwnRegion(t *testing.T) {
	f, err := sqstest.New(func(o *sqstest.Options) { o.Region = "eu-west-1"; o.AccountID = "111122223333" })
	if err != nil {
		t.Fatal(err)
	}
	src, _ := f.MustCreateQueueWithDLQ(t, "orders", 5, nil)
	spy := &lookupSpy{API: f}
	w, err := worker.New(spy, "arn:aws:sqs:eu-west-1:111122223333:orders", worker.HandlerFunc(func(context.Context, *worker.Message) error { return nil }),
		func(o *worker.Options) { o.Logger = quiet })
	if err != nil {
		t.Fatal(err)
	}
	if w.QueueURL() != src {
		t.Errorf("QueueURL = %q, want %q", w.QueueURL(), src)
	}
	if len(spy.region) != 2 {
		t.Fatalf("%d GetQueueUrl calls, want 2 (the queue and its DLQ)", len(spy.region))
	}
	for i := range spy.region {
		if spy.region[i] != "eu-west-1" || spy.owner[i] != "111122223333" {
			t.Errorf("lookup %d went to region %q, owner %q; want eu-west-1, 111122223333", i, spy.region[i], spy.owner[i])
		}
	}
}

// Issue 24, item 4: a RedrivePolicy that names the queue itself made a
// poison job run hundreds of times, counted as dead-lettered each time.
// New refuses it, saying what to fix.
func TestNewRefusesAQueueThatIsItsOwnDLQ(t *testing.T) {
	f := sqstest.For(t)
	url := f.MustCreateQueue(t, "q2", nil)
	policy := `{"deadLetterTargetArn":"` + sqsfake.ARN(url) + `","maxReceiveCount":3}`
	if _, err := f.SetQueueAttributes(t.Context(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url), Attributes: map[string]string{"RedrivePolicy": policy}}); err != nil {
		t.Fatal(err)
	}
	h := worker.HandlerFunc(func(context.Context, *worker.Message) error { return nil })
	_, err := worker.New(f, "q2", h, func(o *worker.Options) { o.Logger = quiet })
	if !errors.Is(err, dlq.ErrRedrivesToItself) || !strings.Contains(err.Error(), "sqsworker setup q2") {
		t.Fatalf("New = %v, want dlq.ErrRedrivesToItself saying how to fix it", err)
	}
	// AllowNoDLQ is no way around it: the queue has a RedrivePolicy, a wrong one.
	if _, err := worker.New(f, "q2", h, func(o *worker.Options) { o.Logger = quiet; o.AllowNoDLQ = true }); !errors.Is(err, dlq.ErrRedrivesToItself) {
		t.Errorf("New with AllowNoDLQ = %v, want dlq.ErrRedrivesToItself", err)
	}
}

func TestNewRefusesAMalformedQueue(t *testing.T) {
	f := sqstest.For(t)
	h := worker.HandlerFunc(func(context.Context, *worker.Message) error { return nil })
	if _, err := worker.New(f, "arn:aws:sqs:orders", h, func(o *worker.Options) { o.Logger = quiet }); err == nil || !strings.Contains(err.Error(), "arn:aws:sqs:us-east-1:123456789012:orders") {
		t.Errorf("New with a malformed ARN = %v, want an error showing a valid one", err)
	}
}
