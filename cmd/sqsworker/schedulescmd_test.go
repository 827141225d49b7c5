package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sqsworker/sqsworker/schedules"
)

const (
	reportsYAML = "testdata/schedules/reports.yaml"
	reportsV2   = "testdata/schedules/reports-v2.json"
)

// schedules diff shows the changes without making them, apply makes them
// (and a second apply none), ls reads the group back in the shape of a
// FILE, and that output applied again changes nothing.
func TestSchedulesDiffApplyLs(t *testing.T) {
	h := newHarness(t)

	code, out, errOut := h.run(t, "schedules", "diff", reportsYAML)
	if code != exitOK || !strings.Contains(out, "+ create nightly-report") || !strings.Contains(out, "+ create warm-cache") ||
		!strings.Contains(out, "2 change(s); sqsworker schedules apply "+reportsYAML) {
		t.Fatalf("diff of an empty group: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, _ := h.run(t, "schedules", "diff", "--check", reportsYAML); code != exitProblems {
		t.Errorf("diff --check with changes: exit %d, want 1", code)
	}
	if h.scheduler != nil {
		if list, _ := schedules.List(t.Context(), h.scheduler, func(o *schedules.Options) { o.Group = "reports" }); len(list) != 0 {
			t.Fatalf("diff wrote %d schedules", len(list))
		}
	}

	code, out, errOut = h.run(t, "schedules", "apply", reportsYAML)
	if code != exitOK || !strings.Contains(out, "+ created nightly-report") || !strings.Contains(out, "+ created warm-cache") {
		t.Fatalf("apply: exit %d\n%s%s", code, out, errOut)
	}
	list, err := schedules.List(t.Context(), h.scheduler, func(o *schedules.Options) { o.Group = "reports" })
	if err != nil || len(list) != 2 {
		t.Fatalf("after apply the group holds %v, %v", list, err)
	}
	warm := list[1]
	if warm.FlexibleWindow.String() != "5m0s" || warm.DLQ != "arn:aws:sqs:us-east-1:000000000000:reports-scheduler-dlq" ||
		warm.RoleARN != "arn:aws:iam::000000000000:role/reports-scheduler" || *warm.Attributes["tenant"].StringValue != "acme" {
		t.Errorf("warm-cache as applied: %+v", warm)
	}
	if code, out, _ := h.run(t, "schedules", "apply", reportsYAML); code != exitOK || !strings.Contains(out, "already holds the declared schedules: no changes") {
		t.Errorf("apply again: exit %d\n%s", code, out)
	}
	if code, _, _ := h.run(t, "schedules", "diff", "--check", reportsYAML); code != exitOK {
		t.Errorf("diff --check in sync: exit %d, want 0", code)
	}

	// ls: the text table with the next tick (the harness's clock is
	// 2025-03-01 14:00Z: 02:30 in Paris is 01:30Z the next day).
	code, out, _ = h.run(t, "schedules", "ls", "--group", "reports")
	if code != exitOK || !strings.Contains(out, "nightly-report") || !strings.Contains(out, "2025-03-02 01:30") || !strings.Contains(out, "reports-scheduler-dlq") {
		t.Errorf("ls: exit %d\n%s", code, out)
	}
	// ls -o json is a FILE: applied again it changes nothing.
	code, out, _ = h.run(t, "schedules", "ls", "--group", "reports", "-o", "json")
	var f schedulesFile
	if code != exitOK || json.Unmarshal([]byte(out), &f) != nil || f.Group != "reports" || len(f.Schedules) != 2 {
		t.Fatalf("ls -o json: exit %d\n%s", code, out)
	}
	saved := filepath.Join(t.TempDir(), "saved.json")
	if err := os.WriteFile(saved, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := h.run(t, "schedules", "diff", "--check", saved); code != exitOK || !strings.Contains(out, "no changes") {
		t.Errorf("diff of ls's own output: exit %d\n%s%s", code, out, errOut)
	}

	// A changed declaration (JSON): one update with its field, one delete,
	// one create.
	code, out, errOut = h.run(t, "schedules", "apply", reportsV2)
	for _, want := range []string{"~ updated nightly-report (expression)", "- deleted warm-cache", "+ created weekly-digest"} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Errorf("apply v2: exit %d, want %q\n%s%s", code, want, out, errOut)
		}
	}
	if list, _ := schedules.List(t.Context(), h.scheduler, func(o *schedules.Options) { o.Group = "reports" }); len(list) != 2 || list[1].Name != "weekly-digest" {
		t.Errorf("after v2: %+v", list)
	}
}

