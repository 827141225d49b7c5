package dlq

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sqsworker/sqsworker/internal/deadletter"
	"github.com/sqsworker/sqsworker/internal/sqserr"
	"github.com/sqsworker/sqsworker/internal/sqslimit"
	"github.com/sqsworker/sqsworker/queueref"
)

// Severity ranks a Finding.
type Severity int

// The severities, from least to most serious.
const (
	// SeverityInfo is worth knowing; nothing is wrong.
	SeverityInfo Severity = iota
	// SeverityWarning can lose or delay jobs in some circumstances.
	SeverityWarning
	// SeverityError loses jobs, or cuts their retries short, as configured.
	SeverityError
)

// String returns "info", "warning" or "error".
func (s Severity) String() string {
	switch s {
	case SeverityInfo:
		return "info"
	case SeverityWarning:
		return "warning"
	case SeverityError:
		return "error"
	}
	return "severity(" + strconv.Itoa(int(s)) + ")"
}

// MarshalText encodes the severity as its String.
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText decodes "info", "warning" or "error".
func (s *Severity) UnmarshalText(text []byte) error {
	for _, v := range []Severity{SeverityInfo, SeverityWarning, SeverityError} {
		if string(text) == v.String() {
			*s = v
			return nil
		}
	}
	return fmt.Errorf("dlq: unknown severity %q; want info, warning or error", text)
}

// Finding is one problem (or remark) Lint found in a queue's setup.
type Finding struct {
	Severity Severity `json:"severity"`
	// Code identifies the kind of finding: one of the codes in the table
	// of the package doc ("no-redrive-policy", …); fanout and fleet add
	// their own.
	Code string `json:"code"`
	// Message says what is wrong and what it does to jobs.
	Message string `json:"message"`
	// Fix says exactly what to change.
	Fix string `json:"fix"`
}

// minVisibilityTimeout is the shortest visibility timeout Lint accepts: below
// it, one slow SQS call lets a message reappear before the heartbeat can
// extend it.
const minVisibilityTimeout = 5 * time.Second

// LintOptions describes how the queue is consumed, for the checks that
// depend on it. Every field's zero value is usable: a check whose input is
// zero is skipped.
type LintOptions struct {
	// Schedule is the retry schedule: the delay before each retry, in
	// order (so a schedule with n delays allows n+1 deliveries);
	// retry.DeliveryPolicy is one. It supplies Attempts and ScheduleTotal
	// when those are zero.
	Schedule interface{ Delays() []time.Duration }
	// Attempts is how many deliveries the retry policy allows (numRetries+1).
	// Checked against maxReceiveCount.
	Attempts int
	// ScheduleTotal is the sum of the retry delays. With HandlerTimeout ×
	// Attempts, checked against MessageRetentionPeriod.
	ScheduleTotal time.Duration
	// HandlerTimeout is the longest one attempt may run.
	HandlerTimeout time.Duration
	// Visibility is the visibility timeout the consumer asks for when it
	// receives. Zero value: the queue's VisibilityTimeout.
	Visibility time.Duration
	// HeartbeatThreshold is how long before a message's visibility deadline
	// the heartbeat extends it; the visibility timeout must be longer.
	HeartbeatThreshold time.Duration
	// LambdaTimeout is the function timeout when an AWS Lambda function
	// consumes the queue.
	LambdaTimeout time.Duration
}

