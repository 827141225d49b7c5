package main

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/sqsworker/sqsworker/dlq"
)

func setupCommand() *command {
	return &command{
		path:     "setup",
		args:     "NAME",
		synopsis: "create a queue and its dead-letter queue (idempotent)",
		help: `Creates queue NAME and its dead-letter queue NAME-dlq, and links them with a
RedrivePolicy — or brings existing queues to these settings; running it again
changes nothing. The dead-letter queue keeps messages 14 days (the maximum),
longer than the queue, because SQS keeps a message's original enqueue time when
it dead-letters it. A name ending in .fifo (or --fifo) makes a FIFO pair.

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
	fs.StringVar(&o.DLQName, "dlq-name", "", "dead-letter queue name (default NAME-dlq)")
	fs.IntVar(&o.MaxReceiveCount, "max-receive-count", dlq.DefaultMaxReceiveCount, "receives before SQS dead-letters a message; at least the retry policy's attempts")
	fs.Var(durationValue{&o.VisibilityTimeout}, "visibility-timeout", "the queue's VisibilityTimeout, e.g. 30s (default: leave as is; SQS's default is 30s)")
	fs.Var(durationValue{&o.Retention}, "retention", "the queue's MessageRetentionPeriod, e.g. 4d (default 4d)")
	fs.Var(durationValue{&o.DLQRetention}, "dlq-retention", "the dead-letter queue's MessageRetentionPeriod (default 14d)")
	fs.BoolVar(&o.ContentBasedDeduplication, "content-based-dedup", false, "FIFO: deduplicate by content when senders give no deduplication ID")
	pos, code, ok := a.parseWithOutput(cmd, fs, args, 1, 1, *out)
	if !ok {
		return code
	}
	o.Name = pos[0]
	c, ok := a.connect(ctx, cmd, conn)
	if !ok {
		return exitProblems
	}
	t, err := dlq.Setup(ctx, c, o)
	if err != nil {
		return a.fail(cmd, err)
	}
	if *out == "json" {
		a.writeJSON(targetJSON(t))
		return exitOK
	}
	retention := o.Retention
	if retention == 0 {
		retention = dlq.DefaultRetention
	}
	dlqRetention := o.DLQRetention
	if dlqRetention == 0 {
		dlqRetention = dlq.MaxRetention
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "queue\t%s\t%s\tretention %s\n", dlq.QueueName(t.SourceURL), t.SourceURL, formatDuration(retention))
	fmt.Fprintf(tw, "dead-letter queue\t%s\t%s\tretention %s\n", dlq.QueueName(t.QueueURL), t.QueueURL, formatDuration(dlqRetention))
	fmt.Fprintf(tw, "maxReceiveCount\t%d\n", t.MaxReceiveCount)
	tw.Flush()
	fmt.Fprintf(a.stdout, "\nCheck it against your retry policy: sqsworker doctor --policy policy.json %s\n", dlq.QueueName(t.SourceURL))
	return exitOK
}

// targetOut is a Target in -o json output.
type targetOut struct {
	Queue           string `json:"queue"`
	QueueURL        string `json:"queueUrl"`
	QueueARN        string `json:"queueArn"`
	DLQ             string `json:"dlq"`
	DLQURL          string `json:"dlqUrl"`
	DLQARN          string `json:"dlqArn"`
	MaxReceiveCount int    `json:"maxReceiveCount"`
	FIFO            bool   `json:"fifo"`
}

func targetJSON(t dlq.Target) targetOut {
	return targetOut{
		Queue: dlq.QueueName(t.SourceURL), QueueURL: t.SourceURL, QueueARN: t.SourceARN,
		DLQ: dlq.QueueName(t.QueueURL), DLQURL: t.QueueURL, DLQARN: t.ARN,
		MaxReceiveCount: t.MaxReceiveCount, FIFO: t.FIFO,
	}
}
