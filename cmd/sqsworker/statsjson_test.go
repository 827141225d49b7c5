package main

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sqsworker/sqsworker/sqstest"
	"github.com/sqsworker/sqsworker/worker"
)

// cost and template --scaling read what a worker's StatsHandler serves
// (durations as strings such as "400ms") and the shape before v1
// (durations as integer nanoseconds), with the same result.
func TestCostAndTemplateReadBothStatsShapes(t *testing.T) {
	// What the stats route of a real worker serves.
	fake := sqstest.For(t)
	src, _ := fake.MustCreateQueueWithDLQ(t, "orders", 5, nil)
	w, err := worker.New(fake, src, worker.HandlerFunc(nil), func(o *worker.Options) { o.Concurrency = 8 })
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(w.StatsHandler())
	defer srv.Close()
	h := newHarness(t)
	if code, out, errOut := h.run(t, "cost", srv.URL, "-o", "json"); code != exitOK || !strings.Contains(out, `"requests": 4`) {
		t.Fatalf("cost of the stats route: exit %d\n%s%s", code, out, errOut)
	}

	s := worker.Stats{Concurrency: 8, HandlerRuns: 1000, HandlerTime: 400 * time.Second, MeanHandlerTime: 400 * time.Millisecond, Capacity: 20,
		Received: 1000, Requests: map[string]int64{"ReceiveMessage": 130, "DeleteMessageBatch": 100}}
	data, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"MeanHandlerTime":"400ms"`) {
		t.Fatalf("the stats JSON gives MeanHandlerTime as %s", data)
	}
	old := strings.NewReplacer(`"HandlerTime":"6m40s"`, `"HandlerTime":400000000000`, `"MeanHandlerTime":"400ms"`, `"MeanHandlerTime":400000000`, `"OldestAge":"0s"`, `"OldestAge":0`).Replace(string(data))
	if old == string(data) || strings.Contains(old, `Time":"`) {
		t.Fatalf("could not make the pre-v1 shape from %s", data)
	}
	dir := t.TempDir()
	var outs []string
	for name, content := range map[string]string{"new.json": string(data), "old.json": old} {
		file := filepath.Join(dir, name)
		if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		code, out, errOut := h.run(t, "template", "--scaling", "keda", "--stats", file, "--target-latency", "30s", "--region", "us-east-1", "orders")
		if code != exitOK || !strings.Contains(out, "MeanHandlerTime 400ms over 1000 handler runs") || !strings.Contains(out, `queueLength: "600"`) {
			t.Errorf("template from %s: exit %d\n%s%s", name, code, out, errOut)
		}
		code, costOut, errOut := h.run(t, "cost", file, "-o", "json")
		if code != exitOK {
			t.Errorf("cost from %s: exit %d\n%s", name, code, errOut)
		}
		outs = append(outs, strings.ReplaceAll(out, file, "FILE")+strings.ReplaceAll(costOut, file, "FILE"))
	}
	if len(outs) == 2 && outs[0] != outs[1] {
		t.Errorf("the two shapes gave different results:\n%s\n---\n%s", outs[0], outs[1])
	}
}
