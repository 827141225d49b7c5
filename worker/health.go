package worker

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sqsworker/sqsworker/internal/sqserr"
)

// The states HealthStatus.State reports.
const (
	stateIdle     = "idle"     // New has checked the queue; Run has not been called
	stateRunning  = "running"  // Run is receiving
	stateStopping = "stopping" // Run's context ended: it drains and flushes
	stateStopped  = "stopped"  // Run has returned
)

// HealthOptions tunes what Health counts as unhealthy. Every field's zero
// value selects the documented default.
type HealthOptions struct {
	// FailureThreshold is how long receives may fail in a row (throttling,
	// server errors, the network) before the worker is reported unhealthy:
	// neither live nor ready. Shorter streaks leave a worker that has
	// received before ready. Zero value: 1 minute.
	FailureThreshold time.Duration
	// StuckAfter is how long the run loop may stall before the worker is
	// reported stuck (not live): a receive call still running that long
	// past its own timeout (Options.WaitTime + Options.CallTimeout), or no
	// receive started for that long while a handler slot is free, the last
	// receive did not fail and settlements do not hold receiving back
	// (Options.MaxUnsettled), or a shutdown still draining that long past
	// Options.ShutdownTimeout + Options.FlushTimeout (Run's own bound rules
	// that out, even with handlers that ignore their context, so it means
	// the process is starved). Zero value: 1 minute, plus the time
	// MaxReceivesPerSecond takes to allow ten messages when a rate is set.
	StuckAfter time.Duration
	// Checks are further conditions of readiness: while Run is running,
	// each is called on every Health call, and one that returns an error
	// makes the worker not ready, with the error in Reason (the worker
	// stays live). fleet.Breaker.Ready, for example, fails while the
	// breaker is open, also when the breaker is only middleware and not
	// the ReceiveGate. Keep them cheap: they run on every probe. Zero
	// value: none.
	Checks []func() error
}

// HealthStatus is the worker's health at one moment, as Health reports it
// and LivenessHandler and ReadinessHandler serve it (as JSON).
type HealthStatus struct {
	// State is "idle" (New has checked the queue; Run has not been
	// called), "running" (Run is receiving), "stopping" (Run's context
	// ended: it drains and flushes) or "stopped" (Run has returned).
	State string `json:"state"`
	// Live is false when the worker should be restarted: Run has returned,
	// the run loop is stuck, or receives have failed for longer than
	// HealthOptions.FailureThreshold.
	Live bool `json:"live"`
	// Ready is true while the worker is running and receiving: Run has
	// started and not begun to stop, a receive has succeeded (or the first
	// one is under way), and receives have not failed for longer than
	// HealthOptions.FailureThreshold (nor at all, before any succeeded),
	// Options.ReceiveGate is open, and every HealthOptions.Checks passes.
	Ready bool `json:"ready"`
	// Reason says why the worker is not live or not ready; "" when it is
	// both.
	Reason string `json:"reason,omitempty"`
	// Queue is the queue's URL.
	Queue string `json:"queue"`
	// LastReceive is when a receive last succeeded (zero: none yet).
	LastReceive time.Time `json:"lastReceive,omitzero"`
	// FailingSince is when the current streak of failed receives began
	// (zero when the last receive succeeded), and LastError the latest
	// failure.
	FailingSince time.Time `json:"failingSince,omitzero"`
	LastError    string    `json:"lastError,omitempty"`
	// ReceivesInFlight is the number of receive calls under way, and
	// InFlight the number of messages held (Stats.InFlight).
	ReceivesInFlight int   `json:"receivesInFlight"`
	InFlight         int64 `json:"inFlight"`
}

// Health reports whether the worker is live and ready, with the facts
// behind the verdict. While Options.ReceiveGate is closed the worker is
// not ready; a gate that has a Ready() error method (fleet's Pauser and
// Breaker, and fleet.AllOpen of them) says why in Reason. It reads atomic
// counters (and calls that method and HealthOptions.Checks) and never
// blocks on the run loop; call it as often as you like.
func (w *Worker) Health(optFns ...func(*HealthOptions)) HealthStatus {
	var o HealthOptions
	for _, fn := range optFns {
		fn(&o)
	}
	if o.FailureThreshold <= 0 {
		o.FailureThreshold = time.Minute
	}
	if o.StuckAfter <= 0 {
		o.StuckAfter = time.Minute
		if w.opts.MaxReceivesPerSecond > 0 {
			o.StuckAfter += time.Duration(10 / w.opts.MaxReceivesPerSecond * float64(time.Second))
		}
	}
	return w.client.health.status(time.Now(), o, w)
}

