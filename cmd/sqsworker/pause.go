package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sqsworker/sqsworker/fleet"
	"github.com/sqsworker/sqsworker/queueref"
)

// tableEnv names the environment variable that gives the fleet table when
// --table is not passed.
const tableEnv = "SQSWORKER_FLEET_TABLE"

// connectDynamo builds a DynamoDB client from the standard AWS
// configuration. --endpoint-url applies to it too, unless DynamoDB has an
// endpoint of its own (AWS_ENDPOINT_URL_DYNAMODB, or the profile's services
// section): a command given a local endpoint never writes to the real
// regional DynamoDB, and DynamoDB Local may listen apart from the SQS
// emulator.
func connectDynamo(ctx context.Context, f awsFlags) (fleet.API, error) {
	cfg, err := loadConfig(ctx, f)
	if err != nil {
		return nil, err
	}
	return dynamodb.NewFromConfig(cfg, quietChecksum, func(o *dynamodb.Options) {
		if f.endpoint != "" && !ownEndpoint(o.BaseEndpoint, cfg.BaseEndpoint) {
			o.BaseEndpoint = aws.String(f.endpoint)
		}
	}), nil
}

// ownEndpoint reports whether a service's resolved endpoint is its own
// (a service-specific variable or setting), not the configuration's
// general one (AWS_ENDPOINT_URL) or none.
func ownEndpoint(service, general *string) bool {
	return service != nil && (general == nil || *service != *general)
}

// quietChecksum turns off the DynamoDB client's CRC32 check of response
// bodies. The SDK checks a body against the X-Amz-Crc32 header even when a
// response has none (DynamoDB Local's and LocalStack's error responses, such
// as a missing table or a failed condition), and then logs "WARN failed to
// close HTTP response body ... did not match expected checksum" before the
// command's own error (aws/aws-sdk-go-v2#3545), which reads as a fault of
// ours. The CLI's responses travel over TLS on AWS, which protects them
// already.
func quietChecksum(o *dynamodb.Options) { o.DisableValidateResponseChecksum = true }

func pauseCommand() *command {
	return &command{
		path:     "pause",
		args:     "QUEUE",
		synopsis: "pause a queue for every worker that watches its fleet switch",
		help: `Sets QUEUE's pause switch in the fleet table (package fleet). Every worker whose
Options.ReceiveGate is a fleet.Pauser of the queue stops receiving within its
interval (2 s by default, at most 5 s): it ends its poll in flight and releases
the messages it prefetched at once; running handlers finish. No job is
dead-lettered or loses an attempt for a pause. "sqsworker resume QUEUE" undoes
it; "sqsworker paused QUEUE" shows the switch. QUEUE is the queue's name, URL or
ARN; the queue must exist.

The table comes from --table or SQSWORKER_FLEET_TABLE; DynamoDB is reached
through the standard configuration: AWS_ENDPOINT_URL_DYNAMODB for a local one,
else --endpoint-url, which then applies to DynamoDB as well as SQS.

IAM: sqs:GetQueueUrl; dynamodb:UpdateItem and dynamodb:DescribeTable on the table.`,
		run: func(a *app, ctx context.Context, cmd *command, args []string) int {
			return a.runPause(ctx, cmd, args, true)
		},
	}
}

func resumeCommand() *command {
	return &command{
		path:     "resume",
		args:     "QUEUE",
		synopsis: "resume a paused queue",
		help: `Clears QUEUE's pause switch in the fleet table: the workers watching it receive
again within their interval. See "sqsworker pause --help".

IAM: sqs:GetQueueUrl; dynamodb:UpdateItem and dynamodb:DescribeTable on the table.`,
		run: func(a *app, ctx context.Context, cmd *command, args []string) int {
			return a.runPause(ctx, cmd, args, false)
		},
	}
}

func pausedCommand() *command {
	return &command{
		path:     "paused",
		args:     "QUEUE",
		synopsis: "show whether a queue is paused, since when, by whom and why",
		help: `Reads QUEUE's pause switch in the fleet table. See "sqsworker pause --help".
Exit status 0 whether or not the queue is paused.

IAM: sqs:GetQueueUrl; dynamodb:GetItem and dynamodb:DescribeTable on the table.`,
		run: runPaused,
	}
}

// fleetFlags are the flags of the commands that use the fleet table.
type fleetFlags struct {
	conn  *awsFlags
	table *string
	out   *string
}

