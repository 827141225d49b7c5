package console

import (
	"crypto/rand"
	"fmt"
	"net/http"
	"slices"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/queueref"
)

// jobRow is a remembered action as the Actions page lists it.
type jobRow struct {
	*job
	Status jobStatus
}

// actionsPage lists the actions the console remembers (the last maxJobs
// since it started; the audit log has every one), newest first, with
// their results.
func (h *handler) actionsPage(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	rows := make([]jobRow, 0, len(h.jobOrder))
	for _, id := range slices.Backward(h.jobOrder) {
		if j := h.jobs[id]; j != nil {
			rows = append(rows, jobRow{job: j})
		}
	}
	h.mu.Unlock()
	for i := range rows {
		rows[i].Status = rows[i].status()
	}
	h.render(w, r, http.StatusOK, "actions", "Actions", map[string]any{"Jobs": rows, "Max": maxJobs})
}

// rememberPurge lists a purge on the Actions page, as a finished job
// (a purge runs in the request, not as a job).
func (h *handler) rememberPurge(r *http.Request, t dlq.Target, approx int, err error) {
	j := &job{ID: rand.Text()[:12], Kind: "purge", Queue: queueref.Name(t.SourceURL), DLQ: queueref.Name(t.DLQURL),
		Desc: fmt.Sprintf("every message (about %d)", approx), User: user(r).Name, Started: h.opts.Now(), done: make(chan struct{})}
	j.Back = h.dlqBase(r)
	j.st = jobStatus{Finished: true, OK: err == nil, Error: errString(err), Deleted: approx}
	close(j.done)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.jobs[j.ID] = j
	h.jobOrder = append(h.jobOrder, j.ID)
	for len(h.jobOrder) > maxJobs {
		delete(h.jobs, h.jobOrder[0])
		h.jobOrder = h.jobOrder[1:]
	}
}
