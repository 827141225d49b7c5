// Package console is sqsworker's operator console: a small web UI, served
// by an http.Handler you mount in your own server or run with `sqsworker
// console`, that shows your queues and their dead-letter queues and says
// why each dead-lettered message is there.
//
//	h, err := console.New(sqsClient, func(o *console.Options) {
//		o.Queues = []string{"orders", "emails"}
//		o.SNS = snsClient // fan-out chains and subscription findings
//		o.Actions = true  // redrive, delete, edit and send, purge
//		o.Authenticate = myAuth
//	})
//	mux.Handle("/", h)
//
// # Pages
//
//   - Queues: each queue's visible, in-flight and delayed counts, its
//     dead-letter queue and maxReceiveCount, the dead-letter queue's depth,
//     the oldest failure seen by the last read, the findings of dlq.Lint
//     (fanout.Lint with Options.SNS) and the SNS fan-out chain; a warning
//     when the last read of a dead-letter queue found messages that expire
//     within 24 hours. It reloads itself every 30 seconds (counts only).
//   - Dead-letter queue: the messages grouped by failure reason (source
//     queue, handler and error, from the provenance the runtimes wrote), with
//     counts, first and last failure, attempts and a sample; each message
//     with its body (JSON indented), attributes and provenance. It says
//     when the messages expire: a message expires the dead-letter queue's
//     MessageRetentionPeriod after its SentTimestamp, which SQS's redrive
//     from a standard queue keeps (the original enqueue time).
//   - Search, over the last read of a dead-letter queue: by message ID,
//     text in the body, attribute, error, handler and failure time, 100
//     results a page. Its Redrive and Delete take what it lists: the same
//     conditions, at most as many messages, none enqueued after the read.
//     The console keeps a read for 2 minutes after it began, a copy only
//     (every message released), at most 256 MiB of reads together, and
//     drops it when an action runs on the queue: queries meanwhile are
//     answered from it, later ones read again; the page says which.
//   - A subscription's dead-letter queue, with Options.SNS: the Queues
//     page links it from the fan-out chain to the same pages (grouped,
//     searched, each message; not editing a body), and its Redrive is
//     fanout.Redrive: to the subscribed queue only, never to the topic.
//   - History: each queue's visible, in-flight and delayed counts and its
//     dead-letter queue's depth over 1 hour, 24 hours or 14 days, as SVG
//     charts with axis values and a text summary. With Options.CloudWatch
//     they come from SQS's metrics in CloudWatch (GetMetricData, up to 500
//     metrics a request; points of 1 minute, 5 minutes or 1 hour), which
//     add the messages sent and deleted per minute and the oldest
//     message's age; the page names the source and what its request cost
//     (12 metrics, billed at $0.01 per 1,000), and each chart's summary
//     gives the latest datapoint and counts CloudWatch's datapoints.
//     Otherwise, with Options.SampleEvery, from the console's own sampling
//     (GetQueueAttributes) while it runs; the page says since when.
//   - Actions: the redrives, deletes, edits and purges the console ran
//     since it started (the last 100), with their results.
//   - Workers: the statistics of workers whose StatsHandler you list in
//     Options.Workers: receiving or paused (worker.Stats.Paused), rates,
//     outcomes, in flight, cost per million, and the scaling signals
//     (Capacity, Backlog, OldestAge).
//   - Fleet, with Options.Fleet: each queue's pause switch (since when, by
//     whom, why), the shared circuit breakers and the cap slots in use, per
//     cap and key, with the processes holding them (package fleet). The
//     Queues page marks a paused queue.
//   - Schedules, with Options.Scheduler: each schedule of
//     Options.ScheduleGroups (package schedules) with its expression, time
//     zone, next fire times, state and dead-letter queue depth, and the
//     pending one-time jobs of Options.JobsGroup, which an operator can
//     cancel (schedules.Jobs.Cancel; the cancel is audited like any action).
//
// # Reading a dead-letter queue
//
// SQS shows a message only by receiving it, which hides it from consumers
// and raises its receive count. The dead-letter queue page reads the queue
// with Options.Readers dlq.Inspect calls in parallel, keeps every message
// hidden until the whole read is done (so no message is read twice), then
// releases them all at once; the page says how long they were hidden. A
// queue larger than Options.MaxRead is grouped from a sample of that size,
// and the page says so. A message page shows the message as last read
// (read again once the read is no longer kept).
//
// # Actions
//
// With Options.Actions set, an operator can redrive selected messages, a
// group, the messages whose error contains a text, or every message
// (dlq.Redrive: sent to the source before it is deleted, filtered moves
// done by hand, what could not be seen reported; fanout.Redrive for a
// subscription's dead-letter queue); delete selected messages
// or a group (dlq.Delete, after a confirmation page); edit a body and send
// it back to the source queue with its provenance (sent first, then the
// original deleted); purge the dead-letter queue (PurgeQueue, after
// typing its name); and with Options.Fleet pause and resume a queue for
// every worker whose ReceiveGate is a fleet.Pauser of it (the reason
// stored names the console user). Redrives and deletes run in the
// background; their page shows live progress. A job runs to its end even when the page is left;
// a process stopped in the middle of a redrive leaves a message in both
// queues at worst, never in neither. Each action is logged to Options.Logger with the
// user, the queue and what was selected — never a message body.
//
// # Security
//
//   - Read-only unless Options.Actions: no action control is rendered, and
//     every action request is refused.
//   - Options.Authenticate maps a request to a User; only RoleOperator may
//     act. The zero value treats everyone as an operator: keep the console
//     on 127.0.0.1 (the CLI's default) or put your own authentication in.
//   - Every action is a POST that must carry the session's CSRF token (an
//     HMAC of a per-browser session cookie) and pass net/http's
//     cross-origin protection.
//   - Options.Redact filters every body the console shows (and disables
//     editing).
//   - The pages load nothing from the internet: the templates, style sheet
//     and script are embedded, and a strict Content-Security-Policy is set.
//
// # IAM
//
// Reading: sqs:ListQueues (unless Options.Queues), sqs:GetQueueUrl,
// sqs:GetQueueAttributes, sqs:ReceiveMessage, sqs:ChangeMessageVisibility;
// with Options.SNS, sns:ListSubscriptions and sns:GetSubscriptionAttributes;
// with Options.Fleet, dynamodb:GetItem and dynamodb:Scan on the fleet table
// (each Fleet page load scans it). Actions add what dlq.Redrive and
// dlq.Delete need, sqs:SendMessage on the source queues and
// sqs:PurgeQueue, and with Options.Fleet dynamodb:UpdateItem. With
// Options.Scheduler: scheduler:ListSchedules and scheduler:GetSchedule, and
// scheduler:DeleteSchedule to cancel a job.
package console
