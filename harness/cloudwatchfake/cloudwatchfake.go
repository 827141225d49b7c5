// Package cloudwatchfake is an in-memory CloudWatch GetMetricData, with the
// SDK's exact signature, for the console's tests: no emulator serves SQS's
// CloudWatch metrics. A test scripts each metric's series (a value per
// time, by namespace, metric name and QueueName-style dimensions) and the
// fake answers GetMetricData from them.
//
// What it models: up to 500 metric queries per request (more is a
// ValidationError, as AWS answers); one result per query, with its Id and
// label; the points of the scripted series within [StartTime, EndTime),
// bucketed into the query's Period (the bucket's start as the timestamp)
// and reduced by the Sum, Maximum, Minimum, Average or SampleCount
// statistic; ScanBy's order; MaxDatapoints with NextToken paging; every
// request counted (Requests, Metrics).
//
// What it does not model: percentile and other extended statistics, metric
// math and Metrics Insights expressions (a query without MetricStat gets an
// empty result), units, period alignment rules (any StartTime is taken as
// given, where AWS rounds it to the period for old data), data retention by
// resolution (1-minute points for 15 days, …), CloudWatch's few minutes of
// lag, ReturnData false, label templates, throttling and quotas (Fail
// scripts an error instead), and billing.
package cloudwatchfake

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/smithy-go"
)

// Point is one raw value of a series.
type Point struct {
	At time.Time
	V  float64
}

// key names a series: namespace, metric and the dimension's value (the
// console asks for one dimension, QueueName).
type key struct{ ns, metric, dim string }

// CloudWatch is the in-memory GetMetricData. The zero value is not usable;
// call New.
type CloudWatch struct {
	mu                sync.Mutex
	series            map[key][]Point
	fail              []error // the next requests' errors (Fail)
	requests, metrics int     // counted requests and metric queries
	inputs            []*cloudwatch.GetMetricDataInput
}

// New returns a fake with no series.
func New() *CloudWatch { return &CloudWatch{series: map[key][]Point{}} }

// Add appends points to the series of metric in namespace with the given
// dimension value (e.g. the queue's name for AWS/SQS).
func (c *CloudWatch) Add(namespace, metric, dimension string, pts ...Point) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := key{namespace, metric, dimension}
	c.series[k] = append(c.series[k], pts...)
	slices.SortStableFunc(c.series[k], func(a, b Point) int { return a.At.Compare(b.At) })
}

// Fail makes the next len(errs) requests fail with errs, in order.
func (c *CloudWatch) Fail(errs ...error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fail = append(c.fail, errs...)
}

// Requests returns how many GetMetricData requests were made and how many
// metric queries they carried in all.
func (c *CloudWatch) Requests() (requests, metrics int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.requests, c.metrics
}

// Inputs returns the requests' inputs, in order.
func (c *CloudWatch) Inputs() []*cloudwatch.GetMetricDataInput {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.inputs)
}

// GetMetricData answers from the scripted series.
func (c *CloudWatch) GetMetricData(ctx context.Context, params *cloudwatch.GetMetricDataInput, optFns ...func(*cloudwatch.Options)) (*cloudwatch.GetMetricDataOutput, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.requests++
	c.metrics += len(params.MetricDataQueries)
	c.inputs = append(c.inputs, params)
	if len(c.fail) > 0 {
		err := c.fail[0]
		c.fail = c.fail[1:]
		return nil, err
	}
	if n := len(params.MetricDataQueries); n == 0 || n > 500 {
		return nil, &smithy.GenericAPIError{Code: "ValidationError", Message: fmt.Sprintf("the request has %d metric data queries; 1 to 500 are allowed", n)}
	}
	if params.StartTime == nil || params.EndTime == nil || !params.StartTime.Before(*params.EndTime) {
		return nil, &smithy.GenericAPIError{Code: "ValidationError", Message: "StartTime must be before EndTime"}
	}
	start, end := *params.StartTime, *params.EndTime
	desc := params.ScanBy != types.ScanByTimestampAscending
	// Every query's points, then paged by MaxDatapoints across them.
	type res struct {
		id, label string
		ts        []time.Time
		vs        []float64
	}
	var all []res
	for _, q := range params.MetricDataQueries {
		r := res{id: aws.ToString(q.Id), label: aws.ToString(q.Label)}
		if ms := q.MetricStat; ms != nil && ms.Metric != nil {
			dim := ""
			if len(ms.Metric.Dimensions) > 0 {
				dim = aws.ToString(ms.Metric.Dimensions[0].Value)
			}
			if r.label == "" {
				r.label = aws.ToString(ms.Metric.MetricName)
			}
			period := time.Duration(aws.ToInt32(ms.Period)) * time.Second
			if period <= 0 {
				return nil, &smithy.GenericAPIError{Code: "ValidationError", Message: "Period must be positive"}
			}
			buckets := map[time.Time][]float64{}
			for _, p := range c.series[key{aws.ToString(ms.Metric.Namespace), aws.ToString(ms.Metric.MetricName), dim}] {
				if p.At.Before(start) || !p.At.Before(end) {
					continue
				}
				b := start.Add(p.At.Sub(start) / period * period)
				buckets[b] = append(buckets[b], p.V)
			}
			for b := range buckets {
				r.ts = append(r.ts, b)
			}
			slices.SortFunc(r.ts, time.Time.Compare)
			if desc {
				slices.Reverse(r.ts)
			}
			for _, b := range r.ts {
				v, err := reduce(aws.ToString(ms.Stat), buckets[b])
				if err != nil {
					return nil, err
				}
				r.vs = append(r.vs, v)
			}
		}
		all = append(all, r)
	}
	skip := 0
	if params.NextToken != nil {
		n, err := strconv.Atoi(*params.NextToken)
		if err != nil {
			return nil, &smithy.GenericAPIError{Code: "InvalidNextToken", Message: "the next token is not one this fake gave"}
		}
		skip = n
	}
	limit := int(aws.ToInt32(params.MaxDatapoints))
	if limit <= 0 {
		limit = 100_800
	}
	out := &cloudwatch.GetMetricDataOutput{}
	seen, taken, more := 0, 0, false
	for _, r := range all {
		mr := types.MetricDataResult{Id: aws.String(r.id), Label: aws.String(r.label), StatusCode: types.StatusCodeComplete}
		for i := range r.ts {
			if seen < skip {
				seen++
				continue
			}
			if taken == limit {
				more = true
				break
			}
			mr.Timestamps = append(mr.Timestamps, r.ts[i])
			mr.Values = append(mr.Values, r.vs[i])
			seen++
			taken++
		}
		if more {
			mr.StatusCode = types.StatusCodePartialData
		}
		out.MetricDataResults = append(out.MetricDataResults, mr)
	}
	if more {
		out.NextToken = aws.String(strconv.Itoa(seen))
	}
	return out, nil
}

func reduce(stat string, vs []float64) (float64, error) {
	switch stat {
	case "Sum":
		s := 0.0
		for _, v := range vs {
			s += v
		}
		return s, nil
	case "Maximum":
		return slices.Max(vs), nil
	case "Minimum":
		return slices.Min(vs), nil
	case "Average":
		s := 0.0
		for _, v := range vs {
			s += v
		}
		return s / float64(len(vs)), nil
	case "SampleCount":
		return float64(len(vs)), nil
	}
	return 0, &smithy.GenericAPIError{Code: "ValidationError", Message: "statistic " + stat + " is not modelled by cloudwatchfake"}
}
