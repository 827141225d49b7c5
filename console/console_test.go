package console

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/fanout"
	"github.com/sqsworker/sqsworker/internal/deadletter"
	"github.com/sqsworker/sqsworker/queueref"
	"github.com/sqsworker/sqsworker/sqstest"
	"github.com/sqsworker/sqsworker/sqstest/snstest"
	"github.com/sqsworker/sqsworker/worker"
)

// fixture is a console over a fake with the queue "orders" and its
// dead-letter queue, holding failed jobs in three groups.
type fixture struct {
	f      *sqstest.Fake
	target dlq.Target
	h      *handler
	log    *bytes.Buffer
}

// secret marks every body, so tests can check no body reaches the log.
const secret = "s3cr3t-card-4111"

// failures are the groups: error text → how many messages.
var failures = []struct {
	err     string
	handler string
	n       int
}{{"charge: card declined", "charge", 7}, {"ship: address invalid", "ship", 4}, {"charge: timeout", "charge", 2}}

func newFixture(t *testing.T, optFns ...func(*Options)) *fixture {
	t.Helper()
	f := sqstest.For(t)
	src, _ := f.MustCreateQueueWithDLQ(t, "orders", 5, nil)
	f.MustCreateQueue(t, "audit", nil)
	target, err := dlq.Discover(context.Background(), f, src)
	if err != nil {
		t.Fatal(err)
	}
	mover, err := deadletter.NewMover(f, deadletter.Target(target))
	if err != nil {
		t.Fatal(err)
	}
	i := 0
	for _, fl := range failures {
		for range fl.n {
			f.MustSend(t, src, fmt.Sprintf(`{"order":%d,"card":"%s"}`, i, secret))
			out, err := f.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(src), MaxNumberOfMessages: 1,
				MessageAttributeNames: []string{"All"}, MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll}})
			if err != nil || len(out.Messages) != 1 {
				t.Fatalf("receive: %v (%d messages)", err, len(out.Messages))
			}
			if err := mover.Move(context.Background(), out.Messages[0], deadletter.Provenance{Error: fl.err, Handler: fl.handler, Attempt: 3, FailedAt: f.Now().Add(time.Duration(i) * time.Second)}); err != nil {
				t.Fatal(err)
			}
			i++
		}
	}
	var log bytes.Buffer
	hh, err := New(f, append([]func(*Options){func(o *Options) {
		o.Logger = slog.New(slog.NewTextHandler(&log, nil))
		o.Readers = 4
		o.RedriveRate = -1
		o.Now = f.Now
	}}, optFns...)...)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{f: f, target: target, h: hh.(*handler), log: &log}
}

func withActions(o *Options) { o.Actions = true }

// get serves a GET and returns the response.
func (x *fixture) get(t *testing.T, path string, cookies ...*http.Cookie) *http.Response {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	for _, c := range cookies {
		req.AddCookie(c)
	}
	rec := httptest.NewRecorder()
	x.h.ServeHTTP(rec, req)
	return rec.Result()
}

// post serves a form POST with the session cookie (if any) and the fields.
func (x *fixture) post(t *testing.T, path string, session *http.Cookie, form url.Values) *http.Response {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if session != nil {
		req.AddCookie(session)
	}
	rec := httptest.NewRecorder()
	x.h.ServeHTTP(rec, req)
	return rec.Result()
}

func body(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

var (
	tokenRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)
	groupRE = regexp.MustCompile(`(?s)data-group="([0-9a-f]+)">\s*<tr>\s*<td class="reason">([^<]*)</td>\s*<td class="n count">(\d+)</td>`)
)

// session opens the triage page and returns the session cookie and the
// CSRF token it carries, and the groups it shows (reason → key, count).
func (x *fixture) session(t *testing.T) (*http.Cookie, string, map[string][2]string) {
	t.Helper()
	cookie, token, page := x.open(t, "/queues/orders/dlq")
	gs := map[string][2]string{}
	for _, m := range groupRE.FindAllStringSubmatch(page, -1) {
		gs[m[2]] = [2]string{m[1], m[3]}
	}
	return cookie, token, gs
}

