// Package schedulestest is an in-memory EventBridge Scheduler for tests:
// it keeps schedules (the calls package schedules makes, with the SDK's
// exact signatures) and, while Run runs, fires them into an SQS client
// such as sqstest's fake, in real time or in testing/synctest's virtual
// time.
//
// It follows AWS's documentation where package schedules' Next does (cron,
// rate and at() expressions, IANA time zones, daylight saving: a wall time
// the clocks skip does not fire, a repeated one fires once), and models
// flexible time windows (a random delay in the window; the scheduled-time
// context attribute stays the tick's time), start and end dates, one-time
// schedules deleted after they fire and recurring ones deleted after their
// EndDate (ActionAfterCompletion DELETE), the context attributes in the
// target input, the dead-letter queue of a failed delivery, ClientToken
// idempotency of CreateSchedule, ListSchedules pages and filters, and
// ConflictException / ResourceNotFoundException / ValidationException.
//
// The Scheduler conformance suite (RunScheduler in the project's
// harness/conformance) holds it to that documentation, behaviour by
// behaviour, called directly and through the SDK's client over HTTP, and
// declares what it does not model: schedule groups (every group exists; no
// CreateScheduleGroup), KMS keys (KmsKeyArn is not returned), the
// dead-letter message's attributes (ERROR_CODE, SCHEDULE_ARN, ...), its
// retry policy (a failed SendMessage is not retried; it goes to the
// DeadLetterConfig queue when one is set, else it is dropped), throttling
// and quotas, IAM (the role is not assumed or checked), target types other
// than SQS, and eventual consistency (a change is seen at once). Tags are
// not kept, and it fires at the first instant of Scheduler's 60-second
// window.
package schedulestest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/scheduler/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/queueref"
	"github.com/sqsworker/sqsworker/schedules"
)

