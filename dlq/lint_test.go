package dlq

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/sqsworker/sqsworker/internal/deadletter"
	"github.com/sqsworker/sqsworker/sqstest"
)

// lintFindings runs Lint and returns the findings by code.
func lintFindings(t *testing.T, client API, url string, opts LintOptions) map[string]Finding {
	t.Helper()
	fs, err := Lint(context.Background(), client, url, opts)
	if err != nil {
		t.Fatalf("Lint: %v", err)
	}
	out := map[string]Finding{}
	for _, f := range fs {
		if _, dup := out[f.Code]; dup {
			t.Errorf("finding %s reported twice", f.Code)
		}
		if f.Message == "" || f.Fix == "" {
			t.Errorf("finding %s lacks a message or a fix: %+v", f.Code, f)
		}
		out[f.Code] = f
	}
	return out
}

// goodPair creates a queue pair Lint finds nothing wrong with.
func goodPair(t *testing.T, f *sqstest.Fake, name string, srcAttrs map[string]string) (src, dlq string) {
	t.Helper()
	src, dlq = f.MustCreateQueueWithDLQ(t, name, 5, srcAttrs)
	setAttrs(t, f, dlq, map[string]string{"MessageRetentionPeriod": "1209600"})
	return src, dlq
}

func setAttrs(t *testing.T, f *sqstest.Fake, url string, attrs map[string]string) {
	t.Helper()
	if _, err := f.SetQueueAttributes(context.Background(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url), Attributes: attrs}); err != nil {
		t.Fatal(err)
	}
}

// expectOnly checks that exactly the given finding was reported, with the
// severity and the texts that matter, and returns it.
func expectOnly(t *testing.T, got map[string]Finding, code string, sev Severity, fixHas ...string) Finding {
	t.Helper()
	f, ok := got[code]
	if !ok {
		t.Fatalf("no %s finding; got %v", code, got)
	}
	if len(got) != 1 {
		t.Errorf("want only %s, got %v", code, got)
	}
	if f.Severity != sev {
		t.Errorf("%s severity = %v, want %v", code, f.Severity, sev)
	}
	for _, s := range fixHas {
		if !strings.Contains(f.Fix, s) {
			t.Errorf("%s fix %q does not contain %q", code, f.Fix, s)
		}
	}
	return f
}

func TestLintCleanSetup(t *testing.T) {
	f := sqstest.For(t)
	src, _ := goodPair(t, f, "orders", nil)
	got := lintFindings(t, f, src, LintOptions{Attempts: 4, ScheduleTotal: time.Minute, HandlerTimeout: time.Minute})
	if len(got) != 0 {
		t.Errorf("findings on a good setup: %v", got)
	}
}

func TestLintNoRedrivePolicy(t *testing.T) {
	f := sqstest.For(t)
	src := f.MustCreateQueue(t, "orders", nil)
	expectOnly(t, lintFindings(t, f, src, LintOptions{}), deadletter.CodeNoRedrivePolicy, SeverityError, "sqsworker setup orders",
		`{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:orders-dlq","maxReceiveCount":5}`)
}

func TestLintDLQMissing(t *testing.T) {
	f := sqstest.For(t)
	src, dlq := goodPair(t, f, "orders", nil)
	if _, err := f.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(dlq)}); err != nil {
		t.Fatal(err)
	}
	expectOnly(t, lintFindings(t, f, src, LintOptions{}), deadletter.CodeDLQMissing, SeverityError, "create queue orders-dlq")
}

// wrongTypeClient reports the dead-letter queue as a FIFO queue: SQS (and
// the Fake) refuse such a RedrivePolicy, but a queue recreated under the
// DLQ's ARN, or another emulator, can still present it.
type wrongTypeClient struct {
	*sqstest.Fake
	dlq string
}

func (c wrongTypeClient) GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	out, err := c.Fake.GetQueueAttributes(ctx, in, optFns...)
	if err == nil && aws.ToString(in.QueueUrl) == c.dlq {
		out.Attributes["FifoQueue"] = "true"
	}
	return out, err
}

func TestLintDLQWrongType(t *testing.T) {
	f := sqstest.For(t)
	src, dlq := goodPair(t, f, "orders", nil)
	got := lintFindings(t, wrongTypeClient{f, dlq}, src, LintOptions{})
	fd := expectOnly(t, got, deadletter.CodeDLQWrongType, SeverityError, "a standard queue")
	if !strings.Contains(fd.Message, "a FIFO queue") {
		t.Errorf("message %q does not name the DLQ's type", fd.Message)
	}
}

