package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/fanout"
	"github.com/sqsworker/sqsworker/fleet"
	"github.com/sqsworker/sqsworker/queueref"
	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/schedules"
)

func doctorCommand() *command {
	return &command{
		path:     "doctor",
		args:     "[QUEUE...]",
		synopsis: "check queues' dead-letter setup against the retry policy",
		help: `Checks each QUEUE (name, URL or ARN): its RedrivePolicy and dead-letter queue
(present, same type), maxReceiveCount against the retry policy's attempts,
retention against the retry schedule's length, the dead-letter queue's
retention against the queue's, the visibility timeout against the heartbeat
and, with --lambda-timeout, against AWS's advice for Lambda consumers. Each
finding says what to change.

Give the retry policy with --policy (an SNS-style delivery policy JSON file, as
the worker uses) or with --attempts and --schedule-total, not both; without
either, the worker's default policy is assumed (SNS's default: 4 deliveries,
20 s apart).

A FIFO queue's maxReceiveCount should be ten times the policy's attempts (at
most 1000): a receive is counted for each message released behind a failed
one of its group. A queue that is other queues' dead-letter queue is
recognised as such.

The SNS side is checked too, for each subscription of the queue to a topic:
the subscription's dead-letter queue (RedrivePolicy present, the queue
existing in the same account and region, FIFO when the topic is), the queue
policies on the queue and on that dead-letter queue (they must let the topic
send), KMS keys SNS cannot use or must be granted, its retention, and raw
delivery against --delivery: envelope when the handler uses fanout.Unwrap,
raw when it expects the published message. --no-subscriptions skips it.

With --fleet (the consumer uses package fleet's rate limits, caps, breaker or
pause), maxReceiveCount is also checked against the controls' snoozes: each
job waiting for a token or a slot, behind an open breaker or on a paused
queue is received again, and SQS dead-letters it after maxReceiveCount
receives though it never failed. The rule: maxReceiveCount at least the
attempts plus --snoozes (50 by default; at most 1000), else a warning
(fleet-receive-budget; an error when no snooze fits). Unless --exact-attempts
says attempts are counted with retry/dynamocounter, a warning that each
snooze also spends an attempt counted from ApproximateReceiveCount
(fleet-attempts-from-receive-count).

With --schedule-group GROUP (QUEUEs may then be left out), the EventBridge
Scheduler schedule group's schedules are checked too (schedules.Lint): each
has a dead-letter queue that exists and keeps messages at least 7 days, a
retry policy that retries, and a target queue that exists; a dead-letter
queue holding messages is a warning giving its depth (each message is a tick
Scheduler failed to deliver). Codes: schedule-no-dlq, schedule-dlq-missing,
schedule-dlq-retention-short, schedule-dlq-not-empty,
schedule-dlq-fifo, schedule-no-retry-policy, schedule-retries-off,
schedule-target-missing, schedule-target-not-sqs (info).

With --unique-table TABLE (the queues' jobs carry unique keys, package
unique), the keys table is checked as ` + "`sqsworker unique check`" + ` does: it
exists, its key is key (S), time-to-live is on for expiresAt. Its problems
are errors of every queue checked (unique-table); a table that is right
adds a note (unique-table-ok).

Exit status: 0 when no queue has a warning or an error (info findings do not
count), 1 otherwise or when a queue cannot be read, 2 for a usage error.

IAM: sqs:GetQueueAttributes, sqs:GetQueueUrl; sns:ListSubscriptions,
sns:GetSubscriptionAttributes (without them, a note says the subscriptions
were not checked); with --schedule-group, scheduler:ListSchedules and
scheduler:GetSchedule; with --unique-table, dynamodb:DescribeTable and
dynamodb:DescribeTimeToLive on the table.`,
		run: runDoctor,
	}
}

// doctorReport is one queue's result in -o json output.
type doctorReport struct {
	Queue string `json:"queue,omitempty"`
	// ScheduleGroup names the schedule group of a --schedule-group report
	// (Queue is then empty).
	ScheduleGroup string        `json:"scheduleGroup,omitempty"`
	URL           string        `json:"url,omitempty"`
	Error         string        `json:"error,omitempty"`
	Findings      []dlq.Finding `json:"findings"`
}

