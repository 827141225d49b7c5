package console

import (
	"context"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"strings"
	"sync"
	"time"
	"weak"

	"golang.org/x/sync/errgroup"

	"github.com/sqsworker/sqsworker/internal/deadletter"
	"github.com/sqsworker/sqsworker/queueref"
)

// The console's history: with Options.SampleEvery set, the console reads
// every shown queue's counts (one GetQueueAttributes per queue, and one
// ListQueues unless Options.Queues is set) every SampleEvery, and keeps
// them in a bounded ring per queue in memory: at most maxSamples samples,
// 14 days at one a minute. The history pages draw them as SVG. Nothing is
// kept across restarts, and SQS reports neither the age of the oldest
// message nor the sent and deleted rates to GetQueueAttributes (only to
// CloudWatch), so those are not charted.

// maxSamples bounds each queue's ring.
const maxSamples = 14 * 24 * 60

// depthSample is a queue's counts at one moment.
type depthSample struct {
	At                         time.Time
	Visible, InFlight, Delayed int
}

// ring is a queue's last samples, oldest first once full.
type ring struct {
	buf  []depthSample
	next int
	full bool
}

func (r *ring) add(s depthSample) {
	if !r.full && len(r.buf) < cap(r.buf) {
		r.buf = append(r.buf, s)
		return
	}
	r.full = true
	r.buf[r.next] = s
	r.next = (r.next + 1) % len(r.buf)
}

// since returns the samples at or after t, oldest first.
func (r *ring) since(t time.Time) []depthSample {
	var out []depthSample
	n := len(r.buf)
	for i := range n {
		s := r.buf[(r.next+i)%n]
		if !r.full {
			s = r.buf[i]
		}
		if !s.At.Before(t) {
			out = append(out, s)
		}
	}
	return out
}

// history is the sampled counts of every queue, by queue name.
type history struct {
	every time.Duration
	size  int

	mu      sync.Mutex
	first   time.Time         // the first sample
	rings   map[string]*ring  // by queue name
	dlqOf   map[string]string // queue name → its dead-letter queue's name
	dlqURLs map[string]string // dead-letter queue name → URL, for the ones not shown
	lastErr string
}

func newHistory(every time.Duration) *history {
	return &history{every: every, size: int(min(int64(maxSamples), int64(14*24*time.Hour/every)+1)),
		rings: map[string]*ring{}, dlqOf: map[string]string{}, dlqURLs: map[string]string{}}
}

func (hs *history) record(name string, s depthSample) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	r := hs.rings[name]
	if r == nil {
		r = &ring{buf: make([]depthSample, 0, hs.size)}
		hs.rings[name] = r
	}
	r.add(s)
	if hs.first.IsZero() || s.At.Before(hs.first) {
		hs.first = s.At
	}
}

// startSampling starts the sampler when Options.SampleEvery is set. It
// holds the handler only weakly, and ends once the handler is unreachable.
func (h *handler) startSampling() {
	if h.opts.SampleEvery <= 0 {
		return
	}
	h.hist = newHistory(h.opts.SampleEvery)
	wp := weak.Make(h)
	every := h.opts.SampleEvery
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			if !sampleVia(wp, every) {
				return
			}
			<-t.C
		}
	}()
}

// sampleVia samples once through the weak pointer; false once the handler
// is gone.
func sampleVia(wp weak.Pointer[handler], every time.Duration) bool {
	h := wp.Value()
	if h == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), max(every, 5*time.Second))
	defer cancel()
	h.sampleOnce(ctx)
	return true
}

// sampleOnce reads every shown queue's counts, and those of the
// dead-letter queues their RedrivePolicy names, into the history.
func (h *handler) sampleOnce(ctx context.Context) {
	hs := h.hist
	urls, err := h.queueURLs(ctx)
	if err != nil {
		hs.mu.Lock()
		hs.lastErr = err.Error()
		hs.mu.Unlock()
		return
	}
	shown := map[string]bool{}
	for _, u := range urls {
		shown[queueref.Name(u)] = true
	}
	hs.mu.Lock()
	for name, u := range hs.dlqURLs {
		if !shown[name] {
			urls = append(urls, u)
		}
	}
	hs.mu.Unlock()
	var (
		g    errgroup.Group
		mu   sync.Mutex
		errs []string
		dlqs = map[string]string{} // name → ARN, of dead-letter queues not sampled
	)
	g.SetLimit(8)
	for _, u := range urls {
		g.Go(func() error {
			a, err := h.queueAttrs(ctx, u, deadletter.AttrVisible, deadletter.AttrNotVisible, deadletter.AttrDelayed, deadletter.AttrRedrivePolicy)
			name := queueref.Name(u)
			if err != nil {
				mu.Lock()
				errs = append(errs, fmt.Sprintf("%s: %v", name, err))
				mu.Unlock()
				return nil
			}
			h.hist.record(name, depthSample{At: h.opts.Now(), Visible: deadletter.IntAttr(a, deadletter.AttrVisible),
				InFlight: deadletter.IntAttr(a, deadletter.AttrNotVisible), Delayed: deadletter.IntAttr(a, deadletter.AttrDelayed)})
			if p, err := deadletter.ParseRedrivePolicy(a[deadletter.AttrRedrivePolicy]); err == nil && p.TargetARN != "" {
				d := queueref.Name(p.TargetARN)
				hs.mu.Lock()
				hs.dlqOf[name] = d
				_, known := hs.dlqURLs[d]
				hs.mu.Unlock()
				if !shown[d] && !known {
					mu.Lock()
					dlqs[d] = p.TargetARN
					mu.Unlock()
				}
			}
			return nil
		})
	}
	_ = g.Wait()
	// Dead-letter queues not shown are sampled from the next round on.
	for name, arn := range dlqs {
		if u, err := queueref.Resolve(ctx, h.client, arn); err == nil {
			hs.mu.Lock()
			hs.dlqURLs[name] = u
			hs.mu.Unlock()
		}
	}
	hs.mu.Lock()
	hs.lastErr = strings.Join(errs, "; ")
	hs.mu.Unlock()
}