func TestLintMaxReceiveCountBelowAttempts(t *testing.T) {
	f := sqstest.For(t)
	src, _ := goodPair(t, f, "orders", nil)
	fd := expectOnly(t, lintFindings(t, f, src, LintOptions{Attempts: 8}), deadletter.CodeMaxReceiveCountLow, SeverityError, `"maxReceiveCount":8`)
	if !strings.Contains(fd.Message, "last 3 retries") {
		t.Errorf("message %q does not count the lost retries", fd.Message)
	}
}

// schedule is a fixed retry schedule.
type schedule []time.Duration

func (s schedule) Delays() []time.Duration { return s }

func TestLintScheduleSuppliesAttempts(t *testing.T) {
	f := sqstest.For(t)
	src, _ := goodPair(t, f, "orders", nil)
	s := schedule{time.Second, time.Second, time.Second, time.Second, time.Second, time.Second}
	expectOnly(t, lintFindings(t, f, src, LintOptions{Schedule: s}), deadletter.CodeMaxReceiveCountLow, SeverityError, `"maxReceiveCount":7`)
}

func TestLintRetentionShorterThanSchedule(t *testing.T) {
	f := sqstest.For(t)
	src, _ := goodPair(t, f, "orders", map[string]string{"MessageRetentionPeriod": "3600"})
	fd := expectOnly(t, lintFindings(t, f, src, LintOptions{ScheduleTotal: 2 * time.Hour}), deadletter.CodeRetentionShort, SeverityError, "MessageRetentionPeriod to at least 345600")
	if !strings.Contains(fd.Message, "1 hour") || !strings.Contains(fd.Message, "2 hours") {
		t.Errorf("message %q does not compare the two durations", fd.Message)
	}
}

func TestLintScheduleLongerThanSQSAllows(t *testing.T) {
	f := sqstest.For(t)
	src, dlq := goodPair(t, f, "orders", nil)
	setAttrs(t, f, dlq, map[string]string{"MessageRetentionPeriod": "1209600"})
	expectOnly(t, lintFindings(t, f, src, LintOptions{ScheduleTotal: 15 * 24 * time.Hour}), deadletter.CodeRetentionShort, SeverityError, "shorten the retry policy")
}

func TestLintDLQRetentionNotLonger(t *testing.T) {
	f := sqstest.For(t)
	src, dlq := goodPair(t, f, "orders", nil)
	setAttrs(t, f, dlq, map[string]string{"MessageRetentionPeriod": "345600"})
	fd := expectOnly(t, lintFindings(t, f, src, LintOptions{}), deadletter.CodeDLQRetentionNotLonger, SeverityWarning, "orders-dlq's MessageRetentionPeriod to 1209600")
	if !strings.Contains(fd.Message, "enqueue time") {
		t.Errorf("message %q does not explain why", fd.Message)
	}

	// Both at 14 days: the source has to give.
	setAttrs(t, f, src, map[string]string{"MessageRetentionPeriod": "1209600"})
	setAttrs(t, f, dlq, map[string]string{"MessageRetentionPeriod": "1209600"})
	expectOnly(t, lintFindings(t, f, src, LintOptions{}), deadletter.CodeDLQRetentionNotLonger, SeverityWarning, "lower queue orders's MessageRetentionPeriod")
}

func TestLintVisibilityTooShortForHeartbeat(t *testing.T) {
	f := sqstest.For(t)
	src, _ := goodPair(t, f, "orders", map[string]string{"VisibilityTimeout": "2"})
	expectOnly(t, lintFindings(t, f, src, LintOptions{}), deadletter.CodeVisibilityShort, SeverityWarning, "at least 5 seconds")

	setAttrs(t, f, src, map[string]string{"VisibilityTimeout": "10"})
	fd := expectOnly(t, lintFindings(t, f, src, LintOptions{HeartbeatThreshold: 10 * time.Second}), deadletter.CodeVisibilityShort, SeverityWarning, "at least 20 seconds")
	if !strings.Contains(fd.Message, "always late") {
		t.Errorf("message %q does not explain the heartbeat", fd.Message)
	}
	if got := lintFindings(t, f, src, LintOptions{HeartbeatThreshold: 5 * time.Second}); len(got) != 0 {
		t.Errorf("10 s visibility with a 5 s threshold: %v", got)
	}
}

