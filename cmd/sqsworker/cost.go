package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sqsworker/sqsworker/internal/sqslimit"
	"github.com/sqsworker/sqsworker/worker"
)

func costCommand() *command {
	return &command{
		path:     "cost",
		args:     "SOURCE",
		synopsis: "what a worker's SQS requests cost, per message and per million messages",
		help: `Prices a worker's SQS requests from its counters (worker.Stats): requests per
message, requests as SQS bills them, and the estimated cost so far and per
million messages.

SOURCE is a worker.Stats as JSON: an http(s) URL of a running worker's
StatsHandler (e.g. http://127.0.0.1:9464/debug/sqsworker/stats), a file (the
JSON of w.Stats() saved by a test or a benchmark), or "-" for stdin.

The formula (worker.Stats.Cost): every call is billed as one request per
started 64 KiB of its payload (--chunk), at least one; the cost is billed
requests / 1,000,000 x the price per million (--price, or --fifo). It counts
the worker's own requests (receives, including empty long polls; deletes;
visibility changes; dead-letter copies), not the producer's sends, and does
not subtract SQS's free tier (the first million requests each month, per
account).

--interval polls a URL and prints, for each interval, the rate of that
interval alone: the live cost of the messages the worker handles now.
--per divides by another count than the messages received (jobs sent, say,
when retries make a job several messages). --monthly projects the cost of
that many messages a month at the rate found.`,
		run: runCost,
	}
}

// costReport is the JSON output of cost: the estimate and what it came
// from. Its keys are camelCase, each value given once.
type costReport struct {
	Source string `json:"source"`
	// Interval is the length of the sampled interval (with --interval).
	Interval string `json:"interval,omitempty"`
	// Messages, TotalRequests, BilledRequests, RequestsPerMessage,
	// BilledPerMessage, USD and PricePerMillionRequests are worker.Cost's.
	Messages                int64   `json:"messages"`
	TotalRequests           int64   `json:"requests"`
	BilledRequests          int64   `json:"billedRequests"`
	RequestsPerMessage      float64 `json:"requestsPerMessage"`
	BilledPerMessage        float64 `json:"billedPerMessage"`
	USD                     float64 `json:"usd"`
	PricePerMillionRequests float64 `json:"pricePerMillionRequests"`
	// Per and PerCount: the unit USDPerMillion is given for ("message",
	// or "unit" with --per).
	Per             string  `json:"per"`
	PerCount        int64   `json:"perCount"`
	USDPerMillion   float64 `json:"usdPerMillion"`
	MonthlyMessages int64   `json:"monthlyMessages,omitempty"`
	MonthlyUSD      float64 `json:"monthlyUsd,omitempty"`
	// Requests by API and result, as the worker counted them.
	RequestsByAPI  map[string]int64            `json:"requestsByApi"`
	RequestResults map[string]map[string]int64 `json:"requestResults,omitempty"`
	PayloadBytes   map[string]int64            `json:"payloadBytes,omitempty"`
}

