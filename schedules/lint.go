package schedules

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/internal/deadletter"
	"github.com/sqsworker/sqsworker/internal/sqserr"
	"github.com/sqsworker/sqsworker/queueref"
)

// The codes of Lint's findings (documented in the package doc).
const (
	codeNoDLQ         = "schedule-no-dlq"
	codeDLQMissing    = "schedule-dlq-missing"
	codeDLQRetention  = "schedule-dlq-retention-short"
	codeDLQNotEmpty   = "schedule-dlq-not-empty"
	codeNoRetryPolicy = "schedule-no-retry-policy"
	codeRetriesOff    = "schedule-retries-off"
	codeTargetMissing = "schedule-target-missing"
	codeTargetNotSQS  = "schedule-target-not-sqs"
	codeDLQFIFO       = "schedule-dlq-fifo"
)

// minDLQRetention is the shortest retention Lint accepts for a schedule's
// dead-letter queue: a tick dead-lettered on a Friday is still there a
// week later.
const (
	minDLQRetention    = 7 * 24 * time.Hour
	maxRetentionSecond = 1209600
)

// Lint checks the failure handling of every schedule in the group
// Options.Group and returns what to change, in schedule name order: each
// schedule has a dead-letter queue that exists and keeps messages at least
// 7 days, a retry policy that retries, and a target queue that exists. A
// dead-letter queue holding messages is a warning whose message gives its
// depth: each message is a tick Scheduler gave up delivering, carrying the
// job's envelope. Every finding's message names its schedule. queues
// reads the queues (GetQueueUrl, GetQueueAttributes); it must reach the
// queues' account and region.
func Lint(ctx context.Context, client API, queues dlq.API, optFns ...func(*Options)) ([]dlq.Finding, error) {
	o := options(optFns)
	ns, err := names(ctx, client, o, true)
	if err != nil {
		return nil, err
	}
	var fs []dlq.Finding
	users := map[string][]string{} // DLQ ARN → the schedules using it
	var dlqs []string
	for _, n := range ns {
		g, err := do(ctx, o.MaxAttempts, "GetSchedule", func(ctx context.Context, f ...func(*scheduler.Options)) (*scheduler.GetScheduleOutput, error) {
			return client.GetSchedule(ctx, &scheduler.GetScheduleInput{Name: aws.String(n), GroupName: aws.String(o.Group)}, f...)
		})
		if notFound(err) {
			continue // deleted meanwhile
		}
		if err != nil {
			return fs, err
		}
		more, arn, err := lintOne(ctx, queues, g)
		fs = append(fs, more...)
		if err != nil {
			return fs, err
		}
		if arn != "" {
			if users[arn] == nil {
				dlqs = append(dlqs, arn)
			}
			users[arn] = append(users[arn], n)
		}
	}
	// Each dead-letter queue once, with the schedules that share it.
	for _, arn := range dlqs {
		more, err := lintDLQ(ctx, queues, arn, users[arn])
		fs = append(fs, more...)
		if err != nil {
			return fs, err
		}
	}
	return fs, nil
}

// lintOne checks one schedule's target and retry policy, and returns its
// dead-letter queue's ARN for lintDLQ ("" when it has none).
func lintOne(ctx context.Context, queues dlq.API, g *scheduler.GetScheduleOutput) ([]dlq.Finding, string, error) {
	name := aws.ToString(g.Name)
	var fs []dlq.Finding
	add := func(sev dlq.Severity, code, msg, fix string) {
		fs = append(fs, dlq.Finding{Severity: sev, Code: code, Message: "schedule " + name + ": " + msg, Fix: fix})
	}
	t := g.Target
	if t == nil {
		return nil, "", nil
	}
	target := aws.ToString(t.Arn)
	if !strings.HasPrefix(target, "arn:aws") || !strings.Contains(target, ":sqs:") {
		add(dlq.SeverityInfo, codeTargetNotSQS, fmt.Sprintf("its target %s is not an SQS queue; its target was not checked", target), "none needed: schedules sqsworker writes target SQS queues")
	} else if _, err := queueref.Resolve(ctx, queues, target); err != nil {
		if !sqserr.NotExist(err) {
			return fs, "", err
		}
		add(dlq.SeverityError, codeTargetMissing, fmt.Sprintf("its target queue %s does not exist: every tick fails to deliver and goes to its dead-letter queue, or is lost", queueref.Name(target)),
			fmt.Sprintf("create queue %s (`sqsworker setup %s`), or point the schedule at an existing queue and apply again", queueref.Name(target), queueref.Name(target)))
	}
	switch r := t.RetryPolicy; {
	case r == nil:
		add(dlq.SeverityWarning, codeNoRetryPolicy, "it has no retry policy, so Scheduler's defaults (185 retries over 24 h) apply unseen",
			"apply the schedule with schedules.Apply or `sqsworker schedules apply` (they set MaxRetries and MaxEventAge explicitly)")
	case aws.ToInt32(r.MaximumRetryAttempts) == 0:
		add(dlq.SeverityWarning, codeRetriesOff, "its retry policy allows 0 retries: one failed delivery (a throttled or briefly unavailable queue) loses the tick or dead-letters it",
			"set Options.MaxRetries (`--max-retries`) above 0, e.g. 185 (Scheduler's default), and apply again")
	}
	var arn string
	if t.DeadLetterConfig != nil {
		arn = aws.ToString(t.DeadLetterConfig.Arn)
	}
	if arn == "" {
		add(dlq.SeverityWarning, codeNoDLQ, "it has no dead-letter queue: a tick Scheduler gives up delivering (after its retries, or at once for a missing queue or a denied role) is lost without a trace",
			fmt.Sprintf("create a standard queue for it with MessageRetentionPeriod %d (14 days) and apply with Options.DLQ (`--dlq ARN`); the execution role needs sqs:SendMessage on it", maxRetentionSecond))
	}
	return fs, arn, nil
}

