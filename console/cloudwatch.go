package console

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"

	"github.com/sqsworker/sqsworker/internal/awscall"
	"github.com/sqsworker/sqsworker/internal/deadletter"
	"github.com/sqsworker/sqsworker/queueref"
)

// CloudWatchAPI is the part of the CloudWatch client the console uses
// (Options.CloudWatch), with the SDK's exact signature;
// *cloudwatch.Client implements it.
type CloudWatchAPI interface {
	GetMetricData(ctx context.Context, params *cloudwatch.GetMetricDataInput, optFns ...func(*cloudwatch.Options)) (*cloudwatch.GetMetricDataOutput, error)
}

var _ CloudWatchAPI = (*cloudwatch.Client)(nil)

// The history from CloudWatch: with Options.CloudWatch set, a History page
// asks GetMetricData for SQS's own metrics (namespace AWS/SQS, dimension
// QueueName) of the queue and its dead-letter queue over the span, all in
// as few requests as GetMetricData's 500 metrics per request allow.
// CloudWatch bills GetMetricData per metric requested ($0.01 per 1,000
// metrics), so every request made, retries and further pages included,
// counts toward the cost the page shows.

// cwMetric is one SQS metric the history asks for, with the statistic.
type cwMetric struct{ Name, Stat string }

// cwMetrics are the metrics asked for each queue. The depths are the
// largest of each period (a spike is not averaged away), the counts the
// period's sum, the age its largest.
var cwMetrics = []cwMetric{
	{"ApproximateNumberOfMessagesVisible", "Maximum"},
	{"ApproximateNumberOfMessagesNotVisible", "Maximum"},
	{"ApproximateNumberOfMessagesDelayed", "Maximum"},
	{"NumberOfMessagesSent", "Sum"},
	{"NumberOfMessagesDeleted", "Sum"},
	{"ApproximateAgeOfOldestMessage", "Maximum"},
}

// cwMaxMetrics is the most metric queries one GetMetricData request takes.
const cwMaxMetrics = 500

// cwPricePerMetric is GetMetricData's price per metric requested, in US
// dollars (CloudWatch pricing: $0.01 per 1,000 metrics requested).
const cwPricePerMetric = 0.01 / 1000

// cwPeriod is the period of each span's data points: 1 minute over an
// hour, 5 minutes over a day, an hour over 14 days (CloudWatch keeps
// 1-minute points 15 days, 5-minute points 63 days).
func cwPeriod(span time.Duration) time.Duration {
	switch {
	case span <= time.Hour:
		return time.Minute
	case span <= 24*time.Hour:
		return 5 * time.Minute
	}
	return time.Hour
}

// cwResult is what GetMetricData returned for a set of queues.
type cwResult struct {
	// Series holds, by queue name and metric name, the points, oldest
	// first.
	Series map[string]map[string][]point
	// Requests is how many GetMetricData requests were made, Metrics how
	// many metrics they asked for in all (the billed unit).
	Requests, Metrics int
	// Partial lists what CloudWatch did not answer in full.
	Partial []string
}

// cloudWatchSeries asks CloudWatch for cwMetrics of every queue in queues
// over [from, to) at period, batched: up to cwMaxMetrics metric queries per
// request, each request through the library's retry rule.
func (h *handler) cloudWatchSeries(ctx context.Context, queues []string, from, to time.Time, period time.Duration) (cwResult, error) {
	res := cwResult{Series: map[string]map[string][]point{}}
	type ref struct{ queue, metric string }
	refs := map[string]ref{}
	var queries []cwtypes.MetricDataQuery
	for qi, q := range queues {
		res.Series[q] = map[string][]point{}
		for mi, m := range cwMetrics {
			id := fmt.Sprintf("q%d_m%d", qi, mi)
			refs[id] = ref{q, m.Name}
			queries = append(queries, cwtypes.MetricDataQuery{
				Id: aws.String(id),
				MetricStat: &cwtypes.MetricStat{
					Metric: &cwtypes.Metric{
						Namespace:  aws.String("AWS/SQS"),
						MetricName: aws.String(m.Name),
						Dimensions: []cwtypes.Dimension{{Name: aws.String("QueueName"), Value: aws.String(q)}},
					},
					Period: aws.Int32(int32(period / time.Second)),
					Stat:   aws.String(m.Stat),
				},
				ReturnData: aws.Bool(true),
			})
		}
	}
	start, end := from.Truncate(period), to.Truncate(period).Add(period)
	for len(queries) > 0 {
		batch := queries[:min(len(queries), cwMaxMetrics)]
		queries = queries[len(batch):]
		var token *string
		for {
			in := &cloudwatch.GetMetricDataInput{
				MetricDataQueries: batch,
				StartTime:         aws.Time(start),
				EndTime:           aws.Time(end),
				ScanBy:            cwtypes.ScanByTimestampAscending,
				NextToken:         token,
			}
			rule := awscall.Rule{OnRequest: func(awscall.Request) {
				res.Requests++
				res.Metrics += len(batch)
			}}
			out, err := awscall.Do(ctx, rule, "CloudWatch", "GetMetricData", func(ctx context.Context) (*cloudwatch.GetMetricDataOutput, error) {
				return h.opts.CloudWatch.GetMetricData(ctx, in, awscall.CloudWatchOff)
			})
			if err != nil {
				return res, fmt.Errorf("CloudWatch GetMetricData: %w", err)
			}
			for _, r := range out.MetricDataResults {
				rf, ok := refs[aws.ToString(r.Id)]
				if !ok {
					continue
				}
				pts := res.Series[rf.queue][rf.metric]
				for i, t := range r.Timestamps {
					if i < len(r.Values) {
						pts = append(pts, point{At: t, V: r.Values[i]})
					}
				}
				res.Series[rf.queue][rf.metric] = pts
				if r.StatusCode != cwtypes.StatusCodeComplete && r.StatusCode != cwtypes.StatusCodePartialData && r.StatusCode != "" {
					res.Partial = append(res.Partial, fmt.Sprintf("%s %s: %s", rf.queue, rf.metric, r.StatusCode))
				}
			}
			for _, m := range out.Messages {
				res.Partial = append(res.Partial, aws.ToString(m.Code)+": "+aws.ToString(m.Value))
			}
			if out.NextToken == nil || *out.NextToken == "" {
				break
			}
			token = out.NextToken
		}
	}
	return res, nil
}