// SQSAPI is what the Scheduler needs of an SQS client to deliver to a
// queue given by ARN.
type SQSAPI interface {
	GetQueueUrl(ctx context.Context, params *sqs.GetQueueUrlInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
	SendMessage(ctx context.Context, params *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

// Options configures the Scheduler.
type Options struct {
	// Deliveries is how many times each tick is sent (Scheduler delivers
	// at least once); 0 means 1.
	Deliveries int
	// Seed seeds the flexible windows' random delays; 0 means 1.
	Seed uint64
	// Region and Account appear in schedule ARNs; "" means us-east-1 and
	// 123456789012.
	Region, Account string
}

// Scheduler is the in-memory EventBridge Scheduler; it implements
// schedules.API.
type Scheduler struct {
	sqs     SQSAPI
	o       Options
	mu      sync.Mutex
	rnd     *rand.Rand
	items   map[string]*item // by group + "/" + name
	changed chan struct{}
}

type item struct {
	in      scheduler.CreateScheduleInput
	arn     string
	token   string
	created time.Time
	changed time.Time // the last create or update
	tick    time.Time // the next tick; zero when none
	fireAt  time.Time // tick plus the flexible delay
}

var _ schedules.API = (*Scheduler)(nil)

// New returns a Scheduler that delivers into client.
func New(client SQSAPI, optFns ...func(*Options)) (*Scheduler, error) {
	if client == nil {
		return nil, fmt.Errorf("schedulestest: client is nil; pass an SQS client (sqstest.For(t))")
	}
	var o Options
	for _, f := range optFns {
		f(&o)
	}
	if o.Deliveries <= 0 {
		o.Deliveries = 1
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.Region == "" {
		o.Region = "us-east-1"
	}
	if o.Account == "" {
		o.Account = "123456789012"
	}
	return &Scheduler{sqs: client, o: o, rnd: rand.New(rand.NewPCG(o.Seed, o.Seed)), items: map[string]*item{}, changed: make(chan struct{}, 1)}, nil
}

func group(g *string) string {
	if g == nil || *g == "" {
		return "default"
	}
	return *g
}

func notFound(what string) error {
	return &types.ResourceNotFoundException{Message: aws.String(what + " does not exist.")}
}

func invalid(msg string) error { return &types.ValidationException{Message: aws.String(msg)} }

func (f *Scheduler) poke() {
	select {
	case f.changed <- struct{}{}:
	default:
	}
}

func schedule(in *scheduler.CreateScheduleInput) schedules.Schedule {
	return schedules.Schedule{Name: aws.ToString(in.Name), Expression: aws.ToString(in.ScheduleExpression),
		TimeZone: aws.ToString(in.ScheduleExpressionTimezone), Start: aws.ToTime(in.StartDate), End: aws.ToTime(in.EndDate)}
}

// plan sets it's next tick after t (the caller holds f.mu).
func (f *Scheduler) plan(it *item, after time.Time) {
	s := schedule(&it.in)
	s.Created = it.created // a rate schedule counts from its creation, as Scheduler's does
	it.tick, _ = s.Next(after)
	it.fireAt = it.tick
	if w := it.in.FlexibleTimeWindow; w != nil && w.Mode == types.FlexibleTimeWindowModeFlexible && !it.tick.IsZero() {
		it.fireAt = it.tick.Add(time.Duration(f.rnd.Int64N(int64(aws.ToInt32(w.MaximumWindowInMinutes)) * int64(time.Minute))))
	}
}

func validate(in *scheduler.CreateScheduleInput) error {
	if aws.ToString(in.Name) == "" || in.Target == nil || aws.ToString(in.Target.Arn) == "" || aws.ToString(in.Target.RoleArn) == "" || in.FlexibleTimeWindow == nil {
		return invalid("Name, ScheduleExpression, Target (Arn, RoleArn) and FlexibleTimeWindow are required.")
	}
	if _, err := schedule(in).Next(time.Now()); err != nil {
		return invalid(err.Error())
	}
	w := in.FlexibleTimeWindow
	switch m := aws.ToInt32(w.MaximumWindowInMinutes); {
	case w.Mode == types.FlexibleTimeWindowModeFlexible && (m < 1 || m > 1440):
		return invalid("FlexibleTimeWindow: MaximumWindowInMinutes must be between 1 and 1440 when Mode is FLEXIBLE.")
	case w.Mode != types.FlexibleTimeWindowModeFlexible && w.Mode != types.FlexibleTimeWindowModeOff:
		return invalid("FlexibleTimeWindow: Mode must be OFF or FLEXIBLE.")
	}
	return nil
}

// state is the schedule's state, ENABLED when it was not given.
func state(s types.ScheduleState) types.ScheduleState {
	if s == "" {
		return types.ScheduleStateEnabled
	}
	return s
}

// CreateSchedule creates a schedule; ConflictException when the name is
// taken in its group, unless the ClientToken is the one that created it.
func (f *Scheduler) CreateSchedule(ctx context.Context, params *scheduler.CreateScheduleInput, optFns ...func(*scheduler.Options)) (*scheduler.CreateScheduleOutput, error) {
	if err := validate(params); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	g := group(params.GroupName)
	key := g + "/" + *params.Name
	if it, ok := f.items[key]; ok {
		if params.ClientToken != nil && *params.ClientToken == it.token {
			return &scheduler.CreateScheduleOutput{ScheduleArn: aws.String(it.arn)}, nil
		}
		return nil, &types.ConflictException{Message: aws.String("Schedule " + *params.Name + " already exists.")}
	}
	now := time.Now()
	it := &item{in: *params, token: aws.ToString(params.ClientToken), created: now, changed: now,
		arn: fmt.Sprintf("arn:aws:scheduler:%s:%s:schedule/%s/%s", f.o.Region, f.o.Account, g, *params.Name)}
	f.plan(it, it.created.Add(-time.Nanosecond))
	f.items[key] = it
	f.poke()
	return &scheduler.CreateScheduleOutput{ScheduleArn: aws.String(it.arn)}, nil
}

// UpdateSchedule replaces a schedule; ResourceNotFoundException when it
// does not exist.
func (f *Scheduler) UpdateSchedule(ctx context.Context, params *scheduler.UpdateScheduleInput, optFns ...func(*scheduler.Options)) (*scheduler.UpdateScheduleOutput, error) {
	in := scheduler.CreateScheduleInput{Name: params.Name, GroupName: params.GroupName, ScheduleExpression: params.ScheduleExpression,
		ScheduleExpressionTimezone: params.ScheduleExpressionTimezone, Target: params.Target, FlexibleTimeWindow: params.FlexibleTimeWindow,
		Description: params.Description, StartDate: params.StartDate, EndDate: params.EndDate, State: params.State,
		ActionAfterCompletion: params.ActionAfterCompletion, KmsKeyArn: params.KmsKeyArn}
	if err := validate(&in); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	key := group(params.GroupName) + "/" + *params.Name
	it, ok := f.items[key]
	if !ok {
		return nil, notFound("Schedule " + *params.Name)
	}
	it.in = in
	it.changed = time.Now()
	f.plan(it, it.changed)
	f.poke()
	return &scheduler.UpdateScheduleOutput{ScheduleArn: aws.String(it.arn)}, nil
}

// GetSchedule returns a schedule; ResourceNotFoundException when it does
// not exist.
func (f *Scheduler) GetSchedule(ctx context.Context, params *scheduler.GetScheduleInput, optFns ...func(*scheduler.Options)) (*scheduler.GetScheduleOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	g := group(params.GroupName)
	it, ok := f.items[g+"/"+aws.ToString(params.Name)]
	if !ok {
		return nil, notFound("Schedule " + aws.ToString(params.Name))
	}
	in := it.in
	t := *in.Target
	if t.RetryPolicy == nil {
		t.RetryPolicy = &types.RetryPolicy{MaximumRetryAttempts: aws.Int32(185), MaximumEventAgeInSeconds: aws.Int32(86400)}
	}
	return &scheduler.GetScheduleOutput{Arn: aws.String(it.arn), Name: in.Name, GroupName: aws.String(g), ScheduleExpression: in.ScheduleExpression,
		ScheduleExpressionTimezone: in.ScheduleExpressionTimezone, Target: &t, FlexibleTimeWindow: in.FlexibleTimeWindow,
		Description: in.Description, StartDate: in.StartDate, EndDate: in.EndDate, State: state(in.State),
		ActionAfterCompletion: in.ActionAfterCompletion, CreationDate: aws.Time(it.created), LastModificationDate: aws.Time(it.changed)}, nil
}

// ListSchedules lists a group's schedules (all groups when GroupName is
// nil) in name order, MaxResults (default 100) at a time.
func (f *Scheduler) ListSchedules(ctx context.Context, params *scheduler.ListSchedulesInput, optFns ...func(*scheduler.Options)) (*scheduler.ListSchedulesOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var keys []string
	for k, it := range f.items {
		g, n, _ := strings.Cut(k, "/")
		if params.GroupName != nil && g != *params.GroupName || !strings.HasPrefix(n, aws.ToString(params.NamePrefix)) ||
			params.State != "" && state(it.in.State) != params.State {
			continue
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	start, _ := strconv.Atoi(aws.ToString(params.NextToken))
	size := int(aws.ToInt32(params.MaxResults))
	if size <= 0 {
		size = 100
	}
	out := &scheduler.ListSchedulesOutput{Schedules: []types.ScheduleSummary{}}
	for i := start; i < len(keys) && i < start+size; i++ {
		it := f.items[keys[i]]
		out.Schedules = append(out.Schedules, types.ScheduleSummary{Arn: aws.String(it.arn), Name: it.in.Name,
			GroupName: aws.String(group(it.in.GroupName)), State: state(it.in.State), Target: &types.TargetSummary{Arn: it.in.Target.Arn},
			CreationDate: aws.Time(it.created), LastModificationDate: aws.Time(it.changed)})
	}
	if start+size < len(keys) {
		out.NextToken = aws.String(strconv.Itoa(start + size))
	}
	return out, nil
}

// DeleteSchedule deletes a schedule; ResourceNotFoundException when it
// does not exist.
func (f *Scheduler) DeleteSchedule(ctx context.Context, params *scheduler.DeleteScheduleInput, optFns ...func(*scheduler.Options)) (*scheduler.DeleteScheduleOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	key := group(params.GroupName) + "/" + aws.ToString(params.Name)
	if _, ok := f.items[key]; !ok {
		return nil, notFound("Schedule " + aws.ToString(params.Name))
	}
	delete(f.items, key)
	f.poke()
	return &scheduler.DeleteScheduleOutput{}, nil
}

type firing struct {
	arn, input, queue, groupID, dlq string
	tick                            time.Time
}

// Run fires the schedules as they come due until ctx ends, and returns
// ctx's error. Run it in a goroutine of the test (inside a synctest bubble
// for virtual time).
func (f *Scheduler) Run(ctx context.Context) error {
	for {
		f.mu.Lock()
		now := time.Now()
		var due []firing
		var wake time.Time
		for key, it := range f.items {
			for !it.fireAt.IsZero() && !it.fireAt.After(now) {
				if it.in.State != types.ScheduleStateDisabled {
					due = append(due, firing{arn: it.arn, input: aws.ToString(it.in.Target.Input), queue: *it.in.Target.Arn,
						groupID: groupID(it.in.Target), dlq: dlq(it.in.Target), tick: it.tick})
				}
				if strings.HasPrefix(aws.ToString(it.in.ScheduleExpression), "at(") {
					it.tick, it.fireAt = time.Time{}, time.Time{}
				} else {
					f.plan(it, it.tick)
				}
				// A one-time schedule completes when it fires, a recurring
				// one with an EndDate after its last tick; ActionAfterCompletion
				// DELETE deletes it then (without an EndDate never).
				if it.tick.IsZero() && it.in.ActionAfterCompletion == types.ActionAfterCompletionDelete &&
					(it.in.EndDate != nil || strings.HasPrefix(aws.ToString(it.in.ScheduleExpression), "at(")) {
					delete(f.items, key)
				}
			}
			if !it.fireAt.IsZero() && (wake.IsZero() || it.fireAt.Before(wake)) {
				wake = it.fireAt
			}
		}
		f.mu.Unlock()
		sort.Slice(due, func(i, j int) bool { return due[i].tick.Before(due[j].tick) })
		for _, d := range due {
			for range f.o.Deliveries {
				f.deliver(ctx, d)
			}
		}
		var timer <-chan time.Time
		var t *time.Timer
		if !wake.IsZero() {
			t = time.NewTimer(time.Until(wake))
			timer = t.C
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-f.changed:
		case <-timer:
		}
		if t != nil {
			t.Stop()
		}
	}
}

func groupID(t *types.Target) string {
	if t.SqsParameters != nil {
		return aws.ToString(t.SqsParameters.MessageGroupId)
	}
	return ""
}

func dlq(t *types.Target) string {
	if t.DeadLetterConfig != nil {
		return aws.ToString(t.DeadLetterConfig.Arn)
	}
	return ""
}

func (f *Scheduler) deliver(ctx context.Context, d firing) {
	body := strings.NewReplacer(
		"<aws.scheduler.schedule-arn>", d.arn,
		"<aws.scheduler.scheduled-time>", d.tick.UTC().Format(time.RFC3339),
		"<aws.scheduler.execution-id>", fmt.Sprintf("%x", d.tick.UnixNano()),
		"<aws.scheduler.attempt-number>", "1",
	).Replace(d.input)
	if f.send(ctx, d.queue, body, d.groupID) != nil && d.dlq != "" {
		_ = f.send(ctx, d.dlq, body, "")
	}
}

func (f *Scheduler) send(ctx context.Context, queueARN, body, groupID string) error {
	a, err := queueref.ParseARN(queueARN)
	if err != nil {
		return err
	}
	u, err := f.sqs.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(a.Name)})
	if err != nil {
		return err
	}
	in := &sqs.SendMessageInput{QueueUrl: u.QueueUrl, MessageBody: aws.String(body)}
	if groupID != "" {
		in.MessageGroupId = aws.String(groupID)
	}
	_, err = f.sqs.SendMessage(ctx, in)
	return err
}
