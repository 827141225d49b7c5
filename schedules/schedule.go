package schedules

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/scheduler/types"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/internal/schedenv"
	"github.com/sqsworker/sqsworker/queueref"
)

// ErrInvalid is wrapped by every error that refuses a schedule or a job
// before any call to EventBridge Scheduler: the message says what to change.
var ErrInvalid = errors.New("schedules: invalid input")

// maxInput is EventBridge Scheduler's limit on a schedule's payload (the
// target input), which holds the job's envelope.
const maxInput = 256 * 1024

// substitution is the room kept in the envelope for Scheduler's context
// attributes, which replace their keywords with longer values.
const substitution = 512

// Schedule is one periodic (or one-time) schedule whose target is an SQS
// queue: the job it sends, when, and where. The zero value of each optional
// field is documented; the JSON field names are the CLI's output.
type Schedule struct {
	// Name names the schedule in its group: 1 to 64 letters, digits, '-',
	// '_' and '.'.
	Name string `json:"name"`
	// Expression is when it fires: cron(minutes hours day-of-month month
	// day-of-week year), rate(value minutes|hours|days) or
	// at(yyyy-mm-ddThh:mm:ss), as EventBridge Scheduler writes them.
	Expression string `json:"expression"`
	// TimeZone is the IANA time zone the expression is read in
	// ("Europe/Paris"); "" means UTC.
	TimeZone string `json:"timeZone,omitempty"`
	// Queue is the ARN of the queue the job is sent to.
	Queue string `json:"queue"`
	// Body is the job's message body.
	Body string `json:"body"`
	// Attributes are the job's message attributes. Scheduler's SQS target
	// sends a body only, so they travel in the body's envelope and Unwrap
	// restores them.
	Attributes map[string]sqstypes.MessageAttributeValue `json:"attributes,omitempty"`
	// GroupID is the message group ID on a FIFO queue ("" on a standard
	// queue). The FIFO queue needs content-based deduplication.
	GroupID string `json:"groupId,omitempty"`
	// Overlap is what the worker does with a tick that arrives while the
	// previous run of the same schedule is still running in the same
	// worker: "" or "allow" runs it, "skip" skips it (see UnwrapOptions).
	Overlap string `json:"overlap,omitempty"`
	// FlexibleWindow lets Scheduler fire up to this long after each tick
	// (whole minutes, at most 24 h); 0 fires on the tick.
	FlexibleWindow time.Duration `json:"flexibleWindow,omitempty"`
	// Start and End bound the ticks; zero means unbounded. A rate schedule
	// counts its ticks from Start (from its creation when zero).
	Start time.Time `json:"start,omitzero"`
	End   time.Time `json:"end,omitzero"`
	// RoleARN is the execution role Scheduler sends with; "" means
	// Options.RoleARN.
	RoleARN string `json:"roleArn,omitempty"`
	// DLQ is the ARN of the queue Scheduler puts a delivery it gave up on;
	// "" means Options.DLQ.
	DLQ string `json:"dlq,omitempty"`
	// Description is shown by the console and the CLI.
	Description string `json:"description,omitempty"`
	// Disabled keeps the schedule without firing it.
	Disabled bool `json:"disabled,omitempty"`
	// Created is when Scheduler created the schedule: List sets it, Diff
	// and Apply ignore it. A rate schedule without Start counts its ticks
	// from it (Next).
	Created time.Time `json:"created,omitzero"`
}

