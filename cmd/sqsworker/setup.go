package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/fanout"
	"github.com/sqsworker/sqsworker/internal/sqslimit"
	"github.com/sqsworker/sqsworker/internal/validate"
	"github.com/sqsworker/sqsworker/queueref"
)

func setupCommand() *command {
	return &command{
		path:     "setup",
		args:     "NAME",
		synopsis: "create a queue and its dead-letter queue, and with --topic the SNS chain (idempotent)",
		help: `Creates what is missing of queue NAME, its dead-letter queue NAME-dlq and the
RedrivePolicy linking them, and changes only what a flag asks for: an
existing queue keeps its settings (its maxReceiveCount, retentions,
visibility timeout and dead-letter queue) unless a flag sets them. It prints
what it created or changed, or "no changes"; running it again changes nothing.

It refuses to lower an existing maxReceiveCount or retention unless --force
is given: a lower maxReceiveCount makes SQS dead-letter jobs before their
retry policy gives up (without provenance), and a shorter retention deletes
messages still waiting for a retry.

New queues get: maxReceiveCount 5 (FIFO: 40, ten times the 4 deliveries of
SNS's default policy, because a FIFO queue counts a receive for each message
released behind a failed one of its group), retention 4 days, and 14 days
(the maximum) for the dead-letter queue, longer than the queue's because SQS
keeps a message's original enqueue time when it dead-letters it. A name
ending in .fifo (or --fifo) makes a FIFO pair.

With --topic TOPIC it sets up SNS fan-out into NAME too: the topic (FIFO
when its name ends in .fifo, and then FIFO queues throughout), the
subscription of NAME to it, the subscription's own dead-letter queue
NAME-fanout-dlq (for what SNS cannot deliver) as its RedrivePolicy, and queue
policies on NAME and on that queue letting the topic's SNS principal send
(conditioned on the topic's ARN). A queue policy that lets everyone send
(Principal *, sqs:SendMessage, no condition) gets the topic's statement too,
and setup reports it as a problem (queue-policy-open) without removing it:
other senders may rely on it, and anyone can send a forged SNS envelope
through it. Remove it yourself once the topic's statement is in place. --raw turns on raw message delivery
(--raw=false turns it off); without it, the handler needs fanout.Unwrap.
-o json prints the ARNs and URLs of everything, and what changed.

IAM: sqs:CreateQueue, sqs:SetQueueAttributes, sqs:GetQueueAttributes,
sqs:GetQueueUrl; with --topic also sns:CreateTopic, sns:GetTopicAttributes,
sns:Subscribe, sns:ListSubscriptionsByTopic, sns:GetSubscriptionAttributes,
sns:SetSubscriptionAttributes.`,
		run: runSetup,
	}
}

