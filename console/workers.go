package console

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/sqsworker/sqsworker/worker"
)

// workerSample is a worker's statistics at one moment, kept to compute
// rates from the next poll.
type workerSample struct {
	at    time.Time
	stats worker.Stats
}

// workerView is one worker as the Workers page shows it.
type workerView struct {
	Name  string `json:"name"`
	URL   string `json:"url"`
	Error string `json:"error,omitempty"`
	// State is "paused" while the worker's ReceiveGate keeps it from
	// receiving (a fleet pause, an open breaker), else "receiving".
	State string `json:"state"`
	// Rates per second since the previous poll (zero on the first).
	Interval     float64 `json:"intervalSeconds"`
	ReceivedRate float64 `json:"receivedPerSecond"`
	DoneRate     float64 `json:"succeededPerSecond"`
	FailedRate   float64 `json:"failedPerSecond"`
	// Totals since the worker started.
	Received     int64 `json:"received"`
	Succeeded    int64 `json:"succeeded"`
	Failed       int64 `json:"failed"`
	Retried      int64 `json:"retried"`
	DeadLettered int64 `json:"deadLettered"`
	Lost         int64 `json:"lost"`
	Abandoned    int64 `json:"abandoned"`
	InFlight     int64 `json:"inFlight"`
	Prefetched   int   `json:"prefetched"`
	// USDPerMillion is the worker's SQS cost per million messages so far
	// (worker.Stats.Cost at standard pricing).
	USDPerMillion      float64 `json:"usdPerMillion"`
	RequestsPerMessage float64 `json:"requestsPerMessage"`
	// The scaling signals (worker.Stats): messages per second the worker
	// can take with every slot busy, the age at receipt of the oldest
	// fresh message lately, and the queue's depth as the worker last read it.
	Capacity         float64 `json:"capacityPerSecond"`
	OldestAgeSeconds float64 `json:"oldestAgeSeconds"`
	Backlog          int64   `json:"backlog"`
	BacklogInFlight  int64   `json:"backlogInFlight"`
}

// workersPage serves the Workers page; its script polls workersStats.
func (h *handler) workersPage(w http.ResponseWriter, r *http.Request) {
	h.render(w, r, http.StatusOK, "workers", "Workers", map[string]any{"Workers": h.pollWorkers(r.Context())})
}

// workersStats serves every worker's view as JSON.
func (h *handler) workersStats(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, h.pollWorkers(r.Context()))
}

// pollWorkers reads every worker's StatsHandler in parallel.
func (h *handler) pollWorkers(ctx context.Context) []workerView {
	out := make([]workerView, len(h.opts.Workers))
	var wg sync.WaitGroup
	for i, wk := range h.opts.Workers {
		wg.Go(func() { out[i] = h.pollWorker(ctx, wk) })
	}
	wg.Wait()
	return out
}

func (h *handler) pollWorker(ctx context.Context, wk Worker) workerView {
	v := workerView{Name: wk.Name, URL: wk.StatsURL}
	s, err := h.fetchStats(ctx, wk.StatsURL)
	if err != nil {
		v.Error = err.Error()
		return v
	}
	now := h.opts.Now()
	h.mu.Lock()
	prev, ok := h.samples[wk.StatsURL]
	h.samples[wk.StatsURL] = workerSample{at: now, stats: s}
	h.mu.Unlock()
	if ok && now.After(prev.at) && s.Received >= prev.stats.Received {
		d := now.Sub(prev.at).Seconds()
		v.Interval = d
		v.ReceivedRate = float64(s.Received-prev.stats.Received) / d
		v.DoneRate = float64(s.Succeeded-prev.stats.Succeeded) / d
		v.FailedRate = float64(s.Failed-prev.stats.Failed) / d
	}
	v.Received, v.Succeeded, v.Failed, v.Retried, v.DeadLettered = s.Received, s.Succeeded, s.Failed, s.Retried, s.DeadLettered
	v.Lost, v.Abandoned, v.InFlight, v.Prefetched = s.Lost, s.Abandoned, s.InFlight, s.Prefetched
	v.Capacity, v.OldestAgeSeconds = s.Capacity, s.OldestAge.Seconds()
	v.Backlog, v.BacklogInFlight = s.Backlog.Visible, s.Backlog.InFlight
	v.State = "receiving"
	if s.Paused {
		v.State = "paused"
	}
	c := s.Cost(worker.Pricing{})
	v.USDPerMillion, v.RequestsPerMessage = c.USDPerMillionMessages, c.RequestsPerMessage
	return v
}

func (h *handler) fetchStats(ctx context.Context, url string) (worker.Stats, error) {
	var s worker.Stats
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return s, err
	}
	resp, err := h.opts.HTTPClient.Do(req)
	if err != nil {
		return s, fmt.Errorf("reading the worker's statistics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return s, fmt.Errorf("reading the worker's statistics: %s answered %s; is it the worker's StatsHandler?", url, resp.Status)
	}
	if err := json.NewDecoder(http.MaxBytesReader(nil, resp.Body, 1<<20)).Decode(&s); err != nil {
		return s, fmt.Errorf("reading the worker's statistics from %s: not a worker.Stats JSON: %w", url, err)
	}
	return s, nil
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