// open GETs a page (in the session of cookies, if any) that must answer
// 200, and returns the session cookie it set, the CSRF token it carries
// and the page.
func (x *fixture) open(t *testing.T, path string, cookies ...*http.Cookie) (*http.Cookie, string, string) {
	t.Helper()
	resp := x.get(t, path, cookies...)
	page := body(t, resp)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s\n%s", path, resp.Status, page)
	}
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == sessionCookie {
			cookie = c
		}
	}
	token := ""
	if m := tokenRE.FindStringSubmatch(page); m != nil {
		token = m[1]
	}
	return cookie, token, page
}

func bodiesIn(f *sqstest.Fake, url string) []string {
	var out []string
	for _, m := range f.Messages(url) {
		out = append(out, m.Body)
	}
	slices.Sort(out)
	return out
}

func TestOverviewShowsQueuesCountsAndDeadLetterSetup(t *testing.T) {
	x := newFixture(t)
	x.f.MustSend(t, x.target.SourceURL, "waiting")
	resp := x.get(t, "/")
	page := body(t, resp)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("overview: %s\n%s", resp.Status, page)
	}
	row := regexp.MustCompile(`(?s)data-queue="orders">.*?class="n visible">(\d+)<.*?class="dlq"[^>]*>orders-dlq</a>.*?class="n dlqdepth">(\d+)<`).FindStringSubmatch(page)
	if row == nil || row[1] != "1" || row[2] != "13" {
		t.Fatalf("the orders row should show 1 visible message and its DLQ orders-dlq with 13; got %q in\n%s", row, page)
	}
	for _, want := range []string{`data-queue="audit"`, `dead-letter queue of orders`, `no-redrive-policy`, `dlq-not-empty`} {
		if !strings.Contains(page, want) {
			t.Errorf("overview lacks %q", want)
		}
	}
}

func TestTriageGroupsByReasonAndReleasesAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		x := newFixture(t)
		_, _, gs := x.session(t)
		if len(gs) != len(failures) {
			t.Fatalf("got %d groups, want %d: %v", len(gs), len(failures), gs)
		}
		for _, fl := range failures {
			if g, ok := gs[fl.err]; !ok || g[1] != strconv.Itoa(fl.n) {
				t.Errorf("group %q: got %v, want %d messages", fl.err, g, fl.n)
			}
		}
		visible, inflight := len(x.f.Messages(x.target.DLQURL, "visible")), len(x.f.Messages(x.target.DLQURL, "inflight"))
		if visible != 13 || inflight != 0 {
			t.Fatalf("after the read the DLQ has %d visible and %d in flight; want all 13 released at once", visible, inflight)
		}
		if s := x.h.snapshotOf(x.target.DLQURL); s == nil || len(s.Messages) != 13 || s.NotSeen != 0 {
			t.Fatalf("snapshot: %+v", s)
		}
	})
}

// The read splits the queue among parallel readers; each message must be
// seen exactly once, and none may stay hidden.
func TestParallelReadSeesEveryMessageOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := sqstest.For(t)
		q := f.MustCreateQueue(t, "big-dlq", nil)
		for i := range 437 {
			f.MustSend(t, q, fmt.Sprintf("m%d", i))
		}
		hh, err := New(f, func(o *Options) { o.Readers = 7; o.Logger = slog.New(slog.DiscardHandler) })
		if err != nil {
			t.Fatal(err)
		}
		s := hh.(*handler).read(context.Background(), q)
		if s.Err != nil || len(s.Messages) != 437 || s.NotSeen != 0 || s.Sampled {
			t.Fatalf("read: err %v, %d messages, not seen %d, sampled %v; want all 437", s.Err, len(s.Messages), s.NotSeen, s.Sampled)
		}
		ids := map[string]bool{}
		for _, m := range s.Messages {
			if ids[m.ID] {
				t.Fatalf("message %s read twice", m.ID)
			}
			ids[m.ID] = true
		}
		if v, inflight := len(f.Messages(q, "visible")), len(f.Messages(q, "inflight")); v != 437 || inflight != 0 {
			t.Fatalf("%d visible, %d in flight after the read; want 437 visible", v, inflight)
		}
	})
}

