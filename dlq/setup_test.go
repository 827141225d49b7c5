package dlq

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"

	"github.com/sqsworker/sqsworker/internal/deadletter"
	"github.com/sqsworker/sqsworker/internal/sqslimit"
	"github.com/sqsworker/sqsworker/queueref"
	"github.com/sqsworker/sqsworker/sqstest"
)

func changeTexts(cs []Change) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.String())
	}
	return out
}

func TestSetupCreatesOnceThenChangesNothing(t *testing.T) {
	ctx := context.Background()
	f := sqstest.For(t)
	first, err := Setup(ctx, f, SetupOptions{Name: "orders", MaxReceiveCount: 60, Retention: 7 * 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(changeTexts(first.Changes), "; "); got != "created dead-letter queue orders-dlq; created queue orders" {
		t.Errorf("creation changes = %q", got)
	}
	if queueref.Name(first.QueueURL) != "orders" || queueref.Name(first.DLQURL) != "orders-dlq" || first.Target().SourceURL != first.QueueURL || first.Target().DLQURL != first.DLQURL {
		t.Errorf("result %+v, target %+v", first, first.Target())
	}
	if first.Retention != 7*24*time.Hour || first.DLQRetention != sqslimit.MaxRetention || first.MaxReceiveCount != 60 || first.VisibilityTimeout != 30*time.Second {
		t.Errorf("settings %+v", first)
	}
	before := f.Requests()["SetQueueAttributes"] + f.Requests()["CreateQueue"]
	again, err := Setup(ctx, f, SetupOptions{Name: "orders"})
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Changes) != 0 || again.MaxReceiveCount != 60 || again.Retention != 7*24*time.Hour {
		t.Errorf("second setup %+v: want no change, the first settings kept", again)
	}
	if n := f.Requests()["SetQueueAttributes"] + f.Requests()["CreateQueue"]; n != before {
		t.Errorf("a setup with nothing to change made %d CreateQueue/SetQueueAttributes calls", n-before)
	}
}

func TestSetupReportsWhatItChanged(t *testing.T) {
	ctx := context.Background()
	f := sqstest.For(t)
	if _, err := Setup(ctx, f, SetupOptions{Name: "orders"}); err != nil {
		t.Fatal(err)
	}
	res, err := Setup(ctx, f, SetupOptions{Name: "orders", MaxReceiveCount: 9, Retention: 5 * 24 * time.Hour, VisibilityTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"queue orders: MessageRetentionPeriod 345600 → 432000",
		"queue orders: maxReceiveCount 5 → 9",
		"queue orders: VisibilityTimeout 30 → 60",
	}
	if got := changeTexts(res.Changes); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("changes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestSetupRefusesToLowerUnlessAllowed(t *testing.T) {
	ctx := context.Background()
	f := sqstest.For(t)
	if _, err := Setup(ctx, f, SetupOptions{Name: "orders", MaxReceiveCount: 60, Retention: 7 * 24 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	_, err := Setup(ctx, f, SetupOptions{Name: "orders", MaxReceiveCount: 5, Retention: 4 * 24 * time.Hour, DLQRetention: 5 * 24 * time.Hour})
	if !errors.Is(err, ErrWouldLower) {
		t.Fatalf("err = %v, want ErrWouldLower", err)
	}
	for _, want := range []string{"maxReceiveCount from 60 to 5", "queue orders's MessageRetentionPeriod from 7 days to 4 days",
		"dead-letter queue orders-dlq's MessageRetentionPeriod from 14 days to 5 days", "nothing was changed", "--force"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if res, _ := Setup(ctx, f, SetupOptions{Name: "orders"}); res.MaxReceiveCount != 60 || res.Retention != 7*24*time.Hour || res.DLQRetention != sqslimit.MaxRetention {
		t.Errorf("a refused setup changed something: %+v", res)
	}
	res, err := Setup(ctx, f, SetupOptions{Name: "orders", MaxReceiveCount: 5, AllowLowering: true})
	if err != nil || res.MaxReceiveCount != 5 || len(res.Changes) != 1 {
		t.Errorf("AllowLowering: %v, %+v", err, res)
	}
}

func TestSetupKeepsTheExistingDLQ(t *testing.T) {
	ctx := context.Background()
	f := sqstest.For(t)
	src, dlqURL := f.MustCreateQueueWithDLQ(t, "orders", 7, nil)
	f.MustCreateQueue(t, "orders-dlq-other", nil)
	_ = src
	res, err := Setup(ctx, f, SetupOptions{Name: "orders"})
	if err != nil {
		t.Fatal(err)
	}
	if res.DLQURL != dlqURL || res.MaxReceiveCount != 7 {
		t.Errorf("Setup moved the queue to DLQ %s, maxReceiveCount %d", res.DLQURL, res.MaxReceiveCount)
	}
	// An explicit DLQName re-points the RedrivePolicy, and says so.
	res, err = Setup(ctx, f, SetupOptions{Name: "orders", DLQName: "orders-dlq-other"})
	if err != nil || queueref.Name(res.DLQURL) != "orders-dlq-other" {
		t.Fatalf("%v, %+v", err, res)
	}
	if got := changeTexts(res.Changes); len(got) != 1 || !strings.Contains(got[0], "deadLetterTargetArn") {
		t.Errorf("changes %v", got)
	}
}

func TestSetupFIFOUsesTheFIFORule(t *testing.T) {
	f := sqstest.For(t)
	res, err := Setup(context.Background(), f, SetupOptions{Name: "events", FIFO: true})
	if err != nil {
		t.Fatal(err)
	}
	if !res.FIFO || res.MaxReceiveCount != RecommendedMaxReceiveCount(4, true) || res.MaxReceiveCount != deadletter.DefaultFIFOMaxReceiveCount {
		t.Errorf("FIFO setup %+v", res)
	}
	// A FIFO queue set up with the default passes Lint for SNS's default policy.
	if fs, err := Lint(context.Background(), f, res.QueueURL, LintOptions{Attempts: 4}); err != nil || len(fs) != 0 {
		t.Errorf("Lint = %v, %v", fs, err)
	}
}

func TestRecommendedMaxReceiveCount(t *testing.T) {
	for _, tc := range []struct {
		attempts int
		fifo     bool
		want     int
	}{{4, false, 4}, {0, false, 1}, {4, true, 40}, {150, true, 1000}, {1200, false, 1000}} {
		if got := RecommendedMaxReceiveCount(tc.attempts, tc.fifo); got != tc.want {
			t.Errorf("RecommendedMaxReceiveCount(%d, %v) = %d, want %d", tc.attempts, tc.fifo, got, tc.want)
		}
	}
}

// noDLQAdmin is a Fake without ListDeadLetterSourceQueues, like fauxqs.
type noDLQAdmin struct{ *sqstest.Fake }

func (noDLQAdmin) ListDeadLetterSourceQueues(context.Context, *sqs.ListDeadLetterSourceQueuesInput, ...func(*sqs.Options)) (*sqs.ListDeadLetterSourceQueuesOutput, error) {
	return nil, &smithy.GenericAPIError{Code: "InvalidAction", Message: "not implemented"}
}

func TestSourcesOf(t *testing.T) {
	f := sqstest.For(t)
	a, dlqURL := f.MustCreateQueueWithDLQ(t, "a", 5, nil)
	b := f.MustCreateQueue(t, "b", map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:a-dlq","maxReceiveCount":3}`})
	f.MustCreateQueue(t, "c", nil)
	for name, c := range map[string]API{"ListDeadLetterSourceQueues": f, "scan": noDLQAdmin{f}} {
		got, err := SourcesOf(context.Background(), c, dlqURL)
		if err != nil || strings.Join(got, " ") != a+" "+b {
			t.Errorf("%s: SourcesOf = %v, %v; want %s and %s", name, got, err, a, b)
		}
		if got, err := SourcesOf(context.Background(), c, a); err != nil || len(got) != 0 {
			t.Errorf("%s: sources of a source queue = %v, %v", name, got, err)
		}
	}
}

func TestLintDeadLetterQueueItself(t *testing.T) {
	f := sqstest.For(t)
	_, dlqURL := goodPair(t, f, "orders", nil)
	for _, c := range []API{f, noDLQAdmin{f}} {
		got := lintFindings(t, c, dlqURL, LintOptions{Attempts: 4})
		fd := expectOnly(t, got, deadletter.CodeIsDeadLetterQueue, SeverityInfo, "sqsworker doctor orders")
		if strings.Contains(fd.Fix+fd.Message, "orders-dlq-dlq") {
			t.Errorf("finding suggests a DLQ for the DLQ: %+v", fd)
		}
	}
	// A queue nobody dead-letters to still lacks its RedrivePolicy.
	plain := f.MustCreateQueue(t, "plain", nil)
	expectOnly(t, lintFindings(t, f, plain, LintOptions{}), deadletter.CodeNoRedrivePolicy, SeverityError)
}

func TestLintFIFOMaxReceiveCount(t *testing.T) {
	f := sqstest.For(t)
	src, dlqURL := f.MustCreateQueueWithDLQ(t, "events.fifo", 5, map[string]string{"FifoQueue": "true"})
	setAttrs(t, f, dlqURL, map[string]string{"MessageRetentionPeriod": "1209600"})
	fd := expectOnly(t, lintFindings(t, f, src, LintOptions{Attempts: 4}), deadletter.CodeFIFOMaxReceiveCount, SeverityWarning, `"maxReceiveCount":40`, "--max-receive-count 40")
	if !strings.Contains(fd.Message, "never ran") {
		t.Errorf("message %q does not say why", fd.Message)
	}
	// Below the attempts it is the error, with the FIFO suggestion.
	expectOnly(t, lintFindings(t, f, src, LintOptions{Attempts: 6}), deadletter.CodeMaxReceiveCountLow, SeverityError, `"maxReceiveCount":60`)
}

func TestLintHandlerTimeoutOver12h(t *testing.T) {
	f := sqstest.For(t)
	src, _ := goodPair(t, f, "orders", map[string]string{"MessageRetentionPeriod": "1209600"})
	setAttrs(t, f, src, map[string]string{"MessageRetentionPeriod": "1209599"})
	got := lintFindings(t, f, src, LintOptions{HandlerTimeout: 13 * time.Hour})
	fd := expectOnly(t, got, deadletter.CodeHandlerTimeoutOver12h, SeverityWarning, "under 12 hours")
	if !strings.Contains(fd.Message, "13 hours") {
		t.Errorf("message %q", fd.Message)
	}
}

func TestSetupValidation(t *testing.T) {
	f := sqstest.For(t)
	for _, o := range []SetupOptions{
		{}, {Name: "a", MaxReceiveCount: 1001}, {Name: "a", Retention: time.Second}, {Name: "a", DLQName: "x.fifo"},
		{Name: "a", VisibilityTimeout: 13 * time.Hour},
		{Name: "bad name!"}, {Name: strings.Repeat("q", 81)}, {Name: "a", DLQName: "a.dlq"},
	} {
		if _, err := Setup(context.Background(), f, o); err == nil {
			t.Errorf("Setup(%+v) accepted", o)
		}
	}
	if n := len(f.Requests()); n != 0 {
		t.Errorf("invalid options made calls: %v", f.Requests())
	}
	// A new queue whose dead-letter queue's default name (NAME-dlq) would
	// be too long is refused before anything is created.
	if _, err := Setup(context.Background(), f, SetupOptions{Name: strings.Repeat("q", 78)}); err == nil || !strings.Contains(err.Error(), "--dlq-name") {
		t.Errorf("a 78-character name: %v", err)
	}
	if n := f.Requests()["CreateQueue"]; n != 0 {
		t.Errorf("created %d queues", n)
	}
}
