package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/scheduler/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/schedules"
	"github.com/sqsworker/sqsworker/schedules/schedulestest"
)

const acct = "arn:aws:sqs:us-east-1:000000000000:"

// doctorScheduleGroup fills group "reports" with one healthy schedule and
// one of each problem doctor --schedule-group reports.
func doctorScheduleGroup(t *testing.T, h *harness) {
	t.Helper()
	ctx := context.Background()
	f := h.fake
	f.MustCreateQueue(t, "reports", nil)
	dlq := f.MustCreateQueue(t, "reports-scheduler-dlq", map[string]string{"MessageRetentionPeriod": "1209600"})
	f.MustCreateQueue(t, "short-dlq", nil) // SQS's default retention, 4 days
	s, err := schedulestest.New(f)
	if err != nil {
		t.Fatal(err)
	}
	h.scheduler = s
	opts := func(o *schedules.Options) {
		o.Group, o.RoleARN, o.DLQ = "reports", "arn:aws:iam::000000000000:role/reports-scheduler", acct+"reports-scheduler-dlq"
		o.Now = func() time.Time { return h.now }
	}
	declared := []schedules.Schedule{
		{Name: "healthy", Expression: "cron(30 2 * * ? *)", TimeZone: "Europe/Paris", Queue: acct + "reports", Body: "r"},
		{Name: "no-dlq", Expression: "rate(1 hour)", Queue: acct + "reports", Body: "r"},
		{Name: "short-dlq", Expression: "rate(1 hour)", Queue: acct + "reports", Body: "r", DLQ: acct + "short-dlq"},
		{Name: "gone-dlq", Expression: "rate(1 hour)", Queue: acct + "reports", Body: "r", DLQ: acct + "deleted-dlq"},
		{Name: "gone-target", Expression: "rate(1 hour)", Queue: acct + "deleted", Body: "r"},
		{Name: "fifo-dlq", Expression: "rate(1 hour)", Queue: acct + "reports", Body: "r", DLQ: acct + "reports-dlq.fifo"},
	}
	if _, err := schedules.Apply(ctx, s, declared, opts); err != nil {
		t.Fatal(err)
	}
	// no-dlq has none; retries-off retries nothing (written as another
	// tool would).
	for _, name := range []string{"no-dlq", "retries-off"} {
		in := &scheduler.UpdateScheduleInput{Name: aws.String(name), GroupName: aws.String("reports"), ScheduleExpression: aws.String("rate(1 hour)"),
			FlexibleTimeWindow: &types.FlexibleTimeWindow{Mode: types.FlexibleTimeWindowModeOff},
			Target:             &types.Target{Arn: aws.String(acct + "reports"), RoleArn: aws.String("arn:aws:iam::000000000000:role/r"), Input: aws.String("{}")}}
		if name == "retries-off" {
			in.Target.RetryPolicy = &types.RetryPolicy{MaximumRetryAttempts: aws.Int32(0), MaximumEventAgeInSeconds: aws.Int32(60)}
			in.Target.DeadLetterConfig = &types.DeadLetterConfig{Arn: aws.String(acct + "reports-scheduler-dlq")}
			c := scheduler.CreateScheduleInput{Name: in.Name, GroupName: in.GroupName, ScheduleExpression: in.ScheduleExpression, FlexibleTimeWindow: in.FlexibleTimeWindow, Target: in.Target}
			if _, err := s.CreateSchedule(ctx, &c); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if _, err := s.UpdateSchedule(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	// Two ticks Scheduler could not deliver.
	f.MustSend(t, dlq, "tick 1")
	f.MustSend(t, dlq, "tick 2")
}

func TestDoctorScheduleGroup(t *testing.T) {
	h := newHarness(t)
	doctorScheduleGroup(t, h)

	code, out, errOut := h.run(t, "doctor", "--schedule-group", "reports")
	if code != exitProblems || errOut != "" {
		t.Errorf("schedule group with problems: exit %d, want %d; stderr %q", code, exitProblems, errOut)
	}
	golden(t, "doctor-schedules", out)

	code, out, _ = h.run(t, "doctor", "--schedule-group", "reports", "-o", "json")
	if code != exitProblems {
		t.Errorf("json: exit %d", code)
	}
	golden(t, "doctor-schedules-json", out)
	var reports []doctorReport
	if err := json.Unmarshal([]byte(out), &reports); err != nil || len(reports) != 1 || reports[0].ScheduleGroup != "reports" || reports[0].Queue != "" {
		t.Fatalf("json output: %v %+v", err, reports)
	}
	codes := map[string]int{}
	for _, f := range reports[0].Findings {
		codes[f.Code]++
		if !strings.HasPrefix(f.Message, "schedule") || strings.HasPrefix(f.Message, "schedule healthy:") {
			t.Errorf("finding %s: %q", f.Code, f.Message)
		}
	}
	for _, c := range []string{"schedule-no-dlq", "schedule-dlq-missing", "schedule-dlq-retention-short", "schedule-retries-off", "schedule-target-missing", "schedule-dlq-fifo"} {
		if codes[c] != 1 {
			t.Errorf("code %s found %d times, want 1: %v", c, codes[c], codes)
		}
	}
	// The DLQ's depth, once for the schedules sharing it.
	if codes["schedule-dlq-not-empty"] != 1 || !strings.Contains(out, "schedules gone-target, healthy, retries-off: their dead-letter queue reports-scheduler-dlq holds 2 message(s)") {
		t.Errorf("schedule-dlq-not-empty %d times, want 1 with depth 2\n%s", codes["schedule-dlq-not-empty"], out)
	}

	// A queue and the group together: one report each, in that order.
	h.fake.MustCreateQueue(t, "alone", nil)
	code, out, _ = h.run(t, "doctor", "alone", "--schedule-group", "reports", "-o", "json")
	reports = nil
	if err := json.Unmarshal([]byte(out), &reports); err != nil || code != exitProblems || len(reports) != 2 || reports[0].Queue != "alone" || reports[1].ScheduleGroup != "reports" {
		t.Errorf("queue and group: exit %d, %v\n%s", code, err, out)
	}
}

// A healthy group exits 0; a group that does not exist, 1 with what to
// do; no queue and no group is a usage error.
func TestDoctorScheduleGroupExit(t *testing.T) {
	h := newHarness(t)
	h.fake.MustCreateQueue(t, "q", nil)
	h.fake.MustCreateQueue(t, "q-dlq", map[string]string{"MessageRetentionPeriod": "1209600"})
	s, err := schedulestest.New(h.fake)
	if err != nil {
		t.Fatal(err)
	}
	h.scheduler = s
	if _, err := schedules.Apply(context.Background(), s, []schedules.Schedule{{Name: "ok", Expression: "rate(1 day)", Queue: acct + "q", Body: "b"}}, func(o *schedules.Options) {
		o.Group, o.RoleARN, o.DLQ = "g", "arn:aws:iam::000000000000:role/r", acct+"q-dlq"
	}); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := h.run(t, "doctor", "--schedule-group", "g"); code != exitOK || out != "schedule group g: ok\n" {
		t.Errorf("healthy group: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, _ := h.run(t, "doctor", "--schedule-group", "empty"); code != exitOK || !strings.Contains(out, "schedule group empty: ok") {
		t.Errorf("empty group: exit %d\n%s", code, out)
	}
	if code, _, errOut := h.run(t, "doctor"); code != exitUsage || !strings.Contains(errOut, "missing arguments") {
		t.Errorf("no queue, no group: exit %d, %q", code, errOut)
	}
	// The unique table's findings belong to the queues checked: with no
	// queue they would be dropped, so the command says to name one.
	if code, _, errOut := h.run(t, "doctor", "--schedule-group", "g", "--unique-table", "keys"); code != exitUsage || !strings.Contains(errOut, "name at least one QUEUE") {
		t.Errorf("--unique-table without a queue: exit %d, %q", code, errOut)
	}
	_ = sqs.GetQueueUrlInput{}
}
