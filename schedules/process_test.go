package schedules_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/logging"

	"github.com/sqsworker/sqsworker/harness/testenv"
	"github.com/sqsworker/sqsworker/idempotency"
	"github.com/sqsworker/sqsworker/schedules"
	"github.com/sqsworker/sqsworker/worker"
)

// childEnv, set to "QUEUE-URL TABLE LOG LEASE", makes the test binary a
// consumer: one handler slot, no prefetch, Unwrap keeping the ticks'
// state in TABLE. It appends a line to LOG for each tick it starts
// ("start TIME PID"), ends ("end TIME PID") or skips ("skip TIME REASON
// PID"). A job whose body is "sleep:D" runs for D; "hang" runs until the
// process is killed.
const childEnv = "SCHEDULES_PROCESS_CHILD"

func TestMain(m *testing.M) {
	if raw := os.Getenv(applyChildEnv); raw != "" {
		if err := runApplyChild(raw); err != nil {
			fmt.Fprintln(os.Stderr, "schedules apply child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if raw := os.Getenv(childEnv); raw != "" {
		if err := runChild(raw); err != nil {
			fmt.Fprintln(os.Stderr, "schedules child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func runChild(raw string) error {
	var queue, table, logPath, leaseText string
	if _, err := fmt.Sscan(raw, &queue, &table, &logPath, &leaseText); err != nil {
		return err
	}
	lease, err := time.ParseDuration(leaseText)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return err
	}
	cfg.Logger = logging.Nop{} // DynamoDB Local's conditional-check answers fail the SDK's checksum warning
	sq := sqs.NewFromConfig(cfg, func(o *sqs.Options) { o.BaseEndpoint = aws.String(os.Getenv("AWS_ENDPOINT_URL_SQS")) })
	db := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(os.Getenv("AWS_ENDPOINT_URL_DYNAMODB")) })
	logf, err := os.OpenFile(logPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	pid := os.Getpid()
	line := func(format string, args ...any) { fmt.Fprintf(logf, format+" %d\n", append(args, pid)...) }
	h := worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
		t, _ := schedules.TickOf(m)
		at := t.Time.UTC().Format(time.RFC3339)
		line("start %s", at)
		switch {
		case m.Body == "hang":
			<-ctx.Done()
			return ctx.Err()
		case strings.HasPrefix(m.Body, "sleep:"):
			d, _ := time.ParseDuration(strings.TrimPrefix(m.Body, "sleep:"))
			select {
			case <-time.After(d):
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		}
		line("end %s", at)
		return nil
	})
	unwrap := schedules.Unwrap(func(o *schedules.UnwrapOptions) {
		o.Table, o.DynamoDB, o.Lease = table, db, lease
		o.OnSkip = func(_ context.Context, t schedules.Tick, reason string) {
			line("skip %s %s", t.Time.UTC().Format(time.RFC3339), reason)
		}
	})
	w, err := worker.New(sq, queue, unwrap(h), func(o *worker.Options) {
		o.Logger, o.Concurrency, o.MaxPrefetch, o.WaitTime, o.AllowNoDLQ = slog.New(slog.DiscardHandler), 1, -1, time.Second, true
	})
	if err != nil {
		return err
	}
	return w.Run(ctx)
}

// procLog reads the children's shared log.
type procLog struct {
	t    *testing.T
	path string
}

type event struct {
	kind, tick, reason string
	pid                int
}

func (l procLog) events() []event {
	f, err := os.Open(l.path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []event
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		e := event{kind: fs[0], tick: fs[1]}
		if e.kind == "skip" && len(fs) == 4 {
			e.reason = fs[2]
		}
		fmt.Sscan(fs[len(fs)-1], &e.pid)
		out = append(out, e)
	}
	return out
}

// wait returns the first event of kind for tick, failing after 15 s.
func (l procLog) wait(kind, tick string) event {
	l.t.Helper()
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		for _, e := range l.events() {
			if e.kind == kind && e.tick == tick {
				return e
			}
		}
		if time.Now().After(deadline) {
			l.t.Fatalf("no %q of tick %s within 15 s; log: %+v", kind, tick, l.events())
		}
	}
}

func (l procLog) count(kind, tick string) int {
	n := 0
	for _, e := range l.events() {
		if e.kind == kind && e.tick == tick {
			n++
		}
	}
	return n
}

// The acceptance across processes, on the SQS and DynamoDB
// emulators: OS processes consuming one queue, Unwrap keeping the ticks'
// state in one DynamoDB table. A second delivery of a tick that another
// process is running is skipped ("duplicate"); a tick of a "skip"
// schedule arriving while another process runs the previous one is
// skipped ("overlap"); once the run ends the next tick runs; and a
// runner killed with kill -9 mid-run blocks the schedule at most Lease
// (its lease is not renewed any more), after which a tick runs again.
func TestEmulatorOverlapAcrossProcesses(t *testing.T) {
	q, db := testenv.SQS(t), testenv.DynamoDB(t)
	ctx := t.Context()
	table := testenv.UniqueName("schedlease")
	if err := idempotency.CreateTable(ctx, db, table); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = db.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	})
	out, err := q.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(testenv.UniqueName("schedproc")),
		Attributes: map[string]string{"VisibilityTimeout": "30"}})
	if err != nil {
		t.Fatal(err)
	}
	url := *out.QueueUrl
	t.Cleanup(func() { _, _ = q.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(url)}) })

	const lease = 3 * time.Second
	log := procLog{t: t, path: filepath.Join(t.TempDir(), "events")}
	var mu sync.Mutex
	children := map[int]*exec.Cmd{}
	startChild := func() int {
		t.Helper()
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = testenv.ChildEnv(t, fmt.Sprintf("%s=%s %s %s %s", childEnv, url, table, log.path, lease))
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		children[cmd.Process.Pid] = cmd
		mu.Unlock()
		t.Cleanup(func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() })
		return cmd.Process.Pid
	}
	arn := "arn:aws:scheduler:us-east-1:123456789012:schedule/procs/" + testenv.UniqueName("nightly")
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tick := func(i int) string { return base.Add(time.Duration(i) * time.Minute).Format(time.RFC3339) }
	// deliver sends what Scheduler sends for tick i of the "skip"
	// schedule: the envelope with its context attributes filled in.
	deliver := func(i int, body string) {
		t.Helper()
		env, _ := json.Marshal(struct {
			V       string `json:"sqsworker"`
			ARN     string `json:"arn"`
			Time    string `json:"time"`
			Attempt string `json:"attempt"`
			Overlap string `json:"overlap"`
			Body    string `json:"body"`
		}{"sqsworker.schedule/1", arn, tick(i), "1", "skip", body})
		if _, err := q.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(string(env))}); err != nil {
			t.Fatal(err)
		}
	}

	a := startChild()
	deliver(1, "sleep:3s")
	if e := log.wait("start", tick(1)); e.pid != a {
		t.Fatalf("tick 1 started in %d, want the only process %d", e.pid, a)
	}
	// b is the only free consumer while a runs tick 1.
	b := startChild()
	deliver(1, "sleep:3s") // Scheduler's second delivery of tick 1
	deliver(2, "sleep:0s") // the next tick, while tick 1 runs
	if e := log.wait("skip", tick(1)); e.pid != b || e.reason != "duplicate" {
		t.Errorf("second delivery of tick 1: %+v, want skipped as duplicate by process %d", e, b)
	}
	if e := log.wait("skip", tick(2)); e.pid != b || e.reason != "overlap" {
		t.Errorf("tick 2 during tick 1: %+v, want skipped as overlap by process %d", e, b)
	}
	log.wait("end", tick(1))
	deliver(3, "sleep:0s")
	log.wait("end", tick(3)) // the run's lease ended with it

	// kill -9 mid-run.
	deliver(4, "hang")
	victim := log.wait("start", tick(4)).pid
	mu.Lock()
	cmd := children[victim]
	mu.Unlock()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	deliver(5, "sleep:0s")
	if e := log.wait("skip", tick(5)); e.reason != "overlap" {
		t.Errorf("tick 5 right after the kill: %+v, want skipped as overlap (the dead run's lease holds)", e)
	}
	// A tick every 250 ms until one runs: the first must start within the
	// lease (plus the emulators' latency) of the kill.
	var ran int
	for i := 6; ran == 0; i++ {
		if time.Since(killed) > lease+5*time.Second {
			t.Fatalf("no tick ran %s after the runner was killed (lease %s); log: %+v", time.Since(killed).Round(time.Millisecond), lease, log.events())
		}
		deliver(i, "sleep:0s")
		time.Sleep(250 * time.Millisecond)
		for j := 6; j <= i; j++ {
			if log.count("start", tick(j)) > 0 {
				ran = j
			}
		}
	}
	blocked := time.Since(killed)
	if blocked > lease+2*time.Second {
		t.Errorf("the schedule stayed blocked %s after kill -9, want at most the lease %s (+2 s)", blocked.Round(time.Millisecond), lease)
	}
	t.Logf("after kill -9 the schedule was blocked %s (lease %s); ticks 5..%d skipped as overlap", blocked.Round(time.Millisecond), lease, ran-1)
	for _, i := range []int{1, 2, 3} {
		if n := log.count("start", tick(i)); n > 1 || (i != 2 && n != 1) {
			t.Errorf("tick %d started %d times", i, n)
		}
	}
}
