package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"github.com/sqsworker/sqsworker/harness/cloudwatchfake"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/sqsworker/sqsworker/fleet"
	"github.com/sqsworker/sqsworker/schedules"
	"github.com/sqsworker/sqsworker/schedules/schedulestest"
	"github.com/sqsworker/sqsworker/sqstest"
	"github.com/sqsworker/sqsworker/sqstest/snstest"
)

var update = flag.Bool("update", false, "rewrite the testdata/*.golden files with the current output")

// harness runs the command line against a Fake.
type harness struct {
	fake  *sqstest.Fake
	sns   *snstest.Fake // delivers into fake
	stdin string
	tty   bool // stdin and stderr are terminals
	now   time.Time
	// client, when set, is the client the commands get instead of fake.
	client client
	// onConnect, when set, sees the connection flags a command connects with.
	onConnect func(awsFlags)
	// dynamo is the DynamoDB client of the fleet commands (DynamoDB Local).
	dynamo fleet.API
	// scheduler is the EventBridge Scheduler of the schedules commands: an
	// in-memory one delivering into fake, made on first use.
	scheduler *schedulestest.Scheduler
	// cw is console --cloudwatch's CloudWatch (harness.cloudWatch).
	cw *cloudwatchfake.CloudWatch
}

func newHarness(t testing.TB) *harness {
	f := sqstest.For(t)
	return &harness{fake: f, sns: snstest.For(t, f), now: time.Date(2025, 3, 1, 14, 0, 0, 0, time.UTC)}
}

func (h *harness) run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	a := &app{
		stdin: strings.NewReader(h.stdin), stdout: &out, stderr: &errOut,
		newClient: func(_ context.Context, f awsFlags) (client, error) {
			if h.onConnect != nil {
				h.onConnect(f)
			}
			if h.client != nil {
				return h.client, nil
			}
			return h.fake, nil
		},
		newSNS: func(context.Context, awsFlags) (snsClient, error) { return h.sns, nil },
		newDynamo: func(context.Context, awsFlags) (fleet.API, error) {
			if h.dynamo == nil {
				return nil, errors.New("this test gives the commands no DynamoDB")
			}
			return h.dynamo, nil
		},
		newScheduler: func(context.Context, awsFlags) (schedules.API, error) {
			if h.scheduler == nil {
				s, err := schedulestest.New(h.fake)
				if err != nil {
					return nil, err
				}
				h.scheduler = s
			}
			return h.scheduler, nil
		},
		isTerminal: func(any) bool { return h.tty },
		now:        func() time.Time { return h.now },
		buildInfo:  debug.ReadBuildInfo,
	}
	code = a.run(context.Background(), args)
	return code, out.String(), errOut.String()
}

// golden compares got with testdata/name.golden, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (run go test -update if the change is intended)\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func TestHelpWorksForEveryCommand(t *testing.T) {
	h := newHarness(t)
	for _, c := range commands() {
		for _, flagName := range []string{"--help", "-h"} {
			args := append(strings.Fields(c.path), flagName)
			code, out, errOut := h.run(t, args...)
			if code != exitOK || errOut != "" {
				t.Errorf("%v: exit %d, stderr %q", args, code, errOut)
			}
			if !strings.HasPrefix(out, "Usage: sqsworker "+c.path+" ") || !strings.Contains(out, "\nFlags:\n") {
				t.Errorf("%v: help does not start with the usage line or lacks flags:\n%s", args, out)
			}
		}
		// "help <command>" too.
		code, out, _ := h.run(t, append([]string{"help"}, strings.Fields(c.path)...)...)
		if code != exitOK || !strings.HasPrefix(out, "Usage: sqsworker "+c.path) {
			t.Errorf("help %s: exit %d\n%s", c.path, code, out)
		}
		if c.synopsis == "" || c.help == "" {
			t.Errorf("%s has no synopsis or help text", c.path)
		}
	}
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}, {"dlq", "--help"}, {"policy", "-h"}} {
		code, out, _ := h.run(t, args...)
		if code != exitOK || !strings.Contains(out, "Usage: sqsworker") {
			t.Errorf("%v: exit %d\n%s", args, code, out)
		}
	}
	code, out, _ := h.run(t, "--help")
	for _, c := range commands() {
		if !strings.Contains(out, c.path+" ") {
			t.Errorf("the overview does not list %q", c.path)
		}
	}
	if code != exitOK || !strings.Contains(out, "Exit codes") {
		t.Errorf("overview lacks the exit codes:\n%s", out)
	}
}

func TestUsageErrorsExitTwo(t *testing.T) {
	h := newHarness(t)
	for _, args := range [][]string{
		{},
		{"frobnicate"},
		{"dlq"},
		{"dlq", "frob"},
		{"doctor"},
		{"setup", "a", "b"},
		{"dlq", "peek", "orders", "--no-such-flag"},
		{"dlq", "ls", "-o", "yaml"},
		{"dlq", "redrive", "orders", "--method", "teleport"},
		{"dlq", "redrive", "orders", "--attr", "novalue"},
		{"setup", "orders", "--retention", "fortnight"},
		{"policy", "preview", "--backoff", "cubic"},
		{"policy", "preview", "--max-delay", "50000"},
		{"policy", "preview", "does-not-exist.json"},
	} {
		code, _, errOut := h.run(t, args...)
		if code != exitUsage {
			t.Errorf("%q: exit %d, want %d (stderr %q)", args, code, exitUsage, errOut)
		}
		if errOut == "" {
			t.Errorf("%q: nothing on stderr", args)
		}
	}
}

func TestFlagsAfterArguments(t *testing.T) {
	h := newHarness(t)
	code, out, errOut := h.run(t, "setup", "orders", "--max-receive-count", "9", "-o", "json")
	if code != exitOK || !strings.Contains(out, `"maxReceiveCount": 9`) {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
}

func TestParseAndFormatDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"30": 30 * time.Second, "14d": 14 * 24 * time.Hour, "2d12h": 60 * time.Hour, "1m30s": 90 * time.Second,
	} {
		got, err := parseDuration(in)
		if err != nil || got != want {
			t.Errorf("parseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for d, want := range map[time.Duration]string{
		14 * 24 * time.Hour: "14d", 60 * time.Hour: "2d12h", 6 * time.Hour: "6h", 90 * time.Minute: "1h30m",
		90 * time.Second: "1m30s", 12345 * time.Millisecond: "12.3s", 0: "0s",
	} {
		if got := formatDuration(d); got != want {
			t.Errorf("formatDuration(%v) = %q, want %q", d, got, want)
		}
	}
}
