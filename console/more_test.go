package console

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/internal/deadletter"
	"github.com/sqsworker/sqsworker/worker"
)

// addDead dead-letters n more messages into the fixture's DLQ with the
// library's provenance, failed at failedAt.
func (x *fixture) addDead(t *testing.T, n int, handler, errText string, failedAt time.Time, body func(i int) string) {
	t.Helper()
	mover, err := deadletter.NewMover(x.f, deadletter.Target(x.target))
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		x.f.MustSend(t, x.target.SourceURL, body(i), func(in *sqs.SendMessageInput) {
			in.MessageAttributes = map[string]types.MessageAttributeValue{"tenant": {DataType: aws.String("String"), StringValue: aws.String(fmt.Sprintf("t%d", i%3))}}
		})
		out, err := x.f.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(x.target.SourceURL), MaxNumberOfMessages: 1,
			MessageAttributeNames: []string{"All"}, MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll}})
		if err != nil || len(out.Messages) != 1 {
			t.Fatalf("receive: %v", err)
		}
		if err := mover.Move(context.Background(), out.Messages[0], deadletter.Provenance{Error: errText, Handler: handler, Attempt: 2, FailedAt: failedAt}); err != nil {
			t.Fatal(err)
		}
	}
}

var (
	matchedRE = regexp.MustCompile(`<b id="matched">(\d+)</b>`)
	resultRE  = regexp.MustCompile(`<tr class="result" data-id="([^"]+)">`)
	hiddenRE  = regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`)
)

// searchPage GETs a search and returns the page, the number matched and
// the IDs listed.
func (x *fixture) searchPage(t *testing.T, q url.Values, cookies ...*http.Cookie) (string, int, []string) {
	t.Helper()
	_, _, page := x.open(t, "/queues/orders/dlq/search?"+q.Encode(), cookies...)
	m := matchedRE.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("search %v: no result count on the page:\n%s", q, page)
	}
	var n int
	fmt.Sscan(m[1], &n)
	var ids []string
	for _, r := range resultRE.FindAllStringSubmatch(page, -1) {
		ids = append(ids, r[1])
	}
	return page, n, ids
}

func TestSearchByEveryFieldAndPaginates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		x := newFixture(t)
		t0 := x.f.Now()
		x.addDead(t, 230, "invoice", "invoice: pdf render failed", t0.Add(time.Hour), func(i int) string { return fmt.Sprintf(`{"invoice":%d,"Customer":"ACME-%d"}`, i, i) })
		// The first search reads the queue; later ones reuse that read.
		_, n, ids := x.searchPage(t, url.Values{"handler": {"invoice"}})
		if n != 230 || len(ids) != 100 {
			t.Fatalf("handler=invoice: %d matched, %d listed; want 230, the first 100", n, len(ids))
		}
		before := x.f.Requests()["ReceiveMessage"]
		page, n, ids2 := x.searchPage(t, url.Values{"handler": {"invoice"}, "page": {"3"}})
		if n != 230 || len(ids2) != 30 || !strings.Contains(page, `<span id="shown">201–230</span>`) || !strings.Contains(page, `id="prev"`) || strings.Contains(page, `id="next"`) {
			t.Fatalf("page 3: %d matched, %d listed; want 30 (201–230), a previous link and no next", n, len(ids2))
		}
		if x.f.Requests()["ReceiveMessage"] != before {
			t.Fatal("a second search read the queue again; it should search the last read")
		}
		_, _, ids1 := x.searchPage(t, url.Values{"handler": {"invoice"}, "page": {"2"}})
		if seen := append(append(slices.Clone(ids), ids1...), ids2...); len(slices.Compact(slices.Sorted(slices.Values(seen)))) != 230 {
			t.Fatal("the three pages do not list 230 different messages")
		}
		for _, c := range []struct {
			q    url.Values
			want int
		}{
			{url.Values{"text": {"acme-17"}}, 1 + 10}, // any case; ACME-17, ACME-170…179
			{url.Values{"text": {`"invoice":5,`}}, 1},
			{url.Values{"id": {ids[3] + " " + ids[4]}}, 2},
			{url.Values{"attr": {"tenant=t1"}}, 77},
			{url.Values{"attr": {"tenant"}}, 230},
			{url.Values{"attr": {deadletter.AttrHandler + "=ship"}}, 4},
			{url.Values{"error": {"charge:"}}, 9},
			{url.Values{"error": {"CHARGE:"}}, 0}, // the error's case matters, as in dlq.Filter
			{url.Values{"handler": {"charge"}, "error": {"timeout"}}, 2},
			{url.Values{"from": {t0.Add(30 * time.Minute).UTC().Format("2006-01-02T15:04")}}, 230},
			{url.Values{"to": {t0.Add(30 * time.Minute).UTC().Format(time.RFC3339)}}, 13},
			{url.Values{"from": {t0.Add(5 * time.Second).UTC().Format(time.RFC3339)}, "to": {t0.Add(9 * time.Second).UTC().Format(time.RFC3339)}}, 4},
		} {
			if _, n, _ := x.searchPage(t, c.q); n != c.want {
				t.Errorf("search %v: %d matched; want %d", c.q, n, c.want)
			}
		}
		if _, _, page := x.open(t, "/queues/orders/dlq/search?from=yesterday"); !strings.Contains(page, `id="query-error"`) {
			t.Error("a bad time is not reported")
		}
		// The triage page's group list links to all of a large group.
		_, _, tri := x.open(t, "/queues/orders/dlq")
		if !strings.Contains(tri, `class="all-of-group"`) {
			t.Error("the triage page does not link a group of 230 to its full list")
		}
	})
}

// The search page's Redrive and Delete take exactly what it lists: the
// same filter, no message enqueued after the read, at most as many.
func TestSearchActionTakesWhatThePageLists(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		x := newFixture(t, withActions)
		cookie, _, _ := x.session(t)
		page, n, _ := x.searchPage(t, url.Values{"handler": {"charge"}, "text": {`"order":1`}}, cookie)
		if n != 3 { // orders 1, 11, 12 (charge: 0–6 declined, 11–12 timeout; 10 is ship's)
			t.Fatalf("%d matched; want 3:\n%s", n, page)
		}
		form := url.Values{}
		i := strings.Index(page, `id="search-actions"`)
		if i < 0 {
			t.Fatal("no action form on the search page")
		}
		for _, m := range hiddenRE.FindAllStringSubmatch(page[i:], -1) {
			form.Add(m[1], html.UnescapeString(m[2]))
		}
		// One more matching message arrives after the read: not taken.
		time.Sleep(2 * time.Second)
		x.addDead(t, 1, "charge", "charge: card declined", x.f.Now(), func(int) string { return `{"order":100}` })
		st := x.finish(t, x.post(t, "/queues/orders/dlq/redrive", cookie, form))
		if !st.OK || st.Moved != 3 {
			t.Fatalf("redrive of the search: %+v; want the 3 listed moved", st)
		}
		var moved []string
		for _, m := range x.f.Messages(x.target.SourceURL) {
			moved = append(moved, m.Body)
		}
		slices.Sort(moved)
		want := []string{
			fmt.Sprintf(`{"order":1,"card":"%s"}`, secret),
			fmt.Sprintf(`{"order":11,"card":"%s"}`, secret), fmt.Sprintf(`{"order":12,"card":"%s"}`, secret),
		}
		if !slices.Equal(moved, want) {
			t.Fatalf("moved %v; want %v", moved, want)
		}
		// Delete asks first, and says what it takes.
		form.Set("text", `"order":100`)
		form.Del("read")
		form.Del("max")
		resp := x.post(t, "/queues/orders/dlq/delete", cookie, form)
		if p := body(t, resp); resp.StatusCode != http.StatusOK || !strings.Contains(p, `id="confirm-form"`) || !strings.Contains(p, "handler charge") {
			t.Fatalf("delete of a search: %s; want the confirmation page\n%s", resp.Status, p)
		}
		empty := url.Values{csrfField: form[csrfField], "scope": {"search"}}
		if resp := x.post(t, "/queues/orders/dlq/redrive", cookie, empty); resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("an empty search as an action: %s; want 400", resp.Status)
		}
	})
}

func TestRetentionExpiryShownAndWarned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		x := newFixture(t)
		if _, err := x.f.SetQueueAttributes(context.Background(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(x.target.DLQURL),
			Attributes: map[string]string{"MessageRetentionPeriod": "3600"}}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Minute)
		_, _, page := x.open(t, "/queues/orders/dlq")
		m := regexp.MustCompile(`(?s)<p id="expiry" class="warn">These expire <time class="expires bad"[^>]*>([^<]*)</time>.*?<b id="expiring">(\d+)</b>`).FindStringSubmatch(page)
		if m == nil {
			t.Fatalf("no retention warning on the triage page:\n%s", page)
		}
		// Sent at the start, retention one hour, 10 minutes later: 50 min left (±1 min).
		if m[1] != "in 50 min" && m[1] != "in 49 min" || m[2] != "13" {
			t.Fatalf("expiry %q, %s within 24 h; want in 50 min, 13", m[1], m[2])
		}
		if !strings.Contains(page, `<pre class="sample">{
  &#34;order&#34;:`) {
			t.Error("the sample column is not indented JSON")
		}
		if !strings.Contains(page, `ago</time> <span class="abs">`) {
			t.Error("times are not shown relative beside absolute")
		}
		_, _, ov := x.open(t, "/")
		if !strings.Contains(ov, `<div class="bad expiring">13 expire within 24 h`) {
			t.Fatalf("the overview does not warn of the expiring messages:\n%s", ov)
		}
		if !strings.Contains(ov, `<meta http-equiv="refresh" content="30">`) {
			t.Error("the overview does not refresh itself")
		}
	})
}

