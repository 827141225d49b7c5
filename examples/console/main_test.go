package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/examples/internal/exampleutil"
	"github.com/sqsworker/sqsworker/harness/testenv"
)

// TestRun runs the demo against the local SQS: once the worker has handled
// every job, the console serves the dead-letter queue with the two failure
// groups, and the demo stops when its context ends.
func TestRun(t *testing.T) {
	client, snsClient := testenv.SQS(t), testenv.SNS(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var out bytes.Buffer
	pages := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, exampleutil.LockedWriter(&out), client, snsClient, testenv.DynamoDB(t), "127.0.0.1:0", func(url string) {
			get := func(path string) string {
				resp, err := http.Get(url + path)
				if err != nil {
					return err.Error()
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				return resp.Status + "\n" + string(b)
			}
			overview := get("")
			dlqLink := ""
			if i := strings.Index(overview, `class="dlq" href="/`); i >= 0 {
				rest := overview[i+len(`class="dlq" href="/`):]
				dlqLink = rest[:strings.IndexByte(rest, '"')]
			}
			pages <- overview + "\n" + get(dlqLink) + "\n" + get("fleet")
			cancel()
		})
	}()
	if err := <-done; err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	var got string
	select {
	case got = <-pages:
	default:
		t.Fatalf("the demo never became ready:\n%s", out.String())
	}
	for _, want := range []string{"200 OK", "charge: card declined (do not retry)", "inventory: service unavailable (503)", `class="n count">8<`, `class="n count">4<`, "Pause switches", `class="ok">receiving<`} {
		if !strings.Contains(got, want) {
			t.Errorf("the console's pages lack %q", want)
		}
	}
	// Stopped, it says what it deleted.
	if !deletedLine.MatchString(out.String()) {
		t.Errorf("the demo does not say which queues and table it deleted:\n%s", out.String())
	}
}

// deletedLine is what the demo prints once it has deleted what it made.
var deletedLine = regexp.MustCompile(`Deleted queue (sqsworker-console-\w+), dead-letter queue (sqsworker-console-\w+-dlq), fleet table (sqsworker-console-\w+)\.`)

// TestMain runs the program itself when TestCtrlC starts this test binary
// as the demo.
func TestMain(m *testing.M) {
	if os.Getenv("SQSWORKER_CONSOLE_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// Ctrl-C is how the demo ends: the program exits 0 after deleting its
// queues and table, and says which; make console runs the built program,
// as go run would exit 1 on the interrupt whatever the program does.
func TestCtrlC(t *testing.T) {
	testenv.SQS(t)
	testenv.DynamoDB(t)
	cmd := exec.Command(os.Args[0], "-addr", "127.0.0.1:0")
	cmd.Env = testenv.ChildEnv(t, "SQSWORKER_CONSOLE_MAIN=1")
	var mu sync.Mutex
	var buf bytes.Buffer
	out := writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return buf.Write(p)
	})
	cmd.Stdout, cmd.Stderr = out, out
	read := func() string {
		mu.Lock()
		defer mu.Unlock()
		return buf.String()
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for !strings.Contains(read(), "Ctrl-C stops the demo") {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("the demo never became ready:\n%s", read())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("after Ctrl-C: %v (want exit status 0)\n%s", err, read())
		}
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		t.Fatalf("the demo did not stop after Ctrl-C:\n%s", read())
	}
	m := deletedLine.FindStringSubmatch(read())
	if m == nil {
		t.Fatalf("the demo does not say which queues and table it deleted:\n%s", read())
	}
	// They are gone.
	if _, err := testenv.SQS(t).GetQueueUrl(t.Context(), &sqs.GetQueueUrlInput{QueueName: aws.String(m[1])}); err == nil {
		t.Errorf("queue %s still exists", m[1])
	}

	// make console runs the program it built.
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	_, recipe, _ := strings.Cut(string(mk), "\nconsole:\n")
	recipe, _, _ = strings.Cut(recipe, "\n\n")
	if strings.Contains(recipe, " run ") || !strings.Contains(recipe, "bin/console") {
		t.Errorf("make console's recipe must run the built program, not go run (which exits 1 when interrupted):\n%s", recipe)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