// Two page views at once share one read: the second would otherwise find
// the first one's messages hidden and report them not seen.
func TestConcurrentReadsShareOneRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		x := newFixture(t)
		before := x.f.Requests()
		snaps := make(chan *snapshot, 2)
		for range 2 {
			go func() { snaps <- x.h.read(context.Background(), x.target.DLQURL) }()
		}
		a, b := <-snaps, <-snaps
		if a != b || len(a.Messages) != 13 || a.NotSeen != 0 {
			t.Fatalf("two reads: %p and %p, %d messages, %d not seen; want one shared read of all 13", a, b, len(a.Messages), a.NotSeen)
		}
		if got := x.f.Requests()["GetQueueAttributes"] - before["GetQueueAttributes"]; got != 1+x.h.opts.Readers {
			t.Fatalf("%d GetQueueAttributes calls; want those of one read (%d)", got, 1+x.h.opts.Readers)
		}
	})
}

func TestReadSamplesALargeQueueAndSaysSo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := sqstest.For(t)
		q := f.MustCreateQueue(t, "big-dlq", nil)
		for i := range 120 {
			f.MustSend(t, q, fmt.Sprintf("m%d", i))
		}
		hh, _ := New(f, func(o *Options) { o.Readers = 4; o.MaxRead = 40 })
		s := hh.(*handler).read(context.Background(), q)
		if !s.Sampled || len(s.Messages) != 40 {
			t.Fatalf("sampled %v with %d messages; want a sample of 40", s.Sampled, len(s.Messages))
		}
		if v, inflight := len(f.Messages(q, "visible")), len(f.Messages(q, "inflight")); v != 120 || inflight != 0 {
			t.Fatalf("%d visible, %d in flight after the read; want 120 visible", v, inflight)
		}
	})
}

func TestPostWithoutCSRFTokenIsRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		x := newFixture(t, withActions)
		cookie, token, gs := x.session(t)
		if cookie == nil || token == "" {
			t.Fatal("the triage page with actions on sets no session cookie or CSRF token")
		}
		group := url.Values{"scope": {"group"}, "group": {gs["ship: address invalid"][0]}}
		for name, tc := range map[string]struct {
			cookie *http.Cookie
			token  string
		}{
			"no token":      {cookie, ""},
			"wrong token":   {cookie, token[:len(token)-2] + "xx"},
			"no session":    {nil, token},
			"other session": {&http.Cookie{Name: sessionCookie, Value: "another"}, token},
		} {
			form := url.Values{}
			for k, v := range group {
				form[k] = v
			}
			if tc.token != "" {
				form.Set(csrfField, tc.token)
			}
			resp := x.post(t, "/queues/orders/dlq/redrive", tc.cookie, form)
			if resp.StatusCode != http.StatusForbidden || !strings.Contains(body(t, resp), "CSRF") {
				t.Errorf("%s: %s; want 403 naming the CSRF token", name, resp.Status)
			}
		}
		// A browser's cross-origin POST is refused even with a token.
		form := url.Values{csrfField: {token}}
		for k, v := range group {
			form[k] = v
		}
		req := httptest.NewRequest(http.MethodPost, "/queues/orders/dlq/redrive", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Sec-Fetch-Site", "cross-site")
		req.AddCookie(cookie)
		rec := httptest.NewRecorder()
		x.h.ServeHTTP(rec, req)
		if rec.Code != http.StatusForbidden {
			t.Errorf("cross-site POST: %d; want 403", rec.Code)
		}
		synctest.Wait()
		if got := x.f.Messages(x.target.SourceURL); len(got) != 0 {
			t.Fatalf("a refused POST moved %d messages", len(got))
		}
	})
}

func TestReadOnlyOffersAndAcceptsNoAction(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		x := newFixture(t)
		cookie, token, gs := x.session(t)
		page := body(t, x.get(t, "/queues/orders/dlq"))
		if cookie != nil || token != "" || strings.Contains(page, `method="post"`) || strings.Contains(page, "<button") {
			t.Fatalf("read-only triage page offers actions (cookie %v, token %q)", cookie, token)
		}
		msgPage := body(t, x.get(t, "/queues/orders/dlq/messages/"+x.h.snapshotOf(x.target.DLQURL).Messages[0].ID))
		if strings.Contains(msgPage, "<form") || strings.Contains(msgPage, "<textarea") {
			t.Fatal("read-only message page offers actions")
		}
		// Even a well-formed request with a valid token is refused.
		session := &http.Cookie{Name: sessionCookie, Value: "s"}
		for _, path := range []string{"/queues/orders/dlq/redrive", "/queues/orders/dlq/delete", "/queues/orders/dlq/purge"} {
			form := url.Values{csrfField: {x.h.csrf.sign("s")}, "scope": {"group"}, "group": {gs["charge: timeout"][0]}, "confirmed": {"yes"}, "confirm": {"orders-dlq"}}
			resp := x.post(t, path, session, form)
			if resp.StatusCode != http.StatusForbidden || !strings.Contains(body(t, resp), "read-only") {
				t.Errorf("POST %s in read-only mode: %s; want 403 saying read-only", path, resp.Status)
			}
		}
		synctest.Wait()
		if v := len(x.f.Messages(x.target.DLQURL, "visible")); v != 13 || len(x.f.Messages(x.target.SourceURL)) != 0 {
			t.Fatalf("read-only console changed the queues: DLQ %d visible, source %d", v, len(x.f.Messages(x.target.SourceURL)))
		}
	})
}

