package conformance

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	schedtypes "github.com/aws/aws-sdk-go-v2/service/scheduler/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// precision is how late after its time Scheduler may invoke a target with
// no flexible window: "All schedule types on EventBridge Scheduler invoke
// their targets with 60 second precision" (user guide, schedule-types.html).
const precision = time.Minute

// fired is one message a schedule delivered.
type fired struct {
	body  string
	at    time.Time // SentTimestamp
	group string
	attrs map[string]types.MessageAttributeValue
}

// until sleeps to t (virtual time on the backends that run these).
func until(t time.Time) { time.Sleep(time.Until(t)) }

// drain receives and deletes every message in url, in send order.
func (e *schedEnv) drain(url string) []fired {
	e.t.Helper()
	var out []fired
	for {
		r, err := e.sqs.ReceiveMessage(e.ctx(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10,
			VisibilityTimeout: 3600, MessageAttributeNames: []string{"All"},
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll}})
		if err != nil {
			e.t.Fatalf("ReceiveMessage: %v", err)
		}
		if len(r.Messages) == 0 {
			break
		}
		for _, m := range r.Messages {
			ms, _ := strconv.ParseInt(m.Attributes["SentTimestamp"], 10, 64)
			out = append(out, fired{body: aws.ToString(m.Body), at: time.UnixMilli(ms).UTC(), group: m.Attributes["MessageGroupId"], attrs: m.MessageAttributes})
			if _, err := e.sqs.DeleteMessage(e.ctx(), &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
				e.t.Fatalf("DeleteMessage: %v", err)
			}
		}
	}
	slices.SortFunc(out, func(a, b fired) int { return a.at.Compare(b.at) })
	return out
}

// wantFires checks that got are one delivery per wanted time, each within
// Scheduler's 60 second precision of it.
func (e *schedEnv) wantFires(what string, got []fired, want []time.Time) {
	e.t.Helper()
	ok := len(got) == len(want)
	for i := 0; ok && i < len(want); i++ {
		ok = !got[i].at.Before(want[i]) && got[i].at.Before(want[i].Add(precision))
	}
	if !ok {
		var g, w []string
		for _, f := range got {
			g = append(g, f.at.Format(time.RFC3339))
		}
		for _, t := range want {
			w = append(w, t.UTC().Format(time.RFC3339))
		}
		e.t.Errorf("%s: fired at %v, want %v (each within %v)", what, g, w, precision)
	}
}

func zone(e *schedEnv, name string) *time.Location {
	loc, err := time.LoadLocation(name)
	if err != nil {
		e.t.Fatalf("time zone %s: %v", name, err)
	}
	return loc
}

// daily returns the instants of wall time h:m in loc on each day from
// first to last (inclusive), leaving out the days in skip.
func daily(loc *time.Location, first, last time.Time, h, m int, skip ...string) []time.Time {
	var out []time.Time
	for d := first; !d.After(last); d = d.AddDate(0, 0, 1) {
		if slices.Contains(skip, d.Format("2006-01-02")) {
			continue
		}
		out = append(out, time.Date(d.Year(), d.Month(), d.Day(), h, m, 0, 0, loc))
	}
	return out
}

func (e *schedEnv) gone(name, what string) {
	e.t.Helper()
	_, err := e.sch.GetSchedule(e.ctx(), &scheduler.GetScheduleInput{Name: aws.String(name)})
	wantAPIError[*schedtypes.ResourceNotFoundException](e, err, what)
}

