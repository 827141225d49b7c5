package main

import (
	"context"
	"encoding/json"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"

	"github.com/sqsworker/sqsworker/sqstest"
)

// The tests of issue 18: what a new user met when first trying the CLI.

func TestDLQCommandsAcceptTheDLQsOwnName(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		target := deadLetter(t, h, "orders", 3, func(int) string { return "boom" })

		code, out, errOut := h.run(t, "dlq", "peek", "orders-dlq", "-n", "1")
		if code != exitOK || !strings.Contains(out, "dead-letter queue orders-dlq of orders: about 3 messages; showing 1") {
			t.Errorf("peek by DLQ name: exit %d\n%s%s", code, out, errOut)
		}
		code, out, _ = h.run(t, "dlq", "ls", "orders-dlq", "-o", "json")
		var rows []lsRow
		if err := json.Unmarshal([]byte(out), &rows); code != exitOK || err != nil || len(rows) != 1 || rows[0].Queue != "orders" || rows[0].DLQ != "orders-dlq" {
			t.Errorf("ls by DLQ name: exit %d %v\n%s", code, err, out)
		}
		code, out, errOut = h.run(t, "dlq", "redrive", "orders-dlq", "--method", "manual")
		if code != exitOK || !strings.Contains(out, "moved 3 messages from orders-dlq to orders") {
			t.Errorf("redrive by DLQ name: exit %d\n%s%s", code, out, errOut)
		}
		h.fake.MustSend(t, target.DLQURL, "dead again")
		code, out, _ = h.run(t, "dlq", "purge", "orders-dlq", "--yes")
		if code != exitOK || !strings.Contains(out, "purged orders-dlq") {
			t.Errorf("purge by DLQ name: exit %d\n%s", code, out)
		}

		// doctor knows a dead-letter queue when it sees one.
		code, out, _ = h.run(t, "doctor", "orders-dlq", "--attempts", "4")
		if code != exitOK || strings.Contains(out, "orders-dlq-dlq") || !strings.Contains(out, "orders-dlq: ok, 1 note") || !strings.Contains(out, "is-dead-letter-queue") {
			t.Errorf("doctor of a DLQ: exit %d\n%s", code, out)
		}

		// A DLQ serving two queues: redrive asks which.
		h.fake.MustCreateQueue(t, "refunds", map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:orders-dlq","maxReceiveCount":5}`})
		code, _, errOut = h.run(t, "dlq", "redrive", "orders-dlq")
		if code != exitUsage || !strings.Contains(errOut, "serves queues orders, refunds") {
			t.Errorf("redrive of a shared DLQ: exit %d, stderr %q", code, errOut)
		}
		// Still refused for a queue that is nobody's DLQ.
		h.fake.MustCreateQueue(t, "plain", nil)
		if code, _, errOut := h.run(t, "dlq", "peek", "plain"); code != exitProblems || !strings.Contains(errOut, "no RedrivePolicy") {
			t.Errorf("peek of a plain queue: exit %d, %q", code, errOut)
		}
	})
}