// LivenessHandler returns an http.Handler for a liveness probe: is the
// worker alive, or should it be restarted (HealthStatus.Live)? It answers
// 200 when it is live and 503 when it is not, with the HealthStatus as JSON
// (no body for HEAD). For example:
//
//	mux.Handle("GET /livez", w.LivenessHandler())
//	mux.Handle("GET /readyz", w.ReadinessHandler())
func (w *Worker) LivenessHandler(optFns ...func(*HealthOptions)) http.Handler {
	return w.probeHandler(true, optFns)
}

// ReadinessHandler returns an http.Handler for a readiness probe: is the
// worker running and receiving (HealthStatus.Ready)? It answers 200 when it
// is ready and 503 when it is not, with the HealthStatus as JSON (no body
// for HEAD); HealthOptions.Checks add conditions of readiness.
func (w *Worker) ReadinessHandler(optFns ...func(*HealthOptions)) http.Handler {
	return w.probeHandler(false, optFns)
}

// probeHandler answers a liveness probe (live) or a readiness probe.
func (w *Worker) probeHandler(live bool, optFns []func(*HealthOptions)) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, req *http.Request) {
		st := w.Health(optFns...)
		ok := st.Ready
		if live {
			ok = st.Live
		}
		code := http.StatusOK
		if !ok {
			code = http.StatusServiceUnavailable
		}
		writeJSON(rw, req, code, st)
	})
}

// StatsHandler returns an http.Handler that serves the worker's Stats as
// JSON: the input of `sqsworker cost`, which turns it into requests and
// dollars per million messages (and, polled at an interval, the live rate).
//
//	mux.Handle("GET /debug/sqsworker/stats", w.StatsHandler())
func (w *Worker) StatsHandler() http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, req *http.Request) {
		writeJSON(rw, req, http.StatusOK, w.Stats())
	})
}

func writeJSON(rw http.ResponseWriter, req *http.Request, code int, v any) {
	rw.Header().Set("Content-Type", "application/json")
	rw.Header().Set("Cache-Control", "no-store")
	rw.WriteHeader(code)
	if req.Method == http.MethodHead {
		return
	}
	enc := json.NewEncoder(rw)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// health is the run loop's bookkeeping for Health. Run marks its phases;
// the counting client reports every receive call's start and end.
type health struct {
	runAt, stoppingAt, stoppedAt atomic.Int64 // unix nanoseconds; 0: not yet
	lastOK                       atomic.Int64 // the last receive that succeeded
	receives                     atomic.Int64 // receive calls started

	mu           sync.Mutex
	inflight     map[int64]time.Time // receive calls under way, by start order
	failingSince time.Time           // zero when the last receive succeeded
	lastErr      error
	// idleSince is when Health first saw the loop able to receive without a
	// receive under way, and idleGen the count of receives started then.
	idleSince time.Time
	idleGen   int64
}

// running marks Run's start.
func (h *health) running(now time.Time) { h.runAt.Store(now.UnixNano()) }

// stopping marks the start of Run's shutdown.
func (h *health) stopping(now time.Time) { h.stoppingAt.Store(now.UnixNano()) }

// stopped marks Run's return.
func (h *health) stopped(now time.Time) { h.stoppedAt.Store(now.UnixNano()) }

// receiveStarted records a receive call's start and returns its id for
// receiveDone.
func (h *health) receiveStarted(now time.Time) int64 {
	id := h.receives.Add(1)
	h.mu.Lock()
	if h.inflight == nil {
		h.inflight = map[int64]time.Time{}
	}
	h.inflight[id] = now
	h.mu.Unlock()
	return id
}

// receiveDone records a receive call's end. A call cancelled by the
// worker's own context (shutdown) is neither a success nor a failure.
func (h *health) receiveDone(id int64, now time.Time, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.inflight, id)
	switch {
	case err == nil:
		h.lastOK.Store(now.UnixNano())
		h.failingSince, h.lastErr = time.Time{}, nil
	case sqserr.Of(err) == sqserr.Canceled:
	default:
		if h.failingSince.IsZero() {
			h.failingSince = now
		}
		h.lastErr = err
	}
}

