package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/fleet"
	"github.com/sqsworker/sqsworker/harness/fleettable"
	"github.com/sqsworker/sqsworker/harness/testenv"
)

// The machine-readable output of the command line is API: every JSON a
// command prints (-o json) is pinned in testdata/golden/NAME.json, byte
// for byte, and the exit code of every run here in
// testdata/golden/exit-codes.json, so that a change to either shows up in
// review. Values that differ from run to run (message IDs, subscription
// ARNs, the console's port, the stats server's URL, the fleet table's
// name, the host name) are replaced by stand-ins; clocks are fixed (the
// harness's now, synctest's bubble). go test -update rewrites the files.

const goldenDir = "testdata/golden"

// exitCase is one run in exit-codes.json.
type exitCase struct {
	Args   string `json:"args"`             // the command line after "sqsworker"
	Exit   int    `json:"exit"`             // its exit code
	Stdout string `json:"stdout,omitempty"` // the golden file of its JSON output
}

// goldens collects the runs of TestGoldenJSON and checks exit-codes.json
// when the test ends.
type goldens struct {
	exits map[string]exitCase
}

// idPattern matches the random IDs of the fakes: message IDs, the last
// part of subscription ARNs, move task handles.
var idPattern = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// taskHandlePattern matches a message move task's handle in JSON output
// (the fake's handles end in a random part).
var taskHandlePattern = regexp.MustCompile(`"taskHandle": "[^"]+"`)

// createdPattern matches a schedule's creation time in JSON output (the
// in-memory Scheduler's clock).
var createdPattern = regexp.MustCompile(`"created": "[^"]+"`)

// stable replaces the volatile parts of s: each old string of pairs (old,
// new, …) by its new one, then every random ID by ID-1, ID-2… in the order
// of first appearance.
func stable(s string, pairs ...string) string {
	if h := hostname(); h != "" {
		pairs = append(pairs, "sqsworker-cli@"+h, "sqsworker-cli@HOST")
	}
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i] != "" {
			s = strings.ReplaceAll(s, pairs[i], pairs[i+1])
		}
	}
	s = taskHandlePattern.ReplaceAllString(s, `"taskHandle": "TASK-HANDLE"`)
	s = createdPattern.ReplaceAllString(s, `"created": "CREATED"`)
	ids := map[string]string{}
	return idPattern.ReplaceAllStringFunc(s, func(id string) string {
		if _, ok := ids[id]; !ok {
			ids[id] = fmt.Sprintf("ID-%d", len(ids)+1)
		}
		return ids[id]
	})
}

// record checks one run: its exit code against exit-codes.json and, when
// stdout is not empty, its output against testdata/golden/NAME.json (or
// NAME itself when it ends in .jsonl: one JSON value a line). pairs
// replace volatile strings in args and stdout (see stable).
func (g *goldens) record(t *testing.T, name string, args []string, code int, stdout string, pairs ...string) {
	t.Helper()
	if _, dup := g.exits[name]; dup {
		t.Fatalf("golden case %s recorded twice", name)
	}
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = a
		if a == "" || strings.ContainsAny(a, " \t\n\"'!*?$") {
			quoted[i] = strconv.Quote(a)
		}
	}
	c := exitCase{Args: stable(strings.Join(quoted, " "), pairs...), Exit: code}
	if stdout != "" {
		file := name
		if !strings.HasSuffix(file, ".jsonl") {
			file += ".json"
		}
		c.Stdout = file
		got := stable(stdout, pairs...)
		checkJSON(t, file, got)
		compareGolden(t, filepath.Join(goldenDir, file), got)
	}
	g.exits[name] = c
}

// run runs args on h and records the run.
func (g *goldens) run(t *testing.T, h *harness, name string, args ...string) {
	t.Helper()
	code, out, _ := h.run(t, args...)
	g.record(t, name, args, code, out)
}

// exitOnly runs args on h and records only the exit code.
func (g *goldens) exitOnly(t *testing.T, h *harness, name string, args ...string) {
	t.Helper()
	code, _, _ := h.run(t, args...)
	g.record(t, name, args, code, "")
}