// lintDLQ checks the dead-letter queue arn of the schedules names: it
// exists, keeps messages long enough, and is empty.
func lintDLQ(ctx context.Context, queues dlq.API, arn string, names []string) ([]dlq.Finding, error) {
	var fs []dlq.Finding
	who := "schedule " + names[0] + ": its"
	if len(names) > 1 {
		who = "schedules " + strings.Join(names, ", ") + ": their"
	}
	add := func(sev dlq.Severity, code, msg, fix string) {
		fs = append(fs, dlq.Finding{Severity: sev, Code: code, Message: who + " " + msg, Fix: fix})
	}
	dname := queueref.Name(arn)
	if queueref.FIFO(arn) {
		add(dlq.SeverityError, codeDLQFIFO, fmt.Sprintf("dead-letter queue %s is a FIFO queue: Scheduler takes only a standard queue as a schedule's dead-letter queue", dname),
			fmt.Sprintf("create a standard queue (MessageRetentionPeriod %d) and apply with it as Options.DLQ (`--dlq ARN`)", maxRetentionSecond))
		return fs, nil
	}
	url, err := queueref.Resolve(ctx, queues, arn)
	if err != nil {
		if !sqserr.NotExist(err) {
			return fs, err
		}
		add(dlq.SeverityError, codeDLQMissing, fmt.Sprintf("dead-letter queue %s does not exist: a tick Scheduler gives up delivering is lost", dname),
			fmt.Sprintf("create queue %s (standard, MessageRetentionPeriod %d)", dname, maxRetentionSecond))
		return fs, nil
	}
	attrs, err := deadletter.GetAttributes(ctx, queues, url, deadletter.AttrRetention, deadletter.AttrVisible, deadletter.AttrNotVisible)
	if err != nil {
		return fs, err
	}
	retention, ok := deadletter.SecondsAttr(attrs, deadletter.AttrRetention)
	if !ok {
		retention = 4 * 24 * time.Hour
	}
	if retention < minDLQRetention {
		add(dlq.SeverityWarning, codeDLQRetention, fmt.Sprintf("dead-letter queue %s keeps messages %s: a failed tick that lands on a Friday may expire before anyone looks", dname, deadletter.HumanDuration(retention)),
			fmt.Sprintf("set queue %s's MessageRetentionPeriod to %d (14 days, the maximum)", dname, maxRetentionSecond))
	}
	if depth := deadletter.IntAttr(attrs, deadletter.AttrVisible) + deadletter.IntAttr(attrs, deadletter.AttrNotVisible); depth > 0 {
		add(dlq.SeverityWarning, codeDLQNotEmpty, fmt.Sprintf("dead-letter queue %s holds %d message(s): ticks Scheduler failed to deliver (each message is the job's envelope; its attributes say why)", dname, depth),
			fmt.Sprintf("read them (the console's Schedules page, or aws sqs receive-message on %s), fix the cause (the target queue, the execution role's sqs:SendMessage, a KMS key), then send their bodies to the schedule's queue (Unwrap runs each as its tick) or delete them", dname))
	}
	return fs, nil
}
