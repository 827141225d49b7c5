package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sqsworker/sqsworker/retry"
)

func policyPreviewCommand() *command {
	return &command{
		path:     "policy preview",
		args:     "[FILE]",
		synopsis: "show a delivery policy's retry schedule, total time and a chart",
		help: `Shows the retry schedule of an SNS-style delivery policy as the worker applies
it to SQS: each retry's phase (immediate, pre-backoff, backoff, post-backoff),
delay and cumulative time, the total, and a chart of the delays.

FILE is a delivery policy JSON file ("-" for stdin) in any shape SNS uses: a
topic policy ({"http":{"defaultHealthyRetryPolicy":{…}}}), a subscription
policy ({"healthyRetryPolicy":{…}}) or the bare retry object. Without FILE,
SNS's default policy (3 retries, 20 s apart) is the start. The flags override
single fields.

--compare shows the schedule under each of the four backoff functions side by
side, with a chart like the comparison graph in SNS's documentation.

The policy is checked against SQS's limits (maxDelayTarget up to 43200 s, the
12-hour visibility limit; numRetries up to 999); --sns checks SNS's stricter
ones instead (3600 s, 100 retries, one hour in all). Nothing calls AWS.`,
		run: runPolicyPreview,
	}
}

// policyFlags are the per-field overrides of policy preview.
type policyFlags struct {
	minDelay, maxDelay, retries, noDelay, minRetries, maxRetries int
	backoff                                                      string
}

func runPolicyPreview(a *app, ctx context.Context, cmd *command, args []string) int {
	fs := a.flags(cmd)
	out := outputFlag(fs)
	var pf policyFlags
	fs.IntVar(&pf.minDelay, "min-delay", 0, "minDelayTarget, seconds")
	fs.IntVar(&pf.maxDelay, "max-delay", 0, "maxDelayTarget, seconds")
	fs.IntVar(&pf.retries, "retries", 0, "numRetries")
	fs.IntVar(&pf.noDelay, "no-delay-retries", 0, "numNoDelayRetries (immediate phase)")
	fs.IntVar(&pf.minRetries, "min-delay-retries", 0, "numMinDelayRetries (pre-backoff phase)")
	fs.IntVar(&pf.maxRetries, "max-delay-retries", 0, "numMaxDelayRetries (post-backoff phase)")
	fs.StringVar(&pf.backoff, "backoff", "", "backoffFunction: linear, arithmetic, geometric or exponential")
	compare := fs.Bool("compare", false, "compare the four backoff functions side by side")
	sns := fs.Bool("sns", false, "check against SNS's limits instead of SQS's")
	width := fs.Int("width", 50, "chart width in columns")
	pos, code, ok := a.parseWithOutput(cmd, fs, args, 0, 1, out)
	if !ok {
		return code
	}
	p, err := buildPolicy(a.stdin, pos, fs, pf, *sns)
	if err != nil {
		fmt.Fprintf(a.stderr, "sqsworker %s: %v\n", cmd.path, err)
		return exitUsage
	}
	*width = min(max(*width, 10), 200)
	if *compare {
		return a.previewCompare(p, *out, *width)
	}
	return a.previewOne(p, *out, *width)
}

// buildPolicy reads the policy file (if any), applies the flags that were
// set and validates the result.
func buildPolicy(stdin io.Reader, pos []string, fs *flag.FlagSet, pf policyFlags, sns bool) (retry.DeliveryPolicy, error) {
	p := retry.DefaultDeliveryPolicy()
	if len(pos) == 1 {
		var err error
		if p, err = readPolicy(stdin, pos[0]); err != nil {
			return p, err
		}
	}
	h := &p.HealthyRetryPolicy
	var err error
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "min-delay":
			h.MinDelayTarget = pf.minDelay
		case "max-delay":
			h.MaxDelayTarget = pf.maxDelay
		case "retries":
			h.NumRetries = pf.retries
		case "no-delay-retries":
			h.NumNoDelayRetries = pf.noDelay
		case "min-delay-retries":
			h.NumMinDelayRetries = pf.minRetries
		case "max-delay-retries":
			h.NumMaxDelayRetries = pf.maxRetries
		case "backoff":
			// Validate below refuses an unknown name, naming the flag.
			h.BackoffFunction = pf.backoff
			if pf.backoff == "" {
				err = errors.New("--backoff: empty; use linear, arithmetic, geometric or exponential")
			}
		}
	})
	if err != nil {
		return p, err
	}
	if sns {
		err = p.Validate()
	} else {
		err = p.ValidateSQS()
	}
	if err != nil {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		source := "the policy"
		if len(pos) == 1 {
			source = pos[0]
			if source == "-" {
				source = "stdin"
			}
		}
		err = errors.New(source + ": " + policyProblem(err, set))
	}
	return p, err
}

// snsProblem says why SNS would refuse a policy SQS accepts.
func snsProblem(err error) string {
	var pe *retry.PolicyError
	if err == nil {
		return ""
	}
	if errors.As(err, &pe) {
		return pe.Field + ": " + pe.Problem
	}
	return err.Error()
}

// phases splits numRetries as the delivery policy does.
type phases struct{ immediate, pre, backoff, post int }