func fleetFlagsOn(fs *flag.FlagSet) fleetFlags {
	return fleetFlags{
		conn:  awsFlagsOn(fs),
		table: fs.String("table", os.Getenv(tableEnv), "the fleet table (default: "+tableEnv+")"),
		out:   outputFlag(fs),
	}
}

// openFleet checks that QUEUE exists and opens the fleet table.
func (a *app) openFleet(ctx context.Context, cmd *command, ff fleetFlags, queue string) (*fleet.Fleet, string, int, bool) {
	if *ff.table == "" {
		fmt.Fprintf(a.stderr, "sqsworker %s: no fleet table; pass --table or set %s (create one with `sqsworker fleet create-table NAME`)\n", cmd.path, tableEnv)
		return nil, "", exitUsage, false
	}
	c, ok := a.connect(ctx, cmd, ff.conn)
	if !ok {
		return nil, "", exitProblems, false
	}
	url, err := queueref.Resolve(ctx, c, queue)
	if err != nil {
		return nil, "", a.fail(cmd, err), false
	}
	db, err := a.newDynamo(ctx, *ff.conn)
	if err != nil {
		return nil, "", a.fail(cmd, err), false
	}
	f, err := fleet.New(db, *ff.table, func(o *fleet.Options) {
		o.Holder = "sqsworker-cli@" + hostname()
		o.Now = a.now
	})
	if err != nil {
		return nil, "", a.failFleet(cmd, *ff.table, err), false
	}
	return f, url, exitOK, true
}

func hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return "unknown"
	}
	return h
}

func (a *app) runPause(ctx context.Context, cmd *command, args []string, pause bool) int {
	fs := a.flags(cmd)
	ff := fleetFlagsOn(fs)
	var reason *string
	if pause {
		reason = fs.String("reason", "", "why, for the operators who read the switch (sqsworker paused)")
	}
	pos, code, ok := a.parseWithOutput(cmd, fs, args, 1, 1, ff.out)
	if !ok {
		return code
	}
	f, url, code, ok := a.openFleet(ctx, cmd, ff, pos[0])
	if !ok {
		return code
	}
	var err error
	if pause {
		err = f.Pause(ctx, url, *reason)
	} else {
		err = f.Resume(ctx, url)
	}
	if err != nil {
		return a.fail(cmd, err)
	}
	st, err := f.PauseState(ctx, url)
	if err != nil {
		return a.fail(cmd, err)
	}
	return a.printPause(st, true, *ff.out == "json")
}

func runPaused(a *app, ctx context.Context, cmd *command, args []string) int {
	fs := a.flags(cmd)
	ff := fleetFlagsOn(fs)
	pos, code, ok := a.parseWithOutput(cmd, fs, args, 1, 1, ff.out)
	if !ok {
		return code
	}
	f, url, code, ok := a.openFleet(ctx, cmd, ff, pos[0])
	if !ok {
		return code
	}
	st, err := f.PauseState(ctx, url)
	if err != nil {
		return a.fail(cmd, err)
	}
	return a.printPause(st, false, *ff.out == "json")
}

// printPause shows a pause switch; changed says it was just set.
func (a *app) printPause(st fleet.PauseState, changed, asJSON bool) int {
	if asJSON {
		a.writeJSON(struct {
			Queue  string    `json:"queue"`
			Paused bool      `json:"paused"`
			Reason string    `json:"reason,omitempty"`
			By     string    `json:"by,omitempty"`
			At     time.Time `json:"at,omitzero"`
		}{st.Queue, st.Paused, st.Reason, st.By, st.At})
		return exitOK
	}
	state := "running (not paused)"
	if st.Paused {
		state = "paused"
	}
	fmt.Fprintf(a.stdout, "%s: %s", st.Queue, state)
	if !st.At.IsZero() {
		fmt.Fprintf(a.stdout, " since %s (%s ago) by %s", st.At.UTC().Format(time.RFC3339), formatDuration(a.now().Sub(st.At).Round(time.Second)), st.By)
	}
	if st.Reason != "" {
		fmt.Fprintf(a.stdout, ": %s", st.Reason)
	}
	fmt.Fprintln(a.stdout)
	if changed && st.Paused {
		fmt.Fprintln(a.stdout, "workers watching the switch stop receiving within their Pauser interval (at most 5 s); running jobs finish")
	}
	return exitOK
}