func runDoctor(a *app, ctx context.Context, cmd *command, args []string) int {
	fs := a.flags(cmd)
	conn := awsFlagsOn(fs)
	out := outputFlag(fs)
	var opts dlq.LintOptions
	policyFile := fs.String("policy", "", "delivery policy JSON file (SNS shape, SQS limits) giving the attempts and the schedule's length")
	fs.IntVar(&opts.Attempts, "attempts", 0, "deliveries the retry policy allows (numRetries+1), when there is no --policy")
	fs.Var(durationValue{&opts.ScheduleTotal}, "schedule-total", "sum of the retry delays, when there is no --policy")
	fs.Var(durationValue{&opts.HandlerTimeout}, "handler-timeout", "the longest one attempt may run")
	fs.Var(durationValue{&opts.Visibility}, "visibility", "the visibility timeout the consumer asks for when it receives (default: the queue's)")
	fs.Var(durationValue{&opts.HeartbeatThreshold}, "heartbeat-threshold", "how long before the visibility deadline the heartbeat extends a message")
	fs.Var(durationValue{&opts.LambdaTimeout}, "lambda-timeout", "the function timeout, when AWS Lambda consumes the queue")
	delivery := fs.String("delivery", "", "what the handler expects from SNS: envelope (it uses fanout.Unwrap) or raw (default: not known; an enveloped subscription gets a note)")
	noSubs := fs.Bool("no-subscriptions", false, "do not check the queue's SNS subscriptions")
	useFleet := fs.Bool("fleet", false, "the consumer uses fleet controls (package fleet): check that maxReceiveCount leaves room for their snoozes")
	var flint fleet.LintOptions
	fs.IntVar(&flint.Snoozes, "snoozes", 0, "with --fleet: how many times one job may be snoozed by the controls (default 50)")
	fs.BoolVar(&flint.ExactAttempts, "exact-attempts", false, "with --fleet: the consumer counts attempts with retry/dynamocounter, not ApproximateReceiveCount")
	schedGroup := fs.String("schedule-group", "", "also check this EventBridge Scheduler schedule group's schedules: DLQ, retry policy, target queue, DLQ depth")
	uniqueTableName := fs.String("unique-table", "", "the DynamoDB table of the jobs' unique keys (package unique): check it as `sqsworker unique check` does")
	queues, code, ok := a.parseWithOutput(cmd, fs, args, 0, -1, out)
	if !ok {
		return code
	}
	if len(queues) == 0 && *schedGroup == "" {
		fmt.Fprintf(a.stderr, "sqsworker %s: missing arguments\n\n", cmd.path)
		a.printUsage(a.stderr, cmd, fs)
		return exitUsage
	}
	if len(queues) == 0 && *uniqueTableName != "" {
		fmt.Fprintf(a.stderr, "sqsworker %s: --unique-table checks the table of the QUEUEs' jobs: name at least one QUEUE\n", cmd.path)
		return exitUsage
	}
	var fopts fanout.LintOptions
	switch *delivery {
	case "":
	case "envelope":
		fopts.Delivery = fanout.DeliveryEnvelope
	case "raw":
		fopts.Delivery = fanout.DeliveryRaw
	default:
		fmt.Fprintf(a.stderr, "sqsworker doctor: --delivery %q: use envelope or raw\n", *delivery)
		return exitUsage
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if *policyFile != "" && (given["attempts"] || given["schedule-total"]) {
		fmt.Fprintf(a.stderr, "sqsworker doctor: give the retry policy either with --policy or with --attempts and --schedule-total, not both\n")
		return exitUsage
	}
	assumed := ""
	switch {
	case *policyFile != "":
		p, err := readPolicy(a.stdin, *policyFile)
		if err != nil {
			fmt.Fprintf(a.stderr, "sqsworker doctor: %v\n", err)
			return exitUsage
		}
		opts.Attempts = p.HealthyRetryPolicy.NumRetries + 1
		opts.ScheduleTotal = p.MaxTotal()
	case !given["attempts"] && !given["schedule-total"]:
		p := retry.DefaultDeliveryPolicy()
		opts.Attempts = p.HealthyRetryPolicy.NumRetries + 1
		opts.ScheduleTotal = p.MaxTotal()
		assumed = fmt.Sprintf("(checked against the worker's default retry policy, %d deliveries over up to %s; give yours with --policy FILE)",
			opts.Attempts, formatDuration(opts.ScheduleTotal))
	}
	if (given["snoozes"] || given["exact-attempts"]) && !*useFleet {
		fmt.Fprintf(a.stderr, "sqsworker doctor: --snoozes and --exact-attempts go with --fleet\n")
		return exitUsage
	}
	flint.Attempts = opts.Attempts
	if !a.checkQueues(cmd, queues...) {
		return exitUsage
	}
	clients := a.regionClients(cmd, conn)
	var tableFindings []dlq.Finding
	if *uniqueTableName != "" {
		db, err := a.newDynamo(ctx, *conn)
		if err != nil {
			return a.fail(cmd, err)
		}
		tr := a.describeKeyTable(ctx, db, *uniqueTableName, uniqueTable)
		if ctx.Err() != nil {
			return a.fail(cmd, ctx.Err())
		}
		tableFindings = keyTableFindings(tr, uniqueTable)
	}
	exit := exitOK
	var reports []doctorReport
	for _, q := range queues {
		c, ok := clients.sqsFor(ctx, q)
		if !ok {
			return exitProblems
		}
		var sc snsClient
		if !*noSubs {
			if sc, ok = clients.snsFor(ctx, q); !ok {
				return exitProblems
			}
		}
		r := doctorReport{Queue: queueref.Name(q), Findings: []dlq.Finding{}}
		url, err := queueref.Resolve(ctx, c, q)
		if err == nil {
			r.URL = url
			var fs []dlq.Finding
			if sc != nil {
				fopts.Queue = opts
				fs, err = fanout.Lint(ctx, sc, c, url, fopts)
			} else {
				fs, err = dlq.Lint(ctx, c, url, opts)
			}
			r.Findings = append(r.Findings, fs...)
			if err == nil && *useFleet {
				fs, err = fleet.Lint(ctx, c, url, flint)
				r.Findings = append(r.Findings, fs...)
			}
		}
		if err != nil {
			if abortsAll(ctx, err) {
				return a.fail(cmd, err)
			}
			r.Error = err.Error()
			exit = exitProblems
		}
		r.Findings = append(r.Findings, tableFindings...)
		setupFixes(q, r.Findings)
		for _, f := range r.Findings {
			if f.Severity >= dlq.SeverityWarning {
				exit = exitProblems
			}
		}
		reports = append(reports, r)
	}
	if *schedGroup != "" {
		r, code, ok := a.doctorSchedules(ctx, cmd, clients, *schedGroup)
		if !ok {
			return code
		}
		if code != exitOK {
			exit = code
		}
		reports = append(reports, r)
	}
	if *out == "json" {
		a.writeJSON(reports)
		return exit
	}
	if assumed != "" && len(queues) > 0 {
		fmt.Fprintln(a.stdout, assumed)
		fmt.Fprintln(a.stdout)
	}
	for i, r := range reports {
		if i > 0 {
			fmt.Fprintln(a.stdout)
		}
		printReport(a.stdout, r)
	}
	return exit
}

func printReport(w io.Writer, r doctorReport) {
	if r.ScheduleGroup != "" {
		r.Queue = "schedule group " + r.ScheduleGroup
	}
	if r.Error != "" {
		fmt.Fprintf(w, "%s: cannot check: %s\n", r.Queue, r.Error)
		return
	}
	var problems, notes int
	for _, f := range r.Findings {
		if f.Severity >= dlq.SeverityWarning {
			problems++
		} else {
			notes++
		}
	}
	switch {
	case problems == 0 && notes == 0:
		fmt.Fprintf(w, "%s: ok\n", r.Queue)
		return
	case problems == 0:
		fmt.Fprintf(w, "%s: ok, %s\n", r.Queue, count(notes, "note"))
	default:
		fmt.Fprintf(w, "%s: %s\n", r.Queue, count(problems, "problem"))
	}
	printFindings(w, r.Findings)
}

// printFindings writes findings, each with its severity, code, message
// and fix.
func printFindings(w io.Writer, fs []dlq.Finding) {
	for _, f := range fs {
		fmt.Fprintf(w, "  %-8s %s\n", f.Severity, f.Code)
		fmt.Fprintf(w, "           %s\n", wrapText(f.Message, 80, "           "))
		fmt.Fprintf(w, "           fix: %s\n", wrapText(f.Fix, 80, "                "))
	}
}

// count formats "1 problem", "2 problems", "3 retries".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if stem, ok := strings.CutSuffix(noun, "y"); ok && !strings.HasSuffix(stem, "a") && !strings.HasSuffix(stem, "e") && !strings.HasSuffix(stem, "o") {
		return fmt.Sprintf("%d %sies", n, stem)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// wrapText wraps s at width columns, for text that starts at column
// len(indent), indenting continuation lines to the same column.
func wrapText(s string, width int, indent string) string {
	var b strings.Builder
	col := utf8.RuneCountInString(indent)
	for i, word := range strings.Fields(s) {
		if i > 0 {
			if col+1+utf8.RuneCountInString(word) > width {
				b.WriteString("\n" + indent)
				col = utf8.RuneCountInString(indent)
			} else {
				b.WriteByte(' ')
				col++
			}
		}
		b.WriteString(word)
		col += utf8.RuneCountInString(word)
	}
	return b.String()
}

// readPolicy reads a delivery policy file ("-" for stdin), checked against
// SQS's limits. Its errors name the file and say what is wrong in one
// sentence.
func readPolicy(stdin io.Reader, name string) (retry.DeliveryPolicy, error) {
	source := name
	if name == "-" {
		source = "stdin"
	}
	data, err := readInput(stdin, name)
	if err != nil {
		return retry.DeliveryPolicy{}, fmt.Errorf("reading the delivery policy: %w", err)
	}
	p, err := retry.ParseDeliveryPolicySQS(data)
	if err != nil {
		return retry.DeliveryPolicy{}, errors.New(source + ": " + policyProblem(err, nil))
	}
	return p, nil
}

// policyFlagNames maps delivery policy fields to the policy preview flags
// that set them.
var policyFlagNames = map[string]string{
	"minDelayTarget": "--min-delay", "maxDelayTarget": "--max-delay", "numRetries": "--retries",
	"numNoDelayRetries": "--no-delay-retries", "numMinDelayRetries": "--min-delay-retries",
	"numMaxDelayRetries": "--max-delay-retries", "backoffFunction": "--backoff",
}

// policyProblem says what is wrong with a delivery policy in one sentence
// for people: "healthyRetryPolicy.numRetries: 101 is above SNS's limit of
// 100; lower it, or drop --sns: SQS's limits allow up to 999". When
// flagsSet is not nil, a field set by a flag is named by the flag too.
func policyProblem(err error, flagsSet map[string]bool) string {
	var pe *retry.PolicyError
	if !errors.As(err, &pe) {
		return err.Error()
	}
	where := pe.Field
	if where == "" {
		where = "malformed JSON"
	}
	if i := strings.LastIndexByte(where, '.'); flagsSet != nil {
		if f := policyFlagNames[where[i+1:]]; f != "" && flagsSet[strings.TrimPrefix(f, "--")] {
			where += " (" + f + ")"
		}
	}
	msg := where + ": " + pe.Problem
	if pe.SQSAllows != "" {
		msg += ", or drop --sns: SQS's limits allow " + pe.SQSAllows
	}
	return msg
}

// readInput reads a file, or stdin for "-".
func readInput(stdin io.Reader, name string) ([]byte, error) {
	if name == "-" {
		return io.ReadAll(stdin)
	}
	return os.ReadFile(name)
}

// doctorSchedules checks the schedules of an EventBridge Scheduler group
// (schedules.Lint); ok is false when the command must stop with code.
func (a *app) doctorSchedules(ctx context.Context, cmd *command, clients *regionClients, group string) (doctorReport, int, bool) {
	r := doctorReport{ScheduleGroup: group, Findings: []dlq.Finding{}}
	sc, err := a.newScheduler(ctx, *clients.conn)
	if err != nil {
		return r, a.fail(cmd, err), false
	}
	c, ok := clients.sqsFor(ctx, "")
	if !ok {
		return r, exitProblems, false
	}
	fs, err := schedules.Lint(ctx, sc, c, func(o *schedules.Options) { o.Group = group })
	r.Findings = append(r.Findings, fs...)
	exit := exitOK
	if err != nil {
		if abortsAll(ctx, err) {
			return r, a.fail(cmd, err), false
		}
		r.Error, exit = err.Error(), exitProblems
	}
	for _, f := range r.Findings {
		if f.Severity >= dlq.SeverityWarning {
			exit = exitProblems
		}
	}
	return r, exit, true
}

// keyTableFindings turns a key table's check into doctor findings: an
// error per problem (code "<cmd>-table"), or a note that it is right.
func keyTableFindings(r fleetTableReport, spec keyTableSpec) []dlq.Finding {
	code := spec.cmd + "-table"
	if r.OK {
		return []dlq.Finding{{Severity: dlq.SeverityInfo, Code: code + "-ok",
			Message: fmt.Sprintf("the %s table %s is right: partition key %s, time-to-live on %s", spec.kind, r.Table, spec.key, spec.ttl),
			Fix:     "nothing to change"}}
	}
	var fs []dlq.Finding
	for _, p := range r.Problems {
		fs = append(fs, dlq.Finding{Severity: dlq.SeverityError, Code: code, Message: p,
			Fix: fmt.Sprintf("run `sqsworker %s create-table %s` (or fix the name or the region); `sqsworker %s check %s` checks it again", spec.cmd, r.Table, spec.cmd, r.Table)})
	}
	return fs
}
