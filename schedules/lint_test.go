package schedules_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/harness/testenv"
	"github.com/sqsworker/sqsworker/producer"
	"github.com/sqsworker/sqsworker/schedules"
	"github.com/sqsworker/sqsworker/schedules/schedulestest"
)

// On the SQS emulator: a schedule whose target queue is gone sends its
// tick to the dead-letter queue, and Lint reports the missing target and
// the dead-letter queue's depth; a schedule without a dead-letter queue
// and one whose dead-letter queue keeps messages 4 days are reported too.
func TestEmulatorLint(t *testing.T) {
	q := testenv.SQS(t)
	ctx := t.Context()
	mk := func(prefix string, attrs map[string]string) (name, url, arn string) {
		t.Helper()
		name = testenv.UniqueName(prefix)
		out, err := q.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
		if err != nil {
			t.Fatal(err)
		}
		a, err := q.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: out.QueueUrl, AttributeNames: []sqstypes.QueueAttributeName{"QueueArn"}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = q.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: out.QueueUrl}) })
		return name, *out.QueueUrl, a.Attributes["QueueArn"]
	}
	_, _, target := mk("lint-target", nil)
	dlqName, dlqURL, dlqARN := mk("lint-dlq", map[string]string{"MessageRetentionPeriod": "1209600"})
	_, _, shortARN := mk("lint-short", nil)
	_, goneURL, goneARN := mk("lint-gone", nil)
	if _, err := q.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(goneURL)}); err != nil {
		t.Fatal(err)
	}

	s, err := schedulestest.New(q)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { _ = s.Run(runCtx); close(done) }()
	defer func() { stop(); <-done }()
	group := testenv.UniqueName("lint")
	opts := func(o *schedules.Options) { o.Group, o.RoleARN, o.DLQ = group, role, dlqARN }
	if _, err := schedules.Apply(ctx, s, []schedules.Schedule{
		{Name: "healthy", Expression: "rate(1 day)", Queue: target, Body: "b"},
		{Name: "short", Expression: "rate(1 day)", Queue: target, Body: "b", DLQ: shortARN},
	}, opts); err != nil {
		t.Fatal(err)
	}
	if fs, err := schedules.Lint(ctx, s, q, opts); err != nil || len(fs) != 1 || fs[0].Code != "schedule-dlq-retention-short" {
		t.Fatalf("healthy and short: %+v, %v", fs, err)
	}

	// A job due in a second, to a queue that no longer exists: Scheduler
	// cannot deliver it and dead-letters it.
	jobs, err := schedules.NewJobs(s, goneARN, func(o *schedules.Options) { o.Group, o.RoleARN, o.DLQ = group+"-jobs", role, dlqARN })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := jobs.At(ctx, "lost", time.Now().Add(1500*time.Millisecond), producer.Message{Body: "tick"}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		a, err := q.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(dlqURL), AttributeNames: []sqstypes.QueueAttributeName{"ApproximateNumberOfMessages"}})
		if err != nil {
			t.Fatal(err)
		}
		if a.Attributes["ApproximateNumberOfMessages"] == "1" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the undeliverable job did not reach the dead-letter queue in 15 s")
		}
	}
	// A pending job to the gone queue: the target is reported missing.
	if _, err := jobs.At(ctx, "pending", time.Now().Add(time.Hour), producer.Message{Body: "tick"}); err != nil {
		t.Fatal(err)
	}
	fs, err := schedules.Lint(ctx, s, q, func(o *schedules.Options) { o.Group = group + "-jobs" })
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range fs {
		got[f.Code] = f.Message
	}
	if !strings.Contains(got["schedule-target-missing"], "schedule pending:") ||
		!strings.Contains(got["schedule-dlq-not-empty"], dlqName+" holds 1 message(s)") || len(fs) != 2 {
		t.Errorf("findings: %+v", fs)
	}

	// A schedule without a dead-letter queue.
	if _, err := schedules.Apply(ctx, s, []schedules.Schedule{{Name: "bare", Expression: "rate(1 day)", Queue: target, Body: "b"}},
		func(o *schedules.Options) { o.Group, o.RoleARN = group+"-bare", role }); err != nil {
		t.Fatal(err)
	}
	if fs, err := schedules.Lint(ctx, s, q, func(o *schedules.Options) { o.Group = group + "-bare" }); err != nil || len(fs) != 1 || fs[0].Code != "schedule-no-dlq" {
		t.Errorf("no DLQ: %+v, %v", fs, err)
	}
}
