package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/console"
	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/fanout"
	"github.com/sqsworker/sqsworker/fleet"
	"github.com/sqsworker/sqsworker/queueref"
	"github.com/sqsworker/sqsworker/schedules"
)

// Exit codes; the package documentation explains them.
const (
	exitOK          = 0
	exitProblems    = 1
	exitUsage       = 2
	exitNotConfirm  = 3
	exitInterrupted = 130
)

// client is every SQS call the commands make. *sqs.Client satisfies it, and
// so does sqstest's Fake in the tests.
type client interface {
	dlq.API
	SendMessage(ctx context.Context, params *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	DeleteMessage(ctx context.Context, params *sqs.DeleteMessageInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
	PurgeQueue(ctx context.Context, params *sqs.PurgeQueueInput, optFns ...func(*sqs.Options)) (*sqs.PurgeQueueOutput, error)
	ListQueues(ctx context.Context, params *sqs.ListQueuesInput, optFns ...func(*sqs.Options)) (*sqs.ListQueuesOutput, error)
}

var _ client = (*sqs.Client)(nil)

// snsClient is every SNS call the commands make. *sns.Client satisfies it,
// and so does snstest's Fake in the tests.
type snsClient interface {
	fanout.API
}

var _ snsClient = (*sns.Client)(nil)

// awsFlags are the AWS connection flags every command that calls SQS takes.
// Each is optional: the SDK's standard configuration (AWS_PROFILE,
// AWS_REGION, AWS_ENDPOINT_URL_SQS, ~/.aws/config…) applies otherwise.
type awsFlags struct {
	region, profile, endpoint string
}

// app is one run of the command line, with everything it touches.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	// newClient connects to SQS.
	newClient func(ctx context.Context, f awsFlags) (client, error)
	// newSNS connects to SNS (the same account, region and endpoint).
	newSNS func(ctx context.Context, f awsFlags) (snsClient, error)
	// newDynamo connects to DynamoDB (the fleet table).
	newDynamo func(ctx context.Context, f awsFlags) (fleet.API, error)
	// newScheduler connects to EventBridge Scheduler (the schedules commands).
	newScheduler func(ctx context.Context, f awsFlags) (schedules.API, error)
	// newCloudWatch connects to CloudWatch (console --cloudwatch); nil:
	// connectCloudWatch.
	newCloudWatch func(ctx context.Context, f awsFlags) (console.CloudWatchAPI, error)
	// isTerminal reports whether a stream is an interactive terminal.
	isTerminal func(v any) bool
	// now is the clock for ages shown to the user.
	now func() time.Time
	// buildInfo returns the build information (debug.ReadBuildInfo).
	buildInfo func() (*debug.BuildInfo, bool)
}

// run is the program: it parses args, runs the command and returns the exit
// code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr, newClient: connect, newSNS: connectSNS, newDynamo: connectDynamo, newScheduler: connectScheduler, isTerminal: isTerminal, now: time.Now, buildInfo: debug.ReadBuildInfo}
	return a.run(ctx, args)
}

// connect builds an SQS client from the standard AWS configuration.
func connect(ctx context.Context, f awsFlags) (client, error) {
	cfg, err := loadConfig(ctx, f)
	if err != nil {
		return nil, err
	}
	return sqs.NewFromConfig(cfg, func(o *sqs.Options) {
		if f.endpoint != "" {
			o.BaseEndpoint = aws.String(f.endpoint)
		}
	}), nil
}

// connectSNS builds an SNS client from the standard AWS configuration;
// --endpoint-url applies to it too (LocalStack and fauxqs serve both on one
// port), and AWS_ENDPOINT_URL_SNS otherwise.
func connectSNS(ctx context.Context, f awsFlags) (snsClient, error) {
	cfg, err := loadConfig(ctx, f)
	if err != nil {
		return nil, err
	}
	return sns.NewFromConfig(cfg, func(o *sns.Options) {
		if f.endpoint != "" {
			o.BaseEndpoint = aws.String(f.endpoint)
		}
	}), nil
}