func runCost(a *app, ctx context.Context, cmd *command, args []string) int {
	fs := a.flags(cmd)
	out := outputFlag(fs)
	price := fs.Float64("price", worker.PriceStandard, "US dollars per million requests")
	fifo := fs.Bool("fifo", false, fmt.Sprintf("FIFO queue pricing ($%.2f per million), unless --price is given", worker.PriceFIFO))
	chunk := fs.Int("chunk", sqslimit.BillingChunk, "payload bytes billed as one request")
	per := fs.Int64("per", 0, "divide by this many units of work (e.g. jobs sent) instead of the messages received")
	monthly := fs.Int64("monthly", 0, "also project the cost of this many messages (or --per units) a month")
	var interval time.Duration
	fs.Var(durationValue{&interval}, "interval", "with a URL: sample every interval and print each interval's rate")
	count := fs.Int("count", 0, "with --interval: stop after this many intervals (0: until interrupted)")
	pos, code, ok := a.parseWithOutput(cmd, fs, args, 1, 1, out)
	if !ok {
		return code
	}
	priceSet := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "price" {
			priceSet = true
		}
	})
	p := worker.Pricing{PerMillion: *price, ChunkBytes: *chunk}
	if *fifo && !priceSet {
		p.PerMillion = worker.PriceFIFO
	}
	if p.PerMillion <= 0 || p.ChunkBytes <= 0 || *per < 0 || *monthly < 0 || *count < 0 || interval < 0 {
		fmt.Fprintf(a.stderr, "sqsworker %s: --price, --chunk, --per, --monthly, --count and --interval must be positive\n", cmd.path)
		return exitUsage
	}
	src := pos[0]
	isURL := strings.HasPrefix(src, "http://") || strings.HasPrefix(src, "https://")
	if interval > 0 && !isURL {
		fmt.Fprintf(a.stderr, "sqsworker %s: --interval needs a URL to poll, not %q\n", cmd.path, src)
		return exitUsage
	}
	read := func() (worker.Stats, error) { return a.readStats(ctx, src) }
	report := func(s worker.Stats, span time.Duration) costReport {
		return newCostReport(src, s, p, *per, *monthly, span)
	}
	if interval == 0 {
		s, err := read()
		if err != nil {
			return a.costFail(cmd, err)
		}
		r := report(s, 0)
		if *out == "json" {
			a.writeJSON(r)
		} else {
			a.printCost(r)
		}
		return exitOK
	}
	prev, err := read()
	if err != nil {
		return a.costFail(cmd, err)
	}
	if *out == "text" {
		fmt.Fprintf(a.stdout, "sampling %s every %s (the rate of each interval alone):\n", src, formatDuration(interval))
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for n := 0; *count == 0 || n < *count; n++ {
		select {
		case <-ctx.Done():
			return exitInterrupted
		case <-tick.C:
		}
		cur, err := read()
		if err != nil {
			return a.costFail(cmd, err)
		}
		r := report(delta(cur, prev), interval)
		prev = cur
		if *out == "json" {
			enc := json.NewEncoder(a.stdout)
			_ = enc.Encode(r)
			continue
		}
		fmt.Fprintln(a.stdout, intervalLine(r, interval))
	}
	return exitOK
}

func newCostReport(src string, s worker.Stats, p worker.Pricing, per, monthly int64, span time.Duration) costReport {
	c := s.Cost(p)
	r := costReport{Source: src, Messages: c.Messages, TotalRequests: c.Requests, BilledRequests: c.BilledRequests,
		RequestsPerMessage: c.RequestsPerMessage, BilledPerMessage: c.BilledPerMessage, USD: c.USD, PricePerMillionRequests: c.PerMillionRequests,
		Per: "message", PerCount: c.Messages, USDPerMillion: c.USDPerMillionMessages,
		RequestsByAPI: s.Requests, RequestResults: s.RequestResults, PayloadBytes: s.PayloadBytes}
	if per > 0 {
		r.Per, r.PerCount, r.USDPerMillion = "unit", per, c.PerMillion(per)
	}
	if span > 0 {
		r.Interval = span.String()
	}
	if monthly > 0 {
		r.MonthlyMessages = monthly
		r.MonthlyUSD = r.USDPerMillion * float64(monthly) / 1e6
	}
	return r
}

// delta is cur minus prev: what happened between two samples.
func delta(cur, prev worker.Stats) worker.Stats {
	d := worker.Stats{Received: cur.Received - prev.Received}
	sub := func(a, b map[string]int64) map[string]int64 {
		out := map[string]int64{}
		for k, v := range a {
			if n := v - b[k]; n != 0 {
				out[k] = n
			}
		}
		return out
	}
	d.Requests = sub(cur.Requests, prev.Requests)
	d.PayloadBytes = sub(cur.PayloadBytes, prev.PayloadBytes)
	if cur.BilledRequests != nil {
		d.BilledRequests = sub(cur.BilledRequests, prev.BilledRequests)
	}
	d.RequestResults = map[string]map[string]int64{}
	for api, results := range cur.RequestResults {
		if r := sub(results, prev.RequestResults[api]); len(r) > 0 {
			d.RequestResults[api] = r
		}
	}
	return d
}