func TestLintLambdaVisibility(t *testing.T) {
	f := sqstest.For(t)
	src, _ := goodPair(t, f, "orders", map[string]string{"VisibilityTimeout": "60"})
	expectOnly(t, lintFindings(t, f, src, LintOptions{LambdaTimeout: 30 * time.Second}), deadletter.CodeLambdaVisibility, SeverityWarning, "at least 180 seconds")
	setAttrs(t, f, src, map[string]string{"VisibilityTimeout": "180"})
	if got := lintFindings(t, f, src, LintOptions{LambdaTimeout: 30 * time.Second}); len(got) != 0 {
		t.Errorf("visibility 6 × timeout: %v", got)
	}
}

func TestLintLambdaMaxReceiveCount(t *testing.T) {
	f := sqstest.For(t)
	src, dlq := f.MustCreateQueueWithDLQ(t, "orders", 2, map[string]string{"VisibilityTimeout": "600"})
	setAttrs(t, f, dlq, map[string]string{"MessageRetentionPeriod": "1209600"})
	expectOnly(t, lintFindings(t, f, src, LintOptions{LambdaTimeout: time.Minute}), deadletter.CodeLambdaMaxReceiveCount, SeverityWarning, `"maxReceiveCount":5`)
}

func TestLintDLQNotEmpty(t *testing.T) {
	f := sqstest.For(t)
	src, dlq := goodPair(t, f, "orders", nil)
	f.MustSend(t, dlq, "dead")
	fd := expectOnly(t, lintFindings(t, f, src, LintOptions{}), deadletter.CodeDLQNotEmpty, SeverityInfo, "sqsworker dlq peek orders")
	if !strings.Contains(fd.Message, "about 1 message") {
		t.Errorf("message = %q", fd.Message)
	}
}

func TestLintMissingQueueIsAnError(t *testing.T) {
	f := sqstest.For(t)
	_, err := Lint(context.Background(), f, "https://sqs.us-east-1.amazonaws.com/000000000000/nope", LintOptions{})
	if err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("Lint error = %v", err)
	}
}

func TestSeverityText(t *testing.T) {
	for s, want := range map[Severity]string{SeverityInfo: "info", SeverityWarning: "warning", SeverityError: "error"} {
		if b, _ := s.MarshalText(); string(b) != want {
			t.Errorf("%d marshals to %q", s, b)
		}
		var back Severity
		if err := back.UnmarshalText([]byte(want)); err != nil || back != s {
			t.Errorf("%q unmarshals to %v, %v", want, back, err)
		}
	}
	var s Severity
	if err := s.UnmarshalText([]byte("fatal")); err == nil {
		t.Error("unknown severity accepted")
	}
}

// garbledPolicyClient returns a RedrivePolicy SQS would not store, as a
// hand-edited emulator state or a proxy might.
type garbledPolicyClient struct{ *sqstest.Fake }

func (c garbledPolicyClient) GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	out, err := c.Fake.GetQueueAttributes(ctx, in, optFns...)
	if err == nil {
		if _, ok := out.Attributes["RedrivePolicy"]; ok {
			out.Attributes["RedrivePolicy"] = `{"maxReceiveCount":5}`
		}
	}
	return out, err
}

func TestLintInvalidRedrivePolicy(t *testing.T) {
	f := sqstest.For(t)
	src, _ := goodPair(t, f, "orders", nil)
	fd := expectOnly(t, lintFindings(t, garbledPolicyClient{f}, src, LintOptions{}), deadletter.CodeInvalidRedrivePolicy, SeverityError,
		`{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:orders-dlq","maxReceiveCount":5}`)
	if !strings.Contains(fd.Message, "no deadLetterTargetArn") {
		t.Errorf("message = %q", fd.Message)
	}
	if _, err := Discover(context.Background(), garbledPolicyClient{f}, src); err == nil || !strings.Contains(err.Error(), "set a RedrivePolicy") {
		t.Errorf("Discover error = %v", err)
	}
}

func TestDiscoverRefusesWrongTypeDLQ(t *testing.T) {
	f := sqstest.For(t)
	src, dlq := goodPair(t, f, "orders", nil)
	_, err := Discover(context.Background(), wrongTypeClient{f, dlq}, src)
	if err == nil || !strings.Contains(err.Error(), "queue orders is a standard queue but its dead-letter queue orders-dlq is a FIFO queue") {
		t.Errorf("Discover error = %v", err)
	}
}