func runSetup(a *app, ctx context.Context, cmd *command, args []string) int {
	fs := a.flags(cmd)
	conn := awsFlagsOn(fs)
	out := outputFlag(fs)
	var o dlq.SetupOptions
	fs.BoolVar(&o.FIFO, "fifo", false, "make FIFO queues (NAME gets the .fifo suffix)")
	fs.StringVar(&o.DLQName, "dlq-name", "", "dead-letter queue name (default: the current one, else NAME-dlq)")
	fs.IntVar(&o.MaxReceiveCount, "max-receive-count", 0, "receives before SQS dead-letters a message; at least the retry policy's attempts, ten times that for FIFO (default: keep; new queue: 5, FIFO 40)")
	fs.Var(durationValue{&o.VisibilityTimeout}, "visibility-timeout", "the queue's VisibilityTimeout, e.g. 30s (default: keep; new queue: SQS's 30s)")
	fs.Var(durationValue{&o.Retention}, "retention", "the queue's MessageRetentionPeriod, e.g. 4d (default: keep; new queue: 4d)")
	fs.Var(durationValue{&o.DLQRetention}, "dlq-retention", "the dead-letter queue's MessageRetentionPeriod (default: keep; new queue: 14d)")
	fs.BoolVar(&o.ContentBasedDeduplication, "content-based-dedup", false, "FIFO: deduplicate by content when senders give no deduplication ID")
	fs.BoolVar(&o.AllowLowering, "force", false, "allow lowering an existing maxReceiveCount or retention")
	var fo fanout.SetupOptions
	fs.StringVar(&fo.Topic, "topic", "", "SNS topic (name or ARN) to subscribe NAME to, with the whole fan-out chain")
	rawDelivery := fs.Bool("raw", false, "with --topic: raw message delivery (the queue gets the published message, not SNS's envelope); --raw=false turns it off (default: keep; new: off)")
	filterFile := fs.String("filter-policy", "", "with --topic: the subscription's filter policy, a JSON file (\"-\" for stdin) (default: keep; new: none)")
	fs.StringVar(&fo.FilterPolicyScope, "filter-policy-scope", "", "with --topic: MessageAttributes or MessageBody (default: keep; new: MessageAttributes)")
	fs.StringVar(&fo.FanoutDLQName, "fanout-dlq", "", "with --topic: the subscription's dead-letter queue (default: the current one, else NAME-fanout-dlq)")
	fs.Var(durationValue{&fo.FanoutDLQRetention}, "fanout-dlq-retention", "with --topic: its MessageRetentionPeriod (default: keep; new: 14d)")
	pos, code, ok := a.parseWithOutput(cmd, fs, args, 1, 1, out)
	if !ok {
		return code
	}
	o.Name = pos[0]
	if !a.checkQueues(cmd, o.Name) {
		return exitUsage
	}
	conn = queueConn(conn, o.Name)
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if fo.Topic == "" {
		for _, name := range []string{"raw", "filter-policy", "filter-policy-scope", "fanout-dlq", "fanout-dlq-retention"} {
			if set[name] {
				fmt.Fprintf(a.stderr, "sqsworker %s: --%s needs --topic\n", cmd.path, name)
				return exitUsage
			}
		}
	}
	if set["raw"] {
		fo.RawMessageDelivery = rawDelivery
	}
	if *filterFile != "" {
		data, err := readInput(a.stdin, *filterFile)
		if err != nil {
			fmt.Fprintf(a.stderr, "sqsworker %s: reading the filter policy: %v\n", cmd.path, err)
			return exitUsage
		}
		fo.FilterPolicy = strings.TrimSpace(string(data))
	}
	if err := checkSetupFlags(o, fo); err != nil {
		fmt.Fprintf(a.stderr, "sqsworker %s: %v\n", cmd.path, err)
		return exitUsage
	}
	c, ok := a.connect(ctx, cmd, conn)
	if !ok {
		return exitProblems
	}
	if fo.Topic != "" {
		return a.setupFanout(ctx, cmd, conn, c, o, fo, *out)
	}
	res, err := dlq.Setup(ctx, c, o)
	if err != nil {
		return a.failSetup(cmd, err)
	}
	if *out == "json" {
		a.writeJSON(setupJSON(res))
		return exitOK
	}
	printSetup(a.stdout, res, res.Changes)
	fmt.Fprintf(a.stdout, "\nCheck it against your retry policy: sqsworker doctor --policy policy.json %s\n", queueref.Name(res.QueueURL))
	return exitOK
}

// failSetup reports a setup error; a refusal to lower a setting is a
// usage error (exit 2): the flags ask for it without --force.
func (a *app) failSetup(cmd *command, err error) int {
	code := a.fail(cmd, err)
	if code == exitProblems && errors.Is(err, dlq.ErrWouldLower) {
		return exitUsage
	}
	return code
}

