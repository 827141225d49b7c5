package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"golang.org/x/sync/errgroup"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/fanout"
	"github.com/sqsworker/sqsworker/fleet"
	"github.com/sqsworker/sqsworker/internal/awscall"
	"github.com/sqsworker/sqsworker/queueref"
)

// queueRow is one queue on the overview.
type queueRow struct {
	Name, URL string
	Counts    dlq.Counts
	// Target is the queue's dead-letter queue (nil without a RedrivePolicy),
	// with its counts.
	Target    *dlq.Target
	DLQCounts dlq.Counts
	// OldestFailure is the oldest dead-lettered message's failure time,
	// from the console's last read of the dead-letter queue (zero: not read).
	OldestFailure time.Time
	ReadAt        time.Time
	// DLQOf names the shown queues whose dead-letter queue this is.
	DLQOf    []string
	Findings []dlq.Finding
	// Chain is the queue's SNS subscriptions (Options.SNS).
	Chain []fanout.Subscription
	// Pause is the queue's pause switch (Options.Fleet).
	Pause fleet.PauseState
	Err   string
	// Expiry is when the dead-letter queue's messages expire, from the
	// console's last read of it.
	Expiry expiry
}

// Worst returns the most severe finding's severity, for the row's badge.
func (q queueRow) Worst() string {
	worst := ""
	for _, f := range q.Findings {
		switch {
		case f.Severity == dlq.SeverityError:
			return "error"
		case f.Severity == dlq.SeverityWarning:
			worst = "warning"
		}
	}
	return worst
}

// queueURLs returns the queues to show: Options.Queues, else ListQueues.
func (h *handler) queueURLs(ctx context.Context) ([]string, error) {
	if len(h.opts.Queues) > 0 {
		urls := make([]string, 0, len(h.opts.Queues))
		for _, q := range h.opts.Queues {
			u, err := queueref.Resolve(ctx, h.client, q)
			if err != nil {
				return nil, err
			}
			urls = append(urls, u)
		}
		return urls, nil
	}
	var urls []string
	in := &sqs.ListQueuesInput{MaxResults: aws.Int32(1000)}
	for {
		out, err := awscall.SQS(ctx, awscall.Rule{}, h.client.ListQueues, in)
		if err != nil {
			return nil, fmt.Errorf("listing the queues (sqs:ListQueues; or list them in Options.Queues / --queues): %w", err)
		}
		urls = append(urls, out.QueueUrls...)
		if aws.ToString(out.NextToken) == "" {
			break
		}
		in.NextToken = out.NextToken
	}
	slices.SortFunc(urls, func(a, b string) int { return compareStrings(queueref.Name(a), queueref.Name(b)) })
	return urls, nil
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// queueRows reads every shown queue's counts, dead-letter setup, findings
// and fan-out chain, eight queues at a time.
func (h *handler) queueRows(ctx context.Context) ([]*queueRow, error) {
	urls, err := h.queueURLs(ctx)
	if err != nil {
		return nil, err
	}
	rows := make([]*queueRow, len(urls))
	var g errgroup.Group
	g.SetLimit(8)
	for i, u := range urls {
		rows[i] = &queueRow{Name: queueref.Name(u), URL: u}
		g.Go(func() error {
			h.fillRow(ctx, rows[i])
			return nil
		})
	}
	_ = g.Wait()
	byName := map[string]*queueRow{}
	for _, r := range rows {
		byName[r.Name] = r
	}
	for _, r := range rows {
		if r.Target != nil {
			if d := byName[queueref.Name(r.Target.DLQURL)]; d != nil {
				d.DLQOf = append(d.DLQOf, r.Name)
			}
		}
	}
	return rows, nil
}

// fillRow reads one queue's row; a failure is shown on the row.
func (h *handler) fillRow(ctx context.Context, r *queueRow) {
	var errs []error
	c, err := dlq.Count(ctx, h.client, r.URL)
	if err != nil {
		r.Err = err.Error()
		return
	}
	r.Counts = c
	t, err := dlq.Discover(ctx, h.client, r.URL)
	switch {
	case err == nil:
		r.Target = &t
		if r.DLQCounts, err = dlq.Count(ctx, h.client, t.DLQURL); err != nil {
			errs = append(errs, err)
		}
		if rs, ok := h.summaryOf(t.DLQURL); ok {
			r.ReadAt, r.OldestFailure = rs.ReadAt, rs.OldestFailure
			r.Expiry = rs.expiry(h.retentionOf(ctx, t.DLQURL), h.opts.Now())
		}
	case !errors.Is(err, dlq.ErrNoRedrivePolicy):
		errs = append(errs, err)
	}
	if h.opts.SNS != nil {
		r.Findings, err = fanout.Lint(ctx, h.opts.SNS, h.client, r.URL, fanout.LintOptions{})
		if err != nil {
			errs = append(errs, err)
		}
		arn := ""
		if r.Target != nil {
			arn = r.Target.SourceARN
		} else {
			out, err := awscall.SQS(ctx, awscall.Rule{}, h.client.GetQueueAttributes, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(r.URL), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
			if err != nil {
				errs = append(errs, err)
			} else {
				arn = out.Attributes[string(types.QueueAttributeNameQueueArn)]
			}
		}
		if arn != "" {
			if r.Chain, err = fanout.Subscriptions(ctx, h.opts.SNS, arn); err != nil {
				errs = append(errs, fmt.Errorf("reading the SNS subscriptions of queue %s: %w", r.Name, err))
			}
		}
	} else {
		r.Findings, err = dlq.Lint(ctx, h.client, r.URL, dlq.LintOptions{})
		if err != nil {
			errs = append(errs, err)
		}
	}
	if h.opts.Fleet != nil {
		if r.Pause, err = h.opts.Fleet.PauseState(ctx, r.URL); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		r.Err = err.Error()
	}
}

// overview serves the queues overview.
func (h *handler) overview(w http.ResponseWriter, r *http.Request) {
	rows, err := h.queueRows(r.Context())
	h.render(w, r, http.StatusOK, "overview", "Queues", map[string]any{"Rows": rows, "Err": errString(err), "HasSNS": h.opts.SNS != nil, "Refresh": overviewRefresh})
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