func TestDoctorAttemptsAndPolicyAreExclusive(t *testing.T) {
	h := newHarness(t)
	doctorQueues(t, h)
	code, out, errOut := h.run(t, "doctor", "orders", "--attempts", "3", "--policy", "testdata/doctor-policy.json")
	if code != exitUsage || out != "" || errOut != "sqsworker doctor: give the retry policy either with --policy or with --attempts and --schedule-total, not both\n" {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

func TestDoctorWarnsOfHandlerTimeoutOver12h(t *testing.T) {
	h := newHarness(t)
	doctorQueues(t, h)
	h.fake.MustCreateQueue(t, "long", map[string]string{"MessageRetentionPeriod": "1209599"})
	code, out, _ := h.run(t, "doctor", "orders", "--attempts", "1", "--handler-timeout", "13h")
	if code != exitProblems || !strings.Contains(out, "handler-timeout-over-12h") || !strings.Contains(out, "longer than 12 hours") {
		t.Errorf("exit %d\n%s", code, out)
	}
}

func TestDoctorAppliesTheFIFORule(t *testing.T) {
	h := newHarness(t)
	src, dlqURL := h.fake.MustCreateQueueWithDLQ(t, "events.fifo", 5, map[string]string{"FifoQueue": "true"})
	_ = src
	if _, err := h.fake.SetQueueAttributes(context.Background(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(dlqURL), Attributes: map[string]string{"MessageRetentionPeriod": "1209600"}}); err != nil {
		t.Fatal(err)
	}
	// Without a policy: the worker's default (4 deliveries), as worker.New assumes.
	code, out, _ := h.run(t, "doctor", "events.fifo")
	if code != exitProblems || !strings.Contains(out, "fifo-max-receive-count") || !strings.Contains(out, "--max-receive-count 40") || !strings.Contains(out, "checked against the worker's default retry policy") {
		t.Errorf("exit %d\n%s", code, out)
	}
	// What setup makes for a FIFO queue passes.
	if code, _, _ := h.run(t, "setup", "events.fifo", "--max-receive-count", "40"); code != exitOK {
		t.Fatal("setup failed")
	}
	if code, out, _ := h.run(t, "doctor", "events.fifo"); code != exitOK {
		t.Errorf("after setup: exit %d\n%s", code, out)
	}
}

func TestPolicyErrorsAreOneSentenceNamingTheFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "policy.json")
	if err := os.WriteFile(file, []byte(`{"healthyRetryPolicy": {"numRetries": 1000}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"doctor", "orders", "--policy", file},
			"sqsworker doctor: " + file + ": healthyRetryPolicy.numRetries: 1000 is above 999, the most SQS can honour (a redrive policy's maxReceiveCount is at most 1000); lower it\n"},
		{[]string{"policy", "preview", "--sns", "--retries", "101"},
			"sqsworker policy preview: the policy: healthyRetryPolicy.numRetries (--retries): 101 is above SNS's limit of 100; lower it, or drop --sns: SQS's limits allow up to 999\n"},
		{[]string{"policy", "preview", "-"},
			"sqsworker policy preview: stdin: malformed JSON: "},
	} {
		h.stdin = "{"
		code, _, errOut := h.run(t, tc.args...)
		if code != exitUsage || !strings.HasPrefix(errOut, tc.want) {
			t.Errorf("%v: exit %d\n got %q\nwant %q", tc.args, code, errOut, tc.want)
		}
		for _, jargon := range []string{"retry:", "ParseDeliveryPolicy", "ValidateSQS", "delivery policy:"} {
			if strings.Contains(errOut, jargon) {
				t.Errorf("%v: %q names %q", tc.args, errOut, jargon)
			}
		}
	}
}

// noMoveTasks is the Fake without message move tasks, as local emulators are.
type noMoveTasks struct{ *sqstest.Fake }

func (noMoveTasks) StartMessageMoveTask(context.Context, *sqs.StartMessageMoveTaskInput, ...func(*sqs.Options)) (*sqs.StartMessageMoveTaskOutput, error) {
	return nil, &smithy.GenericAPIError{Code: "InvalidAction", Message: "Unknown action: StartMessageMoveTask"}
}

func (noMoveTasks) ListDeadLetterSourceQueues(context.Context, *sqs.ListDeadLetterSourceQueuesInput, ...func(*sqs.Options)) (*sqs.ListDeadLetterSourceQueuesOutput, error) {
	return nil, &smithy.GenericAPIError{Code: "InvalidAction", Message: "Unknown action: ListDeadLetterSourceQueues"}
}

func TestRedriveMoveTaskWithoutMoveTasksSaysUseManual(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		deadLetter(t, h, "orders", 2, func(int) string { return "x" })
		h.client = noMoveTasks{h.fake}
		code, _, errOut := h.run(t, "dlq", "redrive", "orders", "--method", "move-task")
		if code != exitUsage || !strings.Contains(errOut, "use --method manual") {
			t.Errorf("exit %d, stderr %q", code, errOut)
		}
		// auto falls back on its own.
		if code, out, _ := h.run(t, "dlq", "redrive", "orders", "--quiet"); code != exitOK || !strings.Contains(out, "moved 2 messages from orders-dlq to orders (manual)") {
			t.Errorf("auto: exit %d\n%s", code, out)
		}
	})
}

func TestRedriveToAQueueOfTheOtherTypeIsRefusedFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		deadLetter(t, h, "orders", 2, func(int) string { return "x" })
		h.fake.MustCreateQueue(t, "parking.fifo", map[string]string{"FifoQueue": "true"})
		receives := h.fake.Requests()["ReceiveMessage"]
		code, _, errOut := h.run(t, "dlq", "redrive", "orders", "--to", "parking.fifo")
		if code != exitUsage || !strings.Contains(errOut, "--to parking.fifo is a FIFO queue but dead-letter queue orders-dlq is a standard queue") {
			t.Errorf("exit %d, stderr %q", code, errOut)
		}
		if n := h.fake.Requests()["ReceiveMessage"]; n != receives {
			t.Errorf("%d messages received before refusing", n-receives)
		}
	})
}

// refused is the error the SDK returns when nothing listens at the endpoint.
func refused() error {
	return &url.Error{Op: "Post", URL: "http://127.0.0.1:9324/", Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}
}

func TestConnectionRefusedIsOneCause(t *testing.T) {
	for _, args := range [][]string{
		{"doctor", "orders", "invoices"},
		{"dlq", "ls", "orders", "invoices"},
		{"dlq", "ls"},
		{"dlq", "peek", "orders"},
		{"setup", "orders"},
	} {
		h := newHarness(t)
		h.fake.InjectFault(sqstest.Fault{Err: refused()})
		code, out, errOut := h.run(t, args...)
		if code != exitProblems || out != "" || strings.Count(errOut, "\n") != 1 ||
			!strings.Contains(errOut, "cannot reach http://127.0.0.1:9324 (connection refused)") || !strings.Contains(errOut, "localstack/start.sh") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want one line saying what to do", args, code, out, errOut)
		}
	}
}

func TestConnectWithoutCredentialsSaysSo(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_SESSION_TOKEN": "", "AWS_PROFILE": "",
		"AWS_CONFIG_FILE": empty, "AWS_SHARED_CREDENTIALS_FILE": empty, "AWS_EC2_METADATA_DISABLED": "true",
		"AWS_CONTAINER_CREDENTIALS_FULL_URI": "", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "", "AWS_WEB_IDENTITY_TOKEN_FILE": "",
	} {
		t.Setenv(k, v)
	}
	var out, errOut strings.Builder
	code := run(context.Background(), []string{"doctor", "--region", "us-east-1", "--endpoint-url", "http://127.0.0.1:1", "orders"}, strings.NewReader(""), &out, &errOut)
	if code != exitProblems || out.Len() != 0 || !strings.HasPrefix(errOut.String(), "sqsworker doctor: no AWS credentials found: set AWS_ACCESS_KEY_ID") || strings.Count(errOut.String(), "\n") != 1 {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out.String(), errOut.String())
	}
}

func TestConnectToNothingSaysStartTheEmulators(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_MAX_ATTEMPTS", "1")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	endpoint := "http://" + l.Addr().String()
	l.Close() // nothing listens there now
	var out, errOut strings.Builder
	code := run(context.Background(), []string{"dlq", "ls", "--region", "us-east-1", "--endpoint-url", endpoint}, strings.NewReader(""), &out, &errOut)
	want := "sqsworker dlq ls: cannot reach " + endpoint + " (connection refused)"
	if code != exitProblems || out.Len() != 0 || !strings.HasPrefix(errOut.String(), want) || strings.Count(errOut.String(), "\n") != 1 {
		t.Errorf("exit %d, stdout %q, stderr %q; want %q…", code, out.String(), errOut.String(), want)
	}
}

func TestVersion(t *testing.T) {
	h := newHarness(t)
	for _, args := range [][]string{{"version"}, {"--version"}} {
		code, out, errOut := h.run(t, args...)
		if code != exitOK || errOut != "" || !strings.HasPrefix(out, "sqsworker ") || !strings.Contains(out, "built with go") {
			t.Errorf("%v: exit %d, %q %q", args, code, out, errOut)
		}
	}
	got := readVersion(&debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/sqsworker/sqsworker", Version: "v0.3.0"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.time", Value: "2025-03-01T12:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}, true)
	if s := got.String(); s != "sqsworker v0.3.0 commit 0123456789ab (2025-03-01T12:00:00Z) with local changes, built with go1.26.0" {
		t.Errorf("version line %q", s)
	}
	code, out, _ := h.run(t, "version", "-o", "json")
	var v buildVersion
	if err := json.Unmarshal([]byte(out), &v); code != exitOK || err != nil || v.Module != "github.com/sqsworker/sqsworker" || v.Version == "" {
		t.Errorf("json: exit %d, %v, %+v", code, err, v)
	}
}