// Lint checks the dead-letter setup of queue (a name, URL or ARN, resolved
// on each call with queueref.Resolve) against how it is consumed and
// returns what it finds, most checks first by the queue's own settings and
// then its dead-letter queue's. Each Finding says what to change. The error
// is for failures to read the configuration (for example the queue does
// not exist), not for findings.
//
// A queue without a RedrivePolicy that is the dead-letter queue of other
// queues gets an info finding (is-dead-letter-queue) instead of an error.
//
// Lint needs sqs:GetQueueAttributes on both queues and sqs:GetQueueUrl
// (and, for a queue without a RedrivePolicy, what SourcesOf needs).
func Lint(ctx context.Context, client API, queue string, opts LintOptions) ([]Finding, error) {
	queueURL, err := queueref.Resolve(ctx, client, queue)
	if err != nil {
		return nil, err
	}
	name := queueref.Name(queueURL)
	src, err := deadletter.GetAttributes(ctx, client, queueURL, deadletter.AttrRedrivePolicy, deadletter.AttrQueueArn, deadletter.AttrFifoQueue, deadletter.AttrRetention, deadletter.AttrVisibilityTimeout, deadletter.AttrMaxMessageSize)
	if err != nil {
		if sqserr.NotExist(err) {
			return nil, fmt.Errorf("queue %s does not exist (%s); check the name, region and account: %w", name, queueURL, err)
		}
		return nil, fmt.Errorf("reading the attributes of queue %s: %w", name, err)
	}
	if opts.Schedule != nil {
		delays := opts.Schedule.Delays()
		if opts.Attempts == 0 {
			opts.Attempts = len(delays) + 1
		}
		if opts.ScheduleTotal == 0 {
			for _, d := range delays {
				opts.ScheduleTotal += d
			}
		}
	}
	var fs []Finding
	add := func(sev Severity, code, msg, fix string) {
		fs = append(fs, Finding{Severity: sev, Code: code, Message: msg, Fix: fix})
	}
	retention, ok := deadletter.SecondsAttr(src, deadletter.AttrRetention)
	if !ok {
		retention = sqslimit.DefaultRetention
	}
	visibility, _ := deadletter.SecondsAttr(src, deadletter.AttrVisibilityTimeout)
	visWhere := fmt.Sprintf("queue %s's VisibilityTimeout", name)
	visFix := fmt.Sprintf("set queue %s's VisibilityTimeout to at least %%d seconds", name)
	if opts.Visibility > 0 {
		visibility = opts.Visibility
		visWhere = fmt.Sprintf("the visibility timeout the consumer asks for on queue %s", name)
		visFix = "ask for a visibility timeout of at least %d seconds on ReceiveMessage"
	}
	fifo := src[deadletter.AttrFifoQueue] == "true"

	// The queue's own settings.
	if need := opts.ScheduleTotal + time.Duration(opts.Attempts)*opts.HandlerTimeout; need > 0 && retention <= need {
		fix := fmt.Sprintf("set queue %s's MessageRetentionPeriod to at least %d (%s); the most SQS allows is 1209600 (14 days)",
			name, int64(suggestRetention(need)/time.Second), deadletter.HumanDuration(suggestRetention(need)))
		if need >= sqslimit.MaxRetention {
			fix = fmt.Sprintf("shorten the retry policy so that its delays and attempts take well under 14 days (now %s), the longest retention SQS allows", deadletter.HumanDuration(need))
		}
		add(SeverityError, deadletter.CodeRetentionShort,
			fmt.Sprintf("queue %s keeps messages for %s (MessageRetentionPeriod), but the retry schedule takes %s: messages expire before their last retries and are lost, not dead-lettered",
				name, deadletter.HumanDuration(retention), deadletter.HumanDuration(need)), fix)
	}
	if visibility < minVisibilityTimeout || (opts.HeartbeatThreshold > 0 && visibility <= opts.HeartbeatThreshold) {
		floor := minVisibilityTimeout
		if opts.HeartbeatThreshold >= floor {
			floor = 2 * opts.HeartbeatThreshold
		}
		why := fmt.Sprintf("under %s a slow SQS call lets a running job's message reappear before the heartbeat extends it", minVisibilityTimeout)
		if opts.HeartbeatThreshold > 0 && visibility <= opts.HeartbeatThreshold {
			why = fmt.Sprintf("the heartbeat extends a message %s before its deadline, so with this timeout it is always late", deadletter.HumanDuration(opts.HeartbeatThreshold))
		}
		add(SeverityWarning, deadletter.CodeVisibilityShort,
			fmt.Sprintf("%s is %s: %s, and another consumer runs the job at the same time", visWhere, deadletter.HumanDuration(visibility), why),
			fmt.Sprintf(visFix, int64(floor/time.Second)))
	}
	if opts.HandlerTimeout > sqslimit.MaxVisibility {
		add(SeverityWarning, deadletter.CodeHandlerTimeoutOver12h,
			fmt.Sprintf("the handler timeout of %s is longer than 12 hours, the longest SQS keeps a received message invisible (counted from the receive): the heartbeat cannot extend it further, so a handler still running then is cancelled and its message retried",
				deadletter.HumanDuration(opts.HandlerTimeout)),
			"keep each attempt under 12 hours: lower the handler timeout, or split the job into steps that each send the next one")
	}
	if opts.LambdaTimeout > 0 && visibility < 6*opts.LambdaTimeout {
		want := min(6*opts.LambdaTimeout, 12*time.Hour)
		add(SeverityWarning, deadletter.CodeLambdaVisibility,
			fmt.Sprintf("%s is %s, less than 6 × the Lambda function timeout of %s, which AWS recommends: a batch still retrying or throttled reappears and is processed twice",
				visWhere, deadletter.HumanDuration(visibility), deadletter.HumanDuration(opts.LambdaTimeout)),
			fmt.Sprintf("set queue %s's VisibilityTimeout to at least %d seconds (6 × %s)", name, int64(want/time.Second), deadletter.HumanDuration(opts.LambdaTimeout)))
	}

	// The RedrivePolicy.
	raw := src[deadletter.AttrRedrivePolicy]
	suggested := fmt.Sprintf(`{"deadLetterTargetArn":%s,"maxReceiveCount":%d}`, strconv.Quote(suggestDLQARN(src[deadletter.AttrQueueArn], name, fifo)), suggestMaxReceive(opts, fifo))
	if raw == "" {
		sources, err := SourcesOf(ctx, client, queueURL)
		if err != nil {
			return fs, err
		}
		if len(sources) > 0 {
			names := make([]string, len(sources))
			for i, s := range sources {
				names[i] = queueref.Name(s)
			}
			add(SeverityInfo, deadletter.CodeIsDeadLetterQueue,
				fmt.Sprintf("queue %s is the dead-letter queue of %s; a dead-letter queue needs no RedrivePolicy of its own", name, strings.Join(names, ", ")),
				fmt.Sprintf("nothing to change here; check the queue it serves with `sqsworker doctor %s`", names[0]))
			if n, err := Count(ctx, client, queueURL); err == nil && n.Visible > 0 {
				add(SeverityInfo, deadletter.CodeDLQNotEmpty,
					fmt.Sprintf("dead-letter queue %s holds about %s", name, plural(n.Visible, "message")),
					fmt.Sprintf("look at them with `sqsworker dlq peek %s`, then move them back with `sqsworker dlq redrive %s` once the cause is fixed, or drop them with `sqsworker dlq purge %s`", name, name, name))
			}
			return fs, nil
		}
		add(SeverityError, deadletter.CodeNoRedrivePolicy,
			fmt.Sprintf("queue %s has no RedrivePolicy: a job that keeps failing is retried until retention expires (%s) and then lost", name, deadletter.HumanDuration(retention)),
			fmt.Sprintf("create a dead-letter queue and set the RedrivePolicy, e.g. `sqsworker setup %s --max-receive-count %d`, or set RedrivePolicy to %s",
				name, suggestMaxReceive(opts, fifo), suggested))
		return fs, nil
	}
	p, err := deadletter.ParseRedrivePolicy(raw)
	if err != nil {
		add(SeverityError, deadletter.CodeInvalidRedrivePolicy, fmt.Sprintf("queue %s: %v", name, err),
			fmt.Sprintf("set queue %s's RedrivePolicy to %s (with your dead-letter queue's ARN)", name, suggested))
		return fs, nil
	}
	if p.TargetARN == src[deadletter.AttrQueueArn] {
		add(SeverityError, deadletter.CodeRedrivesToItself,
			fmt.Sprintf("queue %s's RedrivePolicy names the queue itself (%s) as its dead-letter queue: SQS and the worker \"dead-letter\" a failing job back into the queue it failed in, so it runs again and again and is counted as dead-lettered each time", name, p.TargetARN),
			fmt.Sprintf("point the RedrivePolicy at a dead-letter queue of its own: `sqsworker setup %s` creates %s and sets it, or set RedrivePolicy to %s",
				name, deadletter.DefaultDLQName(name), suggested))
		return fs, nil
	}
	policy := func(count int) string {
		return fmt.Sprintf(`{"deadLetterTargetArn":%s,"maxReceiveCount":%d}`, strconv.Quote(p.TargetARN), count)
	}
	if opts.Attempts > 0 && p.MaxReceiveCount < opts.Attempts {
		want := deadletter.RecommendedMaxReceiveCount(opts.Attempts, fifo)
		why := fmt.Sprintf("maxReceiveCount at least the attempts, %d", opts.Attempts)
		if fifo {
			why = fmt.Sprintf("on a FIFO queue %d × the attempts, see fifo-max-receive-count", deadletter.FIFOReceiveFactor)
		}
		add(SeverityError, deadletter.CodeMaxReceiveCountLow,
			fmt.Sprintf("queue %s's maxReceiveCount is %d but the retry policy makes %d attempts: SQS moves a message to the dead-letter queue after %d receives, cutting its last %s",
				name, p.MaxReceiveCount, opts.Attempts, p.MaxReceiveCount, lastRetries(opts.Attempts-p.MaxReceiveCount)),
			fmt.Sprintf("set queue %s's RedrivePolicy to %s (%s)", name, policy(want), why))
	} else if want := deadletter.RecommendedMaxReceiveCount(opts.Attempts, true); fifo && opts.Attempts > 0 && p.MaxReceiveCount < want {
		add(SeverityWarning, deadletter.CodeFIFOMaxReceiveCount,
			fmt.Sprintf("FIFO queue %s's maxReceiveCount is %d for a retry policy of %d attempts: when a message of a group fails, the ones received behind it are released unprocessed to keep the order, and each release counts as a receive, so SQS can dead-letter a message that never ran (without provenance)",
				name, p.MaxReceiveCount, opts.Attempts),
			fmt.Sprintf("set queue %s's RedrivePolicy to %s (%d × the attempts, at most %d), e.g. `sqsworker setup %s --max-receive-count %d`", name, policy(want), deadletter.FIFOReceiveFactor, sqslimit.MaxReceiveCount, name, want))
	}
	if opts.LambdaTimeout > 0 && p.MaxReceiveCount < 5 {
		add(SeverityWarning, deadletter.CodeLambdaMaxReceiveCount,
			fmt.Sprintf("queue %s's maxReceiveCount is %d; with a Lambda consumer AWS recommends at least 5, so that throttled or failed invocations do not send messages to the dead-letter queue early", name, p.MaxReceiveCount),
			fmt.Sprintf("set queue %s's RedrivePolicy to %s", name, policy(max(5, opts.Attempts))))
	}

	// The dead-letter queue.
	dlqName := queueref.Name(p.TargetARN)
	url, err := queueref.Resolve(ctx, client, p.TargetARN)
	if errors.Is(err, queueref.ErrInvalid) {
		add(SeverityError, deadletter.CodeInvalidRedrivePolicy, fmt.Sprintf("queue %s's RedrivePolicy names dead-letter queue %q: %v", name, p.TargetARN, err),
			fmt.Sprintf("set queue %s's RedrivePolicy to %s (with your dead-letter queue's ARN)", name, suggested))
		return fs, nil
	}
	if err != nil {
		if !sqserr.NotExist(err) {
			return fs, fmt.Errorf("finding dead-letter queue %s of queue %s: %w", p.TargetARN, name, err)
		}
		add(SeverityError, deadletter.CodeDLQMissing,
			fmt.Sprintf("queue %s's RedrivePolicy names dead-letter queue %s, which does not exist: SQS cannot dead-letter, and the worker cannot move failed jobs", name, p.TargetARN),
			fmt.Sprintf("create queue %s (`sqsworker setup %s` does), with MessageRetentionPeriod 1209600 (14 days)%s", dlqName, name, fifoHint(fifo)))
		return fs, nil
	}
	dlq, err := deadletter.GetAttributes(ctx, client, url, deadletter.AttrFifoQueue, deadletter.AttrRetention, deadletter.AttrVisible, deadletter.AttrMaxMessageSize)
	if err != nil {
		if sqserr.NotExist(err) {
			add(SeverityError, deadletter.CodeDLQMissing,
				fmt.Sprintf("dead-letter queue %s of queue %s does not exist", dlqName, name),
				fmt.Sprintf("create queue %s (`sqsworker setup %s` does)%s", dlqName, name, fifoHint(fifo)))
			return fs, nil
		}
		return fs, fmt.Errorf("reading dead-letter queue %s of queue %s: %w", dlqName, name, err)
	}
	if dlqFIFO := dlq[deadletter.AttrFifoQueue] == "true"; dlqFIFO != fifo {
		add(SeverityError, deadletter.CodeDLQWrongType,
			fmt.Sprintf("queue %s is %s but its dead-letter queue %s is %s: SQS cannot move messages between them, and explicit moves fail", name, deadletter.QueueKind(fifo), dlqName, deadletter.QueueKind(dlqFIFO)),
			fmt.Sprintf("point queue %s's RedrivePolicy at %s (create one with `sqsworker setup %s`)", name, deadletter.QueueKind(fifo), name))
	}
	if srcMax, dlqMax := deadletter.IntAttr(src, deadletter.AttrMaxMessageSize), deadletter.IntAttr(dlq, deadletter.AttrMaxMessageSize); dlqMax > 0 && srcMax > dlqMax {
		add(SeverityWarning, deadletter.CodeDLQMaxMessageSizeSmaller,
			fmt.Sprintf("dead-letter queue %s takes messages of at most %s (MaximumMessageSize) but queue %s takes up to %s: a failed message larger than %s cannot be copied there with its reason, so it is retried until SQS's own redrive moves it after maxReceiveCount receives, without provenance (the worker logs the reason at ERROR)",
				dlqName, deadletter.SizeString(dlqMax), name, deadletter.SizeString(srcMax), deadletter.SizeString(dlqMax)),
			fmt.Sprintf("set dead-letter queue %s's MaximumMessageSize to %d, as queue %s's, or configure an offloader for dead-letter copies (worker.Options.DeadLetterOffloader, e.g. an s3payload.Store)",
				dlqName, srcMax, name))
	}
	dlqRetention, ok := deadletter.SecondsAttr(dlq, deadletter.AttrRetention)
	if !ok {
		dlqRetention = sqslimit.DefaultRetention
	}
	if dlqRetention <= retention {
		fix := fmt.Sprintf("set dead-letter queue %s's MessageRetentionPeriod to 1209600 (14 days, the maximum)", dlqName)
		if retention >= sqslimit.MaxRetention {
			fix = fmt.Sprintf("lower queue %s's MessageRetentionPeriod below 14 days (for example 345600, 4 days) and keep dead-letter queue %s at 1209600 (14 days)", name, dlqName)
		}
		add(SeverityWarning, deadletter.CodeDLQRetentionNotLonger,
			fmt.Sprintf("dead-letter queue %s keeps messages for %s, not longer than queue %s's %s: SQS keeps a message's original enqueue time when it dead-letters it, so a message that spent long retrying expires soon after reaching the dead-letter queue",
				dlqName, deadletter.HumanDuration(dlqRetention), name, deadletter.HumanDuration(retention)), fix)
	}
	if n := deadletter.IntAttr(dlq, deadletter.AttrVisible); n > 0 {
		add(SeverityInfo, deadletter.CodeDLQNotEmpty,
			fmt.Sprintf("dead-letter queue %s holds about %s", dlqName, plural(n, "message")),
			fmt.Sprintf("look at them with `sqsworker dlq peek %s`, then move them back with `sqsworker dlq redrive %s` once the cause is fixed, or drop them with `sqsworker dlq purge %s`", name, name, name))
	}
	return fs, nil
}