func phasesOf(h retry.HealthyRetryPolicy) phases {
	n := max(h.NumRetries, 0)
	var ph phases
	ph.immediate = min(max(h.NumNoDelayRetries, 0), n)
	ph.pre = min(max(h.NumMinDelayRetries, 0), n-ph.immediate)
	ph.post = min(max(h.NumMaxDelayRetries, 0), n-ph.immediate-ph.pre)
	ph.backoff = n - ph.immediate - ph.pre - ph.post
	return ph
}

// phase names retry n's phase (1-based).
func (ph phases) phase(n int) string {
	switch {
	case n <= ph.immediate:
		return "immediate"
	case n <= ph.immediate+ph.pre:
		return "pre-backoff"
	case n <= ph.immediate+ph.pre+ph.backoff:
		return "backoff"
	}
	return "post-backoff"
}

// backoffName is a backoff function's lower-case name ("linear" for "").
func backoffName(f string) string {
	if f == "" {
		return "linear"
	}
	return strings.ToLower(f)
}

func seconds(d time.Duration) float64 { return math.Round(d.Seconds()*1000) / 1000 }

type retryRow struct {
	Retry      int     `json:"retry"`
	Phase      string  `json:"phase"`
	Delay      float64 `json:"delaySeconds"`
	Cumulative float64 `json:"cumulativeSeconds"`
}

func (a *app) previewOne(p retry.DeliveryPolicy, out string, width int) int {
	h := p.HealthyRetryPolicy
	ph := phasesOf(h)
	delays := p.Delays()
	var rows []retryRow
	var cum time.Duration
	for i, d := range delays {
		cum += d
		rows = append(rows, retryRow{Retry: i + 1, Phase: ph.phase(i + 1), Delay: seconds(d), Cumulative: seconds(cum)})
	}
	snsErr := p.Validate()
	if out == "json" {
		a.writeJSON(struct {
			Policy       retry.DeliveryPolicy `json:"policy"`
			Deliveries   int                  `json:"deliveries"`
			Retries      []retryRow           `json:"retries"`
			Total        float64              `json:"totalSeconds"`
			MaxTotal     float64              `json:"maxTotalSeconds"`
			SNSCompliant bool                 `json:"snsCompliant"`
			SNSError     string               `json:"snsError,omitempty"`
		}{p, len(delays) + 1, rows, seconds(p.Total()), seconds(p.MaxTotal()), snsErr == nil, snsProblem(snsErr)})
		return exitOK
	}
	w := a.stdout
	fmt.Fprintf(w, "delivery policy: %s (%s), %s backoff from %s to %s\n",
		count(h.NumRetries, "retry"), count(h.NumRetries+1, "delivery"), backoffName(h.BackoffFunction),
		formatDuration(time.Duration(h.MinDelayTarget)*time.Second), formatDuration(time.Duration(h.MaxDelayTarget)*time.Second))
	fmt.Fprintf(w, "phases: %d immediate, %d pre-backoff, %d backoff, %d post-backoff\n\n", ph.immediate, ph.pre, ph.backoff, ph.post)
	if len(delays) == 0 {
		fmt.Fprintln(w, "no retries: a failed message goes to the dead-letter queue after its first delivery")
		return exitOK
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "RETRY\tPHASE\tDELAY\tCUMULATIVE\t")
	for i, r := range rows {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t\n", r.Retry, r.Phase, formatDuration(delays[i]), formatDuration(time.Duration(r.Cumulative*float64(time.Second))))
	}
	tw.Flush()
	fmt.Fprintf(w, "\ntotal: %s of delays before the message is dead-lettered (plus the handler's run time per attempt)\n", formatDuration(p.Total()))
	switch strings.ToLower(p.Jitter) {
	case "", "equal":
		fmt.Fprintln(w, "jitter: equal — each delayed retry waits a random time between d/2 and d, so the total is at most the above")
	default:
		fmt.Fprintf(w, "jitter: %s, up to %s in all\n", p.Jitter, formatDuration(p.MaxTotal()))
	}
	if snsErr != nil {
		fmt.Fprintf(w, "note: within SQS's limits, but SNS would refuse it: %s\n", snsProblem(snsErr))
	}
	fmt.Fprintf(w, "check the queue: maxReceiveCount ≥ %d, MessageRetentionPeriod > %s (sqsworker doctor --policy FILE QUEUE)\n",
		len(delays)+1, formatDuration(p.MaxTotal()))

	fmt.Fprintln(w, "\ndelay per retry")
	longest := time.Duration(0)
	for _, d := range delays {
		longest = max(longest, d)
	}
	labelWidth := len(fmt.Sprint(len(delays)))
	for i, d := range delays {
		fmt.Fprintf(w, "%*d │%s %s\n", labelWidth, i+1, bar(d, longest, width), formatDuration(d))
	}
	return exitOK
}

// bar draws d as a horizontal bar scaled so that longest fills width
// columns, with eighth-block precision.
func bar(d, longest time.Duration, width int) string {
	if longest <= 0 || d <= 0 {
		return ""
	}
	eighths := int(math.Round(float64(d) / float64(longest) * float64(width*8)))
	eighths = max(eighths, 1)
	partial := []string{"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"}
	return strings.Repeat("█", eighths/8) + partial[eighths%8]
}

