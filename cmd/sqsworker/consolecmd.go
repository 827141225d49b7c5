package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"

	"github.com/sqsworker/sqsworker/console"
	"github.com/sqsworker/sqsworker/fleet"
	"github.com/sqsworker/sqsworker/internal/awscall"
	"github.com/sqsworker/sqsworker/schedules"
)

// defaultConsoleAddr is where `sqsworker console` listens unless told
// otherwise: the loopback interface only.
const defaultConsoleAddr = "127.0.0.1:9470"

func consoleCommand() *command {
	return &command{
		path:     "console",
		synopsis: "a web console: queues, dead-letter queues grouped by failure reason, redrive",
		help: `Serves the operator console (package console) until interrupted: every queue
the credentials see (or --queues), with counts, dead-letter setup, lint
findings and SNS fan-out chains; each dead-letter queue's messages grouped by
failure reason, with their bodies, attributes and provenance (a subscription's
dead-letter queue too, redriven to its subscribed queue only); with --worker,
the live statistics of running workers; and with a fleet table (--table or
SQSWORKER_FLEET_TABLE; package fleet), a Fleet page: each queue's pause switch,
the shared circuit breakers and the cap slots in use; with --schedule-group
(package schedules), a Schedules page: each schedule's expression, time zone,
next fire times, state and dead-letter queue depth, and the pending one-time
jobs of --jobs-group (default sqsworker-jobs), which --actions lets you
cancel.

It is read-only unless --actions is given: then redrive (selected messages, a
group, a filter or everything), delete (after a confirmation), edit and send
back, purge (after typing the queue's name), and with a fleet table pause and
resume are offered, each protected against cross-site requests and logged to
stderr (never a message body).

The first line printed is the console's URL (-o json: {"url":…,"actions":…}).
It listens on 127.0.0.1 only, unless --addr says otherwise. It has no login:
anyone who can reach the address can use it, so never expose it with
--actions; embed the console package in your own server behind your
authentication (console.Options.Authenticate) instead.

Reading a dead-letter queue receives its messages: they are hidden from
consumers while the page reads (at most --hold) and released at once.

IAM: sqs:ListQueues (unless --queues), sqs:GetQueueUrl, sqs:GetQueueAttributes,
sqs:ReceiveMessage, sqs:ChangeMessageVisibility, sns:ListSubscriptions and
sns:GetSubscriptionAttributes; with --actions also sqs:SendMessage,
sqs:DeleteMessage and sqs:PurgeQueue (and the move task calls of dlq redrive).
With a table: dynamodb:DescribeTable, dynamodb:GetItem and dynamodb:Scan on it
(each Fleet page load scans the table), and with --actions dynamodb:UpdateItem.
With --schedule-group: scheduler:ListSchedules and scheduler:GetSchedule, and
with --actions scheduler:DeleteSchedule.
With --cloudwatch: cloudwatch:GetMetricData (each History page load asks for
the queue's and its dead-letter queue's SQS metrics: 12 metrics, about
$0.00012; the page shows the cost; if CloudWatch refuses, the page says so
and shows the console's own samples).`,
		run: runConsole,
	}
}

