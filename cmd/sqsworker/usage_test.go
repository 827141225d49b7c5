package main

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every bad input is a usage error (exit 2) that says what to type, before
// any call; library prefixes are not repeated after the command's own.
func TestBadInputIsAUsageError(t *testing.T) {
	h := newHarness(t)
	if code, _, errOut := h.run(t, "setup", "orders"); code != exitOK {
		t.Fatal(errOut)
	}
	if code, _, errOut := h.run(t, "setup", "jobs.fifo"); code != exitOK {
		t.Fatal(errOut)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"dlq", "redrive", "orders", "--method", "move-task", "--max", "3"}, "use --method manual"},
		{[]string{"dlq", "redrive", "jobs.fifo", "--method", "move-task"}, "use --method manual"},
		{[]string{"dlq", "peek", "orders", "-n", "-1"}, "-n -1: must not be negative"},
		{[]string{"dlq", "redrive", "orders", "--rate", "-3"}, "--rate -3: must not be negative"},
		{[]string{"dlq", "redrive", "orders", "--max", "-1"}, "--max -1: must not be negative"},
		{[]string{"dlq", "redrive", "orders", "--older-than", "-2h"}, "must not be negative"},
		{[]string{"setup", "orders", "--retention", "20d"}, "--retention 20d: SQS keeps messages from 1 minute to 14 days"},
		{[]string{"setup", "orders", "--visibility-timeout", "13h"}, "--visibility-timeout 13h"},
		{[]string{"setup", "orders", "--max-receive-count", "1001"}, "--max-receive-count 1001"},
		{[]string{"setup", "orders", "--max-receive-count", "3"}, "refusing to lower"},
		{[]string{"setup", "bad name!"}, `queue name "bad name!" has ' '`},
		{[]string{"setup", strings.Repeat("q", 81)}, "81 characters long"},
		{[]string{"setup", "orders", "--dlq-name", "orders.dead"}, "--dlq-name: queue name"},
		{[]string{"setup", "orders", "--topic", "bad topic"}, "--topic: topic name"},
		{[]string{"--region"}, "--region needs a value"},
	} {
		before := h.fake.Requests()
		code, out, errOut := h.run(t, tc.args...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", tc.args, code, errOut, tc.want)
		}
		if strings.Contains(errOut, "MethodManual") || strings.Contains(errOut, "setup: setup:") || strings.Contains(errOut, "redrive: redrive:") || strings.Contains(errOut, "480h") {
			t.Errorf("%v: %q names Go or repeats a prefix", tc.args, errOut)
		}
		if out != "" {
			t.Errorf("%v: printed %q besides the error", tc.args, out)
		}
		if after := h.fake.Requests(); strings.HasPrefix(tc.args[0], "setup") && !strings.Contains(tc.want, "lower") && !maps.Equal(after, before) {
			t.Errorf("%v: made calls before refusing: %v, then %v", tc.args, before, after)
		}
	}
}

func TestFilterPolicyCheckedLocally(t *testing.T) {
	h := newHarness(t)
	p := writeFile(t, "filter.json", `{"order-status":"confirmed"}`)
	code, _, errOut := h.run(t, "setup", "--topic", "rental-orders", "billing", "--filter-policy", p)
	if code != exitUsage || !strings.Contains(errOut, `--filter-policy: the filter policy's key "order-status" maps to "confirmed", not an array`) {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
	if n := h.fake.Requests(); len(n) != 0 {
		t.Errorf("SQS calls before refusing: %v", n)
	}
	code, _, errOut = h.run(t, "template", "billing", "--topic", "rental-orders", "--filter-policy", p)
	if code != exitUsage || !strings.Contains(errOut, "not an array") {
		t.Errorf("template: exit %d, stderr %q", code, errOut)
	}
}

// The library's own error prefixes do not follow the command's.
func TestNoDoubledPrefixes(t *testing.T) {
	h := newHarness(t)
	h.run(t, "setup", "orders", "--max-receive-count", "8")
	code, _, errOut := h.run(t, "setup", "orders", "--max-receive-count", "5")
	if code == exitOK || strings.Contains(errOut, "setup: setup:") || !strings.HasPrefix(errOut, "sqsworker setup: refusing") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
	for _, tc := range []struct{ msg, path, want string }{
		{"setup: queue x exists", "setup", "queue x exists"},
		{"fanout setup: the filter policy", "setup", "the filter policy"},
		{"redrive: AllSources moves", "dlq redrive", "AllSources moves"},
		{"inspect: reading x: boom", "dlq peek", "reading x: boom"},
		{"dlq: a message move task cannot", "dlq redrive", "a message move task cannot"},
		{"queue nope does not exist: check", "dlq redrive", "queue nope does not exist: check"},
	} {
		if got := trimPrefix(tc.msg, &command{path: tc.path}); got != tc.want {
			t.Errorf("trimPrefix(%q, %s) = %q, want %q", tc.msg, tc.path, got, tc.want)
		}
	}
}

// The AWS connection flags may come before the command, as the help says.
func TestGlobalFlagsBeforeTheCommand(t *testing.T) {
	h := newHarness(t)
	if code, _, errOut := h.run(t, "setup", "orders"); code != exitOK {
		t.Fatal(errOut)
	}
	var got awsFlags
	h.onConnect = func(f awsFlags) { got = f }
	code, out, errOut := h.run(t, "--region", "eu-west-1", "--profile=ops", "dlq", "ls", "orders")
	if code != exitOK || !strings.Contains(out, "orders-dlq") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if got.region != "eu-west-1" || got.profile != "ops" {
		t.Errorf("flags reached the command as %+v", got)
	}
	// A command that calls no AWS API ignores them.
	if code, out, errOut := h.run(t, "--region", "eu-west-1", "version"); code != exitOK || out == "" {
		t.Errorf("version after --region: exit %d, stderr %q", code, errOut)
	}
}

// A subscription's dead-letter queue has no maxReceiveCount: SNS moves
// messages there, not SQS after receives.
func TestDLQLsFanoutShowsNoMaxReceives(t *testing.T) {
	h := newHarness(t)
	if code, _, errOut := h.run(t, "setup", "--topic", "rental-orders", "billing"); code != exitOK {
		t.Fatal(errOut)
	}
	code, out, errOut := h.run(t, "dlq", "ls", "--fanout", "billing")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	golden(t, "dlq-ls-fanout", out)
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// callsAWS names exactly the commands that take the connection flags.
func TestCallsAWSMatchesTheFlags(t *testing.T) {
	h := newHarness(t)
	for _, c := range commands() {
		_, out, _ := h.run(t, append(strings.Fields(c.path), "--help")...)
		if takes := strings.Contains(out, "\n  -region "); takes != callsAWS(c) {
			t.Errorf("%s: takes --region %v, callsAWS %v", c.path, takes, callsAWS(c))
		}
	}
}