// Options configures Diff, Apply, List and Jobs.
type Options struct {
	// Group is the schedule group: Apply makes it hold exactly the
	// declared schedules, so give one-time jobs a group of their own.
	// "" means "default". The group must exist.
	Group string
	// RoleARN is the execution role of schedules that name none: it needs
	// sqs:SendMessage on their queues (and kms:GenerateDataKey/Decrypt on
	// an encrypted queue).
	RoleARN string
	// DLQ is the dead-letter queue ARN of schedules that name none; ""
	// sets none (not recommended: a delivery Scheduler gives up on is then
	// lost; doctor warns).
	DLQ string
	// MaxRetries is how often Scheduler retries a failed delivery; 0
	// means Scheduler's default, 185.
	MaxRetries int
	// MaxEventAge is how long Scheduler keeps retrying a delivery; 0
	// means 24 h (Scheduler's default and maximum; minimum 1 minute).
	MaxEventAge time.Duration
	// Now is the clock that at() expressions and due times are checked
	// against; nil means time.Now.
	Now func() time.Time
	// MaxAttempts bounds the calls made for one Scheduler request under
	// the library's retry rule (throttling and server errors are retried
	// with backoff); 0 means 8.
	MaxAttempts int
	// NamePrefix and Limit narrow what List and Lint read: the schedules
	// whose name begins with NamePrefix, at most Limit of them (the first
	// the group lists); "" and 0 mean all. Diff and Apply ignore them.
	NamePrefix string
	Limit      int
}

func options(optFns []func(*Options)) Options {
	var o Options
	for _, f := range optFns {
		f(&o)
	}
	if o.Group == "" {
		o.Group = "default"
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 8
	}
	if o.MaxRetries <= 0 {
		o.MaxRetries = 185
	}
	if o.MaxEventAge <= 0 {
		o.MaxEventAge = 24 * time.Hour
	}
	return o
}

var nameRE = regexp.MustCompile(`^[0-9a-zA-Z_.-]{1,64}$`)

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// location returns the schedule's time zone.
func (s Schedule) location() (*time.Location, error) {
	if s.TimeZone == "" || s.TimeZone == "UTC" {
		return time.UTC, nil
	}
	if s.TimeZone == "Local" {
		return nil, invalid("schedule %q: time zone \"Local\" depends on the machine; name an IANA zone such as Europe/Paris", s.Name)
	}
	loc, err := time.LoadLocation(s.TimeZone)
	if err != nil {
		return nil, invalid("schedule %q: unknown time zone %q; use an IANA name such as Europe/Paris or America/New_York (and import time/tzdata on machines without a zone database)", s.Name, s.TimeZone)
	}
	return loc, nil
}

// Next returns the first tick of the schedule after t (before any flexible
// window): its time zone's wall clock for cron and at() expressions, with
// the daylight-saving rules of the package documentation, and Start plus a
// whole number of periods for rate expressions (from Created when Start
// is zero, as Scheduler counts them; from t when both are zero, as for a
// schedule not created yet). It returns the zero time when no tick follows t (at() passed,
// End reached, or a cron expression with no later year).
func (s Schedule) Next(t time.Time) (time.Time, error) {
	e, err := parseExpr(s.Expression)
	if err != nil {
		return time.Time{}, invalid("schedule %q: %v", s.Name, err)
	}
	loc, err := s.location()
	if err != nil {
		return time.Time{}, err
	}
	return s.next(e, loc, t)
}

func (s Schedule) next(e expr, loc *time.Location, t time.Time) (time.Time, error) {
	if !s.Start.IsZero() && t.Before(s.Start) && e.at == nil {
		t = s.Start.Add(-time.Nanosecond)
	}
	var at time.Time
	switch {
	case e.at != nil:
		w, ok := e.at.instant(loc)
		if !ok {
			return time.Time{}, invalid("schedule %q: %s does not exist in %s (the clocks skip it for daylight saving time); pick another time", s.Name, s.Expression, loc)
		}
		if !w.After(t) {
			return time.Time{}, nil
		}
		return w, nil // Start and End do not apply to one-time schedules
	case e.cron != nil:
		n, ok := e.cron.next(t, loc)
		if !ok {
			return time.Time{}, nil
		}
		at = n
	default:
		anchor := s.Start
		if anchor.IsZero() {
			anchor = s.Created
		}
		if anchor.IsZero() {
			at = t.Add(e.rate)
			break
		}
		k := t.Sub(anchor)/e.rate + 1
		if t.Before(anchor) {
			k = 0
		}
		at = anchor.Add(k * e.rate)
	}
	if !s.End.IsZero() && at.After(s.End) {
		return time.Time{}, nil
	}
	return at, nil
}

