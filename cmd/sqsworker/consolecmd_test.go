package main

import (
	"bufio"
	"context"
	"github.com/sqsworker/sqsworker/console"
	"github.com/sqsworker/sqsworker/harness/cloudwatchfake"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/sqsworker/sqsworker/fleet"
	"github.com/sqsworker/sqsworker/producer"
	"github.com/sqsworker/sqsworker/schedules"
)

// The console command listens on the loopback interface by default, prints
// its URL, serves a read-only console unless --actions, and returns 0 when
// interrupted.
func TestConsoleServesReadOnlyOnLoopback(t *testing.T) {
	if !strings.HasPrefix(defaultConsoleAddr, "127.0.0.1:") {
		t.Fatalf("the default address %s is not the loopback interface", defaultConsoleAddr)
	}
	h := newHarness(t)
	h.fake.MustCreateQueueWithDLQ(t, "orders", 5, nil)
	c := startConsole(t, h, "--addr", "127.0.0.1:0", "--queues", "orders,orders-dlq")
	if !strings.HasPrefix(c.url, "http://127.0.0.1:") || !strings.Contains(c.line, "read-only") {
		t.Fatalf("first line %q: want the loopback URL and read-only", c.line)
	}
	resp, err := http.Get(c.url)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `data-queue="orders"`) || !strings.Contains(string(b), "read-only") {
		t.Fatalf("GET %s: %s\n%s", c.url, resp.Status, b)
	}
	resp, err = http.Post(c.url+"queues/orders/dlq/redrive", "application/x-www-form-urlencoded", strings.NewReader("scope=all"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("POST to a read-only console: %s; want 403", resp.Status)
	}
	if code := c.stop(); code != exitOK {
		t.Fatalf("exit code %d after the interrupt; stderr:\n%s", code, c.stderr.String())
	}
}

// runningConsole is a `sqsworker console` started by startConsole.
type runningConsole struct {
	url, line string // the console's URL and the first line printed
	stderr    *strings.Builder
	stop      func() int // interrupts the command and returns its exit code
}

// startConsole runs `sqsworker console args...` on h's clients until stop.
func startConsole(t *testing.T, h *harness, args ...string) runningConsole {
	t.Helper()
	pr, pw := io.Pipe()
	var stderr strings.Builder
	a := &app{
		newCloudWatch: func(context.Context, awsFlags) (console.CloudWatchAPI, error) { return h.cloudWatch(), nil },
		stdin:         strings.NewReader(""), stdout: pw, stderr: &stderr,
		newClient:  func(context.Context, awsFlags) (client, error) { return h.fake, nil },
		newSNS:     func(context.Context, awsFlags) (snsClient, error) { return h.sns, nil },
		newDynamo:  func(context.Context, awsFlags) (fleet.API, error) { return h.dynamo, nil },
		isTerminal: func(any) bool { return false },
		now:        time.Now,
		buildInfo:  debug.ReadBuildInfo,
	}
	a.newScheduler = func(context.Context, awsFlags) (schedules.API, error) { return h.scheduler, nil }
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	code := make(chan int, 1)
	go func() { code <- a.run(ctx, append([]string{"console"}, args...)) }()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("%v; stderr:\n%s", err, stderr.String())
	}
	go io.Copy(io.Discard, pr)
	u, _, _ := strings.Cut(strings.TrimPrefix(line, "sqsworker console: "), " ")
	return runningConsole{url: u, line: line, stderr: &stderr, stop: func() int { cancel(); return <-code }}
}