// spans are the history page's spans.
var spans = []struct {
	Key string
	D   time.Duration
}{{"1h", time.Hour}, {"24h", 24 * time.Hour}, {"14d", 14 * 24 * time.Hour}}

// chart is one chart of the history page.
type chart struct {
	Title   string
	SVG     template.HTML
	Summary string
}

// historyPage serves a queue's history: its counts and its dead-letter
// queue's depth over the chosen span, from CloudWatch with
// Options.CloudWatch (and, with it, the sent and deleted rates and the
// oldest message's age), else from the console's own sampling.
func (h *handler) historyPage(w http.ResponseWriter, r *http.Request) {
	queue := r.PathValue("queue")
	url, err := h.shownQueue(r.Context(), queue)
	if err != nil {
		h.fail(w, r, http.StatusNotFound, err)
		return
	}
	span := spans[0]
	for _, s := range spans {
		if s.Key == r.URL.Query().Get("span") {
			span = s
		}
	}
	data := map[string]any{"Queue": queue, "Span": span.Key, "Spans": spans, "Sampling": h.hist != nil}
	if h.opts.CloudWatch != nil {
		now := h.opts.Now()
		if h.cloudWatchHistory(r.Context(), queue, url, now.Add(-span.D), now, span.D, data) {
			h.render(w, r, http.StatusOK, "history", "History of "+queue, data)
			return
		}
	}
	if h.hist == nil {
		h.render(w, r, http.StatusOK, "history", "History of "+queue, data)
		return
	}
	now := h.opts.Now()
	from := now.Add(-span.D)
	hs := h.hist
	hs.mu.Lock()
	var own, dead []depthSample
	if rg := hs.rings[queue]; rg != nil {
		own = rg.since(from)
	}
	dlqName := hs.dlqOf[queue]
	if rg := hs.rings[dlqName]; rg != nil {
		dead = rg.since(from)
	}
	first, lastErr := hs.first, hs.lastErr
	hs.mu.Unlock()
	series := func(ss []depthSample, v func(depthSample) int) []point {
		out := make([]point, len(ss))
		for i, s := range ss {
			out[i] = point{At: s.At, V: float64(v(s))}
		}
		return out
	}
	var charts []chart
	add := func(title string, pts []point) {
		charts = append(charts, chart{Title: title, SVG: chartSVG(title, pts, from, now, hs.every, sampled), Summary: summarize(title, pts, sampled)})
	}
	add("Visible (waiting to be received)", series(own, func(s depthSample) int { return s.Visible }))
	add("In flight (received, not yet deleted)", series(own, func(s depthSample) int { return s.InFlight }))
	add("Delayed", series(own, func(s depthSample) int { return s.Delayed }))
	if dlqName != "" {
		add("Dead-letter queue "+dlqName+" depth (all states)", series(dead, func(s depthSample) int { return s.Visible + s.InFlight + s.Delayed }))
	}
	data["Charts"], data["Since"], data["Every"], data["SampleErr"], data["DLQ"] = charts, first, hs.every, lastErr, dlqName
	h.render(w, r, http.StatusOK, "history", "History of "+queue, data)
}

// point is one value of a chart.
type point struct {
	At time.Time
	V  float64
}

// Chart geometry, in SVG user units.
const (
	chartW, chartH                 = 720, 170
	padL, padR, padT, padB         = 56, 14, 24, 30
	maxPoints                      = 360 // a chart draws at most this many (each the largest of its interval)
	plotW, plotH           float64 = chartW - padL - padR, chartH - padT - padB
)

// seriesSource names where a chart's points come from, in the words of its
// summary: the console's samples, or CloudWatch's datapoints (one per
// period, the period's statistic, a few minutes late).
type seriesSource struct {
	point  string // what one point is: "sample", "CloudWatch datapoint"
	per    string // how often, after the count: "" or " (one per 5 minutes)"
	latest string // what the last point is: "now", "latest datapoint"
}