// spec is what Apply compares between a declared schedule and the one in
// the group: the fields of CreateScheduleInput it sets, in canonical form.
type spec struct {
	Expression, TimeZone, Target, Role, Input, GroupID, DLQ, Description, State string
	MaxRetries, MaxAge, Window                                                  int32
	Start, End                                                                  string
}

var specFields = []string{"expression", "timeZone", "queue", "roleArn", "input", "groupId", "dlq", "description", "state", "maxRetries", "maxEventAge", "flexibleWindow", "start", "end"}

func (a spec) diff(b spec) []string {
	av := []any{a.Expression, a.TimeZone, a.Target, a.Role, a.Input, a.GroupID, a.DLQ, a.Description, a.State, a.MaxRetries, a.MaxAge, a.Window, a.Start, a.End}
	bv := []any{b.Expression, b.TimeZone, b.Target, b.Role, b.Input, b.GroupID, b.DLQ, b.Description, b.State, b.MaxRetries, b.MaxAge, b.Window, b.Start, b.End}
	var out []string
	for i := range av {
		if av[i] != bv[i] {
			out = append(out, specFields[i])
		}
	}
	return out
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Truncate(time.Second).Format(time.RFC3339)
}

// check validates s against o and now and returns its spec; it makes no
// call.
func (s Schedule) check(o Options, now time.Time) (spec, error) {
	if !nameRE.MatchString(s.Name) {
		return spec{}, invalid("schedule name %q: use 1 to 64 letters, digits, '-', '_' or '.'", s.Name)
	}
	e, err := parseExpr(s.Expression)
	if err != nil {
		return spec{}, invalid("schedule %q: %v", s.Name, err)
	}
	loc, err := s.location()
	if err != nil {
		return spec{}, err
	}
	if e.at != nil {
		w, ok := e.at.instant(loc)
		if !ok {
			return spec{}, invalid("schedule %q: %s does not exist in %s (the clocks skip it for daylight saving time); pick another time", s.Name, s.Expression, loc)
		}
		if !w.After(now) {
			return spec{}, invalid("schedule %q: %s in %s was %s ago; give a time in the future (Scheduler would never fire it)", s.Name, s.Expression, loc, now.Sub(w).Round(time.Second))
		}
	} else if n, _ := s.next(e, loc, now); n.IsZero() {
		return spec{}, invalid("schedule %q: %s never fires after %s (check the year field and End)", s.Name, s.Expression, now.UTC().Format(time.RFC3339))
	}
	if !s.End.IsZero() && !s.Start.IsZero() && !s.End.After(s.Start) {
		return spec{}, invalid("schedule %q: End %s is not after Start %s", s.Name, stamp(s.End), stamp(s.Start))
	}
	if s.Queue == "" {
		return spec{}, invalid("schedule %q: Queue is empty; give the target queue's ARN", s.Name)
	}
	if _, err := queueref.ParseARN(s.Queue); err != nil {
		return spec{}, invalid("schedule %q: Queue %q is not a queue ARN (arn:aws:sqs:region:account:name): %v", s.Name, s.Queue, err)
	}
	fifo := queueref.FIFO(s.Queue)
	if fifo && s.GroupID == "" {
		return spec{}, invalid("schedule %q: queue %s is FIFO; set GroupID", s.Name, queueref.Name(s.Queue))
	}
	if !fifo && s.GroupID != "" {
		return spec{}, invalid("schedule %q: GroupID is set but queue %s is not FIFO; remove it", s.Name, queueref.Name(s.Queue))
	}
	switch s.Overlap {
	case "", "allow", "skip":
	default:
		return spec{}, invalid("schedule %q: Overlap %q unknown; use \"allow\" or \"skip\"", s.Name, s.Overlap)
	}
	if s.FlexibleWindow < 0 || s.FlexibleWindow > 24*time.Hour || s.FlexibleWindow%time.Minute != 0 {
		return spec{}, invalid("schedule %q: FlexibleWindow %s: use whole minutes from 1 minute to 24 h, or 0 for none", s.Name, s.FlexibleWindow)
	}
	role := s.RoleARN
	if role == "" {
		role = o.RoleARN
	}
	if role == "" {
		return spec{}, invalid("schedule %q: no execution role; set Options.RoleARN (a role Scheduler assumes, with sqs:SendMessage on %s; sqsworker template prints one)", s.Name, queueref.Name(s.Queue))
	}
	dlq := s.DLQ
	if dlq == "" {
		dlq = o.DLQ
	}
	if o.MaxEventAge < time.Minute || o.MaxEventAge > 24*time.Hour {
		return spec{}, invalid("Options.MaxEventAge %s: use 1 minute to 24 h", o.MaxEventAge)
	}
	if o.MaxRetries > 185 {
		return spec{}, invalid("Options.MaxRetries %d: Scheduler allows at most 185", o.MaxRetries)
	}
	input, err := envelope(s)
	if err != nil {
		return spec{}, err
	}
	if len(input)+substitution > maxInput {
		return spec{}, invalid("schedule %q: the job's body and attributes take %d bytes in their envelope, over EventBridge Scheduler's %d-byte input limit; store the body elsewhere (s3payload) and schedule a reference to it", s.Name, len(input), maxInput-substitution)
	}
	tz := s.TimeZone
	if tz == "" {
		tz = "UTC"
	}
	state := string(types.ScheduleStateEnabled)
	if s.Disabled {
		state = string(types.ScheduleStateDisabled)
	}
	sp := spec{
		Expression: strings.TrimSpace(s.Expression), TimeZone: tz, Target: s.Queue, Role: role, Input: input,
		GroupID: s.GroupID, DLQ: dlq, Description: s.Description, State: state,
		MaxRetries: int32(o.MaxRetries), MaxAge: int32(o.MaxEventAge / time.Second), Window: int32(s.FlexibleWindow / time.Minute),
	}
	if e.at == nil {
		sp.Start, sp.End = stamp(s.Start), stamp(s.End)
	}
	return sp, nil
}