func TestExpiresAtCountsFromTheEnqueueTime(t *testing.T) {
	sent := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	now := sent.Add(3*24*time.Hour + time.Minute)
	e := expiryOf([]dlq.Message{{SentAt: sent}, {SentAt: sent.Add(2 * 24 * time.Hour)}, {}}, 4*24*time.Hour, now)
	if !e.Known || !e.Soonest.Equal(sent.Add(4*24*time.Hour)) || e.Within24h != 1 {
		t.Fatalf("expiry %+v; want the first at sent+4d, 1 within 24 h", e)
	}
	if got := inHuman(e.Soonest, now); got != "in 23 h 59 min" {
		t.Fatalf("inHuman: %q", got)
	}
	if got := span(26*time.Hour + 5*time.Minute); got != "26 h 5 min" {
		t.Fatalf("span: %q", got)
	}
}

func TestHistorySamplesAndChartsAsSVG(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		x := newFixture(t, func(o *Options) { o.Queues = []string{"orders"} }) // the DLQ is not shown: sampled through the RedrivePolicy
		_, _, page := x.open(t, "/queues/orders/history")
		if !strings.Contains(page, `id="no-sampling"`) {
			t.Fatal("without SampleEvery the page does not say there is no history")
		}
		x.h.hist = newHistory(time.Minute)
		for i := range 90 {
			if i == 30 {
				x.f.MustSend(t, x.target.SourceURL, "new")
			}
			x.h.sampleOnce(context.Background())
			time.Sleep(time.Minute)
			x.f.Advance(time.Minute)
		}
		_, _, page = x.open(t, "/queues/orders/history?span=1h")
		for _, want := range []string{`id="source"`, "sampled by this console since", `<svg class="chart"`, `Visible (waiting to be received)`,
			`Dead-letter queue orders-dlq depth (all states)`, "Visible (waiting to be received): now 1", "Dead-letter queue orders-dlq depth (all states): now 13", `class="ylabel"`, `class="xlabel"`} {
			if !strings.Contains(page, want) {
				t.Errorf("history page lacks %q", want)
			}
		}
		if strings.Contains(page, "<script") && strings.Count(page, "<script") > 1 {
			t.Error("the charts carry a script")
		}
		if n := strings.Count(page, `<svg class="chart"`); n != 4 {
			t.Errorf("%d charts; want 4", n)
		}
		_, _, page = x.open(t, "/queues/orders/history?span=14d")
		if !strings.Contains(page, `aria-current="page" href="/queues/orders/history?span=14d"`) || !strings.Contains(page, "90 samples") {
			t.Error("the 14 d span is not selected or does not hold every sample")
		}
	})
}