// sampled is the console's own sampling.
var sampled = seriesSource{point: "sample", latest: "now"}

// cloudWatchSource is CloudWatch's datapoints at period.
func cloudWatchSource(period time.Duration) seriesSource {
	return seriesSource{point: "CloudWatch datapoint", per: " (one per " + periodWords(period) + ")", latest: "latest datapoint"}
}

// chartSVG draws pts over [from, to] as an SVG line chart: a title, the
// y axis's values, the x axis's times (UTC) and the line, broken where
// there is no point (the console was not sampling, CloudWatch had no
// data). It needs no colour to be read.
func chartSVG(title string, pts []point, from, to time.Time, every time.Duration, src seriesSource) template.HTML {
	pts = downsample(pts, from, to)
	top := 1.0
	for _, p := range pts {
		top = max(top, p.V)
	}
	top = niceCeil(top)
	x := func(t time.Time) float64 { return padL + plotW*float64(t.Sub(from))/float64(to.Sub(from)) }
	y := func(v float64) float64 { return padT + plotH*(1-v/top) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="%s">`, chartW, chartH, chartW, chartH, template.HTMLEscapeString(title))
	fmt.Fprintf(&b, `<title>%s</title>`, template.HTMLEscapeString(title))
	fmt.Fprintf(&b, `<text x="%d" y="14" font-weight="600">%s</text>`, padL, template.HTMLEscapeString(title))
	for _, f := range []float64{0, 0.5, 1} {
		yy := y(top * f)
		fmt.Fprintf(&b, `<line class="grid" x1="%d" x2="%d" y1="%.1f" y2="%.1f"/>`, padL, chartW-padR, yy, yy)
		fmt.Fprintf(&b, `<text class="ylabel" x="%d" y="%.1f" text-anchor="end">%s</text>`, padL-6, yy+4, fmtValue(top*f))
	}
	fmt.Fprintf(&b, `<line class="axis" x1="%d" x2="%d" y1="%d" y2="%d"/>`, padL, padL, padT, chartH-padB)
	fmt.Fprintf(&b, `<line class="axis" x1="%d" x2="%d" y1="%d" y2="%d"/>`, padL, chartW-padR, chartH-padB, chartH-padB)
	layout := "15:04"
	if to.Sub(from) > 24*time.Hour {
		layout = "Jan 02"
	}
	for i, f := range []float64{0, 0.5, 1} {
		t := from.Add(time.Duration(f * float64(to.Sub(from))))
		anchor := [...]string{"start", "middle", "end"}[i]
		fmt.Fprintf(&b, `<text class="xlabel" x="%.1f" y="%d" text-anchor="%s">%s</text>`, x(t), chartH-10, anchor, t.UTC().Format(layout)+"Z")
	}
	if len(pts) == 0 {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">no %ss in this span</text>`, padL+plotW/2, padT+plotH/2, src.point)
	}
	var d strings.Builder
	for i, p := range pts {
		cmd := "L"
		if i == 0 || p.At.Sub(pts[i-1].At) > 3*max(every, to.Sub(from)/maxPoints) {
			cmd = "M"
		}
		fmt.Fprintf(&d, "%s%.1f %.1f ", cmd, x(p.At), y(p.V))
	}
	if d.Len() > 0 {
		fmt.Fprintf(&b, `<path class="line" d="%s"/>`, strings.TrimSpace(d.String()))
		last := pts[len(pts)-1]
		fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="2.5"/>`, x(last.At), y(last.V))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// downsample keeps at most maxPoints points of pts: the largest of each
// interval, so that a spike is not averaged away.
func downsample(pts []point, from, to time.Time) []point {
	if len(pts) <= maxPoints {
		return pts
	}
	width := to.Sub(from) / maxPoints
	var out []point
	last := int64(-1)
	for _, p := range pts {
		if b := int64(p.At.Sub(from) / width); b != last {
			last = b
			out = append(out, p)
		} else if p.V > out[len(out)-1].V {
			out[len(out)-1].V = p.V
		}
	}
	return out
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 1 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

func fmtValue(v float64) string {
	if v >= 10_000 {
		return fmt.Sprintf("%.0fk", v/1000)
	}
	if v != math.Trunc(v) {
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.0f", v)
}

// summarize says in words what a chart shows: the last value, the
// largest and the smallest, when, and how many points src gave.
func summarize(title string, pts []point, src seriesSource) string {
	if len(pts) == 0 {
		return title + ": no " + src.point + "s in this span."
	}
	hi, lo := pts[0], pts[0]
	for _, p := range pts {
		if p.V > hi.V {
			hi = p
		}
		if p.V < lo.V {
			lo = p
		}
	}
	last := pts[len(pts)-1]
	at := func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") }
	return fmt.Sprintf("%s: %s %s (%s); highest %s at %s; lowest %s at %s; %s%s.",
		title, src.latest, fmtValue(last.V), at(last.At), fmtValue(hi.V), at(hi.At), fmtValue(lo.V), at(lo.At), plural(len(pts), src.point), src.per)
}
