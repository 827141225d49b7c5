package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/harness/testenv"
	"github.com/sqsworker/sqsworker/worker"
)

// TestRun runs the quick start as the README does, against the local
// AWS: a queue set up with its dead-letter queue, -send 5, the health and
// stats routes while it runs, then a graceful stop when its context ends
// (Ctrl-C).
func TestRun(t *testing.T) {
	client := testenv.SQS(t)
	e := testenv.Get(t)
	// The program loads the standard AWS configuration, as a user's would.
	t.Setenv("AWS_ENDPOINT_URL_SQS", e.SQS)
	t.Setenv("AWS_REGION", e.Region)
	if os.Getenv("AWS_ACCESS_KEY_ID") == "" {
		t.Setenv("AWS_ACCESS_KEY_ID", "test")
		t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	}
	setup, err := dlq.Setup(t.Context(), client, dlq.SetupOptions{Name: testenv.UniqueName("quickstart")})
	if err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"-queue", setup.QueueURL, "-addr", addr, "-send", "5"}) }()

	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	var stats worker.Stats
	deadline := time.Now().Add(time.Minute)
	for {
		select {
		case err := <-done:
			t.Fatalf("run returned early: %v", err)
		default:
		}
		if code, body := get("/debug/sqsworker/stats"); code == http.StatusOK {
			if err := json.Unmarshal([]byte(body), &stats); err != nil {
				t.Fatalf("the stats route serves %q: %v", body, err)
			}
			if stats.Deleted == 5 && stats.DeadLettered == 1 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a minute: %+v", stats)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, path := range []string{"/livez", "/readyz"} {
		if code, body := get(path); code != http.StatusOK || !strings.Contains(body, `"ready": true`) {
			t.Errorf("GET %s: %d %s", path, code, body)
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run after the interrupt: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("run did not return after its context ended")
	}
	dead, err := dlq.Inspect(t.Context(), client, setup.DLQURL, dlq.InspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(dead) != 1 || !strings.Contains(dead[0].Provenance.Error, "order has no id") {
		t.Errorf("the dead-letter queue holds %+v; want the broken order with its reason", dead)
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// The README's quick start shows this program verbatim, so that what a
// reader copies is what compiles and runs here.
func TestReadmeShowsMainVerbatim(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "\n```go\n"+string(src)+"```\n") {
		t.Error("README.md does not show examples/quickstart/main.go verbatim in a ```go block; copy the file into the README's quick start")
	}
}