// loadConfig loads the AWS configuration and checks that it has a region
// and credentials.
func loadConfig(ctx context.Context, f awsFlags) (aws.Config, error) {
	var opts []func(*config.LoadOptions) error
	if f.region != "" {
		opts = append(opts, config.WithRegion(f.region))
	}
	if f.profile != "" {
		opts = append(opts, config.WithSharedConfigProfile(f.profile))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return cfg, fmt.Errorf("loading the AWS configuration (check --profile, AWS_PROFILE and ~/.aws/config): %w", err)
	}
	if cfg.Region == "" {
		return cfg, errors.New("no AWS region is configured; pass --region, or set AWS_REGION or a region in your AWS profile")
	}
	// Credentials first: without them every call fails, each with the
	// SDK's long chain of reasons.
	if _, err := cfg.Credentials.Retrieve(ctx); err != nil {
		if ctx.Err() != nil {
			return cfg, err
		}
		msg, _ := awsProblem(fmt.Errorf("get credentials: %w", err))
		return cfg, errors.New(msg)
	}
	return cfg, nil
}

// isTerminal reports whether v is an interactive terminal: a character
// device other than the null device (so `< /dev/null` counts as no
// terminal).
func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	if err != nil || st.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	null, err := os.Stat(os.DevNull)
	return err != nil || !os.SameFile(st, null)
}

// command is one (sub)command.
type command struct {
	path     string // "dlq redrive"
	args     string // argument synopsis after the flags
	synopsis string // one line for the command list
	help     string // the description under Usage
	run      func(a *app, ctx context.Context, cmd *command, args []string) int
}

// commands lists every command, in the order help shows them.
func commands() []*command {
	return []*command{
		setupCommand(),
		doctorCommand(),
		dlqLsCommand(),
		dlqPeekCommand(),
		dlqRedriveCommand(),
		dlqPurgeCommand(),
		policyPreviewCommand(),
		templateCommand(),
		versionCommand(),
		costCommand(),
		consoleCommand(),
		pauseCommand(),
		resumeCommand(),
		pausedCommand(),
		statusCommand(),
		fleetCreateTableCommand(),
		fleetCheckCommand(),
		schedulesDiffCommand(),
		schedulesApplyCommand(),
		schedulesLsCommand(),
		uniqueCreateTableCommand(),
		uniqueCheckCommand(),
	}
}

const overview = `sqsworker is the operator's tool for queues run by the sqsworker library:
it creates queue pairs, checks their dead-letter setup, inspects and
redrives dead-letter queues, previews retry schedules, creates the fleet
table, pauses and resumes queues for their whole fleet of workers, shows
a queue's state with its fleet controls, and reconciles EventBridge
Scheduler schedules with a declared set.

Usage: sqsworker <command> [flags] [arguments]

Commands:
%s
Run "sqsworker <command> --help" for a command's flags.

AWS access uses the standard configuration: --profile / AWS_PROFILE,
--region / AWS_REGION, and --endpoint-url / AWS_ENDPOINT_URL_SQS /
AWS_ENDPOINT_URL for LocalStack or a local emulator (--endpoint-url is
DynamoDB's too unless AWS_ENDPOINT_URL_DYNAMODB is set). These three flags
go before the command or after it: sqsworker --region us-east-1 dlq ls.
QUEUE is a queue's name, URL or ARN; a command on a queue ARN works in the
ARN's region.

Exit codes: 0 ok; 1 problems found or an operation failed; 2 usage error;
3 not confirmed; 130 interrupted.
`

func (a *app) usage(w io.Writer) {
	var b strings.Builder
	for _, c := range commands() {
		fmt.Fprintf(&b, "  %-*s %s\n", pathWidth(), c.path, c.synopsis)
	}
	fmt.Fprintf(w, overview, b.String())
}

// pathWidth is the width of the command column in the command lists: the
// longest command path.
func pathWidth() int {
	w := 0
	for _, c := range commands() {
		w = max(w, len(c.path))
	}
	return w
}

// globalFlags are the AWS connection flags, which may also come before the
// command ("sqsworker --region us-east-1 dlq ls"); they are handed to the
// command as if given after it.
var globalFlags = map[string]bool{"region": true, "profile": true, "endpoint-url": true}