func TestViewerCannotAct(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		x := newFixture(t, withActions, func(o *Options) {
			o.Authenticate = func(r *http.Request) (User, error) {
				if r.Header.Get("X-User") == "" {
					return User{}, fmt.Errorf("no X-User header")
				}
				return User{Name: r.Header.Get("X-User"), Role: RoleViewer}, nil
			}
		})
		if resp := x.get(t, "/"); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("unauthenticated GET: %s; want 401", resp.Status)
		}
		req := httptest.NewRequest(http.MethodGet, "/queues/orders/dlq", nil)
		req.Header.Set("X-User", "ann")
		rec := httptest.NewRecorder()
		x.h.ServeHTTP(rec, req)
		if strings.Contains(rec.Body.String(), "<button") {
			t.Fatal("a viewer is offered action buttons")
		}
		form := url.Values{csrfField: {x.h.csrf.sign("s")}, "scope": {"all"}}
		req = httptest.NewRequest(http.MethodPost, "/queues/orders/dlq/redrive", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("X-User", "ann")
		req.AddCookie(&http.Cookie{Name: sessionCookie, Value: "s"})
		rec = httptest.NewRecorder()
		x.h.ServeHTTP(rec, req)
		if rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), "operator") {
			t.Fatalf("viewer POST: %d %s; want 403", rec.Code, rec.Body.String())
		}
	})
}

// A User whose Role is not RoleOperator (the zero value included) is a
// viewer: shown as one, offered no action, refused every action.
func TestZeroRoleIsViewer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		x := newFixture(t, withActions, func(o *Options) {
			o.Authenticate = func(*http.Request) (User, error) { return User{Name: "bob"}, nil }
		})
		rec := httptest.NewRecorder()
		x.h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/queues/orders/dlq", nil))
		if page := rec.Body.String(); strings.Contains(page, "<button") || !strings.Contains(page, "bob (viewer)") {
			t.Fatalf("zero-Role user: page offers actions or does not say viewer:\n%s", page)
		}
		form := url.Values{csrfField: {x.h.csrf.sign("s")}, "scope": {"all"}}
		req := httptest.NewRequest(http.MethodPost, "/queues/orders/dlq/redrive", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.AddCookie(&http.Cookie{Name: sessionCookie, Value: "s"})
		rec = httptest.NewRecorder()
		x.h.ServeHTTP(rec, req)
		if rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), "bob is a viewer") {
			t.Fatalf("zero-Role POST: %d %s; want 403", rec.Code, rec.Body.String())
		}
	})
}

// finish waits for the job the response redirected to and returns its status.
func (x *fixture) finish(t *testing.T, resp *http.Response) jobStatus {
	t.Helper()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("action: %s; want a redirect to the job\n%s", resp.Status, body(t, resp))
	}
	loc := resp.Header.Get("Location")
	j := x.h.job(strings.TrimPrefix(loc, "/jobs/"))
	if j == nil {
		t.Fatalf("no job at %s", loc)
	}
	<-j.done // the bubble's clock moves on while the job's receives wait
	var st jobStatus
	if err := json.Unmarshal([]byte(body(t, x.get(t, loc+"/status"))), &st); err != nil {
		t.Fatal(err)
	}
	if !st.Finished {
		t.Fatalf("job %s not finished: %+v", loc, st)
	}
	return st
}

