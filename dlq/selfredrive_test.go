package dlq

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/sqsworker/sqsworker/harness/sqsfake"
	"github.com/sqsworker/sqsworker/internal/deadletter"
	"github.com/sqsworker/sqsworker/sqstest"
)

// selfRedriving returns a queue whose RedrivePolicy names the queue itself.
func selfRedriving(t *testing.T, f *sqstest.Fake, name string) string {
	t.Helper()
	url := f.MustCreateQueue(t, name, nil)
	policy := `{"deadLetterTargetArn":"` + sqsfake.ARN(url) + `","maxReceiveCount":3}`
	if _, err := f.SetQueueAttributes(context.Background(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url), Attributes: map[string]string{"RedrivePolicy": policy}}); err != nil {
		t.Fatal(err)
	}
	return url
}

// Issue 24, item 4: a RedrivePolicy naming the queue itself is refused by
// discovery (so by worker.New and the Lambda adapter), with what to do.
func TestDiscoverRefusesARedrivePolicyNamingTheQueueItself(t *testing.T) {
	f := sqstest.For(t)
	url := selfRedriving(t, f, "q2")
	_, err := Discover(context.Background(), f, url)
	if !errors.Is(err, ErrRedrivesToItself) {
		t.Fatalf("Discover = %v, want ErrRedrivesToItself", err)
	}
	for _, want := range []string{"queue q2's RedrivePolicy names the queue itself", "`sqsworker setup q2` creates q2-dlq"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

func TestLintFindsARedrivePolicyNamingTheQueueItself(t *testing.T) {
	f := sqstest.For(t)
	selfRedriving(t, f, "q2")
	fs, err := Lint(context.Background(), f, "q2", LintOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var found *Finding
	for i := range fs {
		if fs[i].Code == deadletter.CodeRedrivesToItself {
			found = &fs[i]
		}
	}
	if found == nil || found.Severity != SeverityError || !strings.Contains(found.Fix, "sqsworker setup q2") {
		t.Fatalf("Lint findings = %+v; want an error %s whose fix names `sqsworker setup q2`", fs, deadletter.CodeRedrivesToItself)
	}
}

// Setup replaces a RedrivePolicy naming the queue itself with a dead-letter
// queue of its own, and refuses a DLQName that is the queue.
func TestSetupRepairsASelfRedrivingQueue(t *testing.T) {
	f := sqstest.For(t)
	selfRedriving(t, f, "q2")
	res, err := Setup(context.Background(), f, SetupOptions{Name: "q2"})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Target(); got.DLQURL == got.SourceURL || !strings.HasSuffix(got.DLQURL, "/q2-dlq") {
		t.Errorf("after Setup the target is %+v, want q2-dlq", got)
	}
	if _, err := Setup(context.Background(), f, SetupOptions{Name: "q3", DLQName: "q3"}); err == nil || !strings.Contains(err.Error(), "is the queue itself") {
		t.Errorf("Setup with DLQName = Name: %v, want a refusal", err)
	}
}

// `sqsworker dlq redrive q2 --to q2-dlq` where q2-dlq is the dead-letter
// queue itself moved messages in a circle for ever: Redrive refuses it
// before touching a message, whichever way the destination is named.
func TestRedriveRefusesTheDeadLetterQueueAsDestination(t *testing.T) {
	f := sqstest.For(t)
	src, dlqURL := f.MustCreateQueueWithDLQ(t, "q2", 5, nil)
	f.MustSend(t, dlqURL, "dead")
	target, err := Discover(context.Background(), f, src)
	if err != nil {
		t.Fatal(err)
	}
	for _, dest := range []string{dlqURL, "q2-dlq", sqsfake.ARN(dlqURL)} {
		res, err := Redrive(context.Background(), f, target, RedriveOptions{Destination: dest, Method: "manual"})
		if !errors.Is(err, ErrRedrivesToItself) || res.Moved != 0 {
			t.Errorf("Redrive to %s = %+v, %v; want ErrRedrivesToItself and nothing moved", dest, res, err)
		}
	}
	self := Target{SourceURL: src, SourceARN: sqsfake.ARN(src), DLQURL: src, DLQARN: sqsfake.ARN(src)}
	if _, err := Redrive(context.Background(), f, self, RedriveOptions{}); !errors.Is(err, ErrRedrivesToItself) {
		t.Errorf("Redrive of a queue that is its own DLQ = %v, want ErrRedrivesToItself", err)
	}
	if c, _ := Count(context.Background(), f, dlqURL); c.Total() != 1 {
		t.Errorf("dead-letter queue holds %d messages, want the 1 it had", c.Total())
	}
}
