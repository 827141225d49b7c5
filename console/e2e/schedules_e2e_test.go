package e2e

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/chromedp/chromedp"

	"github.com/sqsworker/sqsworker/console"
	"github.com/sqsworker/sqsworker/harness/testenv"
	"github.com/sqsworker/sqsworker/producer"
	"github.com/sqsworker/sqsworker/queueref"
	"github.com/sqsworker/sqsworker/schedules"
	"github.com/sqsworker/sqsworker/schedules/schedulestest"
)

// The Schedules page in Chromium, against the SQS emulator with the
// in-memory Scheduler firing into it: the periodic schedules with their
// next fire times and their dead-letter queue's depth (a job whose queue
// is gone was dead-lettered by the Scheduler), the pending one-time jobs,
// and an operator cancelling one: the job is gone from Scheduler and the
// Actions page lists the cancel.
func TestSchedulesPageInChromium(t *testing.T) {
	client := testenv.SQS(t)
	ctx := context.Background()
	mk := func(prefix string, attrs map[string]string) (string, string) {
		t.Helper()
		out, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(testenv.UniqueName(prefix)), Attributes: attrs})
		if err != nil {
			t.Fatal(err)
		}
		a, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: out.QueueUrl, AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
		if err != nil {
			t.Fatal(err)
		}
		return *out.QueueUrl, a.Attributes[string(types.QueueAttributeNameQueueArn)]
	}
	_, reports := mk("reports", nil)
	dlqURL, dlqARN := mk("reports-sched-dlq", map[string]string{"MessageRetentionPeriod": "1209600"})
	goneURL, goneARN := mk("gone", nil)
	if _, err := client.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(goneURL)}); err != nil {
		t.Fatal(err)
	}

	s, err := schedulestest.New(client)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	go func() { _ = s.Run(runCtx) }()
	const role = "arn:aws:iam::000000000000:role/reports-scheduler"
	group, jobsGroup := testenv.UniqueName("reports"), testenv.UniqueName("jobs")
	if _, err := schedules.Apply(ctx, s, []schedules.Schedule{
		{Name: "nightly-report", Expression: "cron(30 2 * * ? *)", TimeZone: "Europe/Paris", Queue: reports, Body: `{"report":"sales"}`, Overlap: "skip", Description: "sales report for yesterday"},
		{Name: "warm-cache", Expression: "rate(15 minutes)", Queue: reports, Body: `{"warm":"catalog"}`, FlexibleWindow: 5 * time.Minute},
		{Name: "quarterly-close", Expression: "cron(0 9 1 1,4,7,10 ? *)", TimeZone: "America/New_York", Queue: reports, Body: `{"close":"quarter"}`, Disabled: true},
	}, func(o *schedules.Options) { o.Group, o.RoleARN, o.DLQ = group, role, dlqARN }); err != nil {
		t.Fatal(err)
	}
	jobs, err := schedules.NewJobs(s, reports, func(o *schedules.Options) { o.Group, o.RoleARN, o.DLQ = jobsGroup, role, dlqARN })
	if err != nil {
		t.Fatal(err)
	}
	due := time.Now().Add(26 * time.Hour).Truncate(time.Minute)
	for i, id := range []string{"trial-end-acme", "trial-end-globex", "invoice-reminder-1042"} {
		if _, err := jobs.At(ctx, id, due.Add(time.Duration(i)*97*time.Minute), producer.Message{Body: `{"customer":"` + id + `"}`}); err != nil {
			t.Fatal(err)
		}
	}
	// A job whose queue is gone: Scheduler dead-letters it.
	lost, err := schedules.NewJobs(s, goneARN, func(o *schedules.Options) { o.Group, o.RoleARN, o.DLQ = group+"-lost", role, dlqARN })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lost.At(ctx, "lost", time.Now().Add(time.Second), producer.Message{Body: "x"}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		a, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(dlqURL), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages}})
		if err != nil {
			t.Fatal(err)
		}
		if a.Attributes["ApproximateNumberOfMessages"] == "1" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the undeliverable job did not reach the dead-letter queue")
		}
	}

	var audit lockedBuffer
	h, err := console.New(client, func(o *console.Options) {
		o.Queues = []string{reports, dlqARN}
		o.Actions = true
		o.Scheduler = s
		o.ScheduleGroups = []string{group}
		o.JobsGroup = jobsGroup
		o.Logger = slog.New(slog.NewTextHandler(&audit, nil))
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	b := startBrowser(t)
	if dir := os.Getenv(ScreenshotsEnv); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		b.dir = dir
	}

	b.do(chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS(`nav a[href="/schedules"]`)),
		chromedp.Click(chromedp.CSS(`nav a[href="/schedules"]`)), chromedp.WaitVisible(chromedp.CSS("#jobs")))
	row := `tr[data-schedule="nightly-report"] `
	if got := b.text(row + ".expr"); !strings.HasPrefix(got, "cron(30 2 * * ? *)") {
		t.Errorf("nightly-report's expression: %q", got)
	}
	if got := b.text(row + ".tz"); got != "Europe/Paris" {
		t.Errorf("nightly-report's time zone: %q", got)
	}
	next := run(b, chromedp.Evaluate[[]string](`[...document.querySelectorAll('tr[data-schedule="nightly-report"] .next div')].map(d => d.textContent)`))
	if len(next) != 3 {
		t.Fatalf("nightly-report's next fire times: %q, want 3", next)
	}
	for _, n := range next {
		at, err := time.Parse("2006-01-02 15:04:05Z", n)
		paris, _ := time.LoadLocation("Europe/Paris")
		if err != nil || at.In(paris).Format("15:04") != "02:30" || !at.After(time.Now()) {
			t.Errorf("next fire time %q: want 02:30 in Paris, in the future", n)
		}
	}
	if got := b.text(row + ".depth"); got != "1" {
		t.Errorf("nightly-report's DLQ depth %q, want 1 (the dead-lettered job)", got)
	}
	if got := b.text(`tr[data-schedule="quarterly-close"] .state`); got != "disabled" {
		t.Errorf("quarterly-close's state %q", got)
	}
	if n := run(b, chromedp.Evaluate[int](`document.querySelectorAll("#jobs tr.job").length`)); n != 3 {
		t.Fatalf("%d pending jobs shown, want 3", n)
	}
	if got := b.text(`tr[data-job="trial-end-acme"] .due`); got != due.UTC().Format("2006-01-02 15:04:05Z") {
		t.Errorf("trial-end-acme due %q, want %s", got, due.UTC().Format("2006-01-02 15:04:05Z"))
	}
	b.shot("schedules")

	// A forged cancel (no CSRF token) is refused.
	if code := b.post(srv.URL+"/schedules/jobs/trial-end-globex/cancel", ""); code != 403 {
		t.Errorf("a cancel without the CSRF token answered %d, want 403", code)
	}
	b.do(chromedp.Click(chromedp.CSS(`tr[data-job="trial-end-globex"] button.cancel`)), chromedp.WaitVisible(chromedp.CSS("#notice")))
	if got := b.text("#notice"); !strings.HasPrefix(got, "Cancelled job trial-end-globex") || !strings.Contains(got, queueref.Name(reports)) {
		t.Errorf("notice %q", got)
	}
	if n := run(b, chromedp.Evaluate[int](`document.querySelectorAll('#jobs tr[data-job="trial-end-globex"]').length`)); n != 0 {
		t.Error("the cancelled job is still listed")
	}
	pending, err := schedules.List(ctx, s, func(o *schedules.Options) { o.Group = jobsGroup })
	if err != nil || len(pending) != 2 {
		t.Fatalf("Scheduler holds %d jobs after the cancel (%v), want 2", len(pending), err)
	}
	b.do(chromedp.Navigate(srv.URL+"/actions"), chromedp.WaitVisible(chromedp.CSS("#actions")))
	if got := b.text(`#actions tr[data-kind="cancel"] .result`); got != "done" {
		t.Errorf("the Actions page's cancel: %q", got)
	}
	if !strings.Contains(audit.String(), "cancel job") || !strings.Contains(audit.String(), "job=trial-end-globex") {
		t.Errorf("audit log: %s", audit.String())
	}
}