func TestRedriveGroupMovesExactlyThatGroup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		x := newFixture(t, withActions)
		cookie, token, gs := x.session(t)
		before := x.h.snapshotOf(x.target.DLQURL).Messages
		var want []string
		for _, m := range before {
			if m.Provenance.Error == "ship: address invalid" {
				want = append(want, m.Body)
			}
		}
		slices.Sort(want)
		st := x.finish(t, x.post(t, "/queues/orders/dlq/redrive", cookie, url.Values{csrfField: {token}, "scope": {"group"}, "group": {gs["ship: address invalid"][0]}}))
		if !st.OK || st.Moved != 4 || st.Scanned != 13 {
			t.Fatalf("job: %+v; want 4 moved of 13 scanned", st)
		}
		if got := bodiesIn(x.f, x.target.SourceURL); !slices.Equal(got, want) {
			t.Fatalf("the source queue got %v; want exactly the group's %v", got, want)
		}
		if v, inflight := len(x.f.Messages(x.target.DLQURL, "visible")), len(x.f.Messages(x.target.DLQURL, "inflight")); v != 9 || inflight != 0 {
			t.Fatalf("DLQ: %d visible, %d in flight; want the other 9 visible", v, inflight)
		}
		if !strings.Contains(x.log.String(), "action=redrive") || !strings.Contains(x.log.String(), "user=local") {
			t.Errorf("audit log lacks the redrive:\n%s", x.log.String())
		}
	})
}

func TestRedriveSelectedAndByFilter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		x := newFixture(t, withActions)
		cookie, token, _ := x.session(t)
		msgs := x.h.snapshotOf(x.target.DLQURL).Messages
		st := x.finish(t, x.post(t, "/queues/orders/dlq/redrive", cookie, url.Values{csrfField: {token}, "scope": {"selected"}, "id": {msgs[0].ID, msgs[5].ID}}))
		if st.Moved != 2 || len(x.f.Messages(x.target.SourceURL)) != 2 {
			t.Fatalf("selected: %+v, source holds %d; want 2", st, len(x.f.Messages(x.target.SourceURL)))
		}
		st = x.finish(t, x.post(t, "/queues/orders/dlq/redrive", cookie, url.Values{csrfField: {token}, "scope": {"filter"}, "error": {"timeout"}}))
		if st.Moved != 2 {
			t.Fatalf("filter: %+v; want the 2 timeouts moved", st)
		}
	})
}

func TestDeleteAsksForConfirmation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		x := newFixture(t, withActions)
		cookie, token, gs := x.session(t)
		form := url.Values{csrfField: {token}, "scope": {"group"}, "group": {gs["charge: card declined"][0]}}
		resp := x.post(t, "/queues/orders/dlq/delete", cookie, form)
		page := body(t, resp)
		if resp.StatusCode != http.StatusOK || !strings.Contains(page, `id="confirm-delete"`) || !strings.Contains(page, "7 matched") {
			t.Fatalf("delete without confirmation: %s; want the confirmation page saying 7 match\n%s", resp.Status, page)
		}
		synctest.Wait()
		if v := len(x.f.Messages(x.target.DLQURL, "visible")); v != 13 {
			t.Fatalf("asking for confirmation deleted messages: %d left", v)
		}
		form.Set("confirmed", "yes")
		st := x.finish(t, x.post(t, "/queues/orders/dlq/delete", cookie, form))
		if !st.OK || st.Deleted != 7 {
			t.Fatalf("confirmed delete: %+v; want 7 deleted", st)
		}
		if v, inflight := len(x.f.Messages(x.target.DLQURL, "visible")), len(x.f.Messages(x.target.DLQURL, "inflight")); v != 6 || inflight != 0 {
			t.Fatalf("DLQ: %d visible, %d in flight; want 6 visible", v, inflight)
		}
		if !strings.Contains(x.log.String(), "action=delete") || !strings.Contains(x.log.String(), "deleted=7") {
			t.Errorf("audit log lacks the delete:\n%s", x.log.String())
		}
		// Deleting everything is a purge, never a delete.
		resp = x.post(t, "/queues/orders/dlq/delete", cookie, url.Values{csrfField: {token}, "scope": {"all"}, "confirmed": {"yes"}})
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("delete all: %s; want 400 pointing at purge", resp.Status)
		}
	})
}