func (e *schedEnv) kept(name, what string) {
	e.t.Helper()
	if _, err := e.sch.GetSchedule(e.ctx(), &scheduler.GetScheduleInput{Name: aws.String(name)}); err != nil {
		e.t.Errorf("%s: GetSchedule: %v", what, err)
	}
}

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func scheduleFireBehaviours() []schedBehaviour {
	return []schedBehaviour{
		// https://docs.aws.amazon.com/scheduler/latest/UserGuide/schedule-types.html#one-time
		// https://docs.aws.amazon.com/scheduler/latest/UserGuide/managing-schedule-delete.html
		// A one-time at() schedule invokes its target once, at the wall
		// time in its time zone; with ActionAfterCompletion DELETE it is
		// deleted after that invocation.
		{name: "OneTimeFiresOnceThenDeleted", fires: true, run: func(e *schedEnv) {
			until(utc("2026-03-02T00:00:00Z"))
			url, q := e.queue("once", nil)
			in := input("once", "at(2026-03-02T10:00:00)", q)
			in.ScheduleExpressionTimezone = aws.String("Europe/Paris")
			in.ActionAfterCompletion = schedtypes.ActionAfterCompletionDelete
			e.create(in)
			until(utc("2026-03-04T00:00:00Z"))
			e.wantFires("at(2026-03-02T10:00:00) Europe/Paris", e.drain(url), []time.Time{utc("2026-03-02T09:00:00Z")})
			e.gone("once", "GetSchedule of a completed one-time schedule with ActionAfterCompletion DELETE")
		}},

		// https://docs.aws.amazon.com/scheduler/latest/UserGuide/managing-schedule-delete.html
		// With ActionAfterCompletion NONE the completed one-time schedule
		// stays, and never fires again.
		{name: "OneTimeKeptWithNone", fires: true, run: func(e *schedEnv) {
			until(utc("2026-03-02T00:00:00Z"))
			url, q := e.queue("kept", nil)
			in := input("kept", "at(2026-03-02T06:30:00)", q)
			in.ActionAfterCompletion = schedtypes.ActionAfterCompletionNone
			e.create(in)
			until(utc("2026-03-09T00:00:00Z"))
			e.wantFires("at(2026-03-02T06:30:00) UTC", e.drain(url), []time.Time{utc("2026-03-02T06:30:00Z")})
			e.kept("kept", "completed one-time schedule with ActionAfterCompletion NONE")
		}},

		// https://docs.aws.amazon.com/scheduler/latest/APIReference/API_CreateSchedule.html
		// (StartDate, EndDate: "EventBridge Scheduler ignores StartDate /
		// EndDate for one-time schedules")
		{name: "OneTimeIgnoresStartAndEnd", fires: true, run: func(e *schedEnv) {
			until(utc("2026-03-02T00:00:00Z"))
			url, q := e.queue("once-dates", nil)
			in := input("once-dates", "at(2026-03-02T12:00:00)", q)
			start, end := utc("2026-03-02T13:00:00Z"), utc("2026-03-02T14:00:00Z")
			in.StartDate, in.EndDate = &start, &end
			e.create(in)
			until(utc("2026-03-03T00:00:00Z"))
			e.wantFires("at() outside [StartDate, EndDate]", e.drain(url), []time.Time{utc("2026-03-02T12:00:00Z")})
		}},

		// https://docs.aws.amazon.com/scheduler/latest/UserGuide/schedule-types.html#rate-based
		// "If you do not provide a StartDate for a rate-based schedule,
		// your schedule starts invoking the target immediately", then every
		// period; the time zone does not move a rate.
		{name: "RateStartsAtCreation", fires: true, run: func(e *schedEnv) {
			until(utc("2026-03-02T10:00:30Z"))
			url, q := e.queue("rate", nil)
			in := input("rate", "rate(5 minutes)", q)
			in.ScheduleExpressionTimezone = aws.String("America/New_York")
			e.create(in)
			created := time.Now()
			until(created.Add(22 * time.Minute))
			var want []time.Time
			for i := range 5 {
				want = append(want, created.Add(time.Duration(i)*5*time.Minute))
			}
			e.wantFires("rate(5 minutes) created at "+created.UTC().Format(time.RFC3339), e.drain(url), want)
		}},

		// https://docs.aws.amazon.com/scheduler/latest/UserGuide/schedule-types.html#rate-based
		// "You can use the StartDate property to set the first occurrence
		// for your schedule."
		{name: "RateStartsAtStartDate", fires: true, run: func(e *schedEnv) {
			until(utc("2026-03-02T00:00:00Z"))
			url, q := e.queue("rate-start", nil)
			in := input("rate-start", "rate(1 hour)", q)
			start := utc("2026-03-02T06:20:00Z")
			in.StartDate = &start
			e.create(in)
			until(utc("2026-03-02T09:50:00Z"))
			e.wantFires("rate(1 hour) from 06:20Z", e.drain(url), []time.Time{start, start.Add(time.Hour), start.Add(2 * time.Hour), start.Add(3 * time.Hour)})
		}},

		// https://docs.aws.amazon.com/scheduler/latest/UserGuide/schedule-types.html#cron-based
		// https://docs.aws.amazon.com/scheduler/latest/UserGuide/schedule-types.html#time-zones
		// A cron expression is evaluated in the schedule's time zone: the
		// documented cron(0 18 ? * MON-FRI *) pattern at 09:00 on weekdays
		// fires at 09:00 Paris and 09:00 New York time, weekdays only.
		{name: "CronInTimeZone", fires: true, run: func(e *schedEnv) {
			until(utc("2026-03-01T00:00:00Z")) // a Sunday
			for _, z := range []struct{ name, tz, first string }{
				{"cron-paris", "Europe/Paris", "2026-03-02T08:00:00Z"},
				{"cron-ny", "America/New_York", "2026-03-02T14:00:00Z"},
			} {
				_, q := e.queue(z.name, nil)
				in := input(z.name, "cron(0 9 ? * MON-FRI *)", q)
				in.ScheduleExpressionTimezone = aws.String(z.tz)
				e.create(in)
			}
			until(utc("2026-03-08T00:00:00Z"))
			for _, z := range []struct{ name, first string }{{"cron-paris", "2026-03-02T08:00:00Z"}, {"cron-ny", "2026-03-02T14:00:00Z"}} {
				var want []time.Time
				for d := range 5 {
					want = append(want, utc(z.first).AddDate(0, 0, d))
				}
				url := e.url(z.name)
				e.wantFires(z.name+" cron(0 9 ? * MON-FRI *)", e.drain(url), want)
			}
		}},

		// https://docs.aws.amazon.com/scheduler/latest/UserGuide/schedule-types.html#daylist-savings-time
		// "When time shifts forward in the Spring, if a cron expression
		// falls on a non-existent date and time, your schedule invocation is
		// skipped."
		{name: "DSTSkippedWallTimeDoesNotFire", fires: true, run: func(e *schedEnv) {
			ny, paris := zone(e, "America/New_York"), zone(e, "Europe/Paris")
			day := func(d int) time.Time { return time.Date(2026, 3, d, 0, 0, 0, 0, time.UTC) }
			for _, z := range []struct {
				name, tz   string
				from, upto time.Time
				loc        *time.Location
				skipped    string
			}{{"dst-ny", "America/New_York", day(6), day(10), ny, "2026-03-08"}, {"dst-paris", "Europe/Paris", day(27), day(31), paris, "2026-03-29"}} {
				until(z.from.Add(12 * time.Hour))
				url, q := e.queue(z.name, nil)
				in := input(z.name, "cron(30 2 * * ? *)", q)
				in.ScheduleExpressionTimezone = aws.String(z.tz)
				e.create(in)
				until(z.upto.Add(12 * time.Hour))
				e.wantFires("02:30 "+z.tz+" across "+z.skipped, e.drain(url), daily(z.loc, z.from.AddDate(0, 0, 1), z.upto, 2, 30, z.skipped))
			}
		}},

		// https://docs.aws.amazon.com/scheduler/latest/UserGuide/schedule-types.html#daylist-savings-time
		// "When time shifts backwards in the Fall, your schedule runs only
		// once and does not repeat its invocation."
		{name: "DSTRepeatedWallTimeFiresOnce", fires: true, run: func(e *schedEnv) {
			until(utc("2026-10-24T12:00:00Z"))
			for _, z := range []struct{ name, tz, expr string }{
				{"fall-ny", "America/New_York", "cron(30 1 * * ? *)"}, {"fall-paris", "Europe/Paris", "cron(30 2 * * ? *)"},
			} {
				_, q := e.queue(z.name, nil)
				in := input(z.name, z.expr, q)
				in.ScheduleExpressionTimezone = aws.String(z.tz)
				e.create(in)
			}
			until(utc("2026-11-03T12:00:00Z"))
			for _, z := range []struct{ name, tz, wall string }{{"fall-ny", "America/New_York", "01:30"}, {"fall-paris", "Europe/Paris", "02:30"}} {
				loc := zone(e, z.tz)
				got := e.drain(e.url(z.name))
				days := map[string]int{}
				for _, f := range got {
					l := f.at.In(loc)
					if l.Format("15:04") != z.wall {
						e.t.Errorf("%s: fired at %s local, want %s", z.name, l.Format(time.RFC3339), z.wall)
					}
					days[l.Format("2006-01-02")]++
				}
				for d := time.Date(2026, 10, 25, 0, 0, 0, 0, time.UTC); d.Before(time.Date(2026, 11, 3, 0, 0, 0, 0, time.UTC)); d = d.AddDate(0, 0, 1) {
					if n := days[d.Format("2006-01-02")]; n != 1 {
						e.t.Errorf("%s: %d invocations on %s, want 1 (the repeated hour runs once)", z.name, n, d.Format("2006-01-02"))
					}
				}
			}
		}},

		// https://docs.aws.amazon.com/scheduler/latest/APIReference/API_CreateSchedule.html
		// (StartDate: invocations occur on or after it; EndDate: they stop
		// on or before it)
		{name: "StartAndEndBoundFires", fires: true, run: func(e *schedEnv) {
			until(utc("2026-03-02T00:00:00Z"))
			url, q := e.queue("bounded", nil)
			in := input("bounded", "cron(0 * * * ? *)", q)
			start, end := utc("2026-03-02T09:30:00Z"), utc("2026-03-02T13:30:00Z")
			in.StartDate, in.EndDate = &start, &end
			e.create(in)
			until(utc("2026-03-03T00:00:00Z"))
			e.wantFires("hourly within 09:30Z-13:30Z", e.drain(url),
				[]time.Time{utc("2026-03-02T10:00:00Z"), utc("2026-03-02T11:00:00Z"), utc("2026-03-02T12:00:00Z"), utc("2026-03-02T13:00:00Z")})
		}},

		// https://docs.aws.amazon.com/scheduler/latest/UserGuide/managing-schedule-delete.html
		// A recurring schedule with ActionAfterCompletion DELETE is deleted
		// after its last invocation before its EndDate; without an EndDate
		// it is never deleted automatically; with NONE it stays.
		{name: "RecurringDeletedAfterEndDate", fires: true, run: func(e *schedEnv) {
			until(utc("2026-03-02T00:00:00Z"))
			url, q := e.queue("recurring", nil)
			start, end := utc("2026-03-02T06:00:00Z"), utc("2026-03-02T08:30:00Z")
			for _, s := range []struct {
				name   string
				end    bool
				action schedtypes.ActionAfterCompletion
			}{{"ends-delete", true, schedtypes.ActionAfterCompletionDelete}, {"open-delete", false, schedtypes.ActionAfterCompletionDelete},
				{"ends-none", true, schedtypes.ActionAfterCompletionNone}} {
				in := input(s.name, "rate(1 hour)", q)
				in.StartDate, in.ActionAfterCompletion = &start, s.action
				if s.end {
					in.EndDate = &end
				}
				e.create(in)
			}
			until(utc("2026-03-02T11:30:00Z"))
			n := map[string]int{}
			for _, f := range e.drain(url) {
				n[f.body]++
			}
			if n["ends-delete"] != 3 || n["ends-none"] != 3 || n["open-delete"] != 6 {
				e.t.Errorf("invocations %v, want ends-delete 3, ends-none 3, open-delete 6", n)
			}
			e.gone("ends-delete", "recurring schedule with DELETE after its EndDate")
			e.kept("open-delete", "recurring schedule with DELETE and no EndDate")
			e.kept("ends-none", "recurring schedule with NONE after its EndDate")
		}},

		// https://docs.aws.amazon.com/scheduler/latest/APIReference/API_CreateSchedule.html (State)
		// A DISABLED schedule does not invoke its target; enabled again (by
		// UpdateSchedule) it fires at its next time.
		{name: "DisabledDoesNotFire", fires: true, run: func(e *schedEnv) {
			until(utc("2026-03-02T00:00:00Z"))
			url, q := e.queue("disabled", nil)
			in := input("disabled", "cron(0 * * * ? *)", q)
			in.State = schedtypes.ScheduleStateDisabled
			e.create(in)
			until(utc("2026-03-02T03:30:00Z"))
			if got := e.drain(url); len(got) != 0 {
				e.t.Errorf("a DISABLED schedule fired %d times", len(got))
			}
			if _, err := e.sch.UpdateSchedule(e.ctx(), &scheduler.UpdateScheduleInput{Name: in.Name, ScheduleExpression: in.ScheduleExpression,
				FlexibleTimeWindow: in.FlexibleTimeWindow, Target: in.Target, State: schedtypes.ScheduleStateEnabled}); err != nil {
				e.t.Fatalf("UpdateSchedule State ENABLED: %v", err)
			}
			until(utc("2026-03-02T05:30:00Z"))
			e.wantFires("enabled at 03:30Z, hourly", e.drain(url), []time.Time{utc("2026-03-02T04:00:00Z"), utc("2026-03-02T05:00:00Z")})
		}},

		// https://docs.aws.amazon.com/scheduler/latest/UserGuide/managing-schedule-flexible-time-windows.html
		// https://docs.aws.amazon.com/scheduler/latest/UserGuide/managing-schedule-context-attributes.html
		// With a flexible time window each invocation happens within the
		// window after its scheduled time, once per tick; the
		// scheduled-time context attribute stays the tick's time.
		{name: "FlexibleWindowDelaysWithinWindow", fires: true, run: func(e *schedEnv) {
			until(utc("2026-03-02T00:00:00Z"))
			url, q := e.queue("flex", nil)
			in := input("flex", "cron(0 * * * ? *)", q)
			in.FlexibleTimeWindow = &schedtypes.FlexibleTimeWindow{Mode: schedtypes.FlexibleTimeWindowModeFlexible, MaximumWindowInMinutes: aws.Int32(15)}
			in.Target.Input = aws.String("<aws.scheduler.scheduled-time>")
			e.create(in)
			until(utc("2026-03-03T00:00:00Z"))
			got := e.drain(url)
			seen, late := map[string]bool{}, 0
			for _, f := range got {
				tick, err := time.Parse(time.RFC3339, f.body)
				if err != nil || tick.Minute() != 0 || seen[f.body] {
					e.t.Errorf("scheduled-time %q: not a distinct hourly tick (%v)", f.body, err)
					continue
				}
				seen[f.body] = true
				if f.at.Before(tick) || !f.at.Before(tick.Add(15*time.Minute+precision)) {
					e.t.Errorf("tick %s invoked at %s, outside its 15 minute window", f.body, f.at.Format(time.RFC3339))
				}
				if f.at.Sub(tick) >= precision {
					late++
				}
			}
			if len(seen) != 24 {
				e.t.Errorf("%d distinct ticks in a day of an hourly schedule, want 24", len(seen))
			}
			if late == 0 {
				e.t.Errorf("all 24 invocations came within a minute of their tick: the flexible window is not applied")
			}
		}},

		// https://docs.aws.amazon.com/scheduler/latest/UserGuide/managing-schedule-context-attributes.html
		// <aws.scheduler.schedule-arn>, <aws.scheduler.scheduled-time>,
		// <aws.scheduler.execution-id> and <aws.scheduler.attempt-number>
		// in the target input are replaced on invocation; each invocation
		// has its own execution ID, and the first attempt is number 1.
		{name: "ContextAttributesReplaced", fires: true, run: func(e *schedEnv) {
			until(utc("2026-03-02T00:00:00Z"))
			url, q := e.queue("ctx", nil)
			in := input("ctx", "cron(0 10,11 * * ? *)", q)
			in.Target.Input = aws.String(`{"arn":"<aws.scheduler.schedule-arn>","time":"<aws.scheduler.scheduled-time>",` +
				`"id":"<aws.scheduler.execution-id>","attempt":"<aws.scheduler.attempt-number>"}`)
			arn := e.create(in)
			until(utc("2026-03-02T12:00:00Z"))
			got := e.drain(url)
			e.wantFires("cron(0 10,11 * * ? *)", got, []time.Time{utc("2026-03-02T10:00:00Z"), utc("2026-03-02T11:00:00Z")})
			ids := map[string]bool{}
			for i, f := range got {
				var m map[string]string
				if err := json.Unmarshal([]byte(f.body), &m); err != nil {
					e.t.Fatalf("target input %q is not the JSON sent: %v", f.body, err)
				}
				want := []string{"2026-03-02T10:00:00Z", "2026-03-02T11:00:00Z"}[min(i, 1)]
				if m["arn"] != arn || m["time"] != want || m["attempt"] != "1" || m["id"] == "" || strings.Contains(m["id"], "<") {
					e.t.Errorf("context attributes %v; want arn %s, time %s, attempt 1, an execution id", m, arn, want)
				}
				ids[m["id"]] = true
			}
			if len(got) == 2 && len(ids) != 2 {
				e.t.Errorf("two invocations share an execution id: %v", ids)
			}
		}},

		// https://docs.aws.amazon.com/scheduler/latest/APIReference/API_SqsParameters.html
		// A FIFO queue target gets the MessageGroupId of SqsParameters.
		{name: "FIFOTargetGetsMessageGroupId", fires: true, run: func(e *schedEnv) {
			until(utc("2026-03-02T00:00:00Z"))
			url, q := e.queue("sched-target.fifo", map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true"})
			in := input("fifo", "at(2026-03-02T08:00:00)", q)
			in.Target.SqsParameters = &schedtypes.SqsParameters{MessageGroupId: aws.String("tenant-7")}
			e.create(in)
			until(utc("2026-03-02T09:00:00Z"))
			got := e.drain(url)
			e.wantFires("at() into a FIFO queue", got, []time.Time{utc("2026-03-02T08:00:00Z")})
			if len(got) == 1 && got[0].group != "tenant-7" {
				e.t.Errorf("MessageGroupId %q, want tenant-7", got[0].group)
			}
		}},

		// https://docs.aws.amazon.com/scheduler/latest/UserGuide/configuring-schedule-dlq.html
		// https://docs.aws.amazon.com/scheduler/latest/APIReference/API_RetryPolicy.html
		// An invocation that fails (the target queue does not exist) and
		// has no retries left goes to the schedule's dead-letter queue,
		// with ERROR_CODE, SCHEDULE_ARN and TARGET_ARN message attributes.
		{name: "FailedDeliveryGoesToDLQ", fires: true, run: func(e *schedEnv) {
			until(utc("2026-03-02T00:00:00Z"))
			dlqURL, dlq := e.queue("sched-dlq", nil)
			target := strings.TrimSuffix(dlq, "sched-dlq") + "never-created-queue"
			in := input("dead", "at(2026-03-02T08:00:00)", target)
			in.Target.DeadLetterConfig = &schedtypes.DeadLetterConfig{Arn: aws.String(dlq)}
			in.Target.RetryPolicy = &schedtypes.RetryPolicy{MaximumRetryAttempts: aws.Int32(0), MaximumEventAgeInSeconds: aws.Int32(60)}
			arn := e.create(in)
			until(utc("2026-03-02T09:00:00Z"))
			got := e.drain(dlqURL)
			if len(got) != 1 || got[0].at.Before(utc("2026-03-02T08:00:00Z")) || got[0].at.After(utc("2026-03-02T08:03:00Z")) {
				e.t.Fatalf("dead-letter queue got %d messages (%v), want 1 at 08:00Z after the failed invocation", len(got), got)
			}
			a := got[0].attrs
			if e.notModelled(NotModelledDeadLetterAttributes) {
				if _, ok := a["ERROR_CODE"]; ok {
					e.t.Errorf("declared not modelled, yet the dead-letter message has ERROR_CODE; remove the declaration")
				}
				return
			}
			val := func(k string) string {
				if v, ok := a[k]; ok {
					return aws.ToString(v.StringValue)
				}
				return ""
			}
			if val("ERROR_CODE") == "" || val("SCHEDULE_ARN") != arn || val("TARGET_ARN") != target {
				e.t.Errorf("dead-letter attributes %v; want ERROR_CODE, SCHEDULE_ARN %s, TARGET_ARN %s", a, arn, target)
			}
		}},
	}
}

// url returns the URL of a queue the behaviour created.
func (e *schedEnv) url(name string) string {
	e.t.Helper()
	out, err := e.sqs.GetQueueUrl(e.ctx(), &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
	if err != nil {
		e.t.Fatalf("GetQueueUrl %s: %v", name, err)
	}
	return *out.QueueUrl
}
