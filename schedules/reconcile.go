package schedules

import (
	"context"
	"sort"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/scheduler/types"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/internal/schedenv"
)

// Change is one step that makes a group hold the declared schedules. Its
// JSON form is the CLI's output.
type Change struct {
	// Action is "create", "update" or "delete".
	Action string `json:"action"`
	// Name is the schedule's name.
	Name string `json:"name"`
	// Fields lists what an update changes (expression, timeZone, queue,
	// roleArn, input, groupId, dlq, description, state, maxRetries,
	// maxEventAge, flexibleWindow, start, end).
	Fields []string `json:"fields,omitempty"`
}

type current struct {
	spec spec
	ok   bool
}

// Diff returns the changes Apply would make to the group Options.Group so
// that it holds exactly the declared schedules, in name order, without
// changing anything. Declared schedules are checked first: invalid input
// is refused (ErrInvalid) before any call.
func Diff(ctx context.Context, client API, declared []Schedule, optFns ...func(*Options)) ([]Change, error) {
	o := options(optFns)
	want, err := checkAll(declared, o)
	if err != nil {
		return nil, err
	}
	have, err := read(ctx, client, o)
	if err != nil {
		return nil, err
	}
	return plan(want, have), nil
}

// Apply makes the group Options.Group hold exactly the declared schedules:
// it creates the missing ones, updates those that differ and deletes those
// not declared, and returns what it changed. It is idempotent, and any
// number of processes may apply the same declared set at once: a schedule
// another process created, updated or deleted first is compared again
// (ConflictException, ResourceNotFoundException), never duplicated. Two
// different declared sets applied at once end with the last writer's
// version of each schedule.
func Apply(ctx context.Context, client API, declared []Schedule, optFns ...func(*Options)) ([]Change, error) {
	o := options(optFns)
	want, err := checkAll(declared, o)
	if err != nil {
		return nil, err
	}
	have, err := read(ctx, client, o)
	if err != nil {
		return nil, err
	}
	var done []Change
	for _, c := range plan(want, have) {
		var made bool
		if c.Action == "delete" {
			made, err = remove(ctx, client, o, c.Name)
		} else {
			made, err = put(ctx, client, o, c.Name, want[c.Name], c.Action == "create")
		}
		if err != nil {
			return done, err
		}
		if made {
			done = append(done, c)
		}
	}
	return done, nil
}

// List returns the schedules of the group Options.Group in name order,
// with the job each one sends (those Options.NamePrefix and Limit select).
func List(ctx context.Context, client API, optFns ...func(*Options)) ([]Schedule, error) {
	o := options(optFns)
	names, err := names(ctx, client, o, true)
	if err != nil {
		return nil, err
	}
	var out []Schedule
	for _, n := range names {
		g, err := do(ctx, o.MaxAttempts, "GetSchedule", func(ctx context.Context, f ...func(*scheduler.Options)) (*scheduler.GetScheduleOutput, error) {
			return client.GetSchedule(ctx, &scheduler.GetScheduleInput{Name: aws.String(n), GroupName: aws.String(o.Group)}, f...)
		})
		if notFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, scheduleOf(g))
	}
	return out, nil
}

func scheduleOf(g *scheduler.GetScheduleOutput) Schedule {
	sp := specOf(g)
	s := Schedule{
		Name: aws.ToString(g.Name), Expression: sp.Expression, TimeZone: sp.TimeZone, Queue: sp.Target,
		GroupID: sp.GroupID, RoleARN: sp.Role, DLQ: sp.DLQ, Description: sp.Description,
		Disabled: g.State == types.ScheduleStateDisabled, Start: aws.ToTime(g.StartDate), End: aws.ToTime(g.EndDate), Created: aws.ToTime(g.CreationDate),
	}
	if s.TimeZone == "UTC" {
		s.TimeZone = ""
	}
	s.FlexibleWindow = timeMinutes(sp.Window)
	if e, ok := schedenv.Decode(sp.Input); ok {
		s.Body, s.Overlap = e.Body, e.Overlap
		for k, v := range e.Attributes {
			if s.Attributes == nil {
				s.Attributes = map[string]sqstypes.MessageAttributeValue{}
			}
			s.Attributes[k] = v.Value()
		}
	} else {
		s.Body = sp.Input
	}
	return s
}

func checkAll(declared []Schedule, o Options) (map[string]spec, error) {
	now := o.Now()
	want := map[string]spec{}
	for _, s := range declared {
		if _, dup := want[s.Name]; dup {
			return nil, invalid("schedule %q is declared twice; give each schedule its own name", s.Name)
		}
		sp, err := s.check(o, now)
		if err != nil {
			return nil, err
		}
		want[s.Name] = sp
	}
	return want, nil
}