func TestSamplerRunsAndStops(t *testing.T) {
	x := newFixture(t, func(o *Options) { o.SampleEvery = 10 * time.Millisecond })
	deadline := time.Now().Add(5 * time.Second)
	for {
		x.h.hist.mu.Lock()
		n := 0
		if r := x.h.hist.rings["orders-dlq"]; r != nil {
			n = len(r.buf)
		}
		x.h.hist.mu.Unlock()
		if n >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d samples of orders-dlq after 5 s at one per 10 ms", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestRingKeepsTheLastSamples(t *testing.T) {
	r := &ring{buf: make([]depthSample, 0, 5)}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 12 {
		r.add(depthSample{At: t0.Add(time.Duration(i) * time.Minute), Visible: i})
	}
	got := r.since(t0)
	if len(got) != 5 || got[0].Visible != 7 || got[4].Visible != 11 {
		t.Fatalf("ring: %+v; want the last 5 (7–11) in order", got)
	}
	if got := r.since(t0.Add(10 * time.Minute)); len(got) != 2 {
		t.Fatalf("since: %d; want 2", len(got))
	}
	pts := make([]point, 2000)
	for i := range pts {
		pts[i] = point{At: t0.Add(time.Duration(i) * time.Second), V: float64(i % 7)}
	}
	pts[1234].V = 99
	ds := downsample(pts, t0, t0.Add(2000*time.Second))
	if len(ds) > maxPoints || !slices.ContainsFunc(ds, func(p point) bool { return p.V == 99 }) {
		t.Fatalf("downsample: %d points, spike kept %v", len(ds), slices.ContainsFunc(ds, func(p point) bool { return p.V == 99 }))
	}
}

func TestActionsPageListsPastActions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		x := newFixture(t, withActions)
		cookie, token, gs := x.session(t)
		x.finish(t, x.post(t, "/queues/orders/dlq/redrive", cookie, url.Values{csrfField: {token}, "scope": {"group"}, "group": {gs["charge: timeout"][0]}}))
		if resp := x.post(t, "/queues/orders/dlq/purge", cookie, url.Values{csrfField: {token}, "confirm": {"orders-dlq"}}); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("purge: %s", resp.Status)
		}
		_, _, page := x.open(t, "/actions")
		p, r := strings.Index(page, `data-kind="purge"`), strings.Index(page, `data-kind="redrive"`)
		if p < 0 || r < 0 || p > r {
			t.Fatalf("the actions page does not list the purge, then the redrive:\n%s", page)
		}
		if !strings.Contains(page, "charge: timeout") || !strings.Contains(page, `<span class="ok">done</span>`) {
			t.Error("the redrive's selection or result is missing")
		}
	})
}