func (a *app) run(ctx context.Context, args []string) int {
	var global []string
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		name, _, inline := strings.Cut(strings.TrimLeft(args[0], "-"), "=")
		if !globalFlags[name] {
			break
		}
		if inline {
			global, args = append(global, args[0]), args[1:]
			continue
		}
		if len(args) < 2 {
			fmt.Fprintf(a.stderr, "sqsworker: --%s needs a value, e.g. sqsworker --region us-east-1 dlq ls\n", name)
			return exitUsage
		}
		global, args = append(global, args[0], args[1]), args[2:]
	}
	if len(args) == 0 {
		a.usage(a.stderr)
		return exitUsage
	}
	switch args[0] {
	case "--version", "-version":
		return a.run(ctx, append([]string{"version"}, args[1:]...))
	case "-h", "-help", "--help", "help":
		if len(args) > 1 && args[0] == "help" {
			return a.run(ctx, append(args[1:], "--help"))
		}
		a.usage(a.stdout)
		return exitOK
	}
	all := commands()
	// The longest command path that prefixes args wins.
	var best *command
	for _, c := range all {
		words := strings.Fields(c.path)
		if len(words) <= len(args) && equalWords(words, args[:len(words)]) && (best == nil || len(words) > len(strings.Fields(best.path))) {
			best = c
		}
	}
	if best == nil {
		// A group without its subcommand ("dlq", "dlq --help").
		var group []*command
		for _, c := range all {
			if strings.Fields(c.path)[0] == args[0] && strings.Contains(c.path, " ") {
				group = append(group, c)
			}
		}
		if len(group) > 0 {
			w, code := a.stderr, exitUsage
			if len(args) > 1 && isHelp(args[1]) {
				w, code = a.stdout, exitOK
			} else if len(args) > 1 {
				fmt.Fprintf(a.stderr, "sqsworker %s: unknown command %q\n\n", args[0], args[1])
			}
			fmt.Fprintf(w, "Usage: sqsworker %s <command> [flags] [arguments]\n\nCommands:\n", args[0])
			for _, c := range group {
				fmt.Fprintf(w, "  %-*s %s\n", pathWidth(), c.path, c.synopsis)
			}
			return code
		}
		fmt.Fprintf(a.stderr, "sqsworker: unknown command %q\n\n", args[0])
		a.usage(a.stderr)
		return exitUsage
	}
	rest := args[len(strings.Fields(best.path)):]
	if !callsAWS(best) {
		global = nil // policy preview, template, version, cost: nothing to connect
	}
	return best.run(a, ctx, best, append(global, rest...))
}

// callsAWS reports whether a command connects to AWS (takes --region,
// --profile and --endpoint-url).
func callsAWS(cmd *command) bool {
	switch cmd.path {
	case "setup", "doctor", "console", "pause", "resume", "paused", "status":
		return true
	}
	return strings.HasPrefix(cmd.path, "dlq ") || strings.HasPrefix(cmd.path, "fleet ") || strings.HasPrefix(cmd.path, "schedules ") || strings.HasPrefix(cmd.path, "unique ")
}

func equalWords(a, b []string) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func isHelp(s string) bool { return s == "-h" || s == "-help" || s == "--help" }

