package console

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/smithy-go"

	"github.com/sqsworker/sqsworker/harness/cloudwatchfake"
)

// scriptOrders fills cw with an hour of SQS metrics for "orders" and its
// DLQ, one raw point a minute up to now: the depth rising by one a minute,
// 120 sent and 60 deleted a minute, the oldest message as old as the hour
// is far along; the DLQ 13 deep, its oldest an hour old.
func scriptOrders(cw *cloudwatchfake.CloudWatch, now time.Time) {
	for i := 59; i >= 0; i-- {
		at := now.Add(-time.Duration(i) * time.Minute)
		m := func(queue, metric string, v float64) {
			cw.Add("AWS/SQS", metric, queue, cloudwatchfake.Point{At: at, V: v})
		}
		m("orders", "ApproximateNumberOfMessagesVisible", float64(60-i))
		m("orders", "ApproximateNumberOfMessagesNotVisible", 2)
		m("orders", "ApproximateNumberOfMessagesDelayed", 0)
		m("orders", "NumberOfMessagesSent", 120)
		m("orders", "NumberOfMessagesDeleted", 60)
		m("orders", "ApproximateAgeOfOldestMessage", float64(60*(60-i)))
		m("orders-dlq", "ApproximateNumberOfMessagesVisible", 13)
		m("orders-dlq", "ApproximateAgeOfOldestMessage", 3600)
	}
}

func TestHistoryFromCloudWatch(t *testing.T) {
	cw := cloudwatchfake.New()
	x := newFixture(t, func(o *Options) { o.CloudWatch = cw })
	scriptOrders(cw, x.f.Now())
	_, _, page := x.open(t, "/queues/orders/history?span=1h")
	for _, want := range []string{
		`id="source">Source: CloudWatch`, "one point per 1 minute",
		`<svg class="chart"`, `class="ylabel"`, `class="xlabel"`,
		"Visible (waiting to be received): latest datapoint 60",
		"In flight (received, not yet deleted): latest datapoint 2",
		// What the sampler cannot give: the rates and the oldest message's age.
		"Sent per minute: latest datapoint 120", "Deleted per minute: latest datapoint 60",
		"Oldest message&#39;s age (seconds): latest datapoint 3600",
		"Dead-letter queue orders-dlq depth (all states): latest datapoint 13",
		"Dead-letter queue orders-dlq oldest message&#39;s age (seconds): latest datapoint 3600",
		"12 metrics in 1 GetMetricData request(s): about $0.00012",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("history page lacks %q", want)
		}
	}
	if strings.Contains(page, "sampled by this console") || strings.Contains(page, `id="no-sampling"`) {
		t.Error("the page names the sampler as its source")
	}
	// The summaries count CloudWatch's datapoints, not samples, and say
	// the last one is the latest datapoint (CloudWatch lags), not now.
	if !strings.Contains(page, "CloudWatch datapoints (one per 1 minute).</figcaption>") || strings.Contains(page, " samples") || strings.Contains(page, ": now ") {
		t.Errorf("the summaries do not describe CloudWatch's datapoints:\n%s", page)
	}
	if n := strings.Count(page, `<svg class="chart"`); n != 8 {
		t.Errorf("%d charts; want 8", n)
	}
	if strings.Count(page, "<script") > 1 {
		t.Error("the charts carry a script")
	}
	in := cw.Inputs()
	if len(in) != 1 || len(in[0].MetricDataQueries) != 12 || aws.ToInt32(in[0].MetricDataQueries[0].MetricStat.Period) != 60 || in[0].ScanBy != types.ScanByTimestampAscending {
		t.Fatalf("requests: %d, want one of 12 metrics at 60 s", len(in))
	}

	// 24 h: 5-minute points, the rates still per minute (a full period's
	// sum over its 5 minutes; the last period may be partial); 14 d: hourly.
	_, _, page = x.open(t, "/queues/orders/history?span=24h")
	if !strings.Contains(page, "one point per 5 minutes") || !strings.Contains(page, "Sent per minute: latest datapoint") || !strings.Contains(page, "highest 120") {
		t.Error("24 h: not 5-minute points, or the rate is not per minute")
	}
	_, _, page = x.open(t, "/queues/orders/history?span=14d")
	if !strings.Contains(page, "one point per 1 hour") || !strings.Contains(page, "Deleted per minute: latest datapoint") {
		t.Error("14 d: not hourly points")
	}
	in = cw.Inputs()
	if p := aws.ToInt32(in[1].MetricDataQueries[0].MetricStat.Period); p != 300 {
		t.Errorf("24 h period %d s; want 300", p)
	}
	if p := aws.ToInt32(in[2].MetricDataQueries[0].MetricStat.Period); p != 3600 {
		t.Errorf("14 d period %d s; want 3600", p)
	}
	res, err := x.h.cloudWatchSeries(context.Background(), []string{"orders"}, x.f.Now().Add(-14*24*time.Hour), x.f.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, p := range perMinute(res.Series["orders"]["NumberOfMessagesSent"], time.Hour) {
		sum += p.V * 60
	}
	if sum != 60*120 {
		t.Errorf("14 d: %v messages sent in the hourly points; want 7200", sum)
	}
	if !in[2].StartTime.Before(x.f.Now().Add(-14*24*time.Hour + time.Second)) {
		t.Errorf("14 d span starts at %v", in[2].StartTime)
	}
}