func TestWorkersPageShowsScalingSignals(t *testing.T) {
	stats := worker.Stats{Received: 10, Capacity: 42.5, OldestAge: 1500 * time.Millisecond, Backlog: worker.QueueDepth{Visible: 900, InFlight: 12}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _ = json.NewEncoder(w).Encode(stats) }))
	defer srv.Close()
	x := newFixture(t, func(o *Options) { o.Workers = []Worker{{Name: "w1", StatsURL: srv.URL}} })
	v := x.h.pollWorkers(context.Background())[0]
	if v.Capacity != 42.5 || v.OldestAgeSeconds != 1.5 || v.Backlog != 900 || v.BacklogInFlight != 12 {
		t.Fatalf("scaling signals: %+v", v)
	}
	_, _, page := x.open(t, "/workers")
	for _, want := range []string{`data-k="capacityPerSecond">42.5<`, `data-k="backlog">900<`, `data-k="oldestAgeSeconds">1.5<`, "Capacity/s"} {
		if !strings.Contains(page, want) {
			t.Errorf("workers page lacks %q", want)
		}
	}
}

func TestSearchEscapesTheQuery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		x := newFixture(t)
		_, _, page := x.open(t, "/queues/orders/dlq/search?"+url.Values{"text": {`<script>alert(1)</script>`}, "attr": {`"><img src=x>`}}.Encode())
		if strings.Contains(page, "<script>alert") || strings.Contains(page, "<img src=x>") {
			t.Fatal("the search page echoes the query unescaped")
		}
	})
}
