package worker_test

import (
	"context"
	"errors"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/worker"
)

var updateGolden = flag.Bool("update", false, "rewrite the testdata/golden files with the current output")

// The JSON that StatsHandler serves (at /debug/sqsworker/stats, say) is
// read by `sqsworker cost`, `sqsworker template --scaling` and the
// console, and HealthHandler's by probes: both are API, pinned in
// testdata/golden so that a change to a key or a type shows up in review.
// The worker runs in a synctest bubble on the fake, so its clock and its
// counts are the same on every run. go test -update rewrites the files.
func TestStatsAndHealthJSONGolden(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, _ := newQueue(t, 5, "30")
		for _, body := range []string{"ok 1", "ok 2", "ok 3", "poison", "later"} {
			f.MustSend(t, src, body)
		}
		var mu sync.Mutex
		seen := map[string]int{}
		h := start(t, f, src, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			mu.Lock()
			seen[m.Body]++
			n := seen[m.Body]
			mu.Unlock()
			switch {
			case m.Body == "poison":
				return retry.Permanent(errors.New("cannot parse the order"))
			case m.Body == "later" && n == 1:
				return retry.After(20*time.Second, errors.New("the payment service is busy"))
			}
			time.Sleep(150 * time.Millisecond)
			return nil
		}), func(o *worker.Options) { o.Concurrency = 4 })
		time.Sleep(time.Minute)
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		for name, handler := range map[string]http.Handler{
			"stats.json":  h.w.StatsHandler(),
			"health.json": h.w.LivenessHandler(),
		} {
			rec := httptest.NewRecorder()
			handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
			compareWorkerGolden(t, filepath.Join("testdata", "golden", name), rec.Body.String())
		}
	})
}

// compareWorkerGolden compares got with the file at path, or rewrites it
// with -update.
func compareWorkerGolden(t *testing.T, path, got string) {
	t.Helper()
	if *updateGolden {
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
