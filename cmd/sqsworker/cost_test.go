package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sqsworker/sqsworker/worker"
)

// sampleStats is a worker's counters after 10,000 messages: full receive
// and delete batches, a few throttled receives, one dead-letter copy of
// 200 KiB (billed as 4).
func sampleStats() worker.Stats {
	return worker.Stats{
		Received: 10000,
		Requests: map[string]int64{"ReceiveMessage": 1005, "DeleteMessageBatch": 1000, "ChangeMessageVisibilityBatch": 20, "SendMessageBatch": 1, "GetQueueAttributes": 3, "GetQueueUrl": 1},
		RequestResults: map[string]map[string]int64{
			"ReceiveMessage": {"ok": 1000, "throttled": 5}, "DeleteMessageBatch": {"ok": 1000}, "ChangeMessageVisibilityBatch": {"ok": 20},
			"SendMessageBatch": {"ok": 1}, "GetQueueAttributes": {"ok": 3}, "GetQueueUrl": {"ok": 1},
		},
		PayloadBytes:   map[string]int64{"ReceiveMessage": 5 << 20, "SendMessageBatch": 200 << 10},
		BilledRequests: map[string]int64{"ReceiveMessage": 1005, "DeleteMessageBatch": 1000, "ChangeMessageVisibilityBatch": 20, "SendMessageBatch": 4, "GetQueueAttributes": 3, "GetQueueUrl": 1},
	}
}

func writeStats(t *testing.T, s worker.Stats) string {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "stats.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestCostFromFile(t *testing.T) {
	h := newHarness(t)
	code, out, errOut := h.run(t, "cost", writeStats(t, sampleStats()), "--monthly", "50000000")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"messages received", "10,000",
		"SQS requests", "2,030", "(0.203 per message)",
		"ReceiveMessage", "(ok 1,000, throttled 5)",
		"billed requests", "2,033", "payload 5.2 MiB",
		"$0.40 per million requests",
		"cost so far", "$0.000813",
		"cost per million messages", "$0.081",
		"at 50,000,000 messages a month", "$4.07 a month",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestCostJSONFromStdinFIFOPerJob(t *testing.T) {
	h := newHarness(t)
	b, _ := json.Marshal(sampleStats())
	h.stdin = string(b)
	code, out, errOut := h.run(t, "cost", "-", "--fifo", "--per", "5000", "-o", "json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r costReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if r.PricePerMillionRequests != worker.PriceFIFO || r.BilledRequests != 2033 || r.Per != "unit" || r.PerCount != 5000 {
		t.Errorf("report %+v", r)
	}
	if want := 2033.0 / 5000 * 0.50; r.USDPerMillion < want-1e-9 || r.USDPerMillion > want+1e-9 {
		t.Errorf("per million jobs $%v, want $%v", r.USDPerMillion, want)
	}
}

// --interval polls the worker's StatsHandler and prints the rate of each
// interval alone.
func TestCostIntervalFromURL(t *testing.T) {
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := sampleStats()
		if calls.Add(1) > 1 { // 1,000 more messages, 201 more requests
			s.Received += 1000
			s.Requests["ReceiveMessage"] += 101
			s.Requests["DeleteMessageBatch"] += 100
			s.BilledRequests["ReceiveMessage"] += 101
			s.BilledRequests["DeleteMessageBatch"] += 100
		}
		_ = json.NewEncoder(w).Encode(s)
	}))
	defer srv.Close()
	h := newHarness(t)
	code, out, errOut := h.run(t, "cost", srv.URL, "--interval", "10ms", "--count", "1")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "1,000 messages") || !strings.Contains(out, "201 requests (0.201 per message), $0.080 per million messages") {
		t.Errorf("interval line: %s", out)
	}
}

func TestCostRefusesOtherJSON(t *testing.T) {
	h := newHarness(t)
	h.stdin = `{"state":"running"}`
	if code, _, errOut := h.run(t, "cost", "-"); code != exitProblems || !strings.Contains(errOut, "StatsHandler") {
		t.Errorf("exit %d, %q; want 1 and advice", code, errOut)
	}
	if code, _, errOut := h.run(t, "cost", "stats.json", "--interval", "1s"); code != exitUsage || !strings.Contains(errOut, "needs a URL") {
		t.Errorf("exit %d, %q", code, errOut)
	}
}

// cost -o json: camelCase keys, each value once (no USDPerMillionMessages
// beside usdPerMillion, no Requests beside requests).
func TestCostJSONKeys(t *testing.T) {
	h := newHarness(t)
	b, _ := json.Marshal(sampleStats())
	h.stdin = string(b)
	code, out, errOut := h.run(t, "cost", "-", "--monthly", "1000000", "-o", "json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	golden(t, "cost-json", out)
}

// A stats URL nobody answers: the advice is about that URL and the
// worker's StatsHandler, not about the AWS emulators.
func TestCostUnreachableURL(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	u := srv.URL + "/debug/sqsworker/stats"
	srv.Close() // nothing listens there now
	h := newHarness(t)
	code, _, errOut := h.run(t, "cost", u)
	if code != exitProblems || !strings.Contains(errOut, "cannot read the worker's stats at "+u) || !strings.Contains(errOut, "StatsHandler") ||
		strings.Contains(errOut, "emulator") || strings.Contains(errOut, "endpoint-url") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}
