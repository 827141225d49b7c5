package conformance

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	schedtypes "github.com/aws/aws-sdk-go-v2/service/scheduler/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// schedRole is the execution role every schedule names (no backend of the
// suite assumes it).
const schedRole = "arn:aws:iam::123456789012:role/sqsworker-conformance-scheduler"

// queue creates a standard queue keeping messages 14 days (behaviours wait
// up to weeks of virtual time) and returns its URL and ARN.
func (e *schedEnv) queue(name string, attrs map[string]string) (url, arn string) {
	e.t.Helper()
	all := map[string]string{"MessageRetentionPeriod": "1209600"}
	for k, v := range attrs {
		all[k] = v
	}
	out, err := e.sqs.CreateQueue(e.ctx(), &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: all})
	if err != nil {
		e.t.Fatalf("CreateQueue %s: %v", name, err)
	}
	a, err := e.sqs.GetQueueAttributes(e.ctx(), &sqs.GetQueueAttributesInput{QueueUrl: out.QueueUrl,
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
	if err != nil || a.Attributes["QueueArn"] == "" {
		e.t.Fatalf("GetQueueAttributes(QueueArn) of %s: %v", name, err)
	}
	return *out.QueueUrl, a.Attributes["QueueArn"]
}

// input is the smallest valid CreateSchedule request: an SQS target, no
// flexible window.
func input(name, expr, queueARN string) *scheduler.CreateScheduleInput {
	return &scheduler.CreateScheduleInput{Name: aws.String(name), ScheduleExpression: aws.String(expr),
		FlexibleTimeWindow: &schedtypes.FlexibleTimeWindow{Mode: schedtypes.FlexibleTimeWindowModeOff},
		Target:             &schedtypes.Target{Arn: aws.String(queueARN), RoleArn: aws.String(schedRole), Input: aws.String(name)}}
}

func (e *schedEnv) create(in *scheduler.CreateScheduleInput) string {
	e.t.Helper()
	out, err := e.sch.CreateSchedule(e.ctx(), in)
	if err != nil {
		e.t.Fatalf("CreateSchedule %s: %v", aws.ToString(in.Name), err)
	}
	if aws.ToString(out.ScheduleArn) == "" {
		e.t.Fatalf("CreateSchedule %s returned no ScheduleArn", aws.ToString(in.Name))
	}
	return *out.ScheduleArn
}

func (e *schedEnv) get(name string) *scheduler.GetScheduleOutput {
	e.t.Helper()
	out, err := e.sch.GetSchedule(e.ctx(), &scheduler.GetScheduleInput{Name: aws.String(name)})
	if err != nil {
		e.t.Fatalf("GetSchedule %s: %v", name, err)
	}
	return out
}

// list pages through ListSchedules and returns every summary.
func (e *schedEnv) list(in scheduler.ListSchedulesInput) (all []schedtypes.ScheduleSummary, pages int) {
	e.t.Helper()
	for {
		out, err := e.sch.ListSchedules(e.ctx(), &in)
		if err != nil {
			e.t.Fatalf("ListSchedules %s: %v", describe(in), err)
		}
		pages++
		if in.MaxResults != nil && len(out.Schedules) > int(*in.MaxResults) {
			e.t.Errorf("ListSchedules returned %d schedules, MaxResults %d", len(out.Schedules), *in.MaxResults)
		}
		all = append(all, out.Schedules...)
		if out.NextToken == nil || pages > 100 {
			return all, pages
		}
		in.NextToken = out.NextToken
	}
}

func names(s []schedtypes.ScheduleSummary) []string {
	var out []string
	for _, x := range s {
		out = append(out, aws.ToString(x.Name))
	}
	slices.Sort(out)
	return out
}

func eqTime(a, b *time.Time) bool {
	return a == nil && b == nil || a != nil && b != nil && a.Equal(*b)
}

func scheduleAPIBehaviours() []schedBehaviour {
	return []schedBehaviour{
		// https://docs.aws.amazon.com/scheduler/latest/APIReference/API_CreateSchedule.html
		// https://docs.aws.amazon.com/scheduler/latest/APIReference/API_GetSchedule.html
		// GetSchedule returns every field CreateSchedule set; a schedule
		// created without GroupName is in the group "default", and its ARN
		// is arn:aws:scheduler:<region>:<account>:schedule/<group>/<name>.
		{name: "RoundTripKeepsEveryField", run: func(e *schedEnv) {
			_, q := e.queue("rt", nil)
			_, dlq := e.queue("rt-dlq", nil)
			start := time.Now().Add(time.Hour).Truncate(time.Second).UTC()
			end := start.Add(48 * time.Hour)
			in := input("rt", "cron(15 9 ? * MON-FRI *)", q)
			in.ScheduleExpressionTimezone = aws.String("Europe/Paris")
			in.FlexibleTimeWindow = &schedtypes.FlexibleTimeWindow{Mode: schedtypes.FlexibleTimeWindowModeFlexible, MaximumWindowInMinutes: aws.Int32(15)}
			in.StartDate, in.EndDate = &start, &end
			in.Description = aws.String("conformance round trip")
			in.State = schedtypes.ScheduleStateDisabled
			in.ActionAfterCompletion = schedtypes.ActionAfterCompletionDelete
			in.Target.Input = aws.String(`{"job":"report","at":"<aws.scheduler.scheduled-time>"}`)
			in.Target.DeadLetterConfig = &schedtypes.DeadLetterConfig{Arn: aws.String(dlq)}
			in.Target.RetryPolicy = &schedtypes.RetryPolicy{MaximumRetryAttempts: aws.Int32(3), MaximumEventAgeInSeconds: aws.Int32(3600)}
			arn := e.create(in)
			if !strings.HasPrefix(arn, "arn:aws:scheduler:") || !strings.HasSuffix(arn, ":schedule/default/rt") {
				e.t.Errorf("ScheduleArn %q, want arn:aws:scheduler:<region>:<account>:schedule/default/rt", arn)
			}
			g := e.get("rt")
			checks := []struct {
				what      string
				got, want any
			}{
				{"Arn", aws.ToString(g.Arn), arn},
				{"Name", aws.ToString(g.Name), "rt"},
				{"GroupName", aws.ToString(g.GroupName), "default"},
				{"ScheduleExpression", aws.ToString(g.ScheduleExpression), "cron(15 9 ? * MON-FRI *)"},
				{"ScheduleExpressionTimezone", aws.ToString(g.ScheduleExpressionTimezone), "Europe/Paris"},
				{"FlexibleTimeWindow", describe(g.FlexibleTimeWindow != nil && g.FlexibleTimeWindow.Mode == schedtypes.FlexibleTimeWindowModeFlexible &&
					aws.ToInt32(g.FlexibleTimeWindow.MaximumWindowInMinutes) == 15), "true"},
				{"StartDate", eqTime(g.StartDate, &start), true},
				{"EndDate", eqTime(g.EndDate, &end), true},
				{"Description", aws.ToString(g.Description), "conformance round trip"},
				{"State", g.State, schedtypes.ScheduleStateDisabled},
				{"ActionAfterCompletion", g.ActionAfterCompletion, schedtypes.ActionAfterCompletionDelete},
				{"CreationDate set", g.CreationDate != nil, true},
				{"LastModificationDate set", g.LastModificationDate != nil, true},
			}
			if g.Target == nil {
				e.t.Fatalf("GetSchedule returned no Target")
			}
			checks = append(checks, []struct {
				what      string
				got, want any
			}{
				{"Target.Arn", aws.ToString(g.Target.Arn), q},
				{"Target.RoleArn", aws.ToString(g.Target.RoleArn), schedRole},
				{"Target.Input", aws.ToString(g.Target.Input), aws.ToString(in.Target.Input)},
				{"Target.DeadLetterConfig", g.Target.DeadLetterConfig != nil && aws.ToString(g.Target.DeadLetterConfig.Arn) == dlq, true},
				{"Target.RetryPolicy", g.Target.RetryPolicy != nil && aws.ToInt32(g.Target.RetryPolicy.MaximumRetryAttempts) == 3 &&
					aws.ToInt32(g.Target.RetryPolicy.MaximumEventAgeInSeconds) == 3600, true},
			}...)
			for _, c := range checks {
				if fmt.Sprint(c.got) != fmt.Sprint(c.want) {
					e.t.Errorf("GetSchedule %s = %v, want %v", c.what, c.got, c.want)
				}
			}
		}},

		// https://docs.aws.amazon.com/scheduler/latest/APIReference/API_GetSchedule.html
		// https://docs.aws.amazon.com/scheduler/latest/APIReference/API_RetryPolicy.html
		// A schedule created without State is ENABLED; without RetryPolicy
		// it has the documented defaults: 185 retry attempts, 86400 s
		// maximum event age.
		{name: "DefaultsReturned", run: func(e *schedEnv) {
			_, q := e.queue("defaults", nil)
			e.create(input("defaults", "rate(1 hour)", q))
			g := e.get("defaults")
			if g.State != schedtypes.ScheduleStateEnabled {
				e.t.Errorf("State %q, want ENABLED", g.State)
			}
			if aws.ToString(g.GroupName) != "default" {
				e.t.Errorf("GroupName %q, want default", aws.ToString(g.GroupName))
			}
			if g.Target == nil || g.Target.RetryPolicy == nil || aws.ToInt32(g.Target.RetryPolicy.MaximumRetryAttempts) != 185 ||
				aws.ToInt32(g.Target.RetryPolicy.MaximumEventAgeInSeconds) != 86400 {
				e.t.Errorf("RetryPolicy %s, want 185 attempts and 86400 s", describe(g.Target))
			}
		}},

		// https://docs.aws.amazon.com/scheduler/latest/APIReference/API_UpdateSchedule.html
		// UpdateSchedule replaces the whole schedule: an optional field left
		// out takes its default (here: no Description, no dead-letter
		// queue, no flexible window); the ARN and CreationDate stay and
		// LastModificationDate moves.
		{name: "UpdateReplacesTheSchedule", run: func(e *schedEnv) {
			_, q := e.queue("upd", nil)
			_, dlq := e.queue("upd-dlq", nil)
			in := input("upd", "rate(1 hour)", q)
			in.Description = aws.String("before")
			in.FlexibleTimeWindow = &schedtypes.FlexibleTimeWindow{Mode: schedtypes.FlexibleTimeWindowModeFlexible, MaximumWindowInMinutes: aws.Int32(5)}
			in.Target.DeadLetterConfig = &schedtypes.DeadLetterConfig{Arn: aws.String(dlq)}
			arn := e.create(in)
			before := e.get("upd")
			time.Sleep(2 * time.Minute)
			out, err := e.sch.UpdateSchedule(e.ctx(), &scheduler.UpdateScheduleInput{Name: aws.String("upd"), ScheduleExpression: aws.String("cron(0 12 * * ? *)"),
				ScheduleExpressionTimezone: aws.String("America/New_York"),
				FlexibleTimeWindow:         &schedtypes.FlexibleTimeWindow{Mode: schedtypes.FlexibleTimeWindowModeOff},
				Target:                     &schedtypes.Target{Arn: aws.String(q), RoleArn: aws.String(schedRole), Input: aws.String("after")}})
			if err != nil {
				e.t.Fatalf("UpdateSchedule: %v", err)
			}
			if aws.ToString(out.ScheduleArn) != arn {
				e.t.Errorf("UpdateSchedule ScheduleArn %q, want %q", aws.ToString(out.ScheduleArn), arn)
			}
			g := e.get("upd")
			if aws.ToString(g.ScheduleExpression) != "cron(0 12 * * ? *)" || aws.ToString(g.ScheduleExpressionTimezone) != "America/New_York" ||
				aws.ToString(g.Target.Input) != "after" {
				e.t.Errorf("after UpdateSchedule: expression %q zone %q input %q", aws.ToString(g.ScheduleExpression),
					aws.ToString(g.ScheduleExpressionTimezone), aws.ToString(g.Target.Input))
			}
			if g.Description != nil || g.Target.DeadLetterConfig != nil || g.FlexibleTimeWindow == nil || g.FlexibleTimeWindow.Mode != schedtypes.FlexibleTimeWindowModeOff {
				e.t.Errorf("fields left out of UpdateSchedule kept their old values: Description %v, DeadLetterConfig %s, window %s",
					aws.ToString(g.Description), describe(g.Target.DeadLetterConfig), describe(g.FlexibleTimeWindow))
			}
			if !eqTime(g.CreationDate, before.CreationDate) {
				e.t.Errorf("CreationDate moved on update: %v -> %v", before.CreationDate, g.CreationDate)
			}
			if g.LastModificationDate == nil || before.LastModificationDate == nil || !g.LastModificationDate.After(*before.LastModificationDate) {
				e.t.Errorf("LastModificationDate %v did not move past %v on update", g.LastModificationDate, before.LastModificationDate)
			}
		}},

		// https://docs.aws.amazon.com/scheduler/latest/APIReference/API_CreateSchedule.html (Errors: ConflictException)
		{name: "CreateTakenNameConflicts", run: func(e *schedEnv) {
			_, q := e.queue("taken", nil)
			e.create(input("taken", "rate(1 hour)", q))
			_, err := e.sch.CreateSchedule(e.ctx(), input("taken", "rate(2 hours)", q))
			wantAPIError[*schedtypes.ConflictException](e, err, "second CreateSchedule of a name")
			if got := aws.ToString(e.get("taken").ScheduleExpression); got != "rate(1 hour)" {
				e.t.Errorf("the refused create changed the schedule: %q", got)
			}
		}},

		// https://docs.aws.amazon.com/scheduler/latest/APIReference/API_GetSchedule.html,
		// API_UpdateSchedule.html, API_DeleteSchedule.html (Errors: ResourceNotFoundException)
		{name: "MissingScheduleNotFound", run: func(e *schedEnv) {
			_, q := e.queue("missing", nil)
			_, err := e.sch.GetSchedule(e.ctx(), &scheduler.GetScheduleInput{Name: aws.String("never-created")})
			wantAPIError[*schedtypes.ResourceNotFoundException](e, err, "GetSchedule of a missing schedule")
			_, err = e.sch.DeleteSchedule(e.ctx(), &scheduler.DeleteScheduleInput{Name: aws.String("never-created")})
			wantAPIError[*schedtypes.ResourceNotFoundException](e, err, "DeleteSchedule of a missing schedule")
			in := input("never-created", "rate(1 hour)", q)
			_, err = e.sch.UpdateSchedule(e.ctx(), &scheduler.UpdateScheduleInput{Name: in.Name, ScheduleExpression: in.ScheduleExpression,
				FlexibleTimeWindow: in.FlexibleTimeWindow, Target: in.Target})
			wantAPIError[*schedtypes.ResourceNotFoundException](e, err, "UpdateSchedule of a missing schedule")
		}},

		// https://docs.aws.amazon.com/scheduler/latest/APIReference/API_DeleteSchedule.html
		// A deleted schedule is gone: GetSchedule and a second delete say
		// ResourceNotFoundException, ListSchedules leaves it out.
		{name: "DeleteRemovesTheSchedule", run: func(e *schedEnv) {
			_, q := e.queue("del", nil)
			e.create(input("del-1", "rate(1 hour)", q))
			if _, err := e.sch.DeleteSchedule(e.ctx(), &scheduler.DeleteScheduleInput{Name: aws.String("del-1")}); err != nil {
				e.t.Fatalf("DeleteSchedule: %v", err)
			}
			_, err := e.sch.GetSchedule(e.ctx(), &scheduler.GetScheduleInput{Name: aws.String("del-1")})
			wantAPIError[*schedtypes.ResourceNotFoundException](e, err, "GetSchedule after DeleteSchedule")
			_, err = e.sch.DeleteSchedule(e.ctx(), &scheduler.DeleteScheduleInput{Name: aws.String("del-1")})
			wantAPIError[*schedtypes.ResourceNotFoundException](e, err, "second DeleteSchedule")
			if got, _ := e.list(scheduler.ListSchedulesInput{NamePrefix: aws.String("del-")}); len(got) != 0 {
				e.t.Errorf("ListSchedules after delete: %v", names(got))
			}
		}},

		// https://docs.aws.amazon.com/scheduler/latest/APIReference/API_CreateSchedule.html (ClientToken)
		// A retried CreateSchedule with the same ClientToken succeeds and
		// creates nothing more; another token for the taken name conflicts.
		{name: "ClientTokenIdempotent", run: func(e *schedEnv) {
			_, q := e.queue("token", nil)
			in := input("token", "rate(1 hour)", q)
			in.ClientToken = aws.String("conformance-token-1")
			first := e.create(in)
			if again := e.create(in); again != first {
				e.t.Errorf("retried CreateSchedule returned %q, want %q", again, first)
			}
			if got, _ := e.list(scheduler.ListSchedulesInput{NamePrefix: aws.String("token")}); len(got) != 1 {
				e.t.Errorf("after a retried create ListSchedules has %v, want one schedule", names(got))
			}
			other := input("token", "rate(1 hour)", q)
			other.ClientToken = aws.String("conformance-token-2")
			_, err := e.sch.CreateSchedule(e.ctx(), other)
			wantAPIError[*schedtypes.ConflictException](e, err, "CreateSchedule of a taken name with another ClientToken")
		}},

		// https://docs.aws.amazon.com/scheduler/latest/APIReference/API_ListSchedules.html
		// MaxResults bounds a page; NextToken continues; the last page has
		// no NextToken; every schedule comes once.
		{name: "ListSchedulesPaginates", run: func(e *schedEnv) {
			_, q := e.queue("page", nil)
			var want []string
			for i := range 7 {
				n := fmt.Sprintf("page-%d", i)
				want = append(want, n)
				e.create(input(n, "rate(1 hour)", q))
			}
			got, pages := e.list(scheduler.ListSchedulesInput{NamePrefix: aws.String("page-"), MaxResults: aws.Int32(3)})
			if !slices.Equal(names(got), want) {
				e.t.Errorf("ListSchedules pages: %v, want each of %v once", names(got), want)
			}
			if pages < 3 {
				e.t.Errorf("7 schedules by MaxResults 3 came in %d pages, want at least 3", pages)
			}
		}},

		// https://docs.aws.amazon.com/scheduler/latest/APIReference/API_ListSchedules.html
		// NamePrefix, GroupName and State filter; a summary carries the
		// group, the state (ENABLED when none was given) and the target ARN.
		{name: "ListSchedulesFilters", run: func(e *schedEnv) {
			_, q := e.queue("filter", nil)
			e.create(input("a-1", "rate(1 hour)", q))
			off := input("a-2", "rate(1 hour)", q)
			off.State = schedtypes.ScheduleStateDisabled
			e.create(off)
			e.create(input("b-1", "rate(1 hour)", q))
			if got, _ := e.list(scheduler.ListSchedulesInput{NamePrefix: aws.String("a-")}); !slices.Equal(names(got), []string{"a-1", "a-2"}) {
				e.t.Errorf("NamePrefix a-: %v", names(got))
			}
			got, _ := e.list(scheduler.ListSchedulesInput{GroupName: aws.String("default"), State: schedtypes.ScheduleStateEnabled})
			if !slices.Equal(names(got), []string{"a-1", "b-1"}) {
				e.t.Errorf("GroupName default, State ENABLED: %v, want [a-1 b-1]", names(got))
			}
			if got, _ := e.list(scheduler.ListSchedulesInput{State: schedtypes.ScheduleStateDisabled}); !slices.Equal(names(got), []string{"a-2"}) {
				e.t.Errorf("State DISABLED: %v, want [a-2]", names(got))
			}
			for _, s := range got {
				if aws.ToString(s.GroupName) != "default" || s.State != schedtypes.ScheduleStateEnabled || s.Target == nil || aws.ToString(s.Target.Arn) != q {
					e.t.Errorf("summary of %s: group %q state %q target %s", aws.ToString(s.Name), aws.ToString(s.GroupName), s.State, describe(s.Target))
				}
			}
		}},

		// https://docs.aws.amazon.com/scheduler/latest/UserGuide/schedule-types.html (expression syntax, IANA time zones)
		// https://docs.aws.amazon.com/scheduler/latest/APIReference/API_FlexibleTimeWindow.html (MaximumWindowInMinutes 1-1440)
		// Invalid requests are refused with ValidationException.
		{name: "InvalidRequestsRefused", run: func(e *schedEnv) {
			_, q := e.queue("invalid", nil)
			bad := map[string]func(*scheduler.CreateScheduleInput){
				"cron with five fields": func(in *scheduler.CreateScheduleInput) { in.ScheduleExpression = aws.String("cron(0 10 * * *)") },
				"cron with ? twice":     func(in *scheduler.CreateScheduleInput) { in.ScheduleExpression = aws.String("cron(0 10 ? * ? *)") },
				"rate of zero":          func(in *scheduler.CreateScheduleInput) { in.ScheduleExpression = aws.String("rate(0 minutes)") },
				"rate with a bad unit":  func(in *scheduler.CreateScheduleInput) { in.ScheduleExpression = aws.String("rate(5 weeks)") },
				"at() of a bad date":    func(in *scheduler.CreateScheduleInput) { in.ScheduleExpression = aws.String("at(2030-13-01T00:00:00)") },
				"an unknown time zone": func(in *scheduler.CreateScheduleInput) {
					in.ScheduleExpressionTimezone = aws.String("Mars/Olympus_Mons")
				},
				"FLEXIBLE with no width": func(in *scheduler.CreateScheduleInput) {
					in.FlexibleTimeWindow.Mode = schedtypes.FlexibleTimeWindowModeFlexible
				},
				"a window over 1440 min": func(in *scheduler.CreateScheduleInput) {
					in.FlexibleTimeWindow = &schedtypes.FlexibleTimeWindow{Mode: schedtypes.FlexibleTimeWindowModeFlexible, MaximumWindowInMinutes: aws.Int32(1441)}
				},
			}
			for what, f := range bad {
				in := input("invalid", "rate(1 hour)", q)
				f(in)
				_, err := e.sch.CreateSchedule(e.ctx(), in)
				wantAPIError[*schedtypes.ValidationException](e, err, "CreateSchedule with "+what)
			}
			_, err := e.sch.GetSchedule(e.ctx(), &scheduler.GetScheduleInput{Name: aws.String("invalid")})
			wantAPIError[*schedtypes.ResourceNotFoundException](e, err, "GetSchedule after refused creates")
		}},

		// https://docs.aws.amazon.com/scheduler/latest/UserGuide/managing-schedule-group.html
		// https://docs.aws.amazon.com/scheduler/latest/APIReference/API_CreateSchedule.html (GroupName; ResourceNotFoundException)
		// A schedule goes in an existing group; CreateSchedule naming a
		// group never created fails with ResourceNotFoundException.
		{name: "GroupMustExist", run: func(e *schedEnv) {
			_, q := e.queue("group", nil)
			in := input("grouped", "rate(1 hour)", q)
			in.GroupName = aws.String("never-created-group")
			_, err := e.sch.CreateSchedule(e.ctx(), in)
			if e.notModelled(NotModelledScheduleGroups) {
				if err != nil {
					e.t.Errorf("declared not modelled (every group exists), yet CreateSchedule in a new group failed: %v; remove the declaration", err)
				}
				return
			}
			wantAPIError[*schedtypes.ResourceNotFoundException](e, err, "CreateSchedule in a group never created")
		}},

		// https://docs.aws.amazon.com/scheduler/latest/APIReference/API_GetSchedule.html (KmsKeyArn)
		// GetSchedule returns the customer managed KMS key the schedule was
		// created with.
		{name: "KmsKeyReturned", run: func(e *schedEnv) {
			_, q := e.queue("kms", nil)
			in := input("kms", "rate(1 hour)", q)
			key := "arn:aws:kms:us-east-1:123456789012:key/0e2b8f64-7c3a-4c55-9b0e-1f5d2a6c9e11"
			in.KmsKeyArn = aws.String(key)
			e.create(in)
			got := aws.ToString(e.get("kms").KmsKeyArn)
			if e.notModelled(NotModelledKmsKey) {
				if got != "" {
					e.t.Errorf("declared not modelled, yet GetSchedule returned KmsKeyArn %q; remove the declaration", got)
				}
				return
			}
			if got != key {
				e.t.Errorf("KmsKeyArn %q, want %q", got, key)
			}
		}},
	}
}