// names lists the group's schedule names in name order: with filter, only
// those Options.NamePrefix and Limit select.
func names(ctx context.Context, client API, o Options, filter bool) ([]string, error) {
	var out []string
	var token *string
	in := scheduler.ListSchedulesInput{GroupName: aws.String(o.Group)}
	if filter {
		in.NamePrefix = optional(o.NamePrefix)
	}
	for {
		page, err := do(ctx, o.MaxAttempts, "ListSchedules", func(ctx context.Context, f ...func(*scheduler.Options)) (*scheduler.ListSchedulesOutput, error) {
			in := in
			in.NextToken = token
			return client.ListSchedules(ctx, &in, f...)
		})
		if err != nil {
			if notFound(err) {
				return nil, invalid("schedule group %q does not exist; create it (aws scheduler create-schedule-group --name %s) or set Options.Group", o.Group, o.Group)
			}
			return nil, err
		}
		for _, s := range page.Schedules {
			out = append(out, aws.ToString(s.Name))
		}
		if filter && o.Limit > 0 && len(out) >= o.Limit {
			out = out[:o.Limit]
			break
		}
		if page.NextToken == nil || *page.NextToken == "" {
			break
		}
		token = page.NextToken
	}
	sort.Strings(out)
	return out, nil
}

func read(ctx context.Context, client API, o Options) (map[string]current, error) {
	ns, err := names(ctx, client, o, false)
	if err != nil {
		return nil, err
	}
	have := map[string]current{}
	for _, n := range ns {
		c, err := get(ctx, client, o, n)
		if err != nil {
			return nil, err
		}
		if c.ok {
			have[n] = c
		}
	}
	return have, nil
}

func get(ctx context.Context, client API, o Options, name string) (current, error) {
	g, err := do(ctx, o.MaxAttempts, "GetSchedule", func(ctx context.Context, f ...func(*scheduler.Options)) (*scheduler.GetScheduleOutput, error) {
		return client.GetSchedule(ctx, &scheduler.GetScheduleInput{Name: aws.String(name), GroupName: aws.String(o.Group)}, f...)
	})
	if notFound(err) {
		return current{}, nil
	}
	if err != nil {
		return current{}, err
	}
	return current{spec: specOf(g), ok: true}, nil
}

func plan(want map[string]spec, have map[string]current) []Change {
	var out []Change
	for n, sp := range want {
		h, ok := have[n]
		switch {
		case !ok:
			out = append(out, Change{Action: "create", Name: n})
		default:
			if f := sp.diff(h.spec); len(f) > 0 {
				out = append(out, Change{Action: "update", Name: n, Fields: f})
			}
		}
	}
	for n := range have {
		if _, ok := want[n]; !ok {
			out = append(out, Change{Action: "delete", Name: n})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// put makes the schedule name equal sp, whatever other processes do
// meanwhile; it reports whether this call changed anything.
func put(ctx context.Context, client API, o Options, name string, sp spec, create bool) (bool, error) {
	for range 4 {
		if create {
			_, err := do(ctx, o.MaxAttempts, "CreateSchedule", func(ctx context.Context, f ...func(*scheduler.Options)) (*scheduler.CreateScheduleOutput, error) {
				return client.CreateSchedule(ctx, sp.create(o.Group, name, types.ActionAfterCompletionNone), f...)
			})
			if err == nil {
				return true, nil
			}
			if !conflict(err) {
				return false, err
			}
			// Another process created it: compare again.
			c, err := get(ctx, client, o, name)
			if err != nil {
				return false, err
			}
			if !c.ok {
				continue
			}
			if len(sp.diff(c.spec)) == 0 {
				return false, nil
			}
			create = false
			continue
		}
		_, err := do(ctx, o.MaxAttempts, "UpdateSchedule", func(ctx context.Context, f ...func(*scheduler.Options)) (*scheduler.UpdateScheduleOutput, error) {
			return client.UpdateSchedule(ctx, sp.update(o.Group, name, types.ActionAfterCompletionNone), f...)
		})
		if err == nil {
			return true, nil
		}
		if !notFound(err) && !conflict(err) {
			return false, err
		}
		// Deleted meanwhile (create it again) or changed meanwhile (update
		// again: updates replace the whole schedule).
		create = notFound(err)
	}
	return false, explain("CreateSchedule", errRace(name))
}

type errRace string

func (e errRace) Error() string {
	return "schedule " + string(e) + " kept changing under concurrent writers; apply again"
}

func remove(ctx context.Context, client API, o Options, name string) (bool, error) {
	_, err := do(ctx, o.MaxAttempts, "DeleteSchedule", func(ctx context.Context, f ...func(*scheduler.Options)) (*scheduler.DeleteScheduleOutput, error) {
		return client.DeleteSchedule(ctx, &scheduler.DeleteScheduleInput{Name: aws.String(name), GroupName: aws.String(o.Group)}, f...)
	})
	if notFound(err) {
		return false, nil // another process deleted it first
	}
	return err == nil, err
}