func fifoHint(fifo bool) string {
	if fifo {
		return " and FifoQueue true"
	}
	return ""
}

// suggestDLQARN proposes the ARN of a dead-letter queue for the queue
// with the given ARN: Setup's name, NAME-dlq, in the same account and region.
func suggestDLQARN(queueARN, name string, fifo bool) string {
	dlqName := deadletter.DefaultDLQName(name)
	if fifo && !strings.HasSuffix(dlqName, ".fifo") {
		dlqName += ".fifo"
	}
	if a, err := queueref.ParseARN(queueARN); err == nil {
		a.Name = dlqName
		return a.String()
	}
	return "arn:aws:sqs:REGION:ACCOUNT:" + dlqName
}

// suggestMaxReceive is the maxReceiveCount Lint proposes for a queue
// without a RedrivePolicy: Setup's default, or more for the policy.
func suggestMaxReceive(opts LintOptions, fifo bool) int {
	if fifo {
		return max(deadletter.RecommendedMaxReceiveCount(opts.Attempts, true), deadletter.DefaultFIFOMaxReceiveCount)
	}
	return max(opts.Attempts, deadletter.DefaultMaxReceiveCount)
}

// suggestRetention proposes a retention comfortably above need: twice it,
// in whole days, within SQS's limits.
func suggestRetention(need time.Duration) time.Duration {
	const day = 24 * time.Hour
	s := ((2*need + day - 1) / day) * day
	return min(max(s, sqslimit.DefaultRetention), sqslimit.MaxRetention)
}

// lastRetries says how many retries are cut: "retry", "2 retries".
func lastRetries(n int) string {
	if n == 1 {
		return "retry"
	}
	return strconv.Itoa(n) + " retries"
}

// plural formats a count with its noun: "1 message", "2 messages".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