func TestPurgeNeedsTheTypedName(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		x := newFixture(t, withActions)
		cookie, token, _ := x.session(t)
		resp := x.post(t, "/queues/orders/dlq/purge", cookie, url.Values{csrfField: {token}, "confirm": {"orders"}})
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("purge with the wrong name: %s; want 400", resp.Status)
		}
		if v := len(x.f.Messages(x.target.DLQURL, "visible")); v != 13 {
			t.Fatalf("a refused purge deleted messages: %d left", v)
		}
		resp = x.post(t, "/queues/orders/dlq/purge", cookie, url.Values{csrfField: {token}, "confirm": {"orders-dlq"}})
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("purge: %s", resp.Status)
		}
		if v := len(x.f.Messages(x.target.DLQURL, "visible")); v != 0 {
			t.Fatalf("purge left %d messages", v)
		}
	})
}

func TestEditAndSendBackWithProvenance(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		x := newFixture(t, withActions)
		cookie, token, _ := x.session(t)
		m := x.h.snapshotOf(x.target.DLQURL).Messages[3]
		st := x.finish(t, x.post(t, "/queues/orders/dlq/messages/"+m.ID+"/send", cookie, url.Values{csrfField: {token}, "body": {`{"order":3,"fixed":true}`}}))
		if !st.OK || st.Sent != 1 || st.Deleted != 1 {
			t.Fatalf("send: %+v", st)
		}
		got := x.f.Messages(x.target.SourceURL)
		if len(got) != 1 || got[0].Body != `{"order":3,"fixed":true}` {
			t.Fatalf("source holds %+v; want the edited body", got)
		}
		p, ok := dlq.ParseProvenance(got[0].Attributes)
		if !ok || p.Error != m.Provenance.Error || p.Handler != m.Provenance.Handler {
			t.Fatalf("provenance on the sent message: %+v (found %v); want the original's", p, ok)
		}
		if v := len(x.f.Messages(x.target.DLQURL, "visible")); v != 12 {
			t.Fatalf("DLQ holds %d; want the original deleted", v)
		}
	})
}

func TestRedactHidesBodiesAndNoBodyReachesTheLog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		x := newFixture(t, withActions, func(o *Options) {
			o.Redact = func(string, dlq.Message) string { return `{"redacted":true}` }
		})
		cookie, token, gs := x.session(t)
		m := x.h.snapshotOf(x.target.DLQURL).Messages[0]
		pages := body(t, x.get(t, "/queues/orders/dlq", cookie)) + body(t, x.get(t, "/queues/orders/dlq/messages/"+m.ID, cookie))
		if strings.Contains(pages, secret) || !strings.Contains(pages, "redacted") {
			t.Fatal("a redacted body was shown")
		}
		if strings.Contains(pages, "<textarea") {
			t.Fatal("editing is offered for a redacted body")
		}
		x.finish(t, x.post(t, "/queues/orders/dlq/redrive", cookie, url.Values{csrfField: {token}, "scope": {"group"}, "group": {gs["charge: timeout"][0]}}))
		form := url.Values{csrfField: {token}, "scope": {"group"}, "group": {gs["ship: address invalid"][0]}, "confirmed": {"yes"}}
		x.finish(t, x.post(t, "/queues/orders/dlq/delete", cookie, form))
		if x.log.Len() == 0 || strings.Contains(x.log.String(), secret) {
			t.Fatalf("the audit log is empty or holds a body:\n%s", x.log.String())
		}
	})
}

func TestWorkersPageShowsRatesAndCost(t *testing.T) {
	stats := worker.Stats{Received: 100, Succeeded: 90, Failed: 10, InFlight: 3, Requests: map[string]int64{"ReceiveMessage": 20, "DeleteMessageBatch": 10}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _ = json.NewEncoder(w).Encode(stats) }))
	defer srv.Close()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	hh, err := New(sqstest.For(t), func(o *Options) {
		o.Workers = []Worker{{Name: "w1", StatsURL: srv.URL}}
		o.Now = func() time.Time { return now }
	})
	if err != nil {
		t.Fatal(err)
	}
	h := hh.(*handler)
	first := h.pollWorkers(context.Background())[0]
	if first.Error != "" || first.Received != 100 || first.InFlight != 3 || first.ReceivedRate != 0 {
		t.Fatalf("first poll: %+v", first)
	}
	if first.USDPerMillion <= 0 || first.RequestsPerMessage != 0.3 {
		t.Fatalf("cost: %+v; want 0.3 requests per message and a price", first)
	}
	stats.Received, stats.Succeeded = 150, 140
	now = now.Add(2 * time.Second)
	second := h.pollWorkers(context.Background())[0]
	if second.ReceivedRate != 25 || second.DoneRate != 25 || second.State != "receiving" {
		t.Fatalf("second poll: %+v; want 25 received and succeeded per second, receiving", second)
	}
	stats.Paused = true
	if v := h.pollWorkers(context.Background())[0]; v.State != "paused" {
		t.Fatalf("a paused worker's state: %q; want paused", v.State)
	}
	if _, err := New(sqstest.For(t), func(o *Options) { o.Workers = []Worker{{Name: "w", StatsURL: "localhost:1"}} }); err == nil {
		t.Fatal("a StatsURL without a scheme was accepted")
	}
}