// With a fleet table and --actions the console has a Fleet page that
// pauses a queue in the table.
func TestConsoleWithAFleetTablePauses(t *testing.T) {
	h, table := newFleetHarness(t, "console-cli")
	h.fake.MustCreateQueueWithDLQ(t, "orders", 5, nil)
	c := startConsole(t, h, "--addr", "127.0.0.1:0", "--queues", "orders", "--actions", "--table", table)
	if !strings.Contains(c.line, "pause queues") {
		t.Fatalf("first line %q: want it to say that actions include pausing queues", c.line)
	}
	jar, _ := cookiejar.New(nil)
	web := &http.Client{Jar: jar}
	resp, err := web.Get(c.url + "fleet")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindSubmatch(b)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `data-queue="orders"`) || m == nil {
		t.Fatalf("GET /fleet: %s\n%s", resp.Status, b)
	}
	resp, err = web.PostForm(c.url+"queues/orders/pause", url.Values{"csrf": {string(m[1])}, "reason": {"incident 42"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	f, err := fleet.New(h.dynamo, table)
	if err != nil {
		t.Fatal(err)
	}
	st, err := f.PauseState(t.Context(), "orders")
	if err != nil || !st.Paused || !strings.HasPrefix(st.By, "sqsworker-console@") || !strings.HasPrefix(st.Reason, "incident 42") {
		t.Fatalf("after pausing in the console (%s): %+v, %v; want paused by sqsworker-console@host", resp.Status, st, err)
	}
	if code := c.stop(); code != exitOK || !strings.Contains(c.stderr.String(), `msg="sqsworker/console: pause" user=local queue=orders`) {
		t.Fatalf("exit code %d; want 0 and the pause in the audit log (stderr):\n%s", code, c.stderr.String())
	}
}

func TestConsoleRejectsABadWorkerFlag(t *testing.T) {
	code, _, errOut := newHarness(t).run(t, "console", "--worker", "http://127.0.0.1:9464/stats")
	if code != exitUsage || !strings.Contains(errOut, "NAME=URL") {
		t.Fatalf("exit %d, stderr %q; want a usage error asking for NAME=URL", code, errOut)
	}
}

// A fleet table that does not exist stops the console before it listens,
// with how to create one.
func TestConsoleRefusesAMissingFleetTable(t *testing.T) {
	h, _ := newFleetHarness(t, "console-cli")
	code, out, errOut := h.run(t, "console", "--addr", "127.0.0.1:0", "--table", "no-such-table")
	if code != exitProblems || !strings.Contains(errOut, "CreateTable") || strings.Contains(out, "http://") {
		t.Fatalf("console with a missing table: exit %d, stdout %q, stderr %q; want it refused, saying how to create the table", code, out, errOut)
	}
}

// cloudWatch is the harness's in-memory CloudWatch, made on first use.
func (h *harness) cloudWatch() *cloudwatchfake.CloudWatch {
	if h.cw == nil {
		h.cw = cloudwatchfake.New()
	}
	return h.cw
}

// With --cloudwatch the History pages chart CloudWatch's metrics, the
// sent rate among them, and say so.
func TestConsoleCloudWatchHistory(t *testing.T) {
	h := newHarness(t)
	h.fake.MustCreateQueueWithDLQ(t, "orders", 5, nil)
	h.cloudWatch().Add("AWS/SQS", "NumberOfMessagesSent", "orders", cloudwatchfake.Point{At: time.Now().Add(-2 * time.Minute), V: 42})
	c := startConsole(t, h, "--addr", "127.0.0.1:0", "--queues", "orders", "--cloudwatch", "--sample-every", "0")
	resp, err := http.Get(c.url + "queues/orders/history")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "Source: CloudWatch") || !strings.Contains(string(b), "Sent per minute: latest datapoint 42") {
		t.Fatalf("GET history: %s\n%s", resp.Status, b)
	}
	if r, m := h.cw.Requests(); r != 1 || m != 12 {
		t.Errorf("%d requests of %d metrics; want 1 of 12", r, m)
	}
	if code := c.stop(); code != exitOK {
		t.Fatalf("exit code %d; stderr:\n%s", code, c.stderr.String())
	}
}

// With --schedule-group the console has a Schedules page listing the
// group's schedules and the pending one-time jobs, and with --actions an
// operator cancels a job there.
func TestConsoleSchedulesPage(t *testing.T) {
	h := newHarness(t)
	doctorScheduleGroup(t, h)
	jobs, err := schedules.NewJobs(h.scheduler, acct+"reports", func(o *schedules.Options) { o.Group, o.RoleARN = "jobs", "arn:aws:iam::000000000000:role/r" })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := jobs.At(t.Context(), "remind-7", time.Now().Add(2*time.Hour), producer.Message{Body: "b"}); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := h.run(t, "console", "--jobs-group", "jobs"); code != exitUsage || !strings.Contains(errOut, "goes with --schedule-group") {
		t.Fatalf("--jobs-group alone: exit %d, %q", code, errOut)
	}
	c := startConsole(t, h, "--addr", "127.0.0.1:0", "--queues", "reports", "--actions", "--schedule-group", "reports", "--jobs-group", "jobs")
	if !strings.Contains(c.line, "cancel scheduled jobs") {
		t.Fatalf("first line %q", c.line)
	}
	jar, _ := cookiejar.New(nil)
	web := &http.Client{Jar: jar}
	resp, err := web.Get(c.url + "schedules")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindSubmatch(b)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `data-schedule="healthy"`) || !strings.Contains(string(b), `data-job="remind-7"`) || m == nil {
		t.Fatalf("GET /schedules: %s\n%s", resp.Status, b)
	}
	resp, err = web.PostForm(c.url+"schedules/jobs/remind-7/cancel", url.Values{"csrf": {string(m[1])}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if list, _ := schedules.List(t.Context(), h.scheduler, func(o *schedules.Options) { o.Group = "jobs" }); len(list) != 0 || resp.StatusCode != http.StatusOK {
		t.Fatalf("after the cancel (%s) the jobs group holds %+v", resp.Status, list)
	}
	if code := c.stop(); code != exitOK || !strings.Contains(c.stderr.String(), `msg="sqsworker/console: cancel job" user=local group=jobs job=remind-7`) {
		t.Fatalf("exit code %d; want 0 and the cancel in the audit log (stderr):\n%s", code, c.stderr.String())
	}
}