// functions lists the backoff functions in SNS's documentation order.
var functionOrder = [...]string{"linear", "arithmetic", "geometric", "exponential"}

type functionRow struct {
	Function string    `json:"backoffFunction"`
	Delays   []float64 `json:"delaysSeconds"`
	Total    float64   `json:"totalSeconds"`
}

func (a *app) previewCompare(p retry.DeliveryPolicy, out string, width int) int {
	h := p.HealthyRetryPolicy
	ph := phasesOf(h)
	var all [len(functionOrder)][]time.Duration
	var totals [len(functionOrder)]time.Duration
	var rows []functionRow
	for i, f := range functionOrder {
		q := p
		q.HealthyRetryPolicy.BackoffFunction = f
		all[i], totals[i] = q.Delays(), q.Total()
		r := functionRow{Function: f, Total: seconds(totals[i]), Delays: []float64{}}
		for _, d := range all[i] {
			r.Delays = append(r.Delays, seconds(d))
		}
		rows = append(rows, r)
	}
	if out == "json" {
		a.writeJSON(struct {
			Policy    retry.DeliveryPolicy `json:"policy"`
			Functions []functionRow        `json:"functions"`
		}{p, rows})
		return exitOK
	}
	w := a.stdout
	fmt.Fprintf(w, "backoff functions compared: %s from %s to %s (%d immediate, %d pre-backoff, %d backoff, %d post-backoff)\n\n",
		count(h.NumRetries, "retry"), formatDuration(time.Duration(h.MinDelayTarget)*time.Second), formatDuration(time.Duration(h.MaxDelayTarget)*time.Second),
		ph.immediate, ph.pre, ph.backoff, ph.post)
	n := len(all[0])
	if n == 0 {
		fmt.Fprintln(w, "no retries: nothing to compare")
		return exitOK
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "RETRY\tPHASE\tLINEAR\tARITHMETIC\tGEOMETRIC\tEXPONENTIAL\t")
	for r := range n {
		fmt.Fprintf(tw, "%d\t%s\t", r+1, ph.phase(r+1))
		for i := range functionOrder {
			fmt.Fprintf(tw, "%s\t", formatDuration(all[i][r]))
		}
		fmt.Fprintln(tw)
	}
	fmt.Fprintf(tw, "TOTAL\t\t")
	for i := range functionOrder {
		fmt.Fprintf(tw, "%s\t", formatDuration(totals[i]))
	}
	fmt.Fprintln(tw)
	tw.Flush()
	fmt.Fprintln(w)
	plot(w, all[:], width)
	if ph.backoff < 3 || h.MinDelayTarget >= h.MaxDelayTarget {
		fmt.Fprintln(w, "(the four functions differ only with at least 3 backoff retries and minDelayTarget < maxDelayTarget)")
	}
	return exitOK
}

// plot draws the four schedules on one grid: retry number across, delay
// up, one letter per function (L, A, G, E; * where several meet).
func plot(w io.Writer, series [][]time.Duration, width int) {
	const height = 13 // odd, so the middle row is exactly half the top
	marks := []byte{'L', 'A', 'G', 'E'}
	n := len(series[0])
	var top time.Duration
	for _, s := range series {
		for _, d := range s {
			top = max(top, d)
		}
	}
	cols := max((n-1)*3+1, 1)
	if cols > width {
		cols = max(width, n)
	}
	grid := make([][]byte, height)
	for r := range grid {
		grid[r] = []byte(strings.Repeat(" ", cols))
	}
	for si, s := range series {
		for i, d := range s {
			x := 0
			if n > 1 {
				x = int(math.Round(float64(i) * float64(cols-1) / float64(n-1)))
			}
			y := 0
			if top > 0 {
				y = int(math.Round(float64(d) / float64(top) * float64(height-1)))
			}
			row := height - 1 - y
			switch c := grid[row][x]; {
			case c == ' ':
				grid[row][x] = marks[si]
			case c != marks[si]:
				grid[row][x] = '*'
			}
		}
	}
	topLabel, midLabel := formatDuration(top), formatDuration(top/2)
	lw := max(len(topLabel), len(midLabel), 2)
	for r, line := range grid {
		label, tick := "", "│"
		switch r {
		case 0:
			label, tick = topLabel, "┤"
		case (height - 1) / 2:
			label, tick = midLabel, "┤"
		case height - 1:
			label, tick = "0s", "┤"
		}
		fmt.Fprintf(w, "%*s %s%s\n", lw, label, tick, strings.TrimRight(string(line), " "))
	}
	fmt.Fprintf(w, "%*s └%s\n", lw, "", strings.Repeat("─", cols))
	last := fmt.Sprint(n)
	gap := max(cols-1-len(last), 1)
	fmt.Fprintf(w, "%*s  1%s%s  retry\n", lw, "", strings.Repeat(" ", gap), last)
	fmt.Fprintln(w, "L linear  A arithmetic  G geometric  E exponential  * several")
}