// checkJSON fails unless out is one JSON value (a .jsonl file: one a line).
func checkJSON(t *testing.T, file, out string) {
	t.Helper()
	values := []string{out}
	if strings.HasSuffix(file, ".jsonl") {
		values = strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	}
	for _, v := range values {
		if !json.Valid([]byte(v)) {
			t.Errorf("%s: the output is not JSON:\n%s", file, out)
		}
	}
}

// compareGolden compares got with the file at path, or rewrites it with
// -update.
func compareGolden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
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
		t.Errorf("output differs from %s (run go test -update if the change is intended, and say so in CHANGELOG.md)\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// checkExits compares the recorded exit codes with exit-codes.json. Cases
// this run did not reach (go test -run) keep their entries; a full run
// also reports entries no case produced.
func (g *goldens) checkExits(t *testing.T) {
	t.Helper()
	path := filepath.Join(goldenDir, "exit-codes.json")
	want := map[string]exitCase{}
	data, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(data, &want)
	}
	if err != nil && !(*update && errors.Is(err, os.ErrNotExist)) {
		t.Fatalf("%s: %v (run go test -update to create it)", path, err)
	}
	full := !t.Failed() && flag.Lookup("test.run").Value.String() == ""
	if *update {
		merged := want
		if full {
			merged = map[string]exitCase{}
		}
		for name, c := range g.exits {
			merged[name] = c
		}
		b, err := json.MarshalIndent(merged, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	for name, c := range g.exits {
		if w, ok := want[name]; !ok {
			t.Errorf("%s: no entry %q (run go test -update to add it)", path, name)
		} else if c != w {
			t.Errorf("%s: %s: sqsworker %s exited %d (stdout %q); the file says %d (stdout %q)", path, name, c.Args, c.Exit, c.Stdout, w.Exit, w.Stdout)
		}
	}
	if full {
		for name := range want {
			if _, ok := g.exits[name]; !ok {
				t.Errorf("%s: entry %q: no test runs it any more (run go test -update)", path, name)
			}
		}
	}
}

// TestGoldenJSON runs every command that prints JSON, in each of its
// shapes, and the exit codes of their successes and failures.
func TestGoldenJSON(t *testing.T) {
	g := &goldens{exits: map[string]exitCase{}}
	t.Cleanup(func() { g.checkExits(t) })

	t.Run("setup", func(t *testing.T) {
		h := newHarness(t)
		g.run(t, h, "setup-created", "setup", "orders", "--max-receive-count", "6", "--retention", "3d", "--visibility-timeout", "45s", "-o", "json")
		g.run(t, h, "setup-unchanged", "setup", "orders", "-o", "json")
		g.run(t, h, "setup-changed", "setup", "orders", "--max-receive-count", "8", "-o", "json")
		g.exitOnly(t, h, "setup-lower-without-force", "setup", "orders", "--max-receive-count", "5", "-o", "json")
		g.run(t, h, "setup-fifo", "setup", "events", "--fifo", "-o", "json")
		g.exitOnly(t, h, "setup-bad-name", "setup", "bad name!", "-o", "json")

		filter := filterFile(t)
		args := []string{"setup", "--topic", "rental-orders", "billing", "--filter-policy", filter, "-o", "json"}
		code, out, _ := h.run(t, args...)
		g.record(t, "setup-topic-created", args, code, out, filter, "FILTER.json")
		g.run(t, h, "setup-topic-raw", "setup", "--topic", "rental-orders", "billing", "--raw", "-o", "json")
	})

	t.Run("doctor", func(t *testing.T) {
		h := newHarness(t)
		doctorQueues(t, h)
		policy := []string{"--policy", "testdata/doctor-policy.json", "--handler-timeout", "1m", "-o", "json"}
		g.run(t, h, "doctor-ok", append([]string{"doctor", "orders"}, policy...)...)
		g.run(t, h, "doctor-problems", append([]string{"doctor", "orders", "emails", "invoices", "reports", "missing"}, policy...)...)
		g.exitOnly(t, h, "doctor-problems-text", "doctor", "invoices", "--attempts", "4")
		g.exitOnly(t, h, "doctor-bad-policy-file", "doctor", "orders", "--policy", "testdata/no-such-policy.json", "-o", "json")
		g.exitOnly(t, h, "doctor-invalid-queue-argument", "doctor", "arn:aws:sqs:nowhere", "-o", "json")
	})

	t.Run("doctor-fleet", func(t *testing.T) {
		h := newHarness(t)
		_, dlqURL := h.fake.MustCreateQueueWithDLQ(t, "payments.fifo", 8, nil)
		if _, err := h.fake.SetQueueAttributes(context.Background(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(dlqURL), Attributes: map[string]string{"MessageRetentionPeriod": "1209600"}}); err != nil {
			t.Fatal(err)
		}
		g.run(t, h, "doctor-fleet", "doctor", "--no-subscriptions", "--attempts", "4", "--fleet", "payments.fifo", "-o", "json")
	})

	t.Run("doctor-subscriptions", func(t *testing.T) {
		h := newHarness(t)
		if code, _, errOut := h.run(t, "setup", "--topic", "rental-orders", "billing"); code != exitOK {
			t.Fatal(errOut)
		}
		g.run(t, h, "doctor-subscriptions", "doctor", "billing", "--attempts", "4", "--delivery", "raw", "-o", "json")
	})

	t.Run("dlq", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := newHarness(t)
			reasons := []string{"boom: payment service unavailable", "invalid card\nsecond line"}
			target := deadLetter(t, h, "orders", 3, func(i int) string { return reasons[i%2] })
			deadLetter(t, h, "invoices", 0, nil)
			h.fake.MustCreateQueue(t, "plain", nil)
			h.fake.MustCreateQueue(t, "parking", nil)

			g.run(t, h, "dlq-ls", "dlq", "ls", "-o", "json")
			g.run(t, h, "dlq-ls-prefix", "dlq", "ls", "--prefix", "ord", "-o", "json")
			g.run(t, h, "dlq-ls-no-redrive-policy", "dlq", "ls", "orders", "plain", "-o", "json")
			g.run(t, h, "dlq-peek", "dlq", "peek", "orders", "-o", "json")
			g.run(t, h, "dlq-peek-empty", "dlq", "peek", "invoices", "-n", "0", "-o", "json")
			g.exitOnly(t, h, "dlq-peek-no-redrive-policy", "dlq", "peek", "plain", "-o", "json")
			g.exitOnly(t, h, "dlq-peek-missing-queue", "dlq", "peek", "nope", "-o", "json")
			g.run(t, h, "dlq-redrive-dry-run", "dlq", "redrive", "orders", "--dry-run", "--error-contains", "boom", "-o", "json")
			g.exitOnly(t, h, "dlq-redrive-move-task-filtered", "dlq", "redrive", "orders", "--method", "move-task", "--max", "1", "-o", "json")
			g.exitOnly(t, h, "dlq-redrive-to-itself", "dlq", "redrive", "orders", "--to", "orders-dlq", "-o", "json")

			// Two messages hidden by another reader: peek and redrive say
			// what they did not see and exit 1.
			hideSome(t, h, target, 2)
			g.run(t, h, "dlq-peek-not-seen", "dlq", "peek", "orders", "-o", "json")
			g.run(t, h, "dlq-redrive-not-seen", "dlq", "redrive", "orders", "--to", "parking", "--method", "manual", "-o", "json")
			time.Sleep(2 * time.Minute) // the hidden messages come back

			g.run(t, h, "dlq-redrive-manual", "dlq", "redrive", "orders", "--to", "parking", "--method", "manual", "--keep-provenance", "-o", "json")
			deadLetter(t, h, "refunds", 2, func(int) string { return "refund failed" })
			g.run(t, h, "dlq-redrive-move-task", "dlq", "redrive", "refunds", "-o", "json")

			deadLetter(t, h, "returns", 2, func(int) string { return "x" })
			g.exitOnly(t, h, "dlq-purge-not-confirmed", "dlq", "purge", "returns", "-o", "json")
			g.run(t, h, "dlq-purge", "dlq", "purge", "returns", "--yes", "-o", "json")

			// Jobs that fail again while they are redriven: the manual
			// move counts them (cameBack) and lists them as "came-back".
			billing := deadLetter(t, h, "billing", 2, func(int) string { return "card declined" })
			h.client = &failingAgain{Fake: h.fake, t: t, target: billing}
			g.run(t, h, "dlq-redrive-came-back", "dlq", "redrive", "billing", "--method", "manual", "-o", "json")
			h.client = h.fake
		})
	})

	t.Run("dlq-fanout", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := newHarness(t)
			if code, _, errOut := h.run(t, "setup", "--topic", "rental-orders", "fulfilment", "--raw"); code != exitOK {
				t.Fatal(errOut)
			}
			ctx := context.Background()
			url := "https://sqs.us-east-1.amazonaws.com/000000000000/fulfilment"
			out, err := h.fake.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNamePolicy}})
			if err != nil {
				t.Fatal(err)
			}
			setPolicy := func(p string) {
				if _, err := h.fake.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url), Attributes: map[string]string{"Policy": p}}); err != nil {
					t.Fatal(err)
				}
			}
			// SNS cannot deliver while the queue policy refuses it: the
			// messages go to the subscription's dead-letter queue.
			setPolicy("")
			for _, m := range []string{"order 1", "order 2"} {
				if _, err := h.sns.Publish(ctx, &sns.PublishInput{TopicArn: aws.String("arn:aws:sns:us-east-1:000000000000:rental-orders"), Message: aws.String(m)}); err != nil {
					t.Fatal(err)
				}
			}
			setPolicy(out.Attributes["Policy"])

			g.run(t, h, "dlq-ls-fanout", "dlq", "ls", "--fanout", "fulfilment", "-o", "json")
			g.run(t, h, "dlq-peek-fanout", "dlq", "peek", "--fanout", "fulfilment", "-o", "json")
			g.exitOnly(t, h, "dlq-redrive-fanout-move-task", "dlq", "redrive", "fulfilment-fanout-dlq", "--method", "move-task", "-o", "json")
			g.run(t, h, "dlq-redrive-fanout", "dlq", "redrive", "fulfilment-fanout-dlq", "-o", "json")
		})
	})

	t.Run("policy", func(t *testing.T) {
		h := newHarness(t)
		g.run(t, h, "policy-preview", "policy", "preview", "--retries", "4", "--min-delay", "10", "--max-delay", "80", "--backoff", "exponential", "-o", "json")
		g.run(t, h, "policy-preview-default", "policy", "preview", "-o", "json")
		g.run(t, h, "policy-preview-file", "policy", "preview", "testdata/sns-example-policy.json", "-o", "json")
		g.run(t, h, "policy-preview-compare", "policy", "preview", "--compare", "--min-delay", "5", "--max-delay", "260", "--retries", "10", "-o", "json")
		h.stdin = `{"numRetries": 2, "minDelayTarget": 7200, "maxDelayTarget": 7200}`
		g.run(t, h, "policy-preview-not-sns", "policy", "preview", "-", "-o", "json")
		h.stdin = `{"numRetries": 2, "minDelayTarget": 7200, "maxDelayTarget": 7200}`
		g.exitOnly(t, h, "policy-preview-sns-refuses", "policy", "preview", "-", "--sns", "-o", "json")
		g.exitOnly(t, h, "policy-preview-bad-backoff", "policy", "preview", "--backoff", "cubic", "-o", "json")
	})

	t.Run("template", func(t *testing.T) {
		h := newHarness(t)
		g.run(t, h, "template", "template", "orders", "-o", "json")
		g.run(t, h, "template-fanout-fifo", "template", "ledger", "--topic", "rental-orders.fifo", "--raw", "-o", "json")
		g.exitOnly(t, h, "template-bad-name", "template", "bad name!", "-o", "json")
		g.run(t, h, "template-schedule-group", "template", "orders", "--schedule-group", "reports", "-o", "json")
		g.exitOnly(t, h, "template-bad-schedule-group", "template", "orders", "--schedule-group", "bad group!", "-o", "json")
		g.run(t, h, "template-scaling-keda", "template", "--scaling", "keda", "--handler-time", "200ms", "--concurrency", "16",
			"--target-latency", "30s", "--namespace", "jobs", "--max", "20", "--trigger-auth", "sqs-reader",
			"https://sqs.eu-west-1.amazonaws.com/123456789012/Orders", "-o", "json")
		g.run(t, h, "template-scaling-ecs", "template", "--scaling=ecs", "--capacity", "12.5", "--target-latency", "2m",
			"--cluster", "prod", "--service", "orders-worker", "--max", "40", "--shutdown-timeout", "60s", "orders", "-o", "json")
		g.run(t, h, "template-scaling-lambda", "template", "--scaling", "lambda", "--handler-time", "120ms", "--concurrency", "4",
			"--function", "orders-fn", "--rate", "200", "--batch-size", "50", "--batch-window", "2s",
			"--visibility-timeout", "5m", "--target-latency", "10s", "arn:aws:sqs:eu-west-1:123456789012:orders", "-o", "json")
		g.exitOnly(t, h, "template-scaling-unknown", "template", "--scaling", "nomad", "orders", "-o", "json")
	})

	t.Run("version", func(t *testing.T) {
		info := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/sqsworker/sqsworker", Version: "v0.3.0"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"}, {Key: "vcs.time", Value: "2025-03-01T12:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}
		for name, read := range map[string]func() (*debug.BuildInfo, bool){
			"version":         func() (*debug.BuildInfo, bool) { return info, true },
			"version-unknown": func() (*debug.BuildInfo, bool) { return nil, false },
		} {
			var out bytes.Buffer
			a := &app{stdin: strings.NewReader(""), stdout: &out, stderr: io.Discard, buildInfo: read}
			args := []string{"version", "-o", "json"}
			g.record(t, name, args, a.run(context.Background(), args), out.String())
		}
	})

	t.Run("cost", func(t *testing.T) {
		h := newHarness(t)
		file := writeStats(t, sampleStats())
		args := []string{"cost", file, "--monthly", "1000000", "-o", "json"}
		code, out, _ := h.run(t, args...)
		g.record(t, "cost", args, code, out, file, "STATS.json")
		b, _ := json.Marshal(sampleStats())
		h.stdin = string(b)
		g.run(t, h, "cost-fifo-per-unit", "cost", "-", "--fifo", "--per", "5000", "-o", "json")
		h.stdin = `{"Received": 0, "Requests": {}}`
		g.run(t, h, "cost-nothing-received", "cost", "-", "-o", "json")
		h.stdin = `{"state":"running"}`
		g.exitOnly(t, h, "cost-not-stats", "cost", "-", "-o", "json")
		g.exitOnly(t, h, "cost-interval-without-url", "cost", "stats.json", "--interval", "1s", "-o", "json")

		// --interval polls a worker's StatsHandler: one JSON line an
		// interval, each interval's counts alone.
		var calls atomic.Int64
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s := sampleStats()
			n := calls.Add(1) - 1 // 1,000 more messages and 201 more requests a sample
			s.Received += 1000 * n
			s.Requests["ReceiveMessage"] += 101 * n
			s.Requests["DeleteMessageBatch"] += 100 * n
			s.BilledRequests["ReceiveMessage"] += 101 * n
			s.BilledRequests["DeleteMessageBatch"] += 100 * n
			s.RequestResults["ReceiveMessage"]["ok"] += 101 * n
			s.RequestResults["DeleteMessageBatch"]["ok"] += 100 * n
			_ = json.NewEncoder(w).Encode(s)
		}))
		defer srv.Close()
		args = []string{"cost", srv.URL, "--interval", "10ms", "--count", "2", "-o", "json"}
		code, out, _ = h.run(t, args...)
		g.record(t, "cost-interval.jsonl", args, code, out, srv.URL, "http://STATS-URL")

		// Interrupted while it samples: 130.
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		var stdout bytes.Buffer
		a := &app{stdin: strings.NewReader(""), stdout: &stdout, stderr: io.Discard, now: time.Now, buildInfo: debug.ReadBuildInfo}
		args = []string{"cost", srv.URL, "--interval", "1h", "-o", "json"}
		g.record(t, "cost-interval-interrupted", args, a.run(ctx, args), "", srv.URL, "http://STATS-URL")
		if stdout.Len() != 0 {
			t.Errorf("interrupted cost printed %q", stdout.String())
		}
	})

	t.Run("console", func(t *testing.T) {
		h := newHarness(t)
		h.fake.MustCreateQueueWithDLQ(t, "orders", 5, nil)
		for name, extra := range map[string][]string{"console": nil, "console-actions": {"--actions"}} {
			args := append([]string{"console", "--addr", "127.0.0.1:0", "--queues", "orders", "-o", "json"}, extra...)
			code, out, url := runConsoleJSON(t, h, args)
			g.record(t, name, args, code, out, url, "http://127.0.0.1:PORT/")
		}
		g.exitOnly(t, h, "console-bad-worker", "console", "--worker", "http://127.0.0.1:9464/stats", "-o", "json")
	})

	t.Run("fleet", func(t *testing.T) {
		h, table := newFleetHarness(t, "golden-cli")
		h.fake.MustCreateQueueWithDLQ(t, "orders", 100, nil)
		for range 3 {
			h.fake.MustSend(t, "https://sqs.us-east-1.amazonaws.com/000000000000/orders", "job")
		}
		h.fake.MustCreateQueue(t, "plain", nil)
		// The table's items expire (DynamoDB TTL) a week after they are
		// written, by the writer's clock, and DynamoDB Local deletes
		// expired items: the clock here is the real one, and its times
		// are stood in for.
		base := time.Now().Truncate(time.Second)
		h.now = base
		tbl := []string{table, "FLEET-TABLE"}
		for _, at := range []struct {
			d    time.Duration
			name string
		}{{0, "NOW"}, {10 * time.Second, "NOW+10s"}, {time.Minute, "NOW+1m"}} {
			tm := base.Add(at.d)
			tbl = append(tbl, `"`+tm.UTC().Format(time.RFC3339Nano)+`"`, `"`+at.name+`"`, `"`+tm.Local().Format(time.RFC3339Nano)+`"`, `"`+at.name+`"`)
		}
		run := func(name string, args ...string) {
			t.Helper()
			code, out, _ := h.run(t, args...)
			g.record(t, name, args, code, out, tbl...)
		}
		exitOnly := func(name string, args ...string) {
			t.Helper()
			code, _, _ := h.run(t, args...)
			g.record(t, name, args, code, "", tbl...)
		}
		exitOnly("pause-without-table", "pause", "orders", "-o", "json")
		exitOnly("pause-missing-table", "pause", "--table", "no-such-table", "orders", "-o", "json")
		exitOnly("pause-missing-queue", "pause", "--table", table, "no-such-queue", "-o", "json")
		run("paused-not-paused", "paused", "--table", table, "orders", "-o", "json")
		run("status", "status", "orders", "-o", "json")
		run("status-no-dlq", "status", "plain", "-o", "json")
		run("status-table-empty", "status", "--table", table, "orders", "-o", "json")
		run("pause", "pause", "--table", table, "--reason", "database migration", "orders", "-o", "json")
		run("paused", "paused", "--table", table, "orders", "-o", "json")

		// A worker process's controls: a shared breaker open for a minute,
		// two slots of tenant acme held.
		f, err := fleet.New(h.dynamo, table, func(o *fleet.Options) {
			o.Holder = "worker-7"
			o.Now = func() time.Time { return base }
		})
		if err != nil {
			t.Fatal(err)
		}
		fleettable.Occupy(t, f)
		h.now = h.now.Add(10 * time.Second)
		run("status-fleet", "status", "--table", table, "orders", "-o", "json")
		run("resume", "resume", "--table", table, "orders", "-o", "json")
		exitOnly("status-missing-table", "status", "--table", "no-such-table", "orders", "-o", "json")
		run("fleet-check", "fleet", "check", table, "-o", "json")
		run("fleet-check-missing", "fleet", "check", "no-such-table", "-o", "json")
		run("fleet-create-table-exists", "fleet", "create-table", table, "-o", "json")
	})

	t.Run("schedules", func(t *testing.T) {
		h := newHarness(t)
		yml, v2 := "testdata/schedules/reports.yaml", "testdata/schedules/reports-v2.json"
		g.run(t, h, "schedules-ls-empty", "schedules", "ls", "--group", "reports", "-o", "json")
		g.run(t, h, "schedules-diff", "schedules", "diff", yml, "-o", "json")
		g.run(t, h, "schedules-apply", "schedules", "apply", yml, "-o", "json")
		g.run(t, h, "schedules-apply-unchanged", "schedules", "apply", yml, "-o", "json")
		g.run(t, h, "schedules-ls", "schedules", "ls", "--group", "reports", "-o", "json")
		g.run(t, h, "schedules-diff-check", "schedules", "diff", "--check", v2, "-o", "json")
		g.run(t, h, "schedules-apply-changes", "schedules", "apply", v2, "-o", "json")
		g.exitOnly(t, h, "schedules-invalid", "schedules", "diff", "testdata/schedules/bad-zone.yaml", "-o", "json")
		g.exitOnly(t, h, "schedules-unknown-field", "schedules", "apply", "testdata/schedules/unknown-field.yaml", "-o", "json")
		g.exitOnly(t, h, "schedules-missing-file", "schedules", "apply", "-o", "json")
	})

	t.Run("unique", func(t *testing.T) {
		h, fleetTable := newFleetHarness(t, "golden-cli")
		table := testenv.UniqueName("golden-unique")
		t.Cleanup(func() {
			if db, ok := h.dynamo.(*dynamodb.Client); ok {
				_, _ = db.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(table)})
			}
		})
		run := func(name string, args ...string) {
			t.Helper()
			code, out, _ := h.run(t, args...)
			g.record(t, name, args, code, out, table, "UNIQUE-TABLE", fleetTable, "FLEET-TABLE")
		}
		run("unique-create-table", "unique", "create-table", table, "-o", "json")
		run("unique-check", "unique", "check", table, "-o", "json")
		run("unique-check-missing", "unique", "check", "no-such-table", "-o", "json")
		run("unique-check-wrong-key", "unique", "check", fleetTable, "-o", "json")
		_, dlq := h.fake.MustCreateQueueWithDLQ(t, "reports", 4, nil)
		if _, err := h.fake.SetQueueAttributes(context.Background(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(dlq), Attributes: map[string]string{"MessageRetentionPeriod": "1209600"}}); err != nil {
			t.Fatal(err)
		}
		run("doctor-unique-table", "doctor", "--no-subscriptions", "--unique-table", table, "reports", "-o", "json")
		run("doctor-unique-table-missing", "doctor", "--no-subscriptions", "--unique-table", "no-such-table", "reports", "-o", "json")
	})

	t.Run("usage", func(t *testing.T) {
		h := newHarness(t)
		for name, args := range map[string][]string{
			"usage-no-command":        {},
			"usage-unknown-command":   {"frobnicate"},
			"usage-unknown-output":    {"dlq", "ls", "-o", "yaml"},
			"usage-unknown-flag":      {"dlq", "peek", "orders", "--no-such-flag", "-o", "json"},
			"usage-negative-number":   {"dlq", "peek", "orders", "-n", "-1", "-o", "json"},
			"usage-missing-arguments": {"status", "-o", "json"},
			"usage-help":              {"--help"},
			"usage-command-help":      {"status", "--help"},
		} {
			g.exitOnly(t, h, name, args...)
		}
	})
}