// setupFanout is setup --topic.
func (a *app) setupFanout(ctx context.Context, cmd *command, conn *awsFlags, c client, o dlq.SetupOptions, fo fanout.SetupOptions, out string) int {
	sc, ok := a.connectSNS(ctx, cmd, conn)
	if !ok {
		return exitProblems
	}
	fo.Queue = o
	res, err := fanout.Setup(ctx, sc, c, fo)
	if err != nil {
		return a.failSetup(cmd, err)
	}
	if out == "json" {
		j := struct {
			setupOut
			TopicARN     string              `json:"topicArn"`
			Subscription fanout.Subscription `json:"subscription"`
			FanoutDLQ    string              `json:"fanoutDlq"`
			FanoutDLQURL string              `json:"fanoutDlqUrl"`
			FanoutDLQARN string              `json:"fanoutDlqArn"`
			Findings     []dlq.Finding       `json:"findings"`
		}{setupJSON(res.Queue), res.TopicARN, res.Subscription, queueref.Name(res.FanoutDLQURL), res.FanoutDLQURL, res.FanoutDLQARN, res.Findings}
		if j.Findings == nil {
			j.Findings = []dlq.Finding{}
		}
		j.Changed, j.Changes = len(res.Changes) > 0, res.Changes
		if j.Changes == nil {
			j.Changes = []dlq.Change{}
		}
		a.writeJSON(j)
		return exitOK
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
	delivery := "SNS's JSON envelope (unwrap it with fanout.Unwrap)"
	if res.Subscription.Raw {
		delivery = "raw (the published message itself)"
	}
	fmt.Fprintf(tw, "topic\t%s\n", res.TopicARN)
	pending := ""
	if res.Subscription.Pending {
		pending = " (pending confirmation: SNS delivers nothing until the queue's owner confirms it)"
	}
	fmt.Fprintf(tw, "subscription\t%s%s\n", res.Subscription.ARN, pending)
	fmt.Fprintf(tw, "delivery\t%s\n", delivery)
	if res.Subscription.FilterPolicy != "" {
		fmt.Fprintf(tw, "filter policy\t%s (%s)\n", res.Subscription.FilterPolicy, orDefault(res.Subscription.FilterPolicyScope, "MessageAttributes"))
	}
	fmt.Fprintf(tw, "subscription dead-letter queue\t%s\n", res.FanoutDLQURL)
	tw.Flush()
	fmt.Fprintln(a.stdout)
	printSetup(a.stdout, res.Queue, res.Changes)
	if len(res.Findings) > 0 {
		fmt.Fprintf(a.stdout, "\n%s left as found (setup does not remove what other senders may rely on):\n", count(len(res.Findings), "problem"))
		printFindings(a.stdout, res.Findings)
	}
	flag := "envelope"
	if res.Subscription.Raw {
		flag = "raw"
	}
	fmt.Fprintf(a.stdout, "\nCheck the chain: sqsworker doctor --delivery %s --policy policy.json %s\n", flag, queueref.Name(res.Queue.QueueURL))
	return exitOK
}

// topicNameOf returns the name part of a topic ARN.
func topicNameOf(arn string) string {
	if t, err := fanout.ParseTopicARN(arn); err == nil {
		return t.Name
	}
	return arn
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// printSetup writes the queue pair and what changed.
func printSetup(w io.Writer, res dlq.SetupResult, changes []dlq.Change) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "queue\t%s\t%s\tretention %s, visibility timeout %s\n", queueref.Name(res.QueueURL), res.QueueURL, formatDuration(res.Retention), formatDuration(res.VisibilityTimeout))
	fmt.Fprintf(tw, "dead-letter queue\t%s\t%s\tretention %s\n", queueref.Name(res.DLQURL), res.DLQURL, formatDuration(res.DLQRetention))
	fmt.Fprintf(tw, "maxReceiveCount\t%d\n", res.MaxReceiveCount)
	tw.Flush()
	printChanges(w, changes)
}

// printChanges lists changes, or says there were none.
func printChanges(w io.Writer, changes []dlq.Change) {
	fmt.Fprintln(w)
	if len(changes) == 0 {
		fmt.Fprintln(w, "no changes: everything was already as asked")
		return
	}
	for _, c := range changes {
		if c.Created() {
			fmt.Fprintf(w, "%s\n", c)
		} else {
			fmt.Fprintf(w, "changed %s\n", c)
		}
	}
}

// setupOut is a SetupResult in -o json output.
type setupOut struct {
	Queue                    string       `json:"queue"`
	QueueURL                 string       `json:"queueUrl"`
	QueueARN                 string       `json:"queueArn"`
	DLQ                      string       `json:"dlq"`
	DLQURL                   string       `json:"dlqUrl"`
	DLQARN                   string       `json:"dlqArn"`
	MaxReceiveCount          int          `json:"maxReceiveCount"`
	FIFO                     bool         `json:"fifo"`
	RetentionSeconds         int64        `json:"retentionSeconds"`
	DLQRetentionSeconds      int64        `json:"dlqRetentionSeconds"`
	VisibilityTimeoutSeconds int64        `json:"visibilityTimeoutSeconds"`
	Changed                  bool         `json:"changed"`
	Changes                  []dlq.Change `json:"changes"`
}

