package chaos

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/harness/sqsdrain"
	"github.com/sqsworker/sqsworker/worker"
)

// Soak is what a soak run watches beyond every run's checks: the memory of
// worker processes that live through the whole run while the others are
// killed and replaced around them. A zero Soak (LongLived 0) is not a
// soak.
type Soak struct {
	// LongLived is how many of the first worker processes started are never
	// signalled during the chaos phase (the kills pick among the others).
	// The orchestrator samples their RSS (/proc/PID/status VmRSS), and its
	// own, every SampleEvery into memory.jsonl; every worker process writes
	// its Go heap figures as often into its heap file.
	LongLived   int           `json:"longLived"`
	SampleEvery time.Duration `json:"sampleEvery"`
	// WarmUp is the share of the jobs settled (sent, minus what the queue
	// still counts) from which a long-lived worker's RSS is its baseline:
	// the first sample at or past it. MaxGrowth is how far the last sample
	// (the queue drained, just before the workers are stopped) may exceed
	// that baseline: 0.2 is 20%.
	WarmUp    float64 `json:"warmUp"`
	MaxGrowth float64 `json:"maxGrowth"`
	// MinSamples is the fewest samples from the warm-up on that each
	// long-lived worker must have, or the run did not watch its memory.
	MinSamples int `json:"minSamples"`
	// Backlog, when positive, is how many jobs are sent before the workers
	// start; a feeder sends the others while they work, topping the queue
	// up to Backlog whenever it counts Backlog/2 or fewer. The emulator
	// dequeues with Array.shift, which moves its whole queue each time: at
	// 1,000,000 messages queued the workers got 45 jobs/s.
	Backlog int `json:"backlog,omitempty"`
}

// memoryFile is where the orchestrator writes its RSS samples.
const memoryFile = "memory.jsonl"

// heapFile is where each worker process writes its heap samples
// ("w1.heap.jsonl", …) when WorkerConfig.HeapEvery is set.
const heapFile = ".heap.jsonl"

// MemorySample is one RSS reading of a process, taken by the orchestrator.
type MemorySample struct {
	Time    time.Time `json:"t"`
	Process string    `json:"p"` // the worker's name, or "orchestrator"
	PID     int       `json:"pid"`
	RSS     int64     `json:"rss"` // bytes (VmRSS)
	// Settled is the jobs sent minus the messages the queue counted
	// (visible, in flight and delayed) at the time: -1 when the count
	// failed.
	Settled int `json:"settled"`
}

// HeapSample is one reading of a worker process's Go runtime, taken by the
// process itself (runtime/metrics) with its worker's counters.
type HeapSample struct {
	Time time.Time `json:"t"`
	// HeapLive is the heap the last GC found live; HeapObjects the heap
	// occupied by objects, live or not yet swept; Total all memory the Go
	// runtime has mapped.
	HeapLive    uint64 `json:"heapLive"`
	HeapObjects uint64 `json:"heapObjects"`
	Total       uint64 `json:"total"`
	Goroutines  uint64 `json:"goroutines"`
	Received    int64  `json:"received"` // worker.Stats.Received so far
}

// heapMetrics are the runtime/metrics a HeapSample reads, in its order.
var heapMetrics = []string{"/gc/heap/live:bytes", "/memory/classes/heap/objects:bytes", "/memory/classes/total:bytes", "/sched/goroutines:goroutines"}

// sampleHeap writes a HeapSample to base+heapFile every interval (and one
// at once) until the returned stop is called; stop writes a last one.
func sampleHeap(base string, w *worker.Worker, every time.Duration) (stop func(), err error) {
	out, err := openAppender(base + heapFile)
	if err != nil {
		return nil, err
	}
	read := func() {
		s := make([]metrics.Sample, len(heapMetrics))
		for i, name := range heapMetrics {
			s[i].Name = name
		}
		metrics.Read(s)
		v := func(i int) uint64 {
			if s[i].Value.Kind() == metrics.KindUint64 {
				return s[i].Value.Uint64()
			}
			return 0
		}
		// A failed write loses one sample; the report counts the samples.
		_ = out.write(HeapSample{Time: time.Now(), HeapLive: v(0), HeapObjects: v(1), Total: v(2), Goroutines: v(3), Received: w.Stats().Received})
	}
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		t := time.NewTicker(every)
		defer t.Stop()
		read()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				read()
			}
		}
	}()
	return func() {
		close(done)
		<-exited
		read()
		out.close()
	}, nil
}

