package console

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/internal/awscall"
	"github.com/sqsworker/sqsworker/internal/deadletter"
	"github.com/sqsworker/sqsworker/queueref"
)

// selection is the messages an action applies to, from the form: a group
// (scope=group, group=KEY), selected messages (scope=selected, id=…), a
// filter (scope=filter, error=TEXT) or every message (scope=all).
type selection struct {
	Scope  string
	Desc   string
	Filter dlq.Filter
	Max    int
	// Fields are the form fields that make the selection, for the
	// confirmation page to post again.
	Fields url.Values
}

func (h *handler) selection(r *http.Request, dlqURL string) (selection, error) {
	f := r.PostForm
	sel := selection{Scope: f.Get("scope"), Fields: url.Values{"scope": {f.Get("scope")}}}
	switch sel.Scope {
	case "group":
		key := f.Get("group")
		if key == "" {
			return sel, errors.New("no group selected")
		}
		sel.Fields.Set("group", key)
		sel.Filter.Match = func(m dlq.Message) bool { return groupKey(m) == key }
		sel.Desc = "the group " + key
		if s := h.snapshotOf(dlqURL); s != nil {
			for _, g := range groups(s.Messages) {
				if g.Key == key {
					sel.Desc = fmt.Sprintf("the group “%s” (%s, %d when last read)", g.Reason, orDash(g.Handler), g.Count)
				}
			}
		}
	case "selected":
		ids := map[string]bool{}
		for _, id := range f["id"] {
			if id != "" {
				ids[id] = true
				sel.Fields.Add("id", id)
			}
		}
		if len(ids) == 0 {
			return sel, errors.New("no message selected: tick the messages first")
		}
		sel.Filter.Match = func(m dlq.Message) bool { return ids[m.ID] }
		sel.Max = len(ids)
		sel.Desc = fmt.Sprintf("%d selected message(s)", len(ids))
	case "filter":
		text := f.Get("error")
		if text == "" {
			return sel, errors.New("the filter is empty: type the text the error must contain")
		}
		sel.Fields.Set("error", text)
		sel.Filter.ErrorContains = text
		sel.Desc = fmt.Sprintf("the messages whose error contains %q", text)
	case "search":
		return h.searchSelection(sel, f, dlqURL)
	case "all":
		sel.Desc = "every message"
	default:
		return sel, fmt.Errorf("unknown selection %q; want group, selected, filter or all", sel.Scope)
	}
	return sel, nil
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// job is an action running in the background, with its progress.
type job struct {
	ID, Kind, Queue, DLQ, Desc, User string
	Back                             string // the dead-letter queue's page
	Started                          time.Time
	done                             chan struct{} // closed when the job has finished

	mu sync.Mutex
	st jobStatus
}

// jobStatus is a job's progress, as the job page polls it.
type jobStatus struct {
	Finished   bool   `json:"finished"`
	OK         bool   `json:"ok"`
	Method     string `json:"method,omitempty"`
	Total      int    `json:"total"`
	Scanned    int    `json:"scanned"`
	Matched    int    `json:"matched"`
	Moved      int    `json:"moved"`
	Deleted    int    `json:"deleted"`
	Sent       int    `json:"sent"`
	Duplicated int    `json:"duplicated"`
	Skipped    int    `json:"skipped"`
	Failed     int    `json:"failed"`
	NotSeen    int    `json:"notSeen"`
	CameBack   int    `json:"cameBack"`
	Error      string `json:"error,omitempty"`
	Note       string `json:"note,omitempty"`
}

func (j *job) update(fn func(*jobStatus)) {
	j.mu.Lock()
	defer j.mu.Unlock()
	fn(&j.st)
}

func (j *job) status() jobStatus {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.st
}

// maxJobs is how many jobs the console remembers.
const maxJobs = 100

// start runs fn as a job in the background, logs it in the audit log, and
// redirects the browser to its page.
func (h *handler) start(w http.ResponseWriter, r *http.Request, kind string, t dlq.Target, desc string, fn func(ctx context.Context, j *job) error) {
	j := &job{ID: rand.Text()[:12], Kind: kind, Queue: queueref.Name(t.SourceURL), DLQ: queueref.Name(t.DLQURL), Desc: desc, User: user(r).Name, Started: h.opts.Now(), done: make(chan struct{})}
	j.Back = h.dlqBase(r)
	h.mu.Lock()
	h.jobs[j.ID] = j
	h.jobOrder = append(h.jobOrder, j.ID)
	for len(h.jobOrder) > maxJobs {
		delete(h.jobs, h.jobOrder[0])
		h.jobOrder = h.jobOrder[1:]
	}
	h.mu.Unlock()
	log := h.opts.Logger.With("user", j.User, "action", kind, "queue", j.Queue, "dlq", j.DLQ, "selection", desc, "job", j.ID)
	log.Info("sqsworker/console: action started")
	// The job outlives the request that started it.
	ctx := context.WithoutCancel(r.Context())
	h.forget(t.DLQURL) // the read no longer shows what is there
	go func() {
		err := fn(ctx, j)
		h.forget(t.DLQURL)
		st := j.status()
		// Audit first: once the page shows the job finished, its record is in the log.
		log.Info("sqsworker/console: action finished", "ok", err == nil, "moved", st.Moved, "deleted", st.Deleted, "sent", st.Sent,
			"duplicated", st.Duplicated, "failed", st.Failed, "not_seen", st.NotSeen, "came_back", st.CameBack, "error", errString(err))
		j.update(func(st *jobStatus) {
			st.Finished, st.OK = true, err == nil
			st.Error = errString(err)
		})
		close(j.done)
	}()
	http.Redirect(w, r, h.path("/jobs/"+j.ID), http.StatusSeeOther)
}

// redrive moves the selected messages back to their source queue with
// dlq.Redrive.
func (h *handler) redrive(w http.ResponseWriter, r *http.Request) {
	t, sub, err := h.dlqOf(r)
	if err != nil {
		h.fail(w, r, http.StatusNotFound, err)
		return
	}
	sel, err := h.selection(r, t.DLQURL)
	if err != nil {
		h.fail(w, r, http.StatusBadRequest, err)
		return
	}
	h.start(w, r, "redrive", t, sel.Desc, func(ctx context.Context, j *job) error {
		res, err := h.redriveTo(sub)(ctx, t, dlq.RedriveOptions{
			Filter: sel.Filter, Max: sel.Max, Rate: h.opts.RedriveRate, Hold: h.opts.Hold, Now: h.opts.Now,
			Progress: func(p dlq.Progress) { j.update(func(st *jobStatus) { st.setProgress(p) }) },
		})
		j.update(func(st *jobStatus) {
			st.setProgress(res.Progress)
			st.NotSeen = res.NotSeen
			if res.NotSeen > 0 {
				st.Note = fmt.Sprintf("Not seen: %s, held by another reader; they stay in the dead-letter queue: run again after their visibility timeout.", plural(res.NotSeen, "message"))
			}
			if res.CameBack > 0 {
				st.Note = strings.TrimSpace(st.Note + " " + fmt.Sprintf("%s came back: the redrive moved them, they failed again and were dead-lettered anew; they stay in the dead-letter queue (fix the cause, then redrive again).", plural(res.CameBack, "message")))
			}
		})
		return err
	})
}

func (st *jobStatus) setProgress(p dlq.Progress) {
	st.Method, st.Total, st.Scanned, st.Matched, st.Moved = string(p.Method), p.Total, p.Scanned, p.Matched, p.Moved
	st.Duplicated, st.Skipped, st.Failed, st.CameBack = p.Duplicated, p.Skipped, p.Failed, p.CameBack
}

// delete deletes the selected messages with dlq.Delete, after the user
// confirmed on a page that says what will go.
func (h *handler) delete(w http.ResponseWriter, r *http.Request) {
	queue := r.PathValue("queue")
	t, _, err := h.dlqOf(r)
	if err != nil {
		h.fail(w, r, http.StatusNotFound, err)
		return
	}
	sel, err := h.selection(r, t.DLQURL)
	if err == nil && sel.Scope == "all" {
		err = errors.New("deleting every message is a purge: use Purge, which asks you to type the queue's name")
	}
	if err != nil {
		h.fail(w, r, http.StatusBadRequest, err)
		return
	}
	if r.PostForm.Get("confirmed") != "yes" {
		matching := -1
		if s := h.snapshotOf(t.DLQURL); s != nil {
			matching = 0
			for _, m := range s.Messages {
				if sel.Filter.Matches(m, h.opts.Now()) {
					matching++
				}
			}
		}
		h.render(w, r, http.StatusOK, "confirm", "Delete messages?", map[string]any{"Queue": queue, "Target": t, "Sel": sel, "Matching": matching})
		return
	}
	h.start(w, r, "delete", t, sel.Desc, func(ctx context.Context, j *job) error {
		res, err := dlq.Delete(ctx, h.client, t.DLQURL, dlq.DeleteOptions{
			Filter: sel.Filter, Max: sel.Max, Hold: h.opts.Hold, Now: h.opts.Now,
			OnDelete: func(dlq.Message) { j.update(func(st *jobStatus) { st.Deleted++ }) },
		})
		j.update(func(st *jobStatus) {
			st.Scanned, st.Matched, st.Deleted, st.Failed, st.NotSeen = res.Scanned, res.Matched, res.Deleted, res.Failed, res.NotSeen
		})
		return err
	})
}

// purge empties the dead-letter queue with PurgeQueue, as `sqsworker dlq
// purge` does, once the user has typed the queue's name.
func (h *handler) purge(w http.ResponseWriter, r *http.Request) {
	queue := r.PathValue("queue")
	t, _, err := h.dlqOf(r)
	if err != nil {
		h.fail(w, r, http.StatusNotFound, err)
		return
	}
	name := queueref.Name(t.DLQURL)
	if strings.TrimSpace(r.PostForm.Get("confirm")) != name {
		h.fail(w, r, http.StatusBadRequest, fmt.Errorf("not purged: type the dead-letter queue's name, %s, to confirm", name))
		return
	}
	counts, _ := dlq.Count(r.Context(), h.client, t.DLQURL)
	_, err = awscall.SQS(r.Context(), awscall.Rule{}, h.client.PurgeQueue, &sqs.PurgeQueueInput{QueueUrl: aws.String(t.DLQURL)})
	h.opts.Logger.Info("sqsworker/console: purge", "user", user(r).Name, "queue", queue, "dlq", name, "approximately_purged", counts.Total(), "error", errString(err))
	h.rememberPurge(r, t, counts.Total(), err)
	h.forget(t.DLQURL)
	if err != nil {
		h.fail(w, r, http.StatusBadGateway, fmt.Errorf("purging %s: %w", name, err))
		return
	}
	http.Redirect(w, r, h.dlqBase(r)+"?notice="+url.QueryEscape(fmt.Sprintf("Purged %s (about %s).", name, plural(counts.Total(), "message"))), http.StatusSeeOther)
}

// send sends an edited body back to the source queue with the message's
// attributes and provenance, then deletes the original from the
// dead-letter queue: sent first, so a failure leaves a duplicate at worst.
func (h *handler) send(w http.ResponseWriter, r *http.Request) {
	queue, id := r.PathValue("queue"), r.PathValue("id")
	t, err := h.target(r.Context(), queue)
	if err != nil {
		h.fail(w, r, http.StatusNotFound, err)
		return
	}
	if h.opts.Redact != nil {
		h.fail(w, r, http.StatusForbidden, errors.New("bodies are redacted (Options.Redact), so they cannot be edited here"))
		return
	}
	var m dlq.Message
	found := false
	if s := h.snapshotOf(t.DLQURL); s != nil {
		for _, sm := range s.Messages {
			if sm.ID == id {
				m, found = sm, true
			}
		}
	}
	body := r.PostForm.Get("body")
	if !found || body == "" {
		h.fail(w, r, http.StatusBadRequest, fmt.Errorf("message %s is not in the last read of the dead-letter queue, or the body is empty; open the message again", id))
		return
	}
	h.start(w, r, "edit-and-send", t, "message "+id, func(ctx context.Context, j *job) error {
		copier, err := deadletter.NewCopier(deadletter.Target{DLQURL: t.SourceURL, SourceURL: t.SourceURL, SourceARN: t.SourceARN, FIFO: t.FIFO}, func(o *deadletter.Options) { o.Logger = h.opts.Logger })
		if err != nil {
			return err
		}
		raw := types.Message{MessageId: aws.String(id), Body: aws.String(body), MessageAttributes: m.Attributes}
		if m.GroupID != "" {
			raw.Attributes = map[string]string{string(types.MessageSystemAttributeNameMessageGroupId): m.GroupID}
		}
		in, err := copier.Input(raw, deadletter.Provenance(m.Provenance))
		if err != nil {
			return err
		}
		if _, err := awscall.SQS(ctx, awscall.Rule{}, h.client.SendMessage, in); err != nil {
			return fmt.Errorf("sending the edited message to %s failed; the original stays in the dead-letter queue: %w", j.Queue, err)
		}
		j.update(func(st *jobStatus) { st.Sent = 1 })
		res, err := dlq.Delete(ctx, h.client, t.DLQURL, dlq.DeleteOptions{
			Filter: dlq.Filter{Match: func(x dlq.Message) bool { return x.ID == id }}, Max: 1, Hold: h.opts.Hold,
		})
		j.update(func(st *jobStatus) {
			st.Scanned, st.Deleted = res.Scanned, res.Deleted
			if res.Deleted == 0 {
				st.Note = "the edited message was sent, but the original was not found in the dead-letter queue to delete (redriven or deleted meanwhile, or held by another reader): check the queue for a copy"
			}
		})
		if err != nil {
			return fmt.Errorf("the edited message was sent to %s, but deleting the original from the dead-letter queue failed, so it holds a copy: %w", j.Queue, err)
		}
		return nil
	})
}

// jobPage serves a job's page; its script polls jobStatus.
func (h *handler) jobPage(w http.ResponseWriter, r *http.Request) {
	j := h.job(r.PathValue("id"))
	if j == nil {
		h.fail(w, r, http.StatusNotFound, errors.New("no such job; the console remembers the last 100 jobs since it started"))
		return
	}
	h.render(w, r, http.StatusOK, "job", "Job "+j.ID, map[string]any{"Job": j, "Status": j.status()})
}

// jobStatus serves a job's progress as JSON.
func (h *handler) jobStatus(w http.ResponseWriter, r *http.Request) {
	j := h.job(r.PathValue("id"))
	if j == nil {
		http.Error(w, "no such job", http.StatusNotFound)
		return
	}
	writeJSON(w, j.status())
}

func (h *handler) job(id string) *job {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.jobs[id]
}
