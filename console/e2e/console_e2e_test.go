// Package e2e drives the console in a real headless Chromium against the
// local SQS emulator. It is a module of its own so that the library's
// go.mod does not carry the browser driver.
package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/chromedp/chromedp"

	"github.com/sqsworker/sqsworker/console"
	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/fleet"
	"github.com/sqsworker/sqsworker/harness/fleettable"
	"github.com/sqsworker/sqsworker/harness/testenv"
	"github.com/sqsworker/sqsworker/queueref"
	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/worker"
)

// ScreenshotsEnv names the directory the test writes its screenshots to
// (make console-screenshots sets it to docs/console); without it they go
// to a temporary directory.
const ScreenshotsEnv = "SQSWORKER_SCREENSHOTS"

// chromium returns the path of the headless browser: $SQSWORKER_CHROMIUM,
// else Debian's chromium on the PATH. Without one the test fails — a
// missing browser is never a skip under make test.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("SQSWORKER_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if testing.Short() && !testenv.Required() {
		t.Skip("SKIP (-short): no chromium for the console's browser tests")
	}
	t.Fatal("the console's browser tests need Debian's headless chromium and none was found: run `bash localstack/install-chromium.sh` (as root: apt-get install -y chromium), or set SQSWORKER_CHROMIUM to a Chromium binary")
	return ""
}

// The failures the worker dead-letters: body kind → error, and how many.
// The worker records a retry.Permanent error as "permanent failure: " + err.
var kinds = []struct {
	kind, err string
	n         int
}{{"declined", "charge: card declined", 6}, {"address", "ship: address invalid", 5}, {"ok", "", 3}}

// lockedBuffer is the audit log's destination: the console's jobs write to
// it while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// browser is a headless Chromium tab.
type browser struct {
	t   *testing.T
	ctx context.Context
	dir string // screenshots
}

// stepTimeout bounds each browser step, so that a failed check ends the
// test instead of leaving the next step waiting for a page that never comes.
const stepTimeout = 45 * time.Second

func (b *browser) do(steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.t.Fatalf("browser: %v", err)
	}
}

func run[T any](b *browser, a chromedp.Action[T]) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		b.t.Fatalf("browser: %v", err)
	}
	return v
}

