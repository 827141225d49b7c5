package e2e

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/chromedp/chromedp"

	"github.com/sqsworker/sqsworker/console"
	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/harness/testenv"
	"github.com/sqsworker/sqsworker/queueref"
)

// Search, retention, history and the actions page in Chromium, against
// the emulator: a dead-letter queue with a one-hour retention holding 150
// messages, five of them with "needle" in the body.
func TestSearchRetentionHistoryInChromium(t *testing.T) {
	exe := chromium(t)
	client := testenv.SQS(t)
	ctx := context.Background()
	setup, err := dlq.Setup(ctx, client, dlq.SetupOptions{Name: testenv.UniqueName("search")})
	if err != nil {
		t.Fatal(err)
	}
	target := setup.Target()
	if _, err := client.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(target.DLQURL),
		Attributes: map[string]string{string(types.QueueAttributeNameMessageRetentionPeriod): "3600"}}); err != nil {
		t.Fatal(err)
	}
	for i := range 150 {
		body := fmt.Sprintf(`{"order":%d,"note":"hay"}`, i)
		if i%30 == 7 {
			body = fmt.Sprintf(`{"order":%d,"note":"needle"}`, i)
		}
		if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(target.DLQURL), MessageBody: aws.String(body)}); err != nil {
			t.Fatal(err)
		}
	}
	sent := time.Now()
	var audit lockedBuffer
	h, err := console.New(client, func(o *console.Options) {
		o.Queues = []string{target.SourceURL, target.DLQURL}
		o.Actions = true
		o.SampleEvery = 500 * time.Millisecond
		o.Logger = slog.New(slog.NewTextHandler(&audit, nil))
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
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
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("starting %s: %v", exe, err)
	}
	b := &browser{t: t, ctx: bctx, dir: dir}
	src := queueref.Name(target.SourceURL)
	triage := srv.URL + "/queues/" + src + "/dlq"

	t.Run("the triage page says when the messages expire", func(t *testing.T) {
		b.t = t
		b.do(chromedp.Navigate(triage), chromedp.WaitVisible(chromedp.CSS("#expiry")))
		left := time.Until(sent.Add(time.Hour))
		m := regexp.MustCompile(`in (\d+) min`).FindStringSubmatch(b.text("#expiry time"))
		var mins int
		if m != nil {
			fmt.Sscan(m[1], &mins)
		}
		if m == nil || (time.Duration(mins)*time.Minute-left).Abs() > time.Minute+30*time.Second {
			t.Errorf("expiry %q; want in about %s (±1 min)", b.text("#expiry time"), left.Round(time.Minute))
		}
		if got := b.text("#expiring"); got != "150" {
			t.Errorf("%s expire within 24 h; want 150", got)
		}
		b.do(chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#queues")))
		if got := b.text(fmt.Sprintf(`tr[data-queue=%q] .expiring`, src)); !strings.HasPrefix(got, "150 expire within 24 h") {
			t.Errorf("the overview's warning: %q", got)
		}
	})

	t.Run("search finds, pages and redrives exactly what it lists", func(t *testing.T) {
		b.t = t
		// The search page before the query lists the kept read too (with
		// its own #next): mark it, and wait for the query's page.
		b.do(chromedp.Navigate(triage+"/search"), chromedp.WaitVisible(chromedp.CSS("#search-form")))
		run(b, chromedp.Evaluate[bool](`document.body.setAttribute("data-before-query", ""), true`))
		b.do(chromedp.SendKeys(chromedp.CSS(`#search-form input[name="text"]`), "hay"),
			chromedp.Click(chromedp.CSS("#search-button")), chromedp.WaitVisible(chromedp.CSS("body:not([data-before-query]) #next")))
		if got, shown := b.text("#matched"), b.text("#shown"); got != "145" || shown != "1–100" {
			t.Errorf("hay: %s matched, showing %s; want 145, 1–100", got, shown)
		}
		b.do(chromedp.Click(chromedp.CSS("#next")), chromedp.WaitVisible(chromedp.CSS("#prev")))
		if got := b.text("#shown"); got != "101–145" {
			t.Errorf("page 2 shows %s; want 101–145", got)
		}
		b.do(chromedp.Navigate(triage+"/search?text=NEEDLE"), chromedp.WaitVisible(chromedp.CSS("#results")))
		if got := b.text("#matched"); got != "5" {
			t.Fatalf("needle: %s matched; want 5", got)
		}
		if n := run(b, chromedp.Evaluate[int](`document.querySelectorAll("#results tr.result").length`)); n != 5 {
			t.Fatalf("needle: %d rows; want 5", n)
		}
		b.shot("search")
		b.do(chromedp.Click(chromedp.CSS("#redrive-search")))
		if st := b.waitJob(); st != "done" {
			t.Fatalf("the redrive of the search: %s", st)
		}
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(target.SourceURL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, m := range out.Messages {
			got = append(got, aws.ToString(m.Body))
		}
		if len(got) != 5 || slices.ContainsFunc(got, func(s string) bool { return !strings.Contains(s, "needle") }) {
			t.Fatalf("the source queue got %v; want exactly the 5 needles", got)
		}
		if c, err := dlq.Count(ctx, client, target.DLQURL); err != nil || c.Total() != 145 {
			t.Fatalf("the DLQ holds %+v (%v); want 145", c, err)
		}
	})

	t.Run("the actions page lists the redrive", func(t *testing.T) {
		b.t = t
		b.do(chromedp.Navigate(srv.URL+"/actions"), chromedp.WaitVisible(chromedp.CSS("#actions")))
		if got := b.text(`#actions tr[data-kind="redrive"] .result`); got != "done" {
			t.Errorf("the redrive's result: %q", got)
		}
		b.shot("actions")
	})

	t.Run("the history page charts the console's samples", func(t *testing.T) {
		b.t = t
		time.Sleep(2 * time.Second) // a few samples after the redrive
		b.do(chromedp.Navigate(srv.URL+"/queues/"+src+"/history"), chromedp.WaitVisible(chromedp.CSS("#source")))
		if n := run(b, chromedp.Evaluate[int](`document.querySelectorAll("svg.chart").length`)); n != 4 {
			t.Errorf("%d charts; want 4 (visible, in flight, delayed, DLQ depth)", n)
		}
		sum := run(b, chromedp.Evaluate[string](`Array.from(document.querySelectorAll("figcaption")).map(e => e.textContent).join("\n")`))
		if !strings.Contains(sum, "depth (all states): now 145") {
			t.Errorf("the DLQ depth chart's summary:\n%s", sum)
		}
		b.shot("history")
	})
}
