package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

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
}
