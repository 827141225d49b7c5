package e2e

import (
	"context"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sqsworker/sqsworker/console"
	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/harness/cloudwatchfake"
	"github.com/sqsworker/sqsworker/harness/testenv"
	"github.com/sqsworker/sqsworker/queueref"
)

// The History page from the in-memory CloudWatch, in Chromium, over a
// queue on the emulator: the sent and deleted rates and the oldest
// message's age charted (the sampler cannot give them), the source and the
// request's cost named, no script.
func TestCloudWatchHistoryInChromium(t *testing.T) {
	b := startBrowser(t)
	if dir := os.Getenv(ScreenshotsEnv); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		b.dir = dir
	}
	client := testenv.SQS(t)
	ctx := context.Background()
	setup, err := dlq.Setup(ctx, client, dlq.SetupOptions{Name: testenv.UniqueName("cwhist")})
	if err != nil {
		t.Fatal(err)
	}
	src, dead := queueref.Name(setup.Target().SourceURL), queueref.Name(setup.Target().DLQURL)
	cw := cloudwatchfake.New()
	now := time.Now()
	for i := 59; i >= 0; i-- {
		at := now.Add(-time.Duration(i) * time.Minute)
		add := func(queue, metric string, v float64) {
			cw.Add("AWS/SQS", metric, queue, cloudwatchfake.Point{At: at, V: v})
		}
		add(src, "ApproximateNumberOfMessagesVisible", float64(10*(60-i)))
		add(src, "ApproximateNumberOfMessagesNotVisible", 8)
		add(src, "NumberOfMessagesSent", 150)
		add(src, "NumberOfMessagesDeleted", float64(150-2*(60-i)))
		add(src, "ApproximateAgeOfOldestMessage", float64(30*(60-i)))
		add(dead, "ApproximateNumberOfMessagesVisible", float64(60-i))
		add(dead, "ApproximateAgeOfOldestMessage", float64(60*(60-i)))
	}
	h, err := console.New(client, func(o *console.Options) {
		o.Queues = []string{setup.Target().SourceURL, setup.Target().DLQURL}
		o.CloudWatch = cw
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()

	b.do(chromedp.Navigate(srv.URL+"/queues/"+src+"/history"), chromedp.WaitVisible(chromedp.CSS("#source")))
	if got := b.text("#source"); !strings.HasPrefix(got, "Source: CloudWatch") {
		t.Errorf("source: %q", got)
	}
	if got := b.text("#cost"); !strings.Contains(got, "12 metrics in 1 GetMetricData request(s)") || !strings.Contains(got, "$0.01 per 1,000 metrics") {
		t.Errorf("cost: %q", got)
	}
	if n := run(b, chromedp.Evaluate[int](`document.querySelectorAll("svg.chart").length`)); n != 8 {
		t.Errorf("%d charts; want 8", n)
	}
	if n := run(b, chromedp.Evaluate[int](`document.querySelectorAll("svg script, [onload], [onclick]").length`)); n != 0 {
		t.Errorf("%d scripts in the charts; want none", n)
	}
	sum := run(b, chromedp.Evaluate[string](`Array.from(document.querySelectorAll("figcaption")).map(e => e.textContent).join("\n")`))
	for _, want := range []string{"Sent per minute: latest datapoint 150", "Deleted per minute: latest datapoint 30", "Oldest message's age (seconds): latest datapoint 1800",
		"Visible (waiting to be received): latest datapoint 600", "Dead-letter queue " + dead + " depth (all states): latest datapoint 60"} {
		if !strings.Contains(sum, want) {
			t.Errorf("summaries lack %q:\n%s", want, sum)
		}
	}
	if !strings.Contains(sum, "CloudWatch datapoints (one per 1 minute).") || strings.Contains(sum, "samples") {
		t.Errorf("the summaries do not count CloudWatch's datapoints:\n%s", sum)
	}
	// The charts are readable without colour: each has its title and axis
	// values as text.
	if n := run(b, chromedp.Evaluate[int](`document.querySelectorAll("svg.chart text.ylabel").length`)); n != 8*3 {
		t.Errorf("%d y-axis labels; want 24", n)
	}
	b.shot("history-cloudwatch")
	if r, m := cw.Requests(); r != 1 || m != 12 {
		t.Errorf("%d requests of %d metrics; want 1 of 12", r, m)
	}
}
