package console

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/sqsworker/sqsworker/internal/deadletter"
	"github.com/sqsworker/sqsworker/queueref"
	"github.com/sqsworker/sqsworker/schedules"
)

func init() { pageNames = append(pageNames, "schedules") }

// The Schedules page's defaults.
const (
	defaultJobsGroup = "sqsworker-jobs" // schedules.NewJobs' default group
	maxJobsShown     = 100              // pending one-time jobs listed
	nextFires        = 3                // next fire times shown per schedule
)

// scheduleRoutes registers the Schedules page and the cancel action.
func (h *handler) scheduleRoutes(mux *http.ServeMux, p string) {
	mux.HandleFunc("GET "+p+"/schedules", h.schedulesPage)
	mux.HandleFunc("POST "+p+"/schedules/jobs/{id}/cancel", h.action(h.cancelJob))
}

// scheduleRow is one schedule as the Schedules page shows it.
type scheduleRow struct {
	schedules.Schedule
	Group    string
	Next     []time.Time
	Due      time.Time // a one-time job's due time
	DLQName  string
	DLQDepth int
	DLQErr   string
}

// scheduleGroup is one group's schedules on the page.
type scheduleGroup struct {
	Name string
	Rows []*scheduleRow
	Err  string
}

func (h *handler) scheduleGroups() []string {
	if len(h.opts.ScheduleGroups) == 0 {
		return []string{"default"}
	}
	return h.opts.ScheduleGroups
}

func (h *handler) jobsGroup() string {
	if h.opts.JobsGroup == "" {
		return defaultJobsGroup
	}
	return h.opts.JobsGroup
}

// readGroup lists a group's schedules (at most limit; 0: all) with their
// next fire times.
func (h *handler) readGroup(ctx context.Context, group string, limit int) scheduleGroup {
	g := scheduleGroup{Name: group}
	list, err := schedules.List(ctx, h.opts.Scheduler, func(o *schedules.Options) { o.Group, o.Limit = group, limit })
	g.Err = errString(err)
	now := h.opts.Now()
	for _, s := range list {
		r := &scheduleRow{Schedule: s, Group: group}
		if s.DLQ != "" {
			r.DLQName = queueref.Name(s.DLQ)
		}
		t := now
		for range nextFires {
			n, err := s.Next(t)
			if err != nil || n.IsZero() {
				break
			}
			r.Next = append(r.Next, n)
			if strings.HasPrefix(s.Expression, "at(") {
				r.Due = n
				break
			}
			t = n
		}
		g.Rows = append(g.Rows, r)
	}
	return g
}

// dlqDepths fills each row's dead-letter queue depth, reading each queue
// once (visible plus in flight), eight at a time.
func (h *handler) dlqDepths(ctx context.Context, rows []*scheduleRow) {
	type depth struct {
		n   int
		err string
	}
	depths := map[string]*depth{}
	for _, r := range rows {
		if r.DLQ != "" {
			depths[r.DLQ] = &depth{}
		}
	}
	var g errgroup.Group
	g.SetLimit(8)
	for arn, d := range depths {
		g.Go(func() error {
			u, err := queueref.Resolve(ctx, h.client, arn)
			if err != nil {
				d.err = err.Error()
				return nil
			}
			a, err := deadletter.GetAttributes(ctx, h.client, u, deadletter.AttrVisible, deadletter.AttrNotVisible)
			if err != nil {
				d.err = err.Error()
				return nil
			}
			d.n = deadletter.IntAttr(a, deadletter.AttrVisible) + deadletter.IntAttr(a, deadletter.AttrNotVisible)
			return nil
		})
	}
	_ = g.Wait()
	for _, r := range rows {
		if d := depths[r.DLQ]; d != nil {
			r.DLQDepth, r.DLQErr = d.n, d.err
		}
	}
}

// schedulesPage serves the Schedules page: the periodic schedules of
// Options.ScheduleGroups with their next fire times, state and dead-letter
// queue depth, and the pending one-time jobs (with Cancel for an
// operator).
func (h *handler) schedulesPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	names := h.scheduleGroups()
	groups := make([]scheduleGroup, len(names))
	var jobs scheduleGroup
	var g errgroup.Group
	for i, n := range names {
		g.Go(func() error { groups[i] = h.readGroup(ctx, n, 0); return nil })
	}
	g.Go(func() error { jobs = h.readGroup(ctx, h.jobsGroup(), maxJobsShown); return nil })
	_ = g.Wait()
	var all []*scheduleRow
	for _, gr := range groups {
		all = append(all, gr.Rows...)
	}
	all = append(all, jobs.Rows...)
	h.dlqDepths(ctx, all)
	h.render(w, r, http.StatusOK, "schedules", "Schedules", map[string]any{
		"Groups": groups, "Jobs": jobs, "MaxJobs": maxJobsShown, "Notice": r.URL.Query().Get("notice"),
	})
}

// cancelJob serves Cancel on a pending one-time job: schedules.Jobs.Cancel
// in the jobs group. It is audited (the log and the Actions page) and goes
// back to the Schedules page with what happened.
func (h *handler) cancelJob(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id := r.PathValue("id")
	group := h.jobsGroup()
	// The job's queue and role, for the audit record and for NewJobs.
	list, err := schedules.List(ctx, h.opts.Scheduler, func(o *schedules.Options) { o.Group, o.NamePrefix = group, id })
	var job *schedules.Schedule
	for i := range list {
		if list[i].Name == id {
			job = &list[i]
		}
	}
	if err == nil && job == nil {
		err = fmt.Errorf("job %s is not pending in schedule group %s: it fired, was cancelled, or never existed", id, group)
	}
	var cancelled bool
	if err == nil {
		var jobs *schedules.Jobs
		jobs, err = schedules.NewJobs(h.opts.Scheduler, job.Queue, func(o *schedules.Options) {
			o.Group, o.RoleARN, o.Now = group, job.RoleARN, h.opts.Now
		})
		if err == nil {
			cancelled, err = jobs.Cancel(ctx, id)
		}
	}
	queue := ""
	if job != nil {
		queue = queueref.Name(job.Queue)
	}
	h.opts.Logger.Info("sqsworker/console: cancel job", "user", user(r).Name, "group", group, "job", id, "queue", queue, "cancelled", cancelled, "error", errString(err))
	note := ""
	if err == nil && !cancelled {
		note = "not cancelled: it is due within a minute (the fire wins) or no longer pending"
	}
	h.rememberDone(r, "cancel", queue, fmt.Sprintf("one-time job %s (group %s)", id, group), err, note)
	if err != nil {
		h.fail(w, r, http.StatusBadGateway, err)
		return
	}
	notice := fmt.Sprintf("Cancelled job %s: it will not be sent to %s.", id, queue)
	if !cancelled {
		notice = fmt.Sprintf("Job %s was not cancelled: it is due within a minute (then the fire wins and it runs) or is no longer pending.", id)
	}
	http.Redirect(w, r, h.path("/schedules?notice="+url.QueryEscape(notice)), http.StatusSeeOther)
}

// rememberDone lists an action that ran in its request on the Actions page,
// as a finished job.
func (h *handler) rememberDone(r *http.Request, kind, queue, desc string, err error, note string) {
	j := &job{ID: rand.Text()[:12], Kind: kind, Queue: queue, Desc: desc, User: user(r).Name, Started: h.opts.Now(), done: make(chan struct{})}
	j.st = jobStatus{Finished: true, OK: err == nil && note == "", Error: errString(err), Note: note}
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