// specOf reads the spec of a schedule as GetSchedule returned it.
func specOf(g *scheduler.GetScheduleOutput) spec {
	sp := spec{
		Expression: aws.ToString(g.ScheduleExpression), TimeZone: aws.ToString(g.ScheduleExpressionTimezone),
		Description: aws.ToString(g.Description), State: string(g.State),
		Start: stamp(aws.ToTime(g.StartDate)), End: stamp(aws.ToTime(g.EndDate)),
	}
	if sp.TimeZone == "" {
		sp.TimeZone = "UTC"
	}
	if w := g.FlexibleTimeWindow; w != nil && w.Mode == types.FlexibleTimeWindowModeFlexible {
		sp.Window = aws.ToInt32(w.MaximumWindowInMinutes)
	}
	if t := g.Target; t != nil {
		sp.Target, sp.Role, sp.Input = aws.ToString(t.Arn), aws.ToString(t.RoleArn), aws.ToString(t.Input)
		if t.SqsParameters != nil {
			sp.GroupID = aws.ToString(t.SqsParameters.MessageGroupId)
		}
		if t.DeadLetterConfig != nil {
			sp.DLQ = aws.ToString(t.DeadLetterConfig.Arn)
		}
		sp.MaxRetries, sp.MaxAge = 185, 86400
		if r := t.RetryPolicy; r != nil {
			sp.MaxRetries, sp.MaxAge = aws.ToInt32(r.MaximumRetryAttempts), aws.ToInt32(r.MaximumEventAgeInSeconds)
		}
	}
	return sp
}