// Bad input is refused before any call, with exit 2 and what to change.
func TestSchedulesRefusesBadInput(t *testing.T) {
	h := newHarness(t)
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	noRole := write("no-role.yaml", "schedules:\n  - {name: a, expression: rate(1 hour), queue: 'arn:aws:sqs:us-east-1:000000000000:q', body: x}\n")
	past := write("past.yaml", "roleArn: arn:aws:iam::000000000000:role/r\nschedules:\n  - {name: a, expression: at(2025-02-01T00:00:00), queue: 'arn:aws:sqs:us-east-1:000000000000:q', body: x}\n")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"schedules", "diff", "testdata/schedules/bad-zone.yaml"}, `unknown time zone "Europe/Pariss"`},
		{[]string{"schedules", "apply", "testdata/schedules/unknown-field.yaml"}, `unknown field "cron"`},
		{[]string{"schedules", "apply", noRole}, "no execution role"},
		{[]string{"schedules", "diff", noRole, "--role-arn", "arn:aws:iam::000000000000:role/r", "--max-event-age", "30s"}, "MaxEventAge"},
		{[]string{"schedules", "apply", past}, "give a time in the future"},
		{[]string{"schedules", "apply", write("empty.yaml", "")}, "the file is empty"},
		{[]string{"schedules", "apply", write("nolist.yaml", "group: x\n")}, "no schedules list"},
		{[]string{"schedules", "apply", filepath.Join(dir, "missing.yaml")}, "reading the schedules"},
	} {
		code, out, errOut := h.run(t, c.args...)
		if code != exitUsage || !strings.Contains(errOut, c.want) || out != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and %q", c.args, code, out, errOut, c.want)
		}
	}
	if h.scheduler != nil {
		if list, _ := schedules.List(t.Context(), h.scheduler); len(list) != 0 {
			t.Errorf("bad input wrote %d schedules", len(list))
		}
	}
	// An empty list deletes every schedule: allowed when written out.
	if code, out, errOut := h.run(t, "schedules", "apply", write("none.yaml", "schedules: []\n")); code != exitOK {
		t.Errorf("apply of an empty list: exit %d\n%s%s", code, out, errOut)
	}
}

// The help of each command says the IAM it needs and the FILE's shape.
func TestSchedulesHelp(t *testing.T) {
	h := newHarness(t)
	for cmd, wants := range map[string][]string{
		"diff":  {"scheduler:ListSchedules", "scheduler:GetSchedule", "--check", "flexibleWindow"},
		"apply": {"scheduler:CreateSchedule", "scheduler:UpdateSchedule", "scheduler:DeleteSchedule", "iam:PassRole", "sqs:SendMessage", "--dlq"},
		"ls":    {"scheduler:ListSchedules", "-o json"},
	} {
		code, help, _ := h.run(t, "schedules", cmd, "--help")
		for _, want := range wants {
			if code != exitOK || !strings.Contains(help, want) {
				t.Errorf("schedules %s --help lacks %q:\n%s", cmd, want, help)
			}
		}
	}
}

// template --schedule-group adds the schedule group, Scheduler's execution
// role (trusted by scheduler.amazonaws.com for the account, sending to the
// queue and to Scheduler's DLQ) and that DLQ with its alarm.
func TestTemplateScheduleGroup(t *testing.T) {
	h := newHarness(t)
	code, out, errOut := h.run(t, "template", "orders.fifo", "--schedule-group", "reports", "-o", "json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc struct {
		Resources map[string]struct {
			Type       string
			Properties map[string]any
		}
		Outputs map[string]any
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	r := doc.Resources
	if r["ScheduleGroup"].Type != "AWS::Scheduler::ScheduleGroup" || r["ScheduleGroup"].Properties["Name"] != "reports" {
		t.Errorf("ScheduleGroup: %+v", r["ScheduleGroup"])
	}
	if dlq := r["SchedulerDeadLetterQueue"]; dlq.Properties["QueueName"] != "orders-scheduler-dlq" || dlq.Properties["FifoQueue"] != nil {
		t.Errorf("Scheduler's DLQ must be a standard queue: %+v", dlq)
	}
	role, _ := json.Marshal(r["SchedulerRole"])
	for _, want := range []string{`"Service":"scheduler.amazonaws.com"`, `"aws:SourceAccount":{"Ref":"AWS::AccountId"}`, `"Action":"sqs:SendMessage"`,
		`{"Fn::GetAtt":["Queue","Arn"]}`, `{"Fn::GetAtt":["SchedulerDeadLetterQueue","Arn"]}`} {
		if !strings.Contains(string(role), want) {
			t.Errorf("SchedulerRole lacks %s: %s", want, role)
		}
	}
	if r["SchedulerDeadLetterQueueAlarm"].Type != "AWS::CloudWatch::Alarm" {
		t.Errorf("no alarm on Scheduler's DLQ")
	}
	for _, o := range []string{"ScheduleGroupName", "SchedulerRoleArn", "SchedulerDeadLetterQueueArn"} {
		if doc.Outputs[o] == nil {
			t.Errorf("no output %s", o)
		}
	}
	if code, _, errOut := h.run(t, "template", "orders", "--schedule-group", "bad group!"); code != exitUsage || !strings.Contains(errOut, "--schedule-group") {
		t.Errorf("bad group name: exit %d, %q", code, errOut)
	}
}