// flags returns a command's flag set; its usage prints to stdout for
// --help and to stderr for a mistake.
func (a *app) flags(cmd *command) *flag.FlagSet {
	fs := flag.NewFlagSet("sqsworker "+cmd.path, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// printUsage writes a command's help.
func (a *app) printUsage(w io.Writer, cmd *command, fs *flag.FlagSet) {
	fmt.Fprintf(w, "Usage: sqsworker %s [flags] %s\n\n%s\n", cmd.path, cmd.args, strings.TrimSpace(cmd.help))
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	if len(names) == 0 {
		return
	}
	fmt.Fprintln(w, "\nFlags:")
	// A flag whose usage states its default itself ("(default 5m)", or
	// more: "(default: keep; new queue: 4d)") must not get the flag
	// package's "(default 5m)" as well, which PrintDefaults appends for any
	// value that is not its type's zero (a duration flag given a starting
	// value).
	fs.VisitAll(func(f *flag.Flag) {
		if strings.Contains(f.Usage, "(default") {
			f.DefValue = zeroDefValue(f)
		}
	})
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

// zeroDefValue is the DefValue for which PrintDefaults prints no default:
// the text of the flag's zero value ("" for the flag.Value types here,
// "0" for numbers, "false" for booleans).
func zeroDefValue(f *flag.Flag) string {
	switch f.Value.(type) {
	case durationValue, *multiFlag:
		return ""
	}
	if g, ok := f.Value.(flag.Getter); ok {
		switch g.Get().(type) {
		case int, int64, uint, uint64:
			return "0"
		case float64:
			return "0"
		case bool:
			return "false"
		}
	}
	return ""
}

// parse parses flags given before, between and after the arguments, and
// checks the number of arguments. It returns the arguments, or an exit code
// (exitOK for --help) and false.
func (a *app) parse(cmd *command, fs *flag.FlagSet, args []string, minArgs, maxArgs int) ([]string, int, bool) {
	var pos, rest []string
	if i := indexOf(args, "--"); i >= 0 {
		args, rest = args[:i], args[i+1:]
	}
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				a.printUsage(a.stdout, cmd, fs)
				return nil, exitOK, false
			}
			fmt.Fprintf(a.stderr, "sqsworker %s: %v\n\n", cmd.path, err)
			a.printUsage(a.stderr, cmd, fs)
			return nil, exitUsage, false
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		pos, args = append(pos, args[0]), args[1:]
	}
	pos = append(pos, rest...)
	if err := negativeFlag(fs); err != nil {
		fmt.Fprintf(a.stderr, "sqsworker %s: %v\n", cmd.path, err)
		return nil, exitUsage, false
	}
	if len(pos) < minArgs || (maxArgs >= 0 && len(pos) > maxArgs) {
		what := "too many arguments"
		if len(pos) < minArgs {
			what = "missing arguments"
		}
		fmt.Fprintf(a.stderr, "sqsworker %s: %s\n\n", cmd.path, what)
		a.printUsage(a.stderr, cmd, fs)
		return nil, exitUsage, false
	}
	return pos, exitOK, true
}

// negativeFlag refuses a negative number given to a flag: every number
// the commands take is a count, a rate, a size or a price, so -1 is a
// mistake, never "all" or "unlimited".
func negativeFlag(fs *flag.FlagSet) error {
	var err error
	fs.Visit(func(f *flag.Flag) {
		g, ok := f.Value.(flag.Getter)
		if !ok || err != nil {
			return
		}
		neg := false
		switch v := g.Get().(type) {
		case int:
			neg = v < 0
		case int64:
			neg = v < 0
		case float64:
			neg = v < 0
		}
		if neg {
			dash := "-"
			if len(f.Name) > 1 {
				dash = "--"
			}
			err = fmt.Errorf("%s%s %s: must not be negative", dash, f.Name, f.Value)
		}
	})
	return err
}

func indexOf(ss []string, s string) int {
	for i, x := range ss {
		if x == s {
			return i
		}
	}
	return -1
}

// awsFlagsOn adds the AWS connection flags to fs.
func awsFlagsOn(fs *flag.FlagSet) *awsFlags {
	f := &awsFlags{}
	fs.StringVar(&f.region, "region", "", "AWS region (default: AWS_REGION or the profile's region)")
	fs.StringVar(&f.profile, "profile", "", "AWS shared-config profile (default: AWS_PROFILE or default)")
	fs.StringVar(&f.endpoint, "endpoint-url", "", "SQS and SNS endpoint, e.g. http://localhost:4566 for LocalStack (default: AWS_ENDPOINT_URL_SQS / AWS_ENDPOINT_URL_SNS / AWS_ENDPOINT_URL); DynamoDB's too unless AWS_ENDPOINT_URL_DYNAMODB is set")
	return f
}

// outputFlag adds -o / -output.
func outputFlag(fs *flag.FlagSet) *string {
	o := new(string)
	*o = "text"
	fs.StringVar(o, "o", "text", "output format: text or json")
	fs.StringVar(o, "output", "text", "same as -o")
	return o
}

// parseWithOutput is parse followed by a check of the -o flag's value,
// which it reads through o after parsing: the positional arguments, or the
// exit code and false.
func (a *app) parseWithOutput(cmd *command, fs *flag.FlagSet, args []string, minArgs, maxArgs int, o *string) ([]string, int, bool) {
	pos, code, ok := a.parse(cmd, fs, args, minArgs, maxArgs)
	if !ok {
		return nil, code, false
	}
	if *o != "text" && *o != "json" {
		fmt.Fprintf(a.stderr, "sqsworker %s: -o %q: use text or json\n", cmd.path, *o)
		return nil, exitUsage, false
	}
	return pos, 0, true
}

// connect makes the SQS client, reporting a failure.
func (a *app) connect(ctx context.Context, cmd *command, f *awsFlags) (client, bool) {
	c, err := a.newClient(ctx, *f)
	if err != nil {
		a.fail(cmd, err)
		return nil, false
	}
	return c, true
}

// connectSNS makes the SNS client, reporting a failure.
func (a *app) connectSNS(ctx context.Context, cmd *command, f *awsFlags) (snsClient, bool) {
	c, err := a.newSNS(ctx, *f)
	if err != nil {
		a.fail(cmd, err)
		return nil, false
	}
	return c, true
}

// fail reports an error and returns the exit code for it. An error about
// reaching AWS at all (see awsProblem) is reported as its one cause.
func (a *app) fail(cmd *command, err error) int {
	if errors.Is(err, context.Canceled) {
		fmt.Fprintf(a.stderr, "sqsworker %s: %v\n", cmd.path, err)
		return exitInterrupted
	}
	if msg, ok := awsProblem(err); ok {
		fmt.Fprintf(a.stderr, "sqsworker %s: %s\n", cmd.path, msg)
		return exitProblems
	}
	fmt.Fprintf(a.stderr, "sqsworker %s: %s\n", cmd.path, trimPrefix(err.Error(), cmd))
	if errors.Is(err, queueref.ErrInvalid) || errors.Is(err, dlq.ErrRedrivesToItself) || errors.Is(err, schedules.ErrInvalid) {
		return exitUsage // what was asked for cannot be done as asked: fix the input or the queue's setup
	}
	return exitProblems
}

// trimPrefix drops from a library error's text the prefixes that only
// repeat the command ("setup: ", "fanout setup: ", "redrive: ", "dlq: "),
// which would follow the CLI's own "sqsworker setup: ".
func trimPrefix(msg string, cmd *command) string {
	words := map[string]bool{"dlq": true, "fanout": true}
	for _, w := range strings.Fields(cmd.path) {
		words[w] = true
	}
	if cmd.path == "dlq peek" {
		words["inspect"] = true
	}
	for {
		head, rest, ok := strings.Cut(msg, ": ")
		if !ok {
			return msg
		}
		for _, w := range strings.Fields(head) {
			if !words[w] {
				return msg
			}
		}
		msg = rest
	}
}

// abortsAll reports whether err ends the whole command rather than one
// queue's part of it: an interruption, or a failure to reach AWS at all.
func abortsAll(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return true
	}
	_, ok := awsProblem(err)
	return ok
}