// shot saves a screenshot of the whole page as name.png.
func (b *browser) shot(name string) {
	b.t.Helper()
	png := run(b, chromedp.FullScreenshot(100))
	if err := os.WriteFile(filepath.Join(b.dir, name+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// text returns the text of the first element matching a CSS selector.
func (b *browser) text(sel string) string {
	b.t.Helper()
	return strings.TrimSpace(run(b, chromedp.TextContent(chromedp.CSS(sel))))
}

// waitJob waits until the job page shows the job finished, and returns
// its final state.
func (b *browser) waitJob() string {
	b.t.Helper()
	b.do(chromedp.WaitVisible(chromedp.CSS("#job-state")))
	return run(b, chromedp.Poll[string](`(s => s === "done" || s === "failed" ? s : false)(document.getElementById("job-state").textContent)`,
		chromedp.WithPollingTimeout(40*time.Second)))
}

// post sends a form POST from the page (as a forged or scripted request
// would) and returns the status code.
func (b *browser) post(path, form string) int {
	b.t.Helper()
	return run(b, chromedp.Evaluate[int](fmt.Sprintf(`fetch(%q, {method: "POST", headers: {"Content-Type": "application/x-www-form-urlencoded"}, body: %q}).then(r => r.status)`, path, form), chromedp.EvalAwaitPromise))
}

func TestConsoleInChromium(t *testing.T) {
	exe := chromium(t)
	client := testenv.SQS(t)
	ctx := context.Background()

	// A queue pair the worker dead-letters into, with provenance.
	name := testenv.UniqueName("console")
	setup, err := dlq.Setup(ctx, client, dlq.SetupOptions{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	target := setup.Target()
	for i := range 14 {
		k := kinds[0]
		switch {
		case i >= 11:
			k = kinds[2]
		case i >= 6:
			k = kinds[1]
		}
		body := fmt.Sprintf(`{"order":%d,"kind":%q,"customer":{"id":"c-%d","tier":"gold"}}`, i, k.kind, i)
		if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(target.SourceURL), MessageBody: aws.String(body)}); err != nil {
			t.Fatal(err)
		}
	}
	// Two messages as SQS's own redrive leaves them: no provenance.
	for i := range 2 {
		if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(target.DLQURL), MessageBody: aws.String(fmt.Sprintf("legacy-%d", i))}); err != nil {
			t.Fatal(err)
		}
	}
	var settled atomic.Int64
	allSettled := make(chan struct{})
	w, err := worker.New(client, target.SourceURL, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
		var job struct{ Kind string }
		if err := json.Unmarshal([]byte(m.Body), &job); err != nil {
			return retry.Permanent(err)
		}
		for _, k := range kinds {
			if k.kind == job.Kind && k.err != "" {
				return retry.Permanent(errors.New(k.err))
			}
		}
		return nil
	}), func(o *worker.Options) {
		o.HandlerName = "checkout"
		o.Logger = slog.New(slog.DiscardHandler)
		o.OnSettled = func(worker.Settlement) {
			if settled.Add(1) == 14 {
				close(allSettled)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	wctx, stopWorker := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- w.Run(wctx) }()
	select {
	case <-allSettled:
	case <-time.After(60 * time.Second):
		t.Fatalf("the worker settled %d of 14 messages in a minute", settled.Load())
	}
	// Stopped, so that redriven messages stay in the source queue for the
	// checks below; its statistics stay readable.
	stopWorker()
	if err := <-ran; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("worker: %v", err)
	}
	stats := httptest.NewServer(w.StatsHandler())
	defer stats.Close()

	// The fleet table the console shows and pauses queues in.
	db, table := fleettable.New(t, "console")
	fl, err := fleet.New(db, table, func(o *fleet.Options) { o.Holder = "console-e2e" })
	if err != nil {
		t.Fatal(err)
	}

	var audit lockedBuffer
	opts := func(actions bool) func(*console.Options) {
		return func(o *console.Options) {
			o.Queues = []string{target.SourceURL, target.DLQURL}
			o.SNS = testenv.SNS(t)
			o.Actions = actions
			o.Workers = []console.Worker{{Name: "checkout-1", StatsURL: stats.URL}}
			o.Fleet = fl
			o.Logger = slog.New(slog.NewTextHandler(&audit, nil))
		}
	}
	h, err := console.New(client, opts(true))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	ro, err := console.New(client, opts(false))
	if err != nil {
		t.Fatal(err)
	}
	roSrv := httptest.NewServer(ro)
	defer roSrv.Close()

	dir := os.Getenv(ScreenshotsEnv)
	if dir == "" {
		dir = t.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, append(slices.Clone(chromedp.DefaultExecAllocatorOptions[:]),
		chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(1280, 860),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.Flag("no-proxy-server", true))...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	bctx, cancelTimeout := context.WithTimeout(bctx, 3*time.Minute)
	defer cancelTimeout()
	// Start the browser on the tab's own context: the first run binds the
	// browser to its context, and the steps run on shorter-lived ones.
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("starting %s: %v", exe, err)
	}
	b := &browser{t: t, ctx: bctx, dir: dir}
	src, dlqName := queueref.Name(target.SourceURL), queueref.Name(target.DLQURL)
	triage := srv.URL + "/queues/" + src + "/dlq"

	t.Run("overview shows the queues and the counts SQS reports", func(t *testing.T) {
		b.t = t
		b.do(chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#queues")))
		for _, q := range []struct{ name, url string }{{src, target.SourceURL}, {dlqName, target.DLQURL}} {
			c, err := dlq.Count(ctx, client, q.url)
			if err != nil {
				t.Fatal(err)
			}
			row := fmt.Sprintf(`tr[data-queue=%q] `, q.name)
			got := [3]string{b.text(row + ".visible"), b.text(row + ".inflight"), b.text(row + ".delayed")}
			if want := [3]string{fmt.Sprint(c.Visible), fmt.Sprint(c.InFlight), fmt.Sprint(c.Delayed)}; got != want {
				t.Errorf("%s: the page shows visible, in flight, delayed %v; SQS reports %v", q.name, got, want)
			}
		}
		if got := b.text(fmt.Sprintf(`tr[data-queue=%q] .dlqdepth`, src)); got != "13" {
			t.Errorf("DLQ depth %q; want 13", got)
		}
		if got := b.text(fmt.Sprintf(`tr[data-queue=%q] a.dlq`, src)); got != dlqName {
			t.Errorf("DLQ %q; want %s", got, dlqName)
		}
		// The page has an icon (no 404 in the browser's console).
		if code := run(b, chromedp.Evaluate[int](`fetch(document.querySelector('link[rel=icon]').href).then(r => r.status)`, chromedp.EvalAwaitPromise)); code != http.StatusOK {
			t.Errorf("the icon answers %d", code)
		}
		b.shot("overview")
	})

	var groups map[string]string // reason → group key
	t.Run("triage groups the DLQ's contents by failure reason", func(t *testing.T) {
		b.t = t
		b.do(chromedp.Navigate(triage), chromedp.WaitVisible(chromedp.CSS("#groups")))
		type row struct {
			Key, Reason, Handler string
			Count                int
		}
		rows := run(b, chromedp.Evaluate[[]row](`[...document.querySelectorAll("tbody.group")].map(g => ({
			Key: g.dataset.group, Reason: g.querySelector(".reason").textContent,
			Handler: g.querySelector("td:nth-child(6)").textContent, Count: +g.querySelector(".count").textContent}))`))
		got := map[string]int{}
		groups = map[string]string{}
		for _, r := range rows {
			r.Reason = strings.TrimPrefix(r.Reason, "permanent failure: ")
			got[r.Reason] = r.Count
			groups[r.Reason] = r.Key
			if r.Reason != "" && strings.Contains(r.Reason, ":") && !strings.HasPrefix(r.Reason, "no provenance") && r.Handler != "checkout" {
				t.Errorf("group %q: handler %q; want checkout", r.Reason, r.Handler)
			}
		}
		noProv := ""
		for reason := range got {
			if strings.HasPrefix(reason, "no provenance") {
				noProv = reason
			}
		}
		want := map[string]int{"charge: card declined": 6, "ship: address invalid": 5, noProv: 2}
		if noProv == "" || len(got) != 3 || got["charge: card declined"] != 6 || got["ship: address invalid"] != 5 || got[noProv] != 2 {
			t.Fatalf("groups %v; want %v", got, want)
		}
		if note := b.text("#hold-note"); !strings.Contains(note, "released at once") {
			t.Errorf("the page does not say what the read did: %q", note)
		}
		c, err := dlq.Count(ctx, client, target.DLQURL)
		if err != nil || c.InFlight != 0 || c.Visible != 13 {
			t.Fatalf("after the read the DLQ counts %+v (%v); want all 13 visible again", c, err)
		}
		b.shot("triage")
	})

	t.Run("message page shows the body, attributes and provenance", func(t *testing.T) {
		b.t = t
		b.do(chromedp.Click(chromedp.CSS(fmt.Sprintf(`tbody.group[data-group=%q] td a.mono`, groups["ship: address invalid"]))),
			chromedp.WaitVisible(chromedp.CSS("#body")))
		body := run(b, chromedp.TextContent(chromedp.CSS("#body")))
		if !strings.Contains(body, "\n  \"kind\": \"address\"") {
			t.Errorf("body not pretty-printed JSON of the group: %q", body)
		}
		if prov := b.text("#provenance"); !strings.Contains(prov, "ship: address invalid") || !strings.Contains(prov, "checkout") || !strings.Contains(prov, src) {
			t.Errorf("provenance %q", prov)
		}
		b.shot("message")
	})

	t.Run("redriving one group moves exactly those messages", func(t *testing.T) {
		b.t = t
		b.do(chromedp.Navigate(triage), chromedp.WaitVisible(chromedp.CSS("#groups")),
			chromedp.Click(chromedp.CSS(fmt.Sprintf(`tbody.group[data-group=%q] button.redrive-group`, groups["ship: address invalid"]))))
		if state := b.waitJob(); state != "done" {
			t.Fatalf("redrive job %s: %s", state, b.text("#job-error"))
		}
		if moved := b.text("#job-moved"); moved != "5" {
			t.Errorf("the job page says %s moved; want 5", moved)
		}
		b.shot("redrive-job")
		back := testenv.Drain(t, client, target.SourceURL)
		if len(back) != 5 {
			t.Fatalf("the source queue got %d messages; want the group's 5", len(back))
		}
		for _, m := range back {
			if !strings.Contains(aws.ToString(m.Body), `"kind":"address"`) {
				t.Errorf("redriven a message of another group: %s", aws.ToString(m.Body))
			}
		}
		if c, err := dlq.Count(ctx, client, target.DLQURL); err != nil || c.Total() != 8 {
			t.Fatalf("the DLQ counts %+v (%v); want the other 8", c, err)
		}
	})

	t.Run("delete asks for confirmation", func(t *testing.T) {
		b.t = t
		b.do(chromedp.Navigate(triage), chromedp.WaitVisible(chromedp.CSS("#groups")),
			chromedp.Click(chromedp.CSS(fmt.Sprintf(`tbody.group[data-group=%q] button.delete-group`, groups["charge: card declined"]))),
			chromedp.WaitVisible(chromedp.CSS("#confirm-question")))
		if q := b.text("#confirm-question"); !strings.Contains(q, "6 matched") {
			t.Errorf("confirmation %q; want it to say 6 match", q)
		}
		b.shot("delete-confirm")
		if c, err := dlq.Count(ctx, client, target.DLQURL); err != nil || c.Total() != 8 {
			t.Fatalf("before confirming, the DLQ counts %+v (%v); want 8 still", c, err)
		}
		b.do(chromedp.Click(chromedp.CSS("#confirm-delete")))
		if state := b.waitJob(); state != "done" || b.text("#job-deleted") != "6" {
			t.Fatalf("delete job %s, %s deleted: %s", state, b.text("#job-deleted"), b.text("#job-error"))
		}
		if c, err := dlq.Count(ctx, client, target.DLQURL); err != nil || c.Total() != 2 {
			t.Fatalf("after the delete the DLQ counts %+v (%v); want 2", c, err)
		}
		if !strings.Contains(audit.String(), "action=delete") || strings.Contains(audit.String(), "gold") {
			t.Errorf("the audit log lacks the delete or holds a body:\n%s", audit.String())
		}
	})

	t.Run("a POST without the CSRF token is refused", func(t *testing.T) {
		b.t = t
		b.do(chromedp.Navigate(triage), chromedp.WaitVisible(chromedp.CSS("#groups")))
		if code := b.post("/queues/"+src+"/dlq/redrive", "scope=all"); code != http.StatusForbidden {
			t.Fatalf("POST without a token: %d; want 403", code)
		}
		if c, err := dlq.Count(ctx, client, target.DLQURL); err != nil || c.Total() != 2 {
			t.Fatalf("the refused POST changed the DLQ: %+v (%v)", c, err)
		}
	})

	t.Run("read-only mode offers and accepts no action", func(t *testing.T) {
		b.t = t
		b.do(chromedp.Navigate(roSrv.URL+"/queues/"+src+"/dlq"), chromedp.WaitVisible(chromedp.CSS("#groups")))
		if n := run(b, chromedp.Evaluate[int](`document.querySelectorAll("button, form, textarea, input").length`)); n != 0 {
			t.Errorf("the read-only page has %d controls", n)
		}
		if mode := b.text("#mode"); mode != "read-only" {
			t.Errorf("mode badge %q", mode)
		}
		b.shot("read-only")
		if code := b.post("/queues/"+src+"/dlq/purge", "confirm="+dlqName); code != http.StatusForbidden {
			t.Fatalf("POST to the read-only console: %d; want 403", code)
		}
		if c, err := dlq.Count(ctx, client, target.DLQURL); err != nil || c.Total() != 2 {
			t.Fatalf("the read-only console changed the DLQ: %+v (%v)", c, err)
		}
	})

	t.Run("workers page shows the worker's statistics", func(t *testing.T) {
		b.t = t
		b.do(chromedp.Navigate(srv.URL+"/workers"), chromedp.WaitVisible(chromedp.CSS("#workers")))
		row := `tr[data-worker="checkout-1"] `
		if got := b.text(row + `td[data-k="received"]`); got != "14" {
			t.Errorf("received %q; want 14", got)
		}
		if got := b.text(row + `td[data-k="deadLettered"]`); got != "11" {
			t.Errorf("dead-lettered %q; want 11", got)
		}
		if got := b.text(row + `td[data-k="state"]`); got != "receiving" {
			t.Errorf("state %q; want receiving (the stopped worker was never paused)", got)
		}
		b.shot("workers")
	})

	t.Run("the fleet page pauses and resumes a queue", func(t *testing.T) {
		b.t = t
		// A worker process holds two slots of a per-tenant cap.
		proc, err := fleet.New(db, table, func(o *fleet.Options) { o.Holder = "checkout-7" })
		if err != nil {
			t.Fatal(err)
		}
		fleettable.HoldSlots(t, proc, "tenant", 3, "acme", 2)
		row := fmt.Sprintf(`#pauses tr[data-queue=%q] `, src)
		b.do(chromedp.Navigate(srv.URL+"/fleet"), chromedp.WaitVisible(chromedp.CSS("#pauses")))
		if got := b.text(row + ".state"); got != "receiving" {
			t.Fatalf("before the pause the page says %q; want receiving", got)
		}
		// No worker receives from a dead-letter queue: no Pause for it.
		if n := run(b, chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll('#pauses tr[data-queue=%q] button.pause').length`, dlqName))); n != 0 {
			t.Errorf("the fleet page offers Pause on dead-letter queue %s", dlqName)
		}
		if note := b.text(fmt.Sprintf(`#pauses tr[data-queue=%q] .dlq-note`, dlqName)); !strings.Contains(note, "dead-letter queue of "+src) {
			t.Errorf("the dead-letter queue's row says %q", note)
		}
		if got := b.text(`#caps tr[data-cap="tenant"][data-key="acme"] .slots`); got != "2" {
			t.Errorf("cap tenant, key acme: the page says %q slots held; want 2", got)
		}
		b.do(chromedp.SendKeys(chromedp.CSS(row+`input[name="reason"]`), "deploy freeze"),
			chromedp.Click(chromedp.CSS(row+"button.pause")), chromedp.WaitVisible(chromedp.CSS("#notice")))
		st, err := fl.PauseState(ctx, src)
		if err != nil || !st.Paused || st.Reason != "deploy freeze (console user local)" {
			t.Fatalf("after clicking Pause the switch is %+v (%v); want paused, with the reason and the user", st, err)
		}
		if got := b.text(row + ".state"); got != "paused" {
			t.Errorf("after the pause the page says %q; want paused", got)
		}
		b.shot("fleet")
		b.do(chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`tr[data-queue=%q] a.badge.paused`, src))))
		b.do(chromedp.Navigate(srv.URL+"/fleet"), chromedp.WaitVisible(chromedp.CSS("#pauses")),
			chromedp.Click(chromedp.CSS(row+"button.resume")), chromedp.WaitVisible(chromedp.CSS("#notice")))
		if st, err := fl.PauseState(ctx, src); err != nil || st.Paused {
			t.Fatalf("after clicking Resume the switch is %+v (%v); want receiving", st, err)
		}
		if !strings.Contains(audit.String(), "sqsworker/console: pause") || !strings.Contains(audit.String(), "sqsworker/console: resume") {
			t.Errorf("the audit log lacks the pause or the resume:\n%s", audit.String())
		}
		b.do(chromedp.Navigate(roSrv.URL+"/fleet"), chromedp.WaitVisible(chromedp.CSS("#pauses")))
		if n := run(b, chromedp.Evaluate[int](`document.querySelectorAll("button, form, input").length`)); n != 0 {
			t.Errorf("the read-only fleet page has %d controls", n)
		}
	})
}

