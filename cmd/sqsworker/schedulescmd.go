package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"gopkg.in/yaml.v3"

	"github.com/sqsworker/sqsworker/queueref"
	"github.com/sqsworker/sqsworker/schedules"
)

// connectScheduler builds an EventBridge Scheduler client from the standard
// AWS configuration. --endpoint-url applies to it too unless Scheduler has
// an endpoint of its own (AWS_ENDPOINT_URL_SCHEDULER), as for DynamoDB.
func connectScheduler(ctx context.Context, f awsFlags) (schedules.API, error) {
	cfg, err := loadConfig(ctx, f)
	if err != nil {
		return nil, err
	}
	return scheduler.NewFromConfig(cfg, func(o *scheduler.Options) {
		if f.endpoint != "" && !ownEndpoint(o.BaseEndpoint, cfg.BaseEndpoint) {
			o.BaseEndpoint = aws.String(f.endpoint)
		}
	}), nil
}

const schedulesFileHelp = `FILE (JSON or YAML; "-" for stdin) declares the group's schedules in the
fields of schedules.Schedule, the shape "sqsworker schedules ls -o json" prints:

  group: reports                      # or --group; default "default"
  roleArn: arn:aws:iam::123456789012:role/reports-scheduler   # or --role-arn
  dlq: arn:aws:sqs:us-east-1:123456789012:reports-scheduler-dlq # or --dlq
  schedules:
    - name: nightly-report
      expression: cron(30 2 * * ? *)  # cron(...), rate(...) or at(...)
      timeZone: Europe/Paris          # IANA name; default UTC
      queue: arn:aws:sqs:us-east-1:123456789012:reports
      body: '{"report": "sales"}'
      overlap: skip                   # or allow (default)
      flexibleWindow: 15m             # whole minutes; a number is nanoseconds
      # also: attributes, groupId (FIFO), start, end (RFC 3339), roleArn,
      # dlq, description, disabled

A bare list of schedules is a FILE too. Flags override the file's group,
roleArn and dlq. Invalid input (an expression, a time zone, an at() in the
past, a body over Scheduler's input limit, no execution role) is refused
before any call, with exit status 2 and what to change.`

const schedulesReadIAM = `IAM: scheduler:ListSchedules (resource *) and scheduler:GetSchedule on
arn:aws:scheduler:REGION:ACCOUNT:schedule/GROUP/*.`

func schedulesDiffCommand() *command {
	return &command{
		path:     "schedules diff",
		args:     "FILE",
		synopsis: "the changes that would make a schedule group hold the schedules FILE declares",
		help: `Compares the schedules FILE declares with those in the EventBridge Scheduler
schedule group and prints what "sqsworker schedules apply" would create,
update (with the fields that differ) and delete, without writing anything
(schedules.Diff). Exit status 0, also when there are changes; with --check,
1 when there are changes (for CI: the deployed schedules drifted from the
declared ones).

` + schedulesFileHelp + `

` + schedulesReadIAM,
		run: runSchedules,
	}
}

func schedulesApplyCommand() *command {
	return &command{
		path:     "schedules apply",
		args:     "FILE",
		synopsis: "make a schedule group hold exactly the schedules FILE declares",
		help: `Makes the EventBridge Scheduler schedule group hold exactly the schedules FILE
declares (schedules.Apply): creates the missing ones, updates those that
differ and deletes every other schedule of the group. Running it again
changes nothing, and several runs at once end in the same state. It prints
what it changed; run "sqsworker schedules diff" first to see it. Give each
service (and schedules.Jobs) a group of its own: apply deletes what the
file does not declare. The group must exist (aws scheduler
create-schedule-group --name GROUP).

Every schedule gets a retry policy (--max-retries, --max-event-age) and,
with --dlq, a dead-letter queue for the deliveries Scheduler gives up on;
without one they are lost.

` + schedulesFileHelp + `

IAM: what diff needs, scheduler:CreateSchedule, scheduler:UpdateSchedule and
scheduler:DeleteSchedule on arn:aws:scheduler:REGION:ACCOUNT:schedule/GROUP/*,
and iam:PassRole on the execution role (condition iam:PassedToService =
scheduler.amazonaws.com). The execution role itself, trusted by
scheduler.amazonaws.com, needs sqs:SendMessage on the target queues and on
the DLQ (and kms:GenerateDataKey, kms:Decrypt on an encrypted queue's key).`,
		run: runSchedules,
	}
}