// cost says what the requests cost, in words.
func (r cwResult) cost() string {
	return fmt.Sprintf("%d metrics in %d GetMetricData request(s): about $%.5f (GetMetricData is billed $0.01 per 1,000 metrics requested)",
		r.Metrics, r.Requests, float64(r.Metrics)*cwPricePerMetric)
}

// perMinute turns a period's sums into a rate per minute.
func perMinute(pts []point, period time.Duration) []point {
	out := make([]point, len(pts))
	for i, p := range pts {
		out[i] = point{At: p.At, V: p.V / period.Minutes()}
	}
	return out
}

// sumSeries adds series point by point, by timestamp.
func sumSeries(series ...[]point) []point {
	at := map[time.Time]float64{}
	var order []time.Time
	for _, s := range series {
		for _, p := range s {
			if _, ok := at[p.At]; !ok {
				order = append(order, p.At)
			}
			at[p.At] += p.V
		}
	}
	slices.SortFunc(order, time.Time.Compare)
	out := make([]point, len(order))
	for i, t := range order {
		out[i] = point{At: t, V: at[t]}
	}
	return out
}

// cloudWatchHistory fills data with the queue's charts from CloudWatch,
// and its dead-letter queue's (named by its RedrivePolicy). It returns
// false, with the error in data, when CloudWatch did not answer.
func (h *handler) cloudWatchHistory(ctx context.Context, queue, url string, from, to time.Time, span time.Duration, data map[string]any) bool {
	dlqName := ""
	if a, err := h.queueAttrs(ctx, url, deadletter.AttrRedrivePolicy); err == nil {
		if p, err := deadletter.ParseRedrivePolicy(a[deadletter.AttrRedrivePolicy]); err == nil && p.TargetARN != "" {
			dlqName = queueref.Name(p.TargetARN)
		}
	}
	queues := []string{queue}
	if dlqName != "" && dlqName != queue {
		queues = append(queues, dlqName)
	}
	period := cwPeriod(span)
	res, err := h.cloudWatchSeries(ctx, queues, from, to, period)
	if err != nil {
		data["CloudWatchErr"] = err.Error()
		if res.Requests > 0 {
			data["Cost"] = res.cost()
		}
		return false
	}
	var charts []chart
	src := cloudWatchSource(period)
	add := func(title string, pts []point) {
		charts = append(charts, chart{Title: title, SVG: chartSVG(title, pts, from, to, period, src), Summary: summarize(title, pts, src)})
	}
	own := res.Series[queue]
	add("Visible (waiting to be received)", own["ApproximateNumberOfMessagesVisible"])
	add("In flight (received, not yet deleted)", own["ApproximateNumberOfMessagesNotVisible"])
	add("Delayed", own["ApproximateNumberOfMessagesDelayed"])
	add("Sent per minute", perMinute(own["NumberOfMessagesSent"], period))
	add("Deleted per minute", perMinute(own["NumberOfMessagesDeleted"], period))
	add("Oldest message's age (seconds)", own["ApproximateAgeOfOldestMessage"])
	if dlqName != "" {
		dead := res.Series[dlqName]
		add("Dead-letter queue "+dlqName+" depth (all states)", sumSeries(dead["ApproximateNumberOfMessagesVisible"],
			dead["ApproximateNumberOfMessagesNotVisible"], dead["ApproximateNumberOfMessagesDelayed"]))
		add("Dead-letter queue "+dlqName+" oldest message's age (seconds)", dead["ApproximateAgeOfOldestMessage"])
	}
	data["CloudWatch"], data["Charts"], data["Period"], data["Cost"], data["DLQ"] = true, charts, periodWords(period), res.cost(), dlqName
	if len(res.Partial) > 0 {
		data["CloudWatchPartial"] = strings.Join(res.Partial, "; ")
	}
	return true
}

// periodWords says a period in words: "1 minute", "5 minutes", "1 hour".
func periodWords(d time.Duration) string {
	switch {
	case d == time.Hour:
		return "1 hour"
	case d == time.Minute:
		return "1 minute"
	case d%time.Hour == 0:
		return fmt.Sprintf("%d hours", d/time.Hour)
	}
	return fmt.Sprintf("%d minutes", d/time.Minute)
}
