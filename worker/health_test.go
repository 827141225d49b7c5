package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/sqstest"
	"github.com/sqsworker/sqsworker/worker"
)

var noop = worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error { return nil })

// The probes a worker's handlers answer.
const (
	readiness = iota
	liveness
)

// probe asks w's handler for p and returns the status code and the body.
func probe(t *testing.T, w *worker.Worker, p int) (int, worker.HealthStatus) {
	t.Helper()
	rec := httptest.NewRecorder()
	h := w.ReadinessHandler()
	if p == liveness {
		h = w.LivenessHandler()
	}
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	var st worker.HealthStatus
	if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil {
		t.Fatalf("health body %q: %v", rec.Body.String(), err)
	}
	return rec.Code, st
}

// The life of a healthy worker: idle after New, ready once receiving, not
// ready while stopping, not live once Run has returned.
func TestHealthFollowsRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, _ := newQueue(t, 5, "30")
		w, err := worker.New(f, src, noop, func(o *worker.Options) { o.Logger = quiet })
		if err != nil {
			t.Fatal(err)
		}
		if st := w.Health(); st.State != "idle" || !st.Live || st.Ready {
			t.Fatalf("before Run: %+v; want idle, live, not ready", st)
		}
		if code, _ := probe(t, w, readiness); code != http.StatusServiceUnavailable {
			t.Errorf("readiness before Run: %d, want 503", code)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- w.Run(ctx) }()
		f.MustSend(t, src, "a")
		time.Sleep(time.Second)
		st := w.Health()
		if st.State != "running" || !st.Live || !st.Ready || st.LastReceive.IsZero() || st.Reason != "" {
			t.Fatalf("running: %+v; want live and ready after a receive", st)
		}
		// An empty queue keeps the long polls going: ready, never stuck.
		for range 20 {
			time.Sleep(10 * time.Second)
			if st := w.Health(); !st.Live || !st.Ready {
				t.Fatalf("idle queue: %+v; want live and ready", st)
			}
		}
		if code, st := probe(t, w, liveness); code != http.StatusOK || !st.Live {
			t.Errorf("liveness: %d %+v", code, st)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		st = w.Health()
		if st.State != "stopped" || st.Live || st.Ready {
			t.Errorf("after Run: %+v; want stopped, neither live nor ready", st)
		}
		if code, _ := probe(t, w, liveness); code != http.StatusServiceUnavailable {
			t.Errorf("liveness after Run: %d, want 503", code)
		}
	})
}

// Failing receives: not ready before any succeeded; unhealthy (neither live
// nor ready) once they have failed for longer than the threshold; healthy
// again after a success.
func TestHealthReceiveFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, _ := newQueue(t, 5, "30")
		remove := f.InjectFault(sqstest.Fault{API: "ReceiveMessage", Code: "InternalError"})
		h := start(t, f, src, noop)
		time.Sleep(5 * time.Second)
		st := h.w.Health()
		if !st.Live || st.Ready || st.FailingSince.IsZero() || !strings.Contains(st.Reason, "no receive has succeeded yet") {
			t.Fatalf("failing from the start: %+v; want live, not ready, with the reason", st)
		}
		time.Sleep(time.Minute)
		st = h.w.Health()
		if st.Live || st.Ready || !strings.Contains(st.Reason, "receives have failed since") || st.LastError == "" {
			t.Fatalf("failing for over a minute: %+v; want neither live nor ready", st)
		}
		if st := h.w.Health(func(o *worker.HealthOptions) { o.FailureThreshold = 5 * time.Minute }); !st.Live {
			t.Errorf("with a 5 min threshold: %+v; want live", st)
		}
		remove()
		f.MustSend(t, src, "a")      // so the next receive returns at once
		time.Sleep(25 * time.Second) // the backoff reaches its 20 s maximum
		if st := h.w.Health(); !st.Live || !st.Ready || !st.FailingSince.IsZero() {
			t.Errorf("after recovery: %+v; want live and ready", st)
		}
		// A short streak after a success leaves the worker ready.
		remove = f.InjectFault(sqstest.Fault{API: "ReceiveMessage", Code: "RequestThrottled"})
		time.Sleep(21 * time.Second)
		if st := h.w.Health(); !st.Live || !st.Ready || st.FailingSince.IsZero() {
			t.Errorf("short streak: %+v; want live and ready, failing noted", st)
		}
		remove()
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
	})
}

// stallingClient's ReceiveMessage ignores its context until released, as a
// broken transport would.
type stallingClient struct {
	*sqstest.Fake
	release chan struct{}
}

func (c stallingClient) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	<-c.release
	return &sqs.ReceiveMessageOutput{}, nil
}

// A receive call that outlives its own timeout is a stuck run loop.
func TestHealthStuckReceive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, _ := newQueue(t, 5, "30")
		c := stallingClient{Fake: f, release: make(chan struct{})}
		w, err := worker.New(c, src, noop, func(o *worker.Options) { o.Logger = quiet })
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- w.Run(ctx) }()
		time.Sleep(time.Minute) // within WaitTime + CallTimeout + StuckAfter
		if st := w.Health(); !st.Live || st.ReceivesInFlight != 1 {
			t.Fatalf("receive under way: %+v; want live", st)
		}
		time.Sleep(time.Minute)
		if st := w.Health(); st.Live || st.Ready || !strings.Contains(st.Reason, "stuck: a receive call has run for") {
			t.Fatalf("receive stalled for 2 min: %+v; want stuck", st)
		}
		cancel()
		close(c.release)
		<-done
	})
}