// readStats reads a worker.Stats from a URL, a file or stdin ("-").
func (a *app) readStats(ctx context.Context, src string) (worker.Stats, error) {
	var r io.Reader
	switch {
	case src == "-":
		r = a.stdin
	case strings.HasPrefix(src, "http://") || strings.HasPrefix(src, "https://"):
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, src, nil)
		if err != nil {
			return worker.Stats{}, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			if ctx.Err() != nil && errors.Is(err, context.Canceled) {
				return worker.Stats{}, err
			}
			return worker.Stats{}, errStatsURL{src, err}
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return worker.Stats{}, fmt.Errorf("GET %s: %s; point it at the worker's StatsHandler", src, resp.Status)
		}
		r = resp.Body
	default:
		f, err := os.Open(src)
		if err != nil {
			return worker.Stats{}, err
		}
		defer f.Close()
		r = f
	}
	var s worker.Stats
	dec := json.NewDecoder(r)
	if err := dec.Decode(&s); err != nil {
		return worker.Stats{}, fmt.Errorf("%s is not a worker.Stats JSON: %w", src, err)
	}
	if s.Requests == nil {
		return worker.Stats{}, errors.New(src + " has no Requests: is it a worker.Stats JSON (what worker.StatsHandler serves)?")
	}
	return s, nil
}

// errStatsURL is a stats URL that did not answer. It is about the worker,
// not AWS: the advice names the URL and the worker's StatsHandler, not the
// emulators (see costFail).
type errStatsURL struct {
	url string
	err error
}

func (e errStatsURL) Error() string {
	why := e.err.Error()
	var ue *url.Error
	if errors.As(e.err, &ue) {
		why = ue.Err.Error()
	}
	return fmt.Sprintf("cannot read the worker's stats at %s (%s): check that the worker runs and serves w.StatsHandler() at that address and path (e.g. mux.Handle(\"/debug/sqsworker/stats\", w.StatsHandler())), or give a file saved from w.Stats()", e.url, why)
}

func (e errStatsURL) Unwrap() error { return e.err }

// costFail reports an error of cost: its source is a worker or a file, so
// a refused connection is not advice about the AWS endpoint.
func (a *app) costFail(cmd *command, err error) int {
	if errors.Is(err, context.Canceled) {
		return a.fail(cmd, err)
	}
	fmt.Fprintf(a.stderr, "sqsworker %s: %v\n", cmd.path, err)
	return exitProblems
}

// printCost writes the text report.
func (a *app) printCost(r costReport) {
	tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "messages received\t%s\n", thousands(r.Messages))
	fmt.Fprintf(tw, "SQS requests\t%s\t(%.3f per message)\n", thousands(r.TotalRequests), r.RequestsPerMessage)
	apis := slices.SortedFunc(maps.Keys(r.RequestsByAPI), func(x, y string) int {
		return cmp.Or(cmp.Compare(r.RequestsByAPI[y], r.RequestsByAPI[x]), strings.Compare(x, y))
	})
	for _, api := range apis {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", api, thousands(r.RequestsByAPI[api]), results(r.RequestResults[api]))
	}
	fmt.Fprintf(tw, "billed requests\t%s\t(%.3f per message; payload %s)\n", thousands(r.BilledRequests), r.BilledPerMessage, bytesText(sum(r.PayloadBytes)))
	fmt.Fprintf(tw, "price\t$%.2f per million requests\n", r.PricePerMillionRequests)
	fmt.Fprintf(tw, "cost so far\t$%.6f\n", r.USD)
	fmt.Fprintf(tw, "cost per million %ss\t$%.3f\n", r.Per, r.USDPerMillion)
	if r.MonthlyMessages > 0 {
		fmt.Fprintf(tw, "at %s %ss a month\t$%.2f a month\n", thousands(r.MonthlyMessages), r.Per, r.MonthlyUSD)
	}
	tw.Flush()
}

// intervalLine is one interval's rate.
func intervalLine(r costReport, span time.Duration) string {
	line := fmt.Sprintf("%s messages (%.1f/s), %s requests (%.3f per message), $%.3f per million %ss",
		thousands(r.Messages), float64(r.Messages)/span.Seconds(), thousands(r.TotalRequests), r.RequestsPerMessage, r.USDPerMillion, r.Per)
	if r.MonthlyMessages > 0 {
		line += fmt.Sprintf(", $%.2f a month at %s", r.MonthlyUSD, thousands(r.MonthlyMessages))
	}
	return line
}

// results lists the non-ok results of one API, e.g. "(ok 1,238, throttled 2)".
func results(m map[string]int64) string {
	if len(m) == 0 || len(m) == 1 && m["ok"] > 0 {
		return ""
	}
	keys := slices.Sorted(maps.Keys(m))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + " " + thousands(m[k])
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

func sum(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// thousands writes n with thousands separators: 1234567 → 1,234,567.
func thousands(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

// bytesText writes a byte count briefly: 512 B, 1.5 KiB, 2.0 MiB.
func bytesText(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	case n < 1<<30:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
}