func schedulesLsCommand() *command {
	return &command{
		path:     "schedules ls",
		args:     "",
		synopsis: "list a schedule group's schedules with their next fire time",
		help: `Lists the schedules of an EventBridge Scheduler schedule group (--group,
default "default") with their expression, time zone, next fire time, state
and target queue (schedules.List). -o json prints the group in the shape of
a schedules FILE, so it can be saved and applied elsewhere.

` + schedulesReadIAM,
		run: runSchedulesLs,
	}
}

// schedulesFile is the declared set a FILE holds, and what schedules ls
// prints with -o json.
type schedulesFile struct {
	Group     string               `json:"group"`
	RoleARN   string               `json:"roleArn,omitempty"`
	DLQ       string               `json:"dlq,omitempty"`
	Schedules []schedules.Schedule `json:"schedules"`
}

// fileSchedule reads one schedule of a FILE: a schedules.Schedule whose
// flexibleWindow may also be a duration ("15m").
type fileSchedule struct {
	schedules.Schedule
	FlexibleWindow window `json:"flexibleWindow,omitempty"`
}

type window time.Duration

func (w *window) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		d, err := parseDuration(s)
		if err != nil {
			return fmt.Errorf("flexibleWindow: %v", err)
		}
		*w = window(d)
		return nil
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return fmt.Errorf("flexibleWindow %s: use a duration such as \"15m\"", b)
	}
	*w = window(n)
	return nil
}

// readSchedulesFile reads a FILE: JSON or YAML, an object with a
// schedules list or a bare list.
func readSchedulesFile(data []byte) (schedulesFile, error) {
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil { // YAML is a superset of JSON
		return schedulesFile{}, err
	}
	if v == nil {
		return schedulesFile{}, errors.New("the file is empty; declare the schedules (an empty list deletes every schedule of the group: write schedules: [])")
	}
	if list, ok := v.([]any); ok {
		v = map[string]any{"schedules": list}
	}
	js, err := json.Marshal(v)
	if err != nil {
		return schedulesFile{}, err
	}
	var raw struct {
		Group     string         `json:"group"`
		RoleARN   string         `json:"roleArn"`
		DLQ       string         `json:"dlq"`
		Schedules []fileSchedule `json:"schedules"`
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return schedulesFile{}, fmt.Errorf("%v (the fields are those of schedules.Schedule: name, expression, timeZone, queue, body, attributes, groupId, overlap, flexibleWindow, start, end, roleArn, dlq, description, disabled)", err)
	}
	if raw.Schedules == nil {
		if m, ok := v.(map[string]any); !ok || m["schedules"] == nil {
			return schedulesFile{}, errors.New("no schedules list; declare them under schedules: (an empty list deletes every schedule of the group: write schedules: [])")
		}
	}
	f := schedulesFile{Group: raw.Group, RoleARN: raw.RoleARN, DLQ: raw.DLQ, Schedules: []schedules.Schedule{}}
	for _, s := range raw.Schedules {
		s.Schedule.FlexibleWindow = time.Duration(s.FlexibleWindow)
		f.Schedules = append(f.Schedules, s.Schedule)
	}
	return f, nil
}

// schedulesFlags are the flags of the three commands.
type schedulesFlags struct {
	conn             *awsFlags
	out              *string
	group, role, dlq string
	maxRetries       int
	maxAge           time.Duration
	check            bool
}

func (a *app) schedulesFlagsOn(cmd *command) (*flag.FlagSet, *schedulesFlags) {
	fs := a.flags(cmd)
	f := &schedulesFlags{conn: awsFlagsOn(fs), out: outputFlag(fs)}
	fs.StringVar(&f.group, "group", "", `the schedule group (default: the file's group, else "default")`)
	if cmd.path != "schedules ls" {
		fs.StringVar(&f.role, "role-arn", "", "the execution role of schedules that name none (default: the file's roleArn)")
		fs.StringVar(&f.dlq, "dlq", "", "ARN of the dead-letter queue of schedules that name none (default: the file's dlq)")
		fs.IntVar(&f.maxRetries, "max-retries", 0, "how often Scheduler retries a failed delivery (default 185, its maximum)")
		fs.Var(durationValue{&f.maxAge}, "max-event-age", "how long Scheduler keeps retrying a delivery, 1m to 24h (default 24h)")
	}
	if cmd.path == "schedules diff" {
		fs.BoolVar(&f.check, "check", false, "exit 1 when there are changes")
	}
	return fs, f
}

// schedulesReport is what diff and apply print with -o json.
type schedulesReport struct {
	Group   string             `json:"group"`
	Applied bool               `json:"applied"`
	Changes []schedules.Change `json:"changes"`
}