// writeJSON writes v as indented JSON to stdout.
func (a *app) writeJSON(v any) {
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// durationValue is a flag.Value for durations that also takes days ("14d")
// and bare seconds ("30").
type durationValue struct{ d *time.Duration }

func (v durationValue) String() string {
	if v.d == nil || *v.d == 0 {
		return ""
	}
	return formatDuration(*v.d)
}

func (v durationValue) Set(s string) error {
	d, err := parseDuration(s)
	if err != nil {
		return err
	}
	if d < 0 {
		return fmt.Errorf("duration %q must not be negative", s)
	}
	*v.d = d
	return nil
}

// parseDuration reads "90" (seconds), "14d", "2d12h" or any Go duration.
func parseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.Duration(n) * time.Second, nil
	}
	var days time.Duration
	if i := strings.IndexByte(s, 'd'); i > 0 {
		n, err := strconv.ParseInt(s[:i], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("invalid duration %q: use e.g. 30s, 15m, 6h, 14d", s)
		}
		days, s = time.Duration(n)*24*time.Hour, s[i+1:]
		if s == "" {
			return days, nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q: use e.g. 30s, 15m, 6h, 14d", s)
	}
	return days + d, nil
}

// formatDuration writes d briefly: "14d", "2d6h", "6h", "1h30m", "1m30s",
// "12.3s".
func formatDuration(d time.Duration) string {
	const day = 24 * time.Hour
	switch {
	case d < 0:
		return "-" + formatDuration(-d)
	case d == 0:
		return "0s"
	case d%day == 0:
		return strconv.FormatInt(int64(d/day), 10) + "d"
	case d > day:
		return strconv.FormatInt(int64(d/day), 10) + "d" + formatDuration(d%day)
	case d%time.Hour == 0:
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	case d%time.Minute == 0:
		return strings.TrimSuffix(d.String(), "0s")
	}
	return d.Round(100 * time.Millisecond).String()
}

// multiFlag collects a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(s string) error { *m = append(*m, s); return nil }

// sortedKeys returns a map's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
