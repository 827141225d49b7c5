package console

import (
	"context"
	"crypto/rand"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/fanout"
	"github.com/sqsworker/sqsworker/fleet"
	"github.com/sqsworker/sqsworker/schedules"
)

// API is every SQS call the console makes, with the AWS SDK for Go v2's
// exact method signatures. *sqs.Client and sqstest's Fake satisfy it.
type API interface {
	dlq.API
	SendMessage(ctx context.Context, params *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	PurgeQueue(ctx context.Context, params *sqs.PurgeQueueInput, optFns ...func(*sqs.Options)) (*sqs.PurgeQueueOutput, error)
}

var _ API = (*sqs.Client)(nil)

// Role is what a user may do in the console: RoleViewer or RoleOperator.
// Any other value, the zero value "" included, is a viewer.
type Role string

const (
	// RoleViewer may look at every page and act on nothing.
	RoleViewer Role = "viewer"
	// RoleOperator may also act (redrive, delete, send, purge) when the
	// console's actions are switched on (Options.Actions).
	RoleOperator Role = "operator"
)

// User is who makes a request, as Options.Authenticate says.
type User struct {
	// Name identifies the user in the audit log.
	Name string
	// Role is what the user may do. Zero value: RoleViewer.
	Role Role
}

// Worker is a running worker whose statistics the console shows live.
type Worker struct {
	// Name labels the worker on the page.
	Name string
	// StatsURL is the URL of the worker's StatsHandler
	// (worker.Worker.StatsHandler), e.g. http://10.0.0.7:9464/debug/sqsworker/stats.
	StatsURL string
}

// Options configures the console. Every field's zero value is usable.
type Options struct {
	// Queues lists the queues to show, by name, URL or ARN. Zero value:
	// every queue ListQueues returns for the credentials.
	Queues []string
	// SNS, if set, lets the overview show each queue's SNS subscriptions
	// (topic → subscription DLQ → queue → DLQ) and lint them with
	// fanout.Lint, and opens each subscription's dead-letter queue on the
	// dead-letter queue pages (redriven with fanout.Redrive). Zero value:
	// dlq.Lint only, no fan-out chain.
	SNS fanout.API
	// Actions switches on the actions (redrive, delete, edit and send,
	// purge). Zero value: the console is read-only: it renders no action
	// control and refuses every action request.
	Actions bool
	// Authenticate says who makes a request. A non-nil error refuses the
	// request (401) with the error's text. Zero value: every request is an
	// operator named "local" — fine for a console bound to 127.0.0.1,
	// never for one others can reach.
	Authenticate func(*http.Request) (User, error)
	// Redact, if set, returns the body to show for a dead-lettered message
	// (the queue URL is the dead-letter queue's). Bodies go through it
	// everywhere the console shows one, and editing a body is then
	// switched off. Zero value: bodies are shown as they are.
	Redact func(queueURL string, m dlq.Message) string
	// Logger receives the audit log: one record per action, with the user,
	// the queue, what was selected and the outcome; never a message body.
	// Zero value: slog.Default().
	Logger *slog.Logger
	// Prefix is the path the console is mounted at, e.g. "/sqs" (no
	// trailing slash): the handler expects request paths that start with
	// it. Zero value: the root.
	Prefix string
	// Hold is how long reading a dead-letter queue hides its messages
	// from other consumers at most; the console releases them as soon as
	// the read ends. Zero value: 30 seconds.
	Hold time.Duration
	// MaxRead is the most messages one read of a dead-letter queue
	// receives; a larger queue is grouped from a sample of this size, and
	// the page says so. Zero value: 10,000.
	MaxRead int
	// Readers is how many receives a read runs in parallel. Zero value: 16.
	Readers int
	// RedriveRate is the manual redrive's rate in messages per second.
	// Zero value: dlq.Redrive's (100).
	RedriveRate float64
	// Workers lists workers whose statistics the Workers page polls.
	Workers []Worker
	// Fleet, if set, shows the controls its table shares between
	// processes (package fleet): a Fleet page with each queue's pause
	// switch, the shared circuit breakers and the cap slots in use
	// (Fleet.Usage: one Scan of the table per load, so its client needs
	// Scan), and a "paused" mark on the Queues page. With Actions an
	// operator can pause and resume a queue there; the stored reason names
	// the console user, PauseState.By is the Fleet's Holder. Zero value:
	// no fleet controls are shown.
	Fleet *fleet.Fleet
	// Scheduler, if set, shows a Schedules page: the schedules of
	// ScheduleGroups (expression, time zone, next fire times, state and
	// their dead-letter queue's depth) and the pending one-time jobs of
	// JobsGroup (schedules.Jobs), which an operator can cancel when
	// Actions is on. It needs scheduler:ListSchedules and GetSchedule, and
	// DeleteSchedule to cancel. Zero value: no Schedules page.
	Scheduler schedules.API
	// ScheduleGroups lists the schedule groups the Schedules page shows.
	// Zero value: "default".
	ScheduleGroups []string
	// JobsGroup is the group of the one-time jobs the Schedules page
	// lists. Zero value: "sqsworker-jobs", schedules.NewJobs' default.
	JobsGroup string
	// HTTPClient fetches the workers' statistics. Zero value: a client
	// with a 3-second timeout.
	HTTPClient *http.Client
	// CSRFKey signs the CSRF tokens. Zero value: a random key per handler
	// (tokens then do not survive a restart; the page just needs a reload).
	CSRFKey []byte
	// Now is the clock. Zero value: time.Now.
	Now func() time.Time
	// SampleEvery, if set, makes the console sample every shown queue's
	// counts (and its dead-letter queue's) at this interval while it runs:
	// one GetQueueAttributes per queue per sample (plus ListQueues without
	// Queues). Each queue's History page charts them over 1 hour, 24 hours
	// or 14 days; the samples are kept in memory only, at most 20,160 per
	// queue (14 days at one a minute). The sampling ends when the handler
	// is no longer referenced. Zero value: no sampling, no history.
	SampleEvery time.Duration
	// CloudWatch, if set, is where the History pages read a queue's
	// history: SQS's metrics in CloudWatch (AWS/SQS) for the queue and its
	// dead-letter queue, with GetMetricData (up to 500 metrics a request),
	// at 1-minute points over an hour, 5-minute over a day and hourly over
	// 14 days: depths, sent and deleted per minute and the oldest
	// message's age. Each page load asks for 12 metrics (6 without a
	// dead-letter queue), billed by AWS at $0.01 per 1,000 metrics; the
	// page shows the cost. If CloudWatch fails, the page says so and falls
	// back to the sampled history. Zero value: the sampled history only.
	CloudWatch CloudWatchAPI
}

//go:embed ui
var uiFS embed.FS

// handler is the console.
type handler struct {
	client API
	opts   Options
	mux    *http.ServeMux
	pages  map[string]*template.Template
	csrf   csrf

	mu        sync.Mutex
	snapshots map[string]*snapshot     // the kept reads, by dead-letter queue URL (keep.go)
	summaries map[string]readSummary   // the last read's summary, by dead-letter queue URL
	reading   map[string]*readInFlight // reads under way, by dead-letter queue URL
	jobs      map[string]*job
	jobOrder  []string
	samples   map[string]workerSample // by stats URL
	hist      *history                // the sampled counts (Options.SampleEvery)
	retention sync.Map                // dead-letter queue URL → retentionEntry
}

// New returns the console as an http.Handler, to serve on its own or mount
// in an existing server:
//
//	h, err := console.New(sqsClient, func(o *console.Options) { o.Prefix = "/sqs" })
//	mux.Handle("/sqs/", h)
//
// It is read-only unless Options.Actions is set. Every action request must
// carry the page's CSRF token (and come from the console's own origin), and
// goes through the dlq package (Redrive, Delete) with its guarantees:
// nothing is deleted before its copy is sent, and what a run could not see
// is reported.
func New(client API, optFns ...func(*Options)) (http.Handler, error) {
	if client == nil {
		return nil, errors.New("console: no SQS client; pass an *sqs.Client (or sqstest.Fake in tests)")
	}
	var o Options
	for _, fn := range optFns {
		fn(&o)
	}
	if o.Prefix != "" && (!strings.HasPrefix(o.Prefix, "/") || strings.HasSuffix(o.Prefix, "/")) {
		return nil, fmt.Errorf("console: Options.Prefix %q must start with / and not end with one, e.g. /sqs", o.Prefix)
	}
	if o.Hold <= 0 {
		o.Hold = 30 * time.Second
	}
	if o.MaxRead <= 0 {
		o.MaxRead = 10_000
	}
	if o.Readers <= 0 {
		o.Readers = 16
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Timeout: 3 * time.Second}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Authenticate == nil {
		o.Authenticate = func(*http.Request) (User, error) { return User{Name: "local", Role: RoleOperator}, nil }
	}
	if len(o.CSRFKey) == 0 {
		o.CSRFKey = make([]byte, 32)
		if _, err := rand.Read(o.CSRFKey); err != nil {
			return nil, fmt.Errorf("console: generating the CSRF key: %w", err)
		}
	}
	for _, w := range o.Workers {
		if w.Name == "" || !(strings.HasPrefix(w.StatsURL, "http://") || strings.HasPrefix(w.StatsURL, "https://")) {
			return nil, fmt.Errorf("console: Options.Workers entry %q needs a name and an http(s) StatsURL (its worker.StatsHandler)", w.Name)
		}
	}
	h := &handler{
		client: client, opts: o, csrf: csrf{key: o.CSRFKey, path: o.Prefix + "/"},
		snapshots: map[string]*snapshot{}, reading: map[string]*readInFlight{}, jobs: map[string]*job{}, samples: map[string]workerSample{},
	}
	if err := h.parseTemplates(); err != nil {
		return nil, err
	}
	static, err := fs.Sub(uiFS, "ui/static")
	if err != nil {
		return nil, fmt.Errorf("console: the embedded assets: %w", err)
	}
	mux := http.NewServeMux()
	p := o.Prefix
	mux.Handle("GET "+p+"/static/", http.StripPrefix(p+"/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET "+p+"/{$}", h.overview)
	mux.HandleFunc("GET "+p+"/queues/{queue}/dlq", h.triage)
	mux.HandleFunc("GET "+p+"/queues/{queue}/dlq/messages/{id}", h.message)
	mux.HandleFunc("GET "+p+"/jobs/{id}", h.jobPage)
	mux.HandleFunc("GET "+p+"/jobs/{id}/status", h.jobStatus)
	mux.HandleFunc("GET "+p+"/workers", h.workersPage)
	mux.HandleFunc("GET "+p+"/workers/stats", h.workersStats)
	mux.HandleFunc("POST "+p+"/queues/{queue}/dlq/redrive", h.action(h.redrive))
	mux.HandleFunc("POST "+p+"/queues/{queue}/dlq/delete", h.action(h.delete))
	mux.HandleFunc("POST "+p+"/queues/{queue}/dlq/purge", h.action(h.purge))
	mux.HandleFunc("POST "+p+"/queues/{queue}/dlq/messages/{id}/send", h.action(h.send))
	if o.Fleet != nil {
		mux.HandleFunc("GET "+p+"/fleet", h.fleetPage)
		mux.HandleFunc("POST "+p+"/queues/{queue}/pause", h.action(h.setPause(true)))
		mux.HandleFunc("POST "+p+"/queues/{queue}/resume", h.action(h.setPause(false)))
	}
	h.moreRoutes(mux, p)
	if o.Scheduler != nil {
		h.scheduleRoutes(mux, p)
	}
	h.startSampling()
	h.mux = mux
	return h, nil
}

// userKey is the context key of the request's User.
type userKey struct{}

// ServeHTTP authenticates the request, sets the security headers and the
// CSRF session, and serves the page.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u, err := h.opts.Authenticate(r)
	if err != nil {
		http.Error(w, "not signed in: "+err.Error(), http.StatusUnauthorized)
		return
	}
	hdr := w.Header()
	hdr.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Referrer-Policy", "no-referrer")
	hdr.Set("Cache-Control", "no-store")
	if u.Role != RoleOperator {
		u.Role = RoleViewer
	}
	r = r.WithContext(context.WithValue(r.Context(), userKey{}, u))
	h.mux.ServeHTTP(w, r)
}

// user returns the request's User.
func user(r *http.Request) User {
	u, _ := r.Context().Value(userKey{}).(User)
	return u
}

// canAct reports whether the request's user may act: actions are on and
// the user is an operator.
func (h *handler) canAct(r *http.Request) bool {
	return h.opts.Actions && user(r).Role == RoleOperator
}

// action wraps an action handler: it refuses the request unless actions
// are on, the user is an operator, the request comes from this origin and
// it carries the session's CSRF token.
func (h *handler) action(next http.HandlerFunc) http.HandlerFunc {
	origin := http.NewCrossOriginProtection()
	return func(w http.ResponseWriter, r *http.Request) {
		if !h.opts.Actions {
			http.Error(w, "the console is read-only: it takes no action; start it with actions switched on (sqsworker console --actions, or console.Options.Actions)", http.StatusForbidden)
			return
		}
		if u := user(r); u.Role != RoleOperator {
			http.Error(w, fmt.Sprintf("user %s is a %s; only an operator may act", u.Name, u.Role), http.StatusForbidden)
			return
		}
		if err := origin.Check(r); err != nil {
			http.Error(w, "refused: a cross-origin request ("+err.Error()+")", http.StatusForbidden)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
		if err := r.ParseForm(); err != nil {
			http.Error(w, "the form could not be read: "+err.Error(), http.StatusBadRequest)
			return
		}
		if !h.csrf.valid(r) {
			http.Error(w, "refused: the request has no valid CSRF token; reload the console's page and try again", http.StatusForbidden)
			return
		}
		next(w, r)
	}
}

// path returns the console path p under the prefix.
func (h *handler) path(p string) string { return h.opts.Prefix + p }