func runSchedules(a *app, ctx context.Context, cmd *command, args []string) int {
	fset, f := a.schedulesFlagsOn(cmd)
	pos, code, ok := a.parseWithOutput(cmd, fset, args, 1, 1, f.out)
	if !ok {
		return code
	}
	data, err := readInput(a.stdin, pos[0])
	if err != nil {
		fmt.Fprintf(a.stderr, "sqsworker %s: reading the schedules: %v\n", cmd.path, err)
		return exitUsage
	}
	file, err := readSchedulesFile(data)
	if err != nil {
		fmt.Fprintf(a.stderr, "sqsworker %s: %s: %v\n", cmd.path, pos[0], err)
		return exitUsage
	}
	group := first(f.group, file.Group, "default")
	opts := func(o *schedules.Options) {
		o.Group = group
		o.RoleARN = first(f.role, file.RoleARN)
		o.DLQ = first(f.dlq, file.DLQ)
		o.MaxRetries = f.maxRetries
		o.MaxEventAge = f.maxAge
		o.Now = a.now
	}
	client, err := a.newScheduler(ctx, *f.conn)
	if err != nil {
		return a.fail(cmd, err)
	}
	apply := cmd.path == "schedules apply"
	var changes []schedules.Change
	if apply {
		changes, err = schedules.Apply(ctx, client, file.Schedules, opts)
	} else {
		changes, err = schedules.Diff(ctx, client, file.Schedules, opts)
	}
	if changes == nil {
		changes = []schedules.Change{}
	}
	if err != nil && (!apply || len(changes) == 0) {
		return a.fail(cmd, err)
	}
	if *f.out == "json" {
		a.writeJSON(schedulesReport{Group: group, Applied: apply, Changes: changes})
	} else {
		a.printChanges(group, apply, changes, pos[0])
	}
	if err != nil { // apply stopped part-way: what it did is printed above
		return a.fail(cmd, err)
	}
	if f.check && len(changes) > 0 {
		return exitProblems
	}
	return exitOK
}

func (a *app) printChanges(group string, applied bool, changes []schedules.Change, file string) {
	marks := map[string]string{"create": "+", "update": "~", "delete": "-"}
	verbs := map[string]string{"create": "created", "update": "updated", "delete": "deleted"}
	for _, c := range changes {
		verb := c.Action
		if applied {
			verb = verbs[c.Action]
		}
		line := fmt.Sprintf("%s %s %s", marks[c.Action], verb, c.Name)
		if len(c.Fields) > 0 {
			line += " (" + strings.Join(c.Fields, ", ") + ")"
		}
		fmt.Fprintln(a.stdout, line)
	}
	switch {
	case len(changes) == 0 && applied:
		fmt.Fprintf(a.stdout, "schedule group %s already holds the declared schedules: no changes\n", group)
	case len(changes) == 0:
		fmt.Fprintf(a.stdout, "schedule group %s holds the declared schedules: no changes\n", group)
	case applied:
		fmt.Fprintf(a.stdout, "schedule group %s: %d change(s) made\n", group, len(changes))
	default:
		fmt.Fprintf(a.stdout, "schedule group %s: %d change(s); sqsworker schedules apply %s makes them\n", group, len(changes), file)
	}
}

func runSchedulesLs(a *app, ctx context.Context, cmd *command, args []string) int {
	fset, f := a.schedulesFlagsOn(cmd)
	if _, code, ok := a.parseWithOutput(cmd, fset, args, 0, 0, f.out); !ok {
		return code
	}
	group := first(f.group, "default")
	client, err := a.newScheduler(ctx, *f.conn)
	if err != nil {
		return a.fail(cmd, err)
	}
	list, err := schedules.List(ctx, client, func(o *schedules.Options) { o.Group = group })
	if err != nil {
		return a.fail(cmd, err)
	}
	if list == nil {
		list = []schedules.Schedule{}
	}
	if *f.out == "json" {
		a.writeJSON(schedulesFile{Group: group, Schedules: list})
		return exitOK
	}
	if len(list) == 0 {
		fmt.Fprintf(a.stdout, "schedule group %s has no schedules\n", group)
		return exitOK
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tEXPRESSION\tTIME ZONE\tNEXT (UTC)\tSTATE\tQUEUE\tDLQ")
	now := a.now()
	for _, s := range list {
		next := "-"
		if n, err := s.Next(now); err == nil && !n.IsZero() {
			next = n.UTC().Format("2006-01-02 15:04")
		}
		state := "ENABLED"
		if s.Disabled {
			state, next = "DISABLED", "-"
		}
		dlq := "none"
		if s.DLQ != "" {
			dlq = queueref.Name(s.DLQ)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Name, s.Expression, first(s.TimeZone, "UTC"), next, state, queueref.Name(s.Queue), dlq)
	}
	_ = tw.Flush()
	return exitOK
}

// first returns the first non-empty string.
func first(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}