// startBrowser starts a headless Chromium tab for t, ended with the test.
func startBrowser(t *testing.T) *browser {
	t.Helper()
	exe := chromium(t)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), append(slices.Clone(chromedp.DefaultExecAllocatorOptions[:]),
		chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(1280, 860),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.Flag("no-proxy-server", true))...)
	t.Cleanup(cancelAlloc)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(cancelBrowser)
	bctx, cancelTimeout := context.WithTimeout(bctx, 3*time.Minute)
	t.Cleanup(cancelTimeout)
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("starting %s: %v", exe, err)
	}
	return &browser{t: t, ctx: bctx, dir: t.TempDir()}
}

// TestConsoleRedriveWhileJobsFailAgain is issue 37's first finding from the
// console: redriving a group whose jobs still fail (the demo's outage still
// on) moved their fresh dead-letter copies again and again ("Scanned 360,
// Matched 352, Moved 352" for 4 messages). The job page now says 3 moved
// and 3 came back, the redrive ends, and each job ran once more.
func TestConsoleRedriveWhileJobsFailAgain(t *testing.T) {
	b := startBrowser(t)
	client := testenv.SQS(t)
	ctx := context.Background()
	setup, err := dlq.Setup(ctx, client, dlq.SetupOptions{Name: testenv.UniqueName("console-back")})
	if err != nil {
		t.Fatal(err)
	}
	target := setup.Target()

	var mu sync.Mutex
	runs := map[string]int{}
	w, err := worker.New(client, target.SourceURL, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
		mu.Lock()
		runs[m.Body]++
		mu.Unlock()
		return retry.Permanent(errors.New("inventory: service unavailable"))
	}), func(o *worker.Options) {
		o.HandlerName = "inventory"
		o.Logger = slog.New(slog.DiscardHandler)
		o.WaitTime = time.Second
	})
	if err != nil {
		t.Fatal(err)
	}
	wctx, stopWorker := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- w.Run(wctx) }()
	defer func() {
		stopWorker()
		if err := <-ran; err != nil {
			t.Errorf("worker: %v", err)
		}
	}()
	for i := range 3 {
		if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(target.SourceURL), MessageBody: aws.String(fmt.Sprintf(`{"sku":"sku-%d"}`, i))}); err != nil {
			t.Fatal(err)
		}
	}
	for deadline := time.Now().Add(30 * time.Second); w.Stats().DeadLettered < 3; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the worker dead-lettered %d of 3 jobs in 30 s", w.Stats().DeadLettered)
		}
	}
	mu.Lock()
	clear(runs)
	mu.Unlock()

	var audit lockedBuffer
	h, err := console.New(client, func(o *console.Options) {
		o.Queues = []string{target.SourceURL, target.DLQURL}
		o.Actions = true
		o.Logger = slog.New(slog.NewTextHandler(&audit, nil))
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	src := queueref.Name(target.SourceURL)

	b.do(chromedp.Navigate(srv.URL+"/queues/"+src+"/dlq"), chromedp.WaitVisible(chromedp.CSS("#groups")))
	if got := b.text("tbody.group .count"); got != "3" {
		t.Fatalf("the group holds %q messages; want 3", got)
	}
	// The group's message list, expanded, lines up with the table.
	b.do(chromedp.Click(chromedp.CSS("tbody.group tr.members summary")), chromedp.WaitVisible(chromedp.CSS("tbody.group table.messages td")))
	offset := run(b, chromedp.Evaluate[float64](`(() => {
		const left = el => el.getBoundingClientRect().left + parseFloat(getComputedStyle(el).paddingLeft);
		return left(document.querySelector("tbody.group table.messages td")) - left(document.querySelector("tbody.group td.reason"));
	})()`))
	if offset < -1 || offset > 1 {
		t.Errorf("the expanded message list starts %.1f px right of the table's first column; want it lined up", offset)
	}
	b.shot("triage-members")
	b.do(chromedp.Click(chromedp.CSS("tbody.group button.redrive-group")))
	if state := b.waitJob(); state != "done" {
		t.Fatalf("redrive job %s: %s", state, b.text("#job-error"))
	}
	moved, back, scanned := b.text("#job-moved"), b.text("#job-cameback"), b.text("#job-scanned")
	if moved != "3" || back != "3" {
		t.Errorf("the job page says %s moved, %s came back (%s scanned); want 3 and 3", moved, back, scanned)
	}
	if note := b.text("#job-note"); !strings.Contains(note, "3 messages came back") {
		t.Errorf("the job page's note %q does not say that 3 came back", note)
	}
	mu.Lock()
	got := maps.Clone(runs)
	mu.Unlock()
	if len(got) != 3 {
		t.Errorf("the jobs ran %v after the redrive began; want each of the 3 once", got)
	}
	for body, n := range got {
		if n != 1 {
			t.Errorf("job %s ran %d times after the redrive began; want once", body, n)
		}
	}
	if c, err := dlq.Count(ctx, client, target.DLQURL); err != nil || c.Total() != 3 {
		t.Errorf("the dead-letter queue counts %+v (%v); want the 3 that came back", c, err)
	}
	if !strings.Contains(audit.String(), "came_back=3") {
		t.Errorf("the audit log does not count the messages that came back:\n%s", audit.String())
	}
}