func TestPrefixMountsUnderAPath(t *testing.T) {
	f := sqstest.For(t)
	f.MustCreateQueueWithDLQ(t, "orders", 5, nil)
	hh, err := New(f, func(o *Options) { o.Prefix = "/sqs" })
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	hh.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/sqs/", nil))
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `href="/sqs/queues/orders/dlq"`) || !strings.Contains(rec.Body.String(), `/sqs/static/console.css`) {
		t.Fatalf("GET /sqs/: %d\n%s", rec.Code, rec.Body.String())
	}
	rec = httptest.NewRecorder()
	hh.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/sqs/static/console.js", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("static asset: %d", rec.Code)
	}
	if _, err := New(f, func(o *Options) { o.Prefix = "sqs/" }); err == nil {
		t.Fatal("a malformed prefix was accepted")
	}
}

// A queue subscribed to an SNS topic shows its chain (topic → subscription
// DLQ → queue) and fanout.Lint's findings.
func TestOverviewShowsTheFanOutChain(t *testing.T) {
	f := sqstest.For(t)
	s := snstest.For(t, f)
	res, err := fanout.Setup(context.Background(), s, f, fanout.SetupOptions{Topic: "rental-orders", Queue: dlq.SetupOptions{Name: "billing"}})
	if err != nil {
		t.Fatal(err)
	}
	hh, err := New(f, func(o *Options) { o.SNS = s; o.Queues = []string{"billing"} })
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	hh.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	page := rec.Body.String()
	chain := regexp.MustCompile(`class="chain"[^>]*>rental-orders → subscription DLQ <a class="sub-dlq" href="/queues/billing/topics/rental-orders/dlq">([^<]+)</a> → billing`).FindStringSubmatch(page)
	if rec.Code != http.StatusOK || chain == nil || chain[1] != queueref.Name(res.FanoutDLQURL) {
		t.Fatalf("the overview lacks the chain rental-orders → %s → billing:\n%s", queueref.Name(res.FanoutDLQURL), page)
	}
	if !strings.Contains(page, "envelope-delivery") {
		t.Errorf("the overview lacks fanout.Lint's %s finding", "envelope-delivery")
	}
}

// A message without provenance is labelled by how it got there: SQS's own
// redrive sets DeadLetterQueueSourceArn on the messages it moves; one sent
// to the dead-letter queue directly has none (issue 37).
func TestNoProvenanceSaysHowTheMessageGotThere(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := sqstest.For(t)
		src, dlqURL := f.MustCreateQueueWithDLQ(t, "jobs", 1, nil)
		f.MustSend(t, src, "moved by SQS")
		for range 2 { // past maxReceiveCount 1: the second receive moves it
			if _, err := f.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(src), VisibilityTimeout: 0}); err != nil {
				t.Fatal(err)
			}
			f.Advance(time.Minute)
		}
		f.MustSend(t, dlqURL, "sent directly")
		h, err := New(f, func(o *Options) { o.Logger = slog.New(slog.DiscardHandler); o.Now = f.Now })
		if err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/queues/jobs/dlq", nil))
		page := rec.Body.String()
		for _, want := range []string{html.EscapeString(noProvenanceRedrive), html.EscapeString(noProvenanceSent), `<span id="total">2</span> messages in <span id="group-count">2</span> groups`, "<summary>1 message</summary>"} {
			if !strings.Contains(page, want) {
				t.Errorf("the page lacks %q:\n%s", want, page)
			}
		}
	})
}
