package console

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"golang.org/x/sync/errgroup"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/fleet"
	"github.com/sqsworker/sqsworker/queueref"
)

// pauseRow is one queue's pause switch on the Fleet page.
type pauseRow struct {
	Name  string
	State fleet.PauseState
	Err   string
	// DLQOf names the shown queues whose dead-letter queue this is: no
	// worker receives from it, so the page offers no Pause.
	DLQOf []string
}

// pauseStates reads the pause switch of each queue, and which queues are
// the others' dead-letter queues, eight at a time; a failure is shown on
// its row.
func (h *handler) pauseStates(ctx context.Context, urls []string) []*pauseRow {
	rows := make([]*pauseRow, len(urls))
	dlqs := make([]string, len(urls))
	var g errgroup.Group
	g.SetLimit(8)
	for i, u := range urls {
		rows[i] = &pauseRow{Name: queueref.Name(u)}
		g.Go(func() error {
			st, err := h.opts.Fleet.PauseState(ctx, u)
			rows[i].State, rows[i].Err = st, errString(err)
			if t, err := dlq.Discover(ctx, h.client, u); err == nil {
				dlqs[i] = queueref.Name(t.DLQURL)
			}
			return nil
		})
	}
	_ = g.Wait()
	for i, d := range dlqs {
		for _, r := range rows {
			if d != "" && r.Name == d && r.Name != rows[i].Name {
				r.DLQOf = append(r.DLQOf, rows[i].Name)
			}
		}
	}
	return rows
}

// fleetPage serves the Fleet page: each shown queue's pause switch (with
// Pause and Resume for an operator), the shared breakers and the cap slots
// in use (fleet.Usage).
func (h *handler) fleetPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	urls, err := h.queueURLs(ctx)
	var g errgroup.Group
	var rows []*pauseRow
	g.Go(func() error { rows = h.pauseStates(ctx, urls); return nil })
	usage, uerr := h.opts.Fleet.Usage(ctx)
	_ = g.Wait()
	h.render(w, r, http.StatusOK, "fleet", "Fleet", map[string]any{
		"Queues": rows, "Usage": usage, "UsageErr": errString(uerr),
		"Err": errString(err), "Notice": r.URL.Query().Get("notice"),
	})
}

// setPause serves Pause (pause) and Resume: it sets the queue's switch in
// the fleet table and goes back to the Fleet page. The reason stored says
// which console user paused the queue (fleet.PauseState.By is the
// console's fleet.Options.Holder).
func (h *handler) setPause(pause bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		queue := r.PathValue("queue")
		u, err := h.shownQueue(r.Context(), queue)
		if err != nil {
			h.fail(w, r, http.StatusNotFound, err)
			return
		}
		verb, reason := "resume", ""
		if pause {
			verb = "pause"
			reason = strings.TrimSpace(r.PostForm.Get("reason"))
			if n := utf8.RuneCountInString(reason); n > 500 {
				h.fail(w, r, http.StatusBadRequest, fmt.Errorf("not paused: the reason is %d characters long; keep it to 500", n))
				return
			}
			by := "console user " + user(r).Name
			if reason == "" {
				reason = "(" + by + ")"
			} else {
				reason += " (" + by + ")"
			}
			err = h.opts.Fleet.Pause(r.Context(), u, reason)
		} else {
			err = h.opts.Fleet.Resume(r.Context(), u)
		}
		h.opts.Logger.Info("sqsworker/console: "+verb, "user", user(r).Name, "queue", queue, "reason", reason, "error", errString(err))
		if err != nil {
			h.fail(w, r, http.StatusBadGateway, err)
			return
		}
		notice := fmt.Sprintf("Paused %s: its workers stop receiving within their Pauser's interval (2 s by default) and release what they prefetched; running jobs finish.", queue)
		if !pause {
			notice = fmt.Sprintf("Resumed %s: its workers receive again within their Pauser's interval.", queue)
		}
		http.Redirect(w, r, h.path("/fleet?notice="+url.QueryEscape(notice)), http.StatusSeeOther)
	}
}