func runConsole(a *app, ctx context.Context, cmd *command, args []string) int {
	fs := a.flags(cmd)
	conn := awsFlagsOn(fs)
	out := outputFlag(fs)
	addr := fs.String("addr", defaultConsoleAddr, "address to listen on (host:port); keep it on 127.0.0.1 unless the console is behind authentication")
	actions := fs.Bool("actions", false, "offer actions: redrive, delete, edit and send, purge (default: read-only)")
	queues := fs.String("queues", "", "comma-separated queues (names, URLs or ARNs) to show (default: every queue ListQueues returns)")
	var workers multiFlag
	fs.Var(&workers, "worker", "NAME=URL of a running worker's StatsHandler to show live (repeatable)")
	var hold time.Duration
	fs.Var(durationValue{&hold}, "hold", "the longest a dead-letter queue read keeps its messages hidden (default 30s)")
	sampleEvery := 30 * time.Second
	fs.Var(durationValue{&sampleEvery}, "sample-every", "how often the console samples the queues' counts for its History pages (0: no sampling)")
	useCloudWatch := fs.Bool("cloudwatch", false, "chart the History pages from CloudWatch's SQS metrics (GetMetricData, 12 metrics per page load, billed by AWS at $0.01 per 1,000) instead of the console's own samples only")
	table := fs.String("table", os.Getenv(tableEnv), "the fleet table whose controls to show (default: "+tableEnv+"; none: no Fleet page)")
	var schedGroups multiFlag
	fs.Var(&schedGroups, "schedule-group", "an EventBridge Scheduler schedule group to show on a Schedules page (repeatable)")
	jobsGroup := fs.String("jobs-group", "", "with --schedule-group: the group of the one-time jobs to list (default sqsworker-jobs)")
	if _, code, ok := a.parseWithOutput(cmd, fs, args, 0, 0, out); !ok {
		return code
	}
	if *jobsGroup != "" && len(schedGroups) == 0 {
		fmt.Fprintf(a.stderr, "sqsworker %s: --jobs-group goes with --schedule-group\n", cmd.path)
		return exitUsage
	}
	var sched schedules.API
	if len(schedGroups) > 0 {
		var err error
		if sched, err = a.newScheduler(ctx, *conn); err != nil {
			return a.fail(cmd, err)
		}
	}
	var ws []console.Worker
	for _, w := range workers {
		name, url, ok := strings.Cut(w, "=")
		if !ok {
			fmt.Fprintf(a.stderr, "sqsworker %s: --worker %q: want NAME=URL, e.g. orders=http://127.0.0.1:9464/debug/sqsworker/stats\n", cmd.path, w)
			return exitUsage
		}
		ws = append(ws, console.Worker{Name: name, StatsURL: url})
	}
	c, ok := a.connect(ctx, cmd, conn)
	if !ok {
		return exitProblems
	}
	s, ok := a.connectSNS(ctx, cmd, conn)
	if !ok {
		return exitProblems
	}
	var cw console.CloudWatchAPI
	if *useCloudWatch {
		connectCW := a.newCloudWatch
		if connectCW == nil {
			connectCW = connectCloudWatch
		}
		var err error
		if cw, err = connectCW(ctx, *conn); err != nil {
			return a.fail(cmd, err)
		}
	}
	var fl *fleet.Fleet
	if *table != "" {
		db, err := a.newDynamo(ctx, *conn)
		if err != nil {
			return a.fail(cmd, err)
		}
		if fl, err = fleet.New(db, *table, func(o *fleet.Options) {
			o.Holder = "sqsworker-console@" + hostname()
			o.Now = a.now
		}); err != nil {
			return a.fail(cmd, err)
		}
	}
	h, err := console.New(c, func(o *console.Options) {
		for _, q := range strings.Split(*queues, ",") {
			if q = strings.TrimSpace(q); q != "" {
				o.Queues = append(o.Queues, q)
			}
		}
		o.SNS = s
		o.Actions = *actions
		o.Workers = ws
		o.Fleet = fl
		o.Scheduler, o.ScheduleGroups, o.JobsGroup = sched, schedGroups, *jobsGroup
		o.Hold = hold
		o.SampleEvery = sampleEvery
		o.CloudWatch = cw
		o.Logger = slog.New(slog.NewTextHandler(a.stderr, nil))
		o.Now = a.now
	})
	if err != nil {
		return a.fail(cmd, err)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return a.fail(cmd, fmt.Errorf("listening on %s (pick another with --addr): %w", *addr, err))
	}
	mode := "read-only; --actions to redrive, delete and purge"
	if *actions {
		mode = "actions ON: anyone who can reach this address can redrive, delete and purge"
		if fl != nil {
			mode += ", and pause queues"
		}
		if sched != nil {
			mode += ", and cancel scheduled jobs"
		}
	}
	url := "http://" + ln.Addr().String() + "/"
	if *out == "json" {
		a.writeJSON(struct {
			URL     string `json:"url"`
			Actions bool   `json:"actions"`
		}{url, *actions})
	} else {
		fmt.Fprintf(a.stdout, "sqsworker console: %s (%s)\n", url, mode)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return a.fail(cmd, err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return a.fail(cmd, err)
	}
	return exitOK
}

// connectCloudWatch builds a CloudWatch client from the standard AWS
// configuration (AWS_ENDPOINT_URL_CLOUDWATCH overrides its endpoint), its
// retryer off: the console's calls follow the library's retry rule.
func connectCloudWatch(ctx context.Context, f awsFlags) (console.CloudWatchAPI, error) {
	cfg, err := loadConfig(ctx, f)
	if err != nil {
		return nil, err
	}
	return cloudwatch.NewFromConfig(cfg, awscall.CloudWatchOff), nil
}
