package console

import (
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sqsworker/sqsworker/producer"
	"github.com/sqsworker/sqsworker/schedules"
	"github.com/sqsworker/sqsworker/schedules/schedulestest"
)

const schedRole = "arn:aws:iam::000000000000:role/scheduler"

// withScheduler makes the fixture's console anew with an in-memory
// Scheduler delivering into its fake, and returns the Scheduler.
func (x *fixture) withScheduler(t *testing.T, optFns ...func(*Options)) *schedulestest.Scheduler {
	t.Helper()
	s, err := schedulestest.New(x.f)
	if err != nil {
		t.Fatal(err)
	}
	hh, err := New(x.f, append([]func(*Options){func(o *Options) {
		o.Logger = slog.New(slog.NewTextHandler(x.log, nil))
		o.Now = x.f.Now
		o.Scheduler = s
	}}, optFns...)...)
	if err != nil {
		t.Fatal(err)
	}
	x.h = hh.(*handler)
	return s
}

// rowWith returns the table row whose attribute attr is value on a page.
func rowWith(page, attr, value string) string {
	_, rest, ok := strings.Cut(page, attr+`="`+value+`">`)
	if !ok {
		return ""
	}
	row, _, _ := strings.Cut(rest, "</tr>")
	return row
}

// The Schedules page shows each schedule's expression, time zone, next
// fire times, state and its dead-letter queue's depth, and the pending
// one-time jobs; an operator cancels one (CSRF-checked, audited in the
// log and on the Actions page), and the job is gone.
func TestSchedulesPageShowsAndCancels(t *testing.T) {
	x := newFixture(t)
	s := x.withScheduler(t, withActions, func(o *Options) { o.ScheduleGroups = []string{"reports"} })
	x.f.MustCreateQueue(t, "reports", nil)
	dlqURL := x.f.MustCreateQueue(t, "reports-sched-dlq", nil)
	x.f.MustSend(t, dlqURL, "failed tick")
	arn := "arn:aws:sqs:us-east-1:000000000000:"
	ctx := t.Context()
	if _, err := schedules.Apply(ctx, s, []schedules.Schedule{
		{Name: "nightly", Expression: "cron(30 2 * * ? *)", TimeZone: "Europe/Paris", Queue: arn + "reports", Body: "r", Overlap: "skip"},
		{Name: "paused", Expression: "rate(1 hour)", Queue: arn + "reports", Body: "r", Disabled: true},
	}, func(o *schedules.Options) { o.Group, o.RoleARN, o.DLQ = "reports", schedRole, arn+"reports-sched-dlq" }); err != nil {
		t.Fatal(err)
	}
	jobs, err := schedules.NewJobs(s, arn+"reports", func(o *schedules.Options) { o.RoleARN = schedRole })
	if err != nil {
		t.Fatal(err)
	}
	due := time.Now().Add(3 * time.Hour).Truncate(time.Second)
	for _, id := range []string{"trial-end-42", "reminder-7"} {
		if _, err := jobs.At(ctx, id, due, producer.Message{Body: "job"}); err != nil {
			t.Fatal(err)
		}
	}

	cookie, token, page := x.open(t, "/schedules")
	nightly := rowWith(page, "data-schedule", "nightly")
	for _, want := range []string{"cron(30 2 * * ? *)", "Europe/Paris", "overlap: skip", "enabled", "reports-sched-dlq", `<span class="bad">1</span>`} {
		if !strings.Contains(nightly, want) {
			t.Errorf("nightly's row: want %q in\n%s", want, nightly)
		}
	}
	if n := strings.Count(nightly, ":30:00Z</div>"); n != 3 {
		t.Errorf("nightly's row shows %d next fire times at :30, want 3:\n%s", n, nightly)
	}
	if row := rowWith(page, "data-schedule", "paused"); !strings.Contains(row, "disabled") {
		t.Errorf("paused's row:\n%s", row)
	}
	job := rowWith(page, "data-job", "trial-end-42")
	if !strings.Contains(job, due.UTC().Format("2006-01-02 15:04:05Z")) || !strings.Contains(job, `/schedules/jobs/trial-end-42/cancel"`) || !strings.Contains(page, `href="/schedules"`) {
		t.Fatalf("trial-end-42's row:\n%s", job)
	}

	// Without the CSRF token: refused, nothing cancelled.
	if resp := x.post(t, "/schedules/jobs/trial-end-42/cancel", cookie, url.Values{}); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("cancel without a token: %s", resp.Status)
	}
	resp := x.post(t, "/schedules/jobs/trial-end-42/cancel", cookie, url.Values{csrfField: {token}})
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/schedules?notice=Cancelled") {
		t.Fatalf("cancel: %s %s\n%s", resp.Status, resp.Header.Get("Location"), body(t, resp))
	}
	list, _ := schedules.List(ctx, s, func(o *schedules.Options) { o.Group = "sqsworker-jobs" })
	if len(list) != 1 || list[0].Name != "reminder-7" {
		t.Fatalf("after the cancel the jobs group holds %+v", list)
	}
	if !strings.Contains(x.log.String(), "cancel job") || !strings.Contains(x.log.String(), "job=trial-end-42") {
		t.Errorf("audit log: %s", x.log.String())
	}
	if row := rowWith(body(t, x.get(t, "/actions")), "data-kind", "cancel"); !strings.Contains(row, "one-time job trial-end-42") || !strings.Contains(row, "done") {
		t.Errorf("actions page's cancel row:\n%s", row)
	}
	// Cancelling again: not pending any more, said so.
	resp = x.post(t, "/schedules/jobs/trial-end-42/cancel", cookie, url.Values{csrfField: {token}})
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(body(t, resp), "not pending") {
		t.Errorf("cancel again: %s", resp.Status)
	}
}

// Read-only: the page shows the jobs with no Cancel, and a cancel request
// is refused.
func TestSchedulesPageReadOnly(t *testing.T) {
	x := newFixture(t)
	s := x.withScheduler(t)
	jobs, err := schedules.NewJobs(s, "arn:aws:sqs:us-east-1:000000000000:orders", func(o *schedules.Options) { o.RoleARN = schedRole })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := jobs.At(t.Context(), "j1", time.Now().Add(time.Hour), producer.Message{Body: "b"}); err != nil {
		t.Fatal(err)
	}
	_, _, page := x.open(t, "/schedules")
	if row := rowWith(page, "data-job", "j1"); row == "" || strings.Contains(row, "cancel") {
		t.Fatalf("read-only jobs row:\n%s", row)
	}
	if !strings.Contains(page, "No schedules in this group.") {
		t.Errorf("the default group is empty; page:\n%s", page)
	}
	if resp := x.post(t, "/schedules/jobs/j1/cancel", nil, url.Values{}); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("cancel on a read-only console: %s", resp.Status)
	}
}
