package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/sqsworker/sqsworker/dlq"
)

func setupCommand() *command {
	return &command{
		path:     "setup",
		args:     "NAME",
		synopsis: "create a queue and its dead-letter queue (idempotent, never lowers a setting silently)",
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

IAM: sqs:CreateQueue, sqs:SetQueueAttributes, sqs:GetQueueAttributes,
sqs:GetQueueUrl.`,
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
	pos, code, ok := a.parseWithOutput(cmd, fs, args, 1, 1, out)
	if !ok {
		return code
	}
	o.Name = pos[0]
	c, ok := a.connect(ctx, cmd, conn)
	if !ok {
		return exitProblems
	}
	res, err := dlq.Setup(ctx, c, o)
	if err != nil {
		return a.fail(cmd, err)
	}
	if *out == "json" {
		a.writeJSON(setupJSON(res))
		return exitOK
	}
	printSetup(a.stdout, res)
	fmt.Fprintf(a.stdout, "\nCheck it against your retry policy: sqsworker doctor --policy policy.json %s\n", dlq.QueueName(res.QueueURL))
	return exitOK
}

// printSetup writes the queue pair and what changed.
func printSetup(w io.Writer, res dlq.SetupResult) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "queue\t%s\t%s\tretention %s, visibility timeout %s\n", dlq.QueueName(res.QueueURL), res.QueueURL, formatDuration(res.Retention), formatDuration(res.VisibilityTimeout))
	fmt.Fprintf(tw, "dead-letter queue\t%s\t%s\tretention %s\n", dlq.QueueName(res.DLQURL), res.DLQURL, formatDuration(res.DLQRetention))
	fmt.Fprintf(tw, "maxReceiveCount\t%d\n", res.MaxReceiveCount)
	tw.Flush()
	printChanges(w, res.Changes)
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
		Queue: dlq.QueueName(r.QueueURL), QueueURL: r.QueueURL, QueueARN: r.QueueARN,
		DLQ: dlq.QueueName(r.DLQURL), DLQURL: r.DLQURL, DLQARN: r.DLQARN,
		MaxReceiveCount: r.MaxReceiveCount, FIFO: r.FIFO,
		RetentionSeconds: int64(r.Retention.Seconds()), DLQRetentionSeconds: int64(r.DLQRetention.Seconds()),
		VisibilityTimeoutSeconds: int64(r.VisibilityTimeout.Seconds()),
		Changed:                  len(r.Changes) > 0, Changes: changes,
	}
}