func TestHistoryFromCloudWatchRetriesAndFallsBack(t *testing.T) {
	cw := cloudwatchfake.New()
	x := newFixture(t, func(o *Options) { o.CloudWatch = cw })
	scriptOrders(cw, x.f.Now())

	// Throttled once: retried by the library's rule, and both requests
	// counted in the cost.
	cw.Fail(&smithy.GenericAPIError{Code: "Throttling", Message: "Rate exceeded"})
	_, _, page := x.open(t, "/queues/orders/history")
	if !strings.Contains(page, "Sent per minute: latest datapoint 120") || !strings.Contains(page, "24 metrics in 2 GetMetricData request(s)") {
		t.Error("a throttled request is not retried, or the retry is not counted in the cost")
	}

	// Refused: the page says so and falls back to the sampled history.
	cw.Fail(&smithy.GenericAPIError{Code: "AccessDenied", Message: "not authorized to perform: cloudwatch:GetMetricData"})
	_, _, page = x.open(t, "/queues/orders/history")
	if !strings.Contains(page, `id="cloudwatch-error"`) || !strings.Contains(page, "cloudwatch:GetMetricData") || !strings.Contains(page, `id="no-sampling"`) {
		t.Error("a refused GetMetricData is not shown, or the page does not fall back")
	}
	if r, _ := cw.Requests(); r != 3 {
		t.Errorf("%d requests; a refusal is not retried, want 3 in all", r)
	}
}

func TestCloudWatchBatchesQueries(t *testing.T) {
	cw := cloudwatchfake.New()
	x := newFixture(t, func(o *Options) { o.CloudWatch = cw })
	now := x.f.Now()
	var queues []string
	for i := range 100 {
		q := fmt.Sprintf("q%03d", i)
		queues = append(queues, q)
		cw.Add("AWS/SQS", "NumberOfMessagesSent", q, cloudwatchfake.Point{At: now.Add(-time.Minute), V: float64(i)})
	}
	res, err := x.h.cloudWatchSeries(context.Background(), queues, now.Add(-time.Hour), now, time.Minute)
	if err != nil {
		t.Fatal(err) // the fake refuses more than 500 queries a request
	}
	if res.Requests != 2 || res.Metrics != 600 {
		t.Errorf("%d requests, %d metrics; want 2 (500 + 100), 600", res.Requests, res.Metrics)
	}
	if pts := res.Series["q099"]["NumberOfMessagesSent"]; len(pts) != 1 || pts[0].V != 99 {
		t.Errorf("the last queue's series: %v", pts)
	}
}