// target builds the request's target from sp.
func (sp spec) target() *types.Target {
	t := &types.Target{
		Arn: aws.String(sp.Target), RoleArn: aws.String(sp.Role), Input: aws.String(sp.Input),
		RetryPolicy: &types.RetryPolicy{MaximumRetryAttempts: aws.Int32(sp.MaxRetries), MaximumEventAgeInSeconds: aws.Int32(sp.MaxAge)},
	}
	if sp.GroupID != "" {
		t.SqsParameters = &types.SqsParameters{MessageGroupId: aws.String(sp.GroupID)}
	}
	if sp.DLQ != "" {
		t.DeadLetterConfig = &types.DeadLetterConfig{Arn: aws.String(sp.DLQ)}
	}
	return t
}

func (sp spec) window() *types.FlexibleTimeWindow {
	if sp.Window == 0 {
		return &types.FlexibleTimeWindow{Mode: types.FlexibleTimeWindowModeOff}
	}
	return &types.FlexibleTimeWindow{Mode: types.FlexibleTimeWindowModeFlexible, MaximumWindowInMinutes: aws.Int32(sp.Window)}
}

func timePtr(s string) *time.Time {
	if s == "" {
		return nil
	}
	t, _ := time.Parse(time.RFC3339, s)
	return &t
}

func (sp spec) create(group, name string, after types.ActionAfterCompletion) *scheduler.CreateScheduleInput {
	h := sha256.Sum256([]byte(group + "\x00" + name + "\x00" + fmt.Sprint(sp)))
	return &scheduler.CreateScheduleInput{
		Name: aws.String(name), GroupName: aws.String(group),
		ScheduleExpression: aws.String(sp.Expression), ScheduleExpressionTimezone: aws.String(sp.TimeZone),
		Target: sp.target(), FlexibleTimeWindow: sp.window(), Description: optional(sp.Description),
		StartDate: timePtr(sp.Start), EndDate: timePtr(sp.End), State: types.ScheduleState(sp.State),
		ActionAfterCompletion: after,
		// The same content gets the same token, so processes creating the
		// same schedule at once all succeed.
		ClientToken: aws.String(hex.EncodeToString(h[:16])),
	}
}

func (sp spec) update(group, name string, after types.ActionAfterCompletion) *scheduler.UpdateScheduleInput {
	c := sp.create(group, name, after)
	return &scheduler.UpdateScheduleInput{
		Name: c.Name, GroupName: c.GroupName, ScheduleExpression: c.ScheduleExpression,
		ScheduleExpressionTimezone: c.ScheduleExpressionTimezone, Target: c.Target,
		FlexibleTimeWindow: c.FlexibleTimeWindow, Description: c.Description, StartDate: c.StartDate,
		EndDate: c.EndDate, State: c.State, ActionAfterCompletion: after,
	}
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// The envelope: Scheduler's SQS target sends the input as the message body
// and nothing else, so the body carries the job's own body, its
// attributes, and Scheduler's context attributes.
// Its format is package schedenv's, which Unwrap and the unique keys'
// settlement read.
func envelope(s Schedule) (string, error) {
	e := schedenv.Envelope{V: schedenv.Version, ARN: "<aws.scheduler.schedule-arn>", Time: "<aws.scheduler.scheduled-time>",
		Attempt: "<aws.scheduler.attempt-number>", Overlap: s.Overlap, Body: s.Body}
	if len(s.Attributes) > 0 {
		keys := make([]string, 0, len(s.Attributes))
		for k := range s.Attributes {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		e.Attributes = map[string]schedenv.Attribute{}
		for _, k := range keys {
			v := s.Attributes[k]
			if v.DataType == nil {
				return "", invalid("schedule %q: attribute %q has no DataType; set String, Number or Binary", s.Name, k)
			}
			e.Attributes[k] = schedenv.Attribute{DataType: *v.DataType, StringValue: aws.ToString(v.StringValue), BinaryValue: v.BinaryValue}
		}
	}
	// No HTML escaping: Scheduler looks for its keywords as written.
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(e); err != nil {
		return "", invalid("schedule %q: %v", s.Name, err)
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

func timeMinutes(m int32) time.Duration { return time.Duration(m) * time.Minute }