// readStatus returns a field of /proc/PID/status in bytes (VmRSS, VmHWM:
// the kernel gives them in kB).
func readStatus(pid int, field string) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("chaos: reading a process's memory needs Linux's /proc: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), field+":")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("chaos: /proc/%d/status %s: %w", pid, field, err)
		}
		return kb << 10, nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("chaos: /proc/%d/status has no %s", pid, field)
}

// longLived returns the names of the processes never to be signalled
// during the chaos phase.
func (f *fleet) longLived() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, p := range f.procs {
		if p.longLived {
			out = append(out, p.name)
		}
	}
	return out
}

// killable returns the running processes the chaos phase may signal: the
// running ones but the long-lived.
func (f *fleet) killable() []*proc {
	return slices.DeleteFunc(f.running(), func(p *proc) bool { return p.longLived })
}

// sampler is the orchestrator's RSS sampling of the long-lived workers
// and itself.
type sampler struct {
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

// startSampler samples every cfg.Soak.SampleEvery (and once at once) until
// stop, writing to dir/memory.jsonl.
func startSampler(ctx context.Context, cfg Config, fl *fleet, client *sqs.Client, url string, feed *feeder) (*sampler, error) {
	out, err := openAppender(filepath.Join(cfg.Dir, memoryFile))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	s := &sampler{cancel: cancel, done: make(chan struct{})}
	self := os.Getpid()
	sample := func() {
		settled := -1
		if n, err := sqsdrain.Count(ctx, client, url); err == nil {
			unsent, _ := feed.left()
			settled = cfg.Jobs - n - unsent
		} else if ctx.Err() != nil {
			return // stopped during the count: the last sample is the one before
		}
		now := time.Now()
		for _, p := range fl.running() {
			if !p.longLived {
				continue
			}
			rss, err := readStatus(p.cmd.Process.Pid, "VmRSS")
			if err != nil {
				// The process may have just exited; the report counts
				// the samples each long-lived worker got.
				continue
			}
			if err := out.write(MemorySample{Time: now, Process: p.name, PID: p.cmd.Process.Pid, RSS: rss, Settled: settled}); err != nil && s.err == nil {
				s.err = err
			}
		}
		rss, err := readStatus(self, "VmRSS")
		if err == nil {
			err = out.write(MemorySample{Time: now, Process: orchestrator, PID: self, RSS: rss, Settled: settled})
		}
		if err != nil && s.err == nil {
			s.err = err
		}
	}
	go func() {
		defer close(s.done)
		defer out.close()
		t := time.NewTicker(cfg.Soak.SampleEvery)
		defer t.Stop()
		for {
			sample()
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return s, nil
}

// stop ends the sampling and returns the first error writing a sample.
func (s *sampler) stop() error {
	s.cancel()
	<-s.done
	return s.err
}

// orchestrator is the Process of the orchestrator's own samples.
const orchestrator = "orchestrator"

// readSoakFiles reads a soak run's samples into the evidence.
func readSoakFiles(dir string, ev *evidence) error {
	if ev.Config.Soak.LongLived == 0 {
		return nil
	}
	var err error
	if ev.Memory, err = readLines[MemorySample](filepath.Join(dir, memoryFile)); err != nil {
		return err
	}
	ev.Heap = map[string][]HeapSample{}
	for _, name := range ev.LongLived {
		if ev.Heap[name], err = readLines[HeapSample](filepath.Join(dir, name+heapFile)); err != nil {
			return err
		}
	}
	return nil
}

// MemoryReport is what a soak run found of memory.
type MemoryReport struct {
	Workers []WorkerMemory `json:"workers"`
	// OrchestratorMax is the most RSS the orchestrator's samples showed
	// during the run; OrchestratorPeak its peak RSS (VmHWM) once the
	// report was made, reading and reconciling every record included
	// (zero when reconciled again later).
	OrchestratorMax  int64 `json:"orchestratorMax"`
	OrchestratorPeak int64 `json:"orchestratorPeak,omitempty"`
	// Unsent counts the jobs never sent (the chaos phase ended at its
	// Duration before the feeder was done); Jobs counts the others.
	Unsent int `json:"unsent,omitempty"`
}

// WorkerMemory is one long-lived worker's memory over the run.
type WorkerMemory struct {
	Worker string `json:"worker"`
	// Samples counts the RSS samples from the warm-up on.
	Samples int `json:"samples"`
	// WarmUp is the first sample at or past the warm-up, End the last.
	WarmUp MemorySample `json:"warmUp"`
	End    MemorySample `json:"end"`
	// Growth is End's RSS over WarmUp's, minus 1 (0.05: 5% more).
	Growth float64 `json:"growth"`
	// Min, Median and Max are the RSS from the warm-up on.
	Min    int64 `json:"min"`
	Median int64 `json:"median"`
	Max    int64 `json:"max"`
	// Points are samples at about every tenth of the jobs from the
	// warm-up on, for the series.
	Points []MemorySample `json:"points"`
	// HeapWarmUp and HeapEnd are the live heap the worker reported nearest
	// WarmUp and at its end; GoroutinesMax the most goroutines it
	// reported from the warm-up on; HeapSamples its heap samples.
	HeapWarmUp    uint64 `json:"heapWarmUp"`
	HeapEnd       uint64 `json:"heapEnd"`
	GoroutinesMax uint64 `json:"goroutinesMax"`
	HeapSamples   int    `json:"heapSamples"`
	// Received is what the worker received over the run (its last heap
	// sample), so its share of the jobs.
	Received int64 `json:"received"`
	// Signal is how the process ended: SIGTERM once the queue was
	// drained, or a failure.
	Signal string `json:"signal"`
}

// memory summarises the soak's samples (nil for a run that is no soak).
func (r *Report) memory(ev evidence) {
	soak := ev.Config.Soak
	if soak.LongLived == 0 {
		return
	}
	m := &MemoryReport{Unsent: ev.Unsent}
	warm := int(soak.WarmUp * float64(ev.Config.Jobs))
	byProc := map[string][]MemorySample{}
	for _, s := range ev.Memory {
		if s.Process == orchestrator {
			m.OrchestratorMax = max(m.OrchestratorMax, s.RSS)
			continue
		}
		byProc[s.Process] = append(byProc[s.Process], s)
	}
	for _, name := range ev.LongLived {
		wm := WorkerMemory{Worker: name, Signal: ev.Procs[name].Signal}
		p := ev.Procs[name]
		switch {
		case p.Crashed:
			wm.Signal = "crashed"
		case p.Hung:
			wm.Signal = "hung"
		}
		samples := byProc[name]
		from := slices.IndexFunc(samples, func(s MemorySample) bool { return s.Settled >= warm })
		if from >= 0 {
			after := samples[from:]
			wm.Samples, wm.WarmUp, wm.End = len(after), after[0], after[len(after)-1]
			if wm.WarmUp.RSS > 0 {
				wm.Growth = float64(wm.End.RSS)/float64(wm.WarmUp.RSS) - 1
			}
			rss := make([]int64, len(after))
			for i, s := range after {
				rss[i] = s.RSS
			}
			slices.Sort(rss)
			wm.Min, wm.Median, wm.Max = rss[0], rss[len(rss)/2], rss[len(rss)-1]
			step := max((ev.Config.Jobs-warm)/10, 1)
			next := warm
			for _, s := range after {
				if s.Settled >= next {
					wm.Points = append(wm.Points, s)
					next = s.Settled + step
				}
			}
			if last := wm.Points[len(wm.Points)-1]; last != wm.End {
				wm.Points = append(wm.Points, wm.End)
			}
		}
		heap := ev.Heap[name]
		wm.HeapSamples = len(heap)
		if len(heap) > 0 {
			last := heap[len(heap)-1]
			wm.HeapEnd, wm.Received = last.HeapLive, last.Received
			at := wm.WarmUp.Time
			i, _ := slices.BinarySearchFunc(heap, at, func(h HeapSample, t time.Time) int { return h.Time.Compare(t) })
			wm.HeapWarmUp = heap[min(i, len(heap)-1)].HeapLive
			for _, h := range heap[min(i, len(heap)-1):] {
				wm.GoroutinesMax = max(wm.GoroutinesMax, h.Goroutines)
			}
		}
		m.Workers = append(m.Workers, wm)
	}
	r.Memory = m
}

// memoryFailures lists what the soak's memory check broke.
func (r *Report) memoryFailures() []string {
	m, soak := r.Memory, r.Config.Soak
	if m == nil {
		return nil
	}
	var f []string
	if len(m.Workers) < soak.LongLived {
		f = append(f, fmt.Sprintf("%d long-lived workers started, %d wanted", len(m.Workers), soak.LongLived))
	}
	for _, w := range m.Workers {
		switch {
		case w.Samples < max(soak.MinSamples, 2):
			f = append(f, fmt.Sprintf("long-lived worker %s has %d RSS samples from the warm-up (%.0f%% of the jobs settled) on, fewer than %d: its memory was not watched",
				w.Worker, w.Samples, 100*soak.WarmUp, max(soak.MinSamples, 2)))
		case w.Growth > soak.MaxGrowth:
			f = append(f, fmt.Sprintf("long-lived worker %s's RSS grew %.1f%% from the warm-up (%s at %d jobs settled) to the end (%s), more than %.0f%%",
				w.Worker, 100*w.Growth, mib(w.WarmUp.RSS), w.WarmUp.Settled, mib(w.End.RSS), 100*soak.MaxGrowth))
		}
		if w.Signal != "SIGTERM" {
			f = append(f, fmt.Sprintf("long-lived worker %s did not live to the end of the run (%s)", w.Worker, cmp.Or(w.Signal, "still running")))
		}
		if w.HeapSamples == 0 {
			f = append(f, fmt.Sprintf("long-lived worker %s wrote no heap samples (%s%s)", w.Worker, w.Worker, heapFile))
		}
	}
	return f
}

// text is the memory section of the report's text.
func (m *MemoryReport) text(p func(string, ...any), r *Report) {
	soak, jobs, send := r.Config.Soak, r.Jobs, r.Timing.Send
	first := jobs
	if soak.Backlog > 0 {
		first = min(soak.Backlog, jobs)
	}
	p("soak: seeded %d jobs in %v before the workers started (%.0f jobs/s, 10 per SendMessageBatch, %d calls at a time); the other %d sent while they worked, in %v of sending",
		first, send.Round(time.Millisecond), float64(first)/max(send.Seconds(), 1e-9), cmp.Or(r.Config.Senders, 8), jobs-first, r.Timing.Feed.Round(time.Millisecond))
	if m.Unsent > 0 {
		p("  CUT SHORT: the chaos phase ended at its duration (%v) with %d of the %d jobs not yet sent; the report covers the %d sent",
			r.Config.Duration, m.Unsent, r.Config.Jobs, jobs)
	}
	p("  RSS sampled every %v; warm-up: %.0f%% of the jobs settled; bound: +%.0f%%", soak.SampleEvery, 100*soak.WarmUp, 100*soak.MaxGrowth)
	for _, w := range m.Workers {
		p("  long-lived %s (%s at the end, %d received): RSS warm-up %s at %d settled, end %s at %d settled: %+.1f%%; from the warm-up on (%d samples) min %s, median %s, max %s",
			w.Worker, w.Signal, w.Received, mib(w.WarmUp.RSS), w.WarmUp.Settled, mib(w.End.RSS), w.End.Settled, 100*w.Growth, w.Samples, mib(w.Min), mib(w.Median), mib(w.Max))
		p("    live heap %s at the warm-up, %s at the end; at most %d goroutines", mib(int64(w.HeapWarmUp)), mib(int64(w.HeapEnd)), w.GoroutinesMax)
		var pts []string
		for _, s := range w.Points {
			pts = append(pts, fmt.Sprintf("%d→%s", s.Settled, mib(s.RSS)))
		}
		p("    series (jobs settled→RSS): %s", strings.Join(pts, ", "))
	}
	p("  orchestrator RSS: at most %s sampled during the run, peak %s (VmHWM, reconciling included)", mib(m.OrchestratorMax), mib(m.OrchestratorPeak))
}

// mib formats bytes as MiB.
func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// check validates a soak configuration.
func (s Soak) check(workers int, fifo bool) error {
	switch {
	case s.Backlog < 0 || s.Backlog > 0 && fifo:
		return errors.New("chaos: Soak.Backlog must be positive, and is for a standard queue (a FIFO run sends its jobs in order, up front)")
	case s.LongLived == 0:
		return nil
	case s.LongLived < 0 || s.LongLived >= workers:
		return fmt.Errorf("chaos: Soak.LongLived (%d) must leave some of the %d workers to kill", s.LongLived, workers)
	case s.SampleEvery <= 0 || s.WarmUp < 0 || s.WarmUp >= 1 || s.MaxGrowth <= 0:
		return errors.New("chaos: a soak needs SampleEvery, a WarmUp share below 1 and MaxGrowth; start from Variant(\"soak\")")
	}
	return nil
}

// soakConfig is the soak variant: the scale variant's settings for
// 1,000,000 jobs, one long-lived worker among the six.
func soakConfig(c Config) Config {
	c.Jobs, c.Workers, c.Senders = 1_000_000, 6, 16
	c.Mix.Slow = 0.005
	c.Faults = chaosFaults()
	c.Kills = Kills{MinEvery: time.Second, MaxEvery: 4 * time.Second, KillShare: 0.5}
	c.Duration, c.DrainTimeout = 3*time.Hour, 20*time.Minute
	c.Worker.Concurrency, c.Worker.CallTimeout = 32, 5*time.Second
	c.Worker.HeapEvery = 5 * time.Second
	c.Soak = Soak{LongLived: 1, SampleEvery: 5 * time.Second, WarmUp: 0.1, MaxGrowth: 0.2, MinSamples: 10, Backlog: 100_000}
	return c
}

// feeder sends a run's jobs after the first Soak.Backlog while the workers
// work, keeping the queue from holding many more than Backlog.
type feeder struct {
	unsent  atomic.Int64
	sending atomic.Int64 // nanoseconds spent sending
	done    chan struct{}
	cancel  context.CancelFunc
	err     atomic.Pointer[error]
}

// feedEvery is how often the feeder counts the queue.
const feedEvery = 250 * time.Millisecond

// startFeeder sends jobs to url, topping the queue up to backlog whenever
// it counts backlog/2 or fewer messages, senders calls at a time, until
// every job is sent or stop.
func startFeeder(ctx context.Context, client *sqs.Client, url string, jobs []Job, backlog, senders int) *feeder {
	ctx, cancel := context.WithCancel(ctx)
	f := &feeder{done: make(chan struct{}), cancel: cancel}
	f.unsent.Store(int64(len(jobs)))
	go func() {
		defer close(f.done)
		t := time.NewTicker(feedEvery)
		defer t.Stop()
		for len(jobs) > 0 {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			n, err := sqsdrain.Count(ctx, client, url)
			if err != nil || n > backlog/2 {
				continue // a failed count is tried again at the next tick
			}
			k := min(backlog-n, len(jobs))
			begin := time.Now()
			if err := sendJobs(ctx, client, url, jobs[:k], false, senders); err != nil {
				if ctx.Err() == nil {
					f.err.Store(&err)
				}
				return
			}
			f.sending.Add(int64(time.Since(begin)))
			jobs = jobs[k:]
			f.unsent.Add(-int64(k))
		}
	}()
	return f
}

// left returns the jobs not sent yet, and the error that stopped the
// feeder. A nil feeder has sent everything.
func (f *feeder) left() (int, error) {
	if f == nil {
		return 0, nil
	}
	if err := f.err.Load(); err != nil {
		return int(f.unsent.Load()), *err
	}
	return int(f.unsent.Load()), nil
}

// stop stops the feeder and returns how long it spent sending.
func (f *feeder) stop() time.Duration {
	if f == nil {
		return 0
	}
	f.cancel()
	<-f.done
	return time.Duration(f.sending.Load())
}
