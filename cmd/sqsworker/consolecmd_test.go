package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"runtime/debug"
	"strings"
	"testing"
	"time"
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
	pr, pw := io.Pipe()
	var stderr strings.Builder
	a := &app{
		stdin: strings.NewReader(""), stdout: pw, stderr: &stderr,
		newClient:  func(context.Context, awsFlags) (client, error) { return h.fake, nil },
		newSNS:     func(context.Context, awsFlags) (snsClient, error) { return h.sns, nil },
		isTerminal: func(any) bool { return false },
		now:        time.Now,
		buildInfo:  debug.ReadBuildInfo,
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	code := make(chan int, 1)
	go func() {
		code <- a.run(ctx, []string{"console", "--addr", "127.0.0.1:0", "--queues", "orders,orders-dlq"})
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, pr)
	url, _, _ := strings.Cut(strings.TrimPrefix(line, "sqsworker console: "), " ")
	if !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.Contains(line, "read-only") {
		t.Fatalf("first line %q: want the loopback URL and read-only", line)
	}
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `data-queue="orders"`) || !strings.Contains(string(b), "read-only") {
		t.Fatalf("GET %s: %s\n%s", url, resp.Status, b)
	}
	resp, err = http.Post(url+"queues/orders/dlq/redrive", "application/x-www-form-urlencoded", strings.NewReader("scope=all"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("POST to a read-only console: %s; want 403", resp.Status)
	}
	cancel()
	if c := <-code; c != exitOK {
		t.Fatalf("exit code %d after the interrupt; stderr:\n%s", c, stderr.String())
	}
}

func TestConsoleRejectsABadWorkerFlag(t *testing.T) {
	code, _, errOut := newHarness(t).run(t, "console", "--worker", "http://127.0.0.1:9464/stats")
	if code != exitUsage || !strings.Contains(errOut, "NAME=URL") {
		t.Fatalf("exit %d, stderr %q; want a usage error asking for NAME=URL", code, errOut)
	}
}