// A loop that could receive (a handler slot free, the last receive fine)
// but starts none for StuckAfter is stuck; here the receive rate limit
// holds it back on purpose.
func TestHealthStuckLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, _ := newQueue(t, 5, "30")
		f.MustSend(t, src, "a")
		h := start(t, f, src, noop, func(o *worker.Options) { o.MaxReceivesPerSecond = 0.001 })
		stuck := func(o *worker.HealthOptions) { o.StuckAfter = time.Minute }
		for range 6 {
			if st := h.w.Health(stuck); !st.Live {
				t.Fatalf("within a minute: %+v; want live", st)
			}
			time.Sleep(10 * time.Second)
		}
		time.Sleep(30 * time.Second)
		if st := h.w.Health(stuck); st.Live || !strings.Contains(st.Reason, "stuck: no receive started") {
			t.Errorf("no receive for over a minute: %+v; want stuck", st)
		}
		// The default allows for the rate limit (10 messages' worth).
		if st := h.w.Health(); !st.Live {
			t.Errorf("default StuckAfter with a rate limit: %+v; want live", st)
		}
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
	})
}

// The worker is not ready from the moment it begins to stop; a handler
// that ignores its context does not hold Run, and once Run has returned
// without it the worker is neither ready nor live.
func TestHealthShutdownWithStuckHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, _ := newQueue(t, 5, "30")
		f.MustSend(t, src, "a")
		release := make(chan struct{})
		h := start(t, f, src, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			<-release
			return nil
		}), func(o *worker.Options) { o.ShutdownTimeout = time.Second })
		time.Sleep(time.Second)
		h.cancel()
		time.Sleep(time.Second)
		if st := h.w.Health(); st.State != "stopping" || st.Ready || !st.Live {
			t.Fatalf("stopping: %+v; want live, not ready", st)
		}
		if err := <-h.done; !errors.Is(err, worker.ErrHandlersNotStopped) {
			t.Fatalf("Run: %v; want ErrHandlersNotStopped", err)
		}
		if st := h.w.Health(); st.State != "stopped" || st.Ready || st.Live {
			t.Fatalf("after Run returned: %+v; want stopped, neither ready nor live", st)
		}
		close(release)
		time.Sleep(time.Second) // its message, held over, is settled
	})
}

// StatsHandler serves Stats as JSON, and it decodes back to the same Stats.
func TestStatsHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, _ := newQueue(t, 5, "30")
		sendMany(t, f, src, 12)
		h := start(t, f, src, noop)
		time.Sleep(time.Second)
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		h.w.StatsHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
		var got worker.Stats
		if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		if want := h.w.Stats(); !reflect.DeepEqual(got, want) {
			t.Errorf("served %+v\nwant   %+v", got, want)
		}
		if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
			t.Errorf("Content-Type %q", ct)
		}
	})
}

// reasonGate is a switchGate that says why it is closed, as fleet's
// gates do.
type reasonGate struct {
	switchGate
	why error
}

func (g reasonGate) Ready() error { return g.why }

// Health's readiness takes HealthOptions.Checks (a breaker that is only
// middleware, say): one that fails makes a running worker not ready, still
// live, with its error as the reason; and a closed ReceiveGate that has a
// Ready method says why in the reason.
func TestHealthChecksAndGateReason(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, _ := newQueue(t, 5, "30")
		g := reasonGate{switchGate{reports: make(chan bool)}, errors.New("breaker payments is open until 12:00:30")}
		w, err := worker.New(f, src, noop, func(o *worker.Options) { o.Logger = quiet; o.ReceiveGate = g })
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- w.Run(ctx) }()
		defer func() {
			cancel()
			if err := <-done; err != nil {
				t.Error(err)
			}
		}()
		g.reports <- false
		synctest.Wait()
		if st := w.Health(); st.Ready || !st.Live || !strings.Contains(st.Reason, "paused by Options.ReceiveGate: breaker payments is open until 12:00:30") {
			t.Fatalf("gate closed: %+v; want live, not ready, with the gate's reason", st)
		}
		g.reports <- true
		time.Sleep(time.Second)
		var failing error
		check := func(o *worker.HealthOptions) { o.Checks = []func() error{func() error { return failing }} }
		if st := w.Health(check); !st.Ready || !st.Live {
			t.Fatalf("gate open, check passing: %+v; want live and ready", st)
		}
		failing = errors.New("breaker payments is open")
		st := w.Health(check)
		if st.Ready || !st.Live || !strings.Contains(st.Reason, "not ready: breaker payments is open") {
			t.Fatalf("check failing: %+v; want live, not ready, with the check's error", st)
		}
		rec := httptest.NewRecorder()
		w.ReadinessHandler(check).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
		if rec.Code != http.StatusServiceUnavailable {
			t.Errorf("readiness probe with a failing check: %d, want 503", rec.Code)
		}
	})
}