func setupJSON(r dlq.SetupResult) setupOut {
	changes := r.Changes
	if changes == nil {
		changes = []dlq.Change{}
	}
	return setupOut{
		Queue: queueref.Name(r.QueueURL), QueueURL: r.QueueURL, QueueARN: r.QueueARN,
		DLQ: queueref.Name(r.DLQURL), DLQURL: r.DLQURL, DLQARN: r.DLQARN,
		MaxReceiveCount: r.MaxReceiveCount, FIFO: r.FIFO,
		RetentionSeconds: int64(r.Retention.Seconds()), DLQRetentionSeconds: int64(r.DLQRetention.Seconds()),
		VisibilityTimeoutSeconds: int64(r.VisibilityTimeout.Seconds()),
		Changed:                  len(r.Changes) > 0, Changes: changes,
	}
}

// checkSetupFlags refuses, before any call, what SQS or SNS would: values
// out of SQS's ranges (in the flags' own terms), names SQS or SNS refuse, a
// filter policy of the wrong shape. dlq.Setup and fanout.Setup check the
// same, in their options' terms.
func checkSetupFlags(o dlq.SetupOptions, fo fanout.SetupOptions) error {
	for _, r := range []struct {
		flag string
		d    time.Duration
	}{{"--retention", o.Retention}, {"--dlq-retention", o.DLQRetention}, {"--fanout-dlq-retention", fo.FanoutDLQRetention}} {
		if r.d != 0 && (r.d < time.Minute || r.d > sqslimit.MaxRetention || r.d%time.Second != 0) {
			return fmt.Errorf("%s %s: SQS keeps messages from 1 minute to 14 days (14d), in whole seconds", r.flag, formatDuration(r.d))
		}
	}
	if v := o.VisibilityTimeout; v < 0 || v > 12*time.Hour || v%time.Second != 0 {
		return fmt.Errorf("--visibility-timeout %s: SQS allows whole seconds from 0 to 12 hours (12h)", formatDuration(v))
	}
	if m := o.MaxReceiveCount; m < 0 || m > sqslimit.MaxReceiveCount {
		return fmt.Errorf("--max-receive-count %d: SQS allows 1 to %d", m, sqslimit.MaxReceiveCount)
	}
	base, suffix := strings.CutSuffix(o.Name, ".fifo")
	fifo := o.FIFO || suffix || strings.HasSuffix(fo.Topic, ".fifo")
	name := o.Name
	if fifo {
		name = base + ".fifo"
	}
	if err := validate.QueueName(name, fifo); err != nil {
		return err
	}
	for _, q := range []struct{ flag, name string }{{"--dlq-name", o.DLQName}, {"--fanout-dlq", fo.FanoutDLQName}} {
		n := q.name
		if n == "" {
			continue
		}
		if fifo && !strings.HasSuffix(n, ".fifo") {
			n += ".fifo"
		}
		if err := validate.QueueName(n, fifo); err != nil {
			return fmt.Errorf("%s: %w", q.flag, err)
		}
	}
	if fo.Topic != "" && !strings.HasPrefix(fo.Topic, "arn:") {
		if err := validate.TopicName(fo.Topic, strings.HasSuffix(fo.Topic, ".fifo")); err != nil {
			return fmt.Errorf("--topic: %w", err)
		}
	}
	switch fo.FilterPolicyScope {
	case "", "MessageAttributes", "MessageBody":
	default:
		return fmt.Errorf("--filter-policy-scope %q: use MessageAttributes or MessageBody", fo.FilterPolicyScope)
	}
	if fo.FilterPolicy != "" {
		if err := validate.FilterPolicy(fo.FilterPolicy, fo.FilterPolicyScope); err != nil {
			return fmt.Errorf("--filter-policy: %w", err)
		}
	}
	return nil
}