func unixTime(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// status computes the verdict at now.
func (h *health) status(now time.Time, o HealthOptions, w *Worker) HealthStatus {
	st := HealthStatus{Queue: w.queueURL, InFlight: w.c.inFlight.Load(), LastReceive: unixTime(h.lastOK.Load()), Live: true}
	h.mu.Lock()
	defer h.mu.Unlock()
	st.FailingSince = h.failingSince
	if h.lastErr != nil {
		st.LastError = h.lastErr.Error()
	}
	st.ReceivesInFlight = len(h.inflight)
	var oldest time.Time
	for _, t := range h.inflight {
		if oldest.IsZero() || t.Before(oldest) {
			oldest = t
		}
	}
	runAt, stoppingAt, stoppedAt := unixTime(h.runAt.Load()), unixTime(h.stoppingAt.Load()), unixTime(h.stoppedAt.Load())
	var problems []string
	failing := !st.FailingSince.IsZero() && now.Sub(st.FailingSince) > o.FailureThreshold
	switch {
	case !stoppedAt.IsZero():
		st.State, st.Live = stateStopped, false
		problems = append(problems, "Run has returned")
	case !stoppingAt.IsZero():
		st.State = stateStopping
		problems = append(problems, "shutting down")
		if limit := w.opts.ShutdownTimeout + w.opts.FlushTimeout + o.StuckAfter; now.Sub(stoppingAt) > limit {
			st.Live = false
			problems = append(problems, "stuck: still draining "+now.Sub(stoppingAt).Round(time.Second).String()+" after the shutdown began, past ShutdownTimeout + FlushTimeout (is the process starved of CPU?)")
		}
	case !runAt.IsZero():
		st.State = stateRunning
		receiving := st.FailingSince.IsZero() && (!st.LastReceive.IsZero() || h.receives.Load() > 0) ||
			!st.FailingSince.IsZero() && !st.LastReceive.IsZero() && !failing
		st.Ready = receiving && !failing
		switch {
		case failing:
			problems = append(problems, "receives have failed since "+st.FailingSince.Format(time.RFC3339)+": "+st.LastError)
			st.Live = false
		case !st.FailingSince.IsZero() && st.LastReceive.IsZero():
			problems = append(problems, "no receive has succeeded yet: "+st.LastError)
		case !receiving:
			problems = append(problems, "no receive yet")
		}
		if !oldest.IsZero() && now.Sub(oldest) > w.opts.WaitTime+w.opts.CallTimeout+o.StuckAfter {
			st.Live, st.Ready = false, false
			problems = append(problems, "stuck: a receive call has run for "+now.Sub(oldest).Round(time.Second).String())
		}
		// Able to receive (a handler slot free, no receive under way, the
		// last receive not failed, settlements not holding receiving back)
		// yet not receiving: stuck once no receive starts for StuckAfter.
		settling := w.c.settling.Load()
		paused := w.paused.Load()
		if paused {
			st.Ready = false
			why := "receiving paused by Options.ReceiveGate"
			if g, ok := w.opts.ReceiveGate.(interface{ Ready() error }); ok {
				if err := g.Ready(); err != nil {
					why += ": " + err.Error()
				}
			}
			problems = append(problems, why)
		}
		for _, check := range o.Checks {
			if err := check(); err != nil {
				st.Ready = false
				problems = append(problems, "not ready: "+err.Error())
			}
		}
		if settling >= int64(w.opts.MaxUnsettled) {
			problems = append(problems, "receiving paused: "+strconv.FormatInt(settling, 10)+" settlements await SQS's confirmation (Options.MaxUnsettled)")
		}
		if !paused && len(h.inflight) == 0 && st.FailingSince.IsZero() && st.InFlight < int64(w.opts.Concurrency) && settling < int64(w.opts.MaxUnsettled) {
			gen := h.receives.Load()
			if h.idleSince.IsZero() || h.idleGen != gen {
				h.idleSince, h.idleGen = now, gen
			} else if now.Sub(h.idleSince) > o.StuckAfter {
				st.Live, st.Ready = false, false
				problems = append(problems, "stuck: no receive started for "+now.Sub(h.idleSince).Round(time.Second).String()+" with a handler slot free")
			}
		} else {
			h.idleSince = time.Time{}
		}
	default:
		st.State = stateIdle
		problems = append(problems, "Run has not been called")
	}
	if !st.Live || !st.Ready {
		st.Reason = strings.Join(problems, "; ")
	}
	return st
}