// runConsoleJSON runs `sqsworker console` with -o json on h's clients,
// reads the JSON it prints when it listens, interrupts it and returns its
// exit code, its output and its URL.
func runConsoleJSON(t *testing.T, h *harness, args []string) (int, string, string) {
	t.Helper()
	pr, pw := io.Pipe()
	a := &app{
		stdin: strings.NewReader(""), stdout: pw, stderr: io.Discard,
		newClient:  func(context.Context, awsFlags) (client, error) { return h.fake, nil },
		newSNS:     func(context.Context, awsFlags) (snsClient, error) { return h.sns, nil },
		newDynamo:  func(context.Context, awsFlags) (fleet.API, error) { return h.dynamo, nil },
		isTerminal: func(any) bool { return false },
		now:        func() time.Time { return h.now },
		buildInfo:  debug.ReadBuildInfo,
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() {
		done <- a.run(ctx, args)
		pw.Close()
	}()
	var out strings.Builder
	r := bufio.NewReader(pr)
	for {
		line, err := r.ReadString('\n')
		out.WriteString(line)
		if err != nil || line == "}\n" {
			break
		}
	}
	var v struct {
		URL string `json:"url"`
	}
	if err := json.Unmarshal([]byte(out.String()), &v); err != nil || v.URL == "" {
		t.Fatalf("console -o json printed %q: %v", out.String(), err)
	}
	go io.Copy(io.Discard, r)
	cancel()
	return <-done, out.String(), v.URL
}
