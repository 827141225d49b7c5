package chaos

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"golang.org/x/sync/errgroup"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/harness/faultproxy"
	"github.com/sqsworker/sqsworker/harness/sqsdrain"
)

// WorkerPackage is the worker program Run builds when Config.WorkerBinary
// is empty.
const WorkerPackage = "github.com/sqsworker/sqsworker/harness/chaos/cmd/chaosworker"

// Run runs one chaos run: it creates a queue and its DLQ on cfg.SQS, sends
// cfg.Jobs jobs, runs cfg.Workers worker processes through a fault proxy
// while killing and replacing them, then stops the faults and the kills,
// drains the queue, stops the workers, reads the DLQ and what is left in
// the queue, and reconciles everything the workers recorded. The report
// (also written to cfg.Dir as report.json and report.txt) says what the
// run found; an error means the run itself could not be carried out.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	logw := cfg.Log
	if logw == nil {
		logw = io.Discard
	}
	logf := func(format string, args ...any) { fmt.Fprintf(logw, "chaos: "+format+"\n", args...) }
	if cfg.Dir == "" {
		dir, err := os.MkdirTemp("", "sqsworker-chaos-")
		if err != nil {
			return nil, err
		}
		cfg.Dir = dir
	} else {
		if entries, err := os.ReadDir(cfg.Dir); err == nil && len(entries) > 0 {
			return nil, fmt.Errorf("chaos: %s is not empty; give each run a directory of its own (the report reads every file in it)", cfg.Dir)
		}
		if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
			return nil, err
		}
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	if cfg.WorkerBinary == "" {
		logf("building %s", WorkerPackage)
		bin, err := buildWorker(ctx, cfg.Dir, cfg.Race)
		if err != nil {
			return nil, err
		}
		cfg.WorkerBinary = bin
	}
	logf("run directory %s", cfg.Dir)
	if cfg.Producer != nil {
		return runProducer(ctx, cfg, logf)
	}

	direct := directClient(cfg.SQS, cfg.Region)
	target, err := dlq.Setup(ctx, direct, dlq.SetupOptions{
		Name:              fmt.Sprintf("chaos-%s-%d-%d", cfg.Variant, cfg.Seed, time.Now().UnixNano()%1e9),
		FIFO:              cfg.FIFO,
		MaxReceiveCount:   cfg.MaxReceiveCount,
		VisibilityTimeout: cfg.Visibility,
	})
	if err != nil {
		return nil, fmt.Errorf("chaos: creating the queues: %w", err)
	}
	groups := 0
	if cfg.FIFO {
		groups = cfg.Groups
	}
	jobs := MakeJobs(cfg.Jobs, cfg.Mix, groups, cfg.Seed)
	var timing Timing
	begin := time.Now()
	first := jobs
	if b := cfg.Soak.Backlog; b > 0 && b < len(jobs) {
		first = jobs[:b] // the feeder sends the others while the workers work
	}
	var keys *uniqueRun
	var uwc WorkerConfig // the unique variant's part of the worker configuration
	if cfg.Worker.Unique != nil {
		if keys, err = startUnique(ctx, cfg, &uwc); err != nil {
			return nil, err
		}
		defer keys.close()
	}
	var fan *fanoutRun
	if keys != nil {
		err = keys.send(ctx, direct, target.QueueURL, first, cfg.Senders)
	} else if cfg.Fanout != nil {
		if fan, err = startFanout(ctx, cfg, direct, target); err != nil {
			return nil, err
		}
		defer fan.close()
		err = fan.publish(ctx, jobs)
	} else {
		err = sendJobs(ctx, direct, target.QueueURL, first, cfg.FIFO, cfg.Senders)
	}
	if err != nil {
		return nil, err
	}
	timing.Send = time.Since(begin)
	logf("sent %d jobs to %s in %v", len(first), target.QueueURL, timing.Send.Round(time.Millisecond))

	obs := newObserver(cfg.Visibility, cfg.Worker.CallTimeout)
	proxy, stopProxy, err := startProxy(cfg, obs)
	if err != nil {
		return nil, err
	}
	defer stopProxy()

	wc := cfg.Worker
	wc.Endpoint, wc.Region, wc.Queue, wc.Dir = proxy.URL, cfg.Region, target.QueueURL, cfg.Dir
	wc.Unwrap = fan != nil
	if keys != nil {
		wc.Unique = uwc.Unique
	}
	var idem *idemRun
	if wc.Mode == ModeIdempotency {
		if idem, err = startIdem(ctx, cfg, &wc); err != nil {
			return nil, err
		}
		defer idem.close()
	}
	wcPath := filepath.Join(cfg.Dir, "worker.json")
	if err := writeJSON(wcPath, wc); err != nil {
		return nil, err
	}
	fl := &fleet{bin: cfg.WorkerBinary, config: wcPath, dir: cfg.Dir, exitBound: cfg.ShutdownBound() + ExitSlack, keep: cfg.Soak.LongLived}
	defer fl.killAll()

	workStart := time.Now()
	timing.Start = workStart
	keepUp := func() error {
		for _, p := range fl.crashed() {
			logf("worker %s exited without being signalled (%v): %s", p.name, p.waitErr, lastLines(filepath.Join(cfg.Dir, p.name+".out"), 5))
		}
		for n := len(fl.running()); n < cfg.Workers; n++ {
			if _, err := fl.start(); err != nil {
				return err
			}
		}
		return nil
	}
	if err := keepUp(); err != nil {
		return nil, err
	}
	var feed *feeder
	if len(first) < len(jobs) {
		feed = startFeeder(ctx, direct, target.QueueURL, jobs[len(first):], cfg.Soak.Backlog, cfg.Senders)
		defer feed.stop()
	}
	var memory *sampler
	if cfg.Soak.LongLived > 0 {
		if memory, err = startSampler(ctx, cfg, fl, direct, target.QueueURL, feed); err != nil {
			return nil, err
		}
		defer memory.stop()
	}

	// Chaos: faults on, kills at random, until Duration or an empty queue.
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x6b696c6c))
	var nextKill <-chan time.Time
	if cfg.Kills.MaxEvery > 0 {
		nextKill = time.After(cfg.Kills.interval(rng))
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	chaosEnd := time.After(cfg.Duration)
	empty, lastLog := 0, time.Now()
	countErrs := 0
	progress := func(phase string) error {
		n, err := sqsdrain.Count(ctx, direct, target.QueueURL)
		if err != nil {
			// The emulator, on a loaded machine, now and then resets a
			// connection: a count that fails tells nothing, and only a
			// minute of them ends the run.
			if countErrs++; countErrs < 60 {
				logf("%s: %v (not counted; trying again)", phase, err)
				return nil
			}
			return err
		}
		countErrs = 0
		unsent, err := feed.left()
		if err != nil {
			return err
		}
		if n += unsent; n == 0 && (fan == nil || fan.idle()) {
			empty++
		} else {
			empty = 0
		}
		if time.Since(lastLog) >= 5*time.Second {
			lastLog = time.Now()
			c := proxy.Counts()
			var reqs int
			for _, v := range c {
				reqs += v.Requests
			}
			pi, _, _ := fl.info()
			logf("%s %v: %d messages left in the queue (or not sent yet), %d workers started, %d proxy requests",
				phase, time.Since(workStart).Round(time.Second), n, len(pi), reqs)
		}
		return nil
	}
chaos:
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-chaosEnd:
			break chaos
		case <-nextKill:
			if live := fl.killable(); len(live) > 0 {
				p := live[rng.IntN(len(live))]
				if rng.Float64() < cfg.Kills.KillShare {
					fl.kill(p)
				} else {
					fl.terminate(p)
				}
			}
			if err := keepUp(); err != nil {
				return nil, err
			}
			nextKill = time.After(cfg.Kills.interval(rng))
		case <-tick.C:
			if err := keepUp(); err != nil {
				return nil, err
			}
			if err := progress("chaos"); err != nil {
				return nil, err
			}
			if empty >= 2 {
				break chaos
			}
		}
	}
	timing.Chaos = time.Since(workStart)
	proxy.SetRules(nil)
	if idem != nil {
		idem.faultsOff()
	}
	if keys != nil {
		keys.faultsOff()
	}
	// A feeder still sending when the chaos phase ends at its Duration
	// stops: the drain settles what was sent, and only that is reconciled.
	timing.Feed = feed.stop()
	unsent, _ := feed.left()
	feed = nil
	logf("chaos phase over after %v; faults off, draining", timing.Chaos.Round(time.Millisecond))
	if unsent > 0 {
		logf("%d jobs were never sent (the chaos phase ended at its duration first): the run reconciles the %d sent", unsent, len(jobs)-unsent)
	}

	// Drain: no faults, no kills, until the queue is empty.
	drainStart := time.Now()
	drainEnd := time.After(cfg.DrainTimeout)
drain:
	for empty < 2 {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-drainEnd:
			logf("the queue is not empty after the drain timeout (%v)", cfg.DrainTimeout)
			break drain
		case <-tick.C:
			if err := keepUp(); err != nil {
				return nil, err
			}
			if err := progress("drain"); err != nil {
				return nil, err
			}
		}
	}
	timing.Drained = empty >= 2
	timing.Drain = time.Since(drainStart)
	timing.Work = time.Since(workStart)
	logf("drain over after %v; stopping the workers", timing.Drain.Round(time.Millisecond))
	if memory != nil {
		if err := memory.stop(); err != nil {
			return nil, fmt.Errorf("chaos: writing the memory samples: %w", err)
		}
	}
	fl.stopAll()
	procs, names, exitMax := fl.info()
	if wc.Mode == ModeLambda {
		markDeadlineKills(cfg.Dir, procs)
	}
	if err := stopProxy(); err != nil {
		return nil, err
	}

	// The final reads wait for messages a lost receive response hid.
	var notEmpty *sqsdrain.NotEmptyError
	dead, err := sqsdrain.Drain(ctx, direct, target.DLQURL, 2*time.Minute)
	dlqUnread := 0
	if errors.As(err, &notEmpty) {
		dlqUnread, err = notEmpty.Left, nil
	}
	if err != nil {
		return nil, fmt.Errorf("chaos: reading the DLQ: %w", err)
	}
	wait := 2 * sqsdrain.Visibility
	if !timing.Drained {
		wait += cfg.Visibility + cfg.Worker.RetryDelay
	}
	left, err := sqsdrain.Drain(ctx, direct, target.QueueURL, wait)
	unread := 0
	if errors.As(err, &notEmpty) {
		unread, err = notEmpty.Left, nil
	}
	if err != nil {
		return nil, fmt.Errorf("chaos: reading what is left in the queue: %w", err)
	}
	files, err := readWorkerFiles(cfg.Dir, names)
	if err != nil {
		return nil, err
	}
	ev := evidence{Config: cfg, Jobs: jobs[:len(jobs)-unsent], Unsent: unsent, Files: files, Names: names, Procs: procs, Deletes: obs.deletes, LostSends: obs.lostSends,
		Counts: proxy.Counts(), Timing: timing, ExitMax: exitMax, Unread: unread, DLQUnread: dlqUnread, LongLived: fl.longLived()}
	if err := readSoakFiles(cfg.Dir, &ev); err != nil {
		return nil, err
	}
	if idem != nil {
		if ev.Idem, err = idem.finish(ctx); err != nil {
			return nil, err
		}
		if err := readIdemFiles(cfg.Dir, names, ev.Idem); err != nil {
			return nil, err
		}
	}
	if wc.Mode == ModeLambda {
		if ev.Invocations, err = readInvocations(cfg.Dir, names); err != nil {
			return nil, err
		}
	}
	if keys != nil {
		if ev.Unique, err = keys.finish(ctx, direct, cfg.Dir); err != nil {
			return nil, err
		}
	}
	for _, m := range dead {
		c := dlqCopy{Job: "?"}
		if j, err := parseMessageJob(aws.ToString(m.Body)); err == nil {
			c.Job = j.ID
		}
		c.Provenance, c.HasProvenance = dlq.ParseProvenance(m.MessageAttributes)
		ev.DLQ = append(ev.DLQ, c)
	}
	for _, m := range left {
		if j, err := parseMessageJob(aws.ToString(m.Body)); err == nil {
			ev.Pending = append(ev.Pending, j.ID)
		}
	}
	if fan != nil {
		if err := fan.collect(ctx, direct, &ev); err != nil {
			return nil, err
		}
	}
	if err := writeJSON(filepath.Join(cfg.Dir, evidenceFile), ev); err != nil {
		return nil, err
	}
	report := reconcile(ev)
	if report.Memory != nil {
		// The peak includes holding and reconciling every record.
		report.Memory.OrchestratorPeak, _ = readStatus(os.Getpid(), "VmHWM")
	}
	if err := writeJSON(filepath.Join(cfg.Dir, "report.json"), report); err != nil {
		return report, err
	}
	return report, os.WriteFile(filepath.Join(cfg.Dir, "report.txt"), []byte(report.Text()), 0o644)
}

// evidenceFile is where Run saves its evidence.
const evidenceFile = "evidence.json"

// Rereport reconciles a finished run's directory again (with this
// version's rules): the evidence Run saved, the worker files, and the
// proxy's log when the run kept it (without it, deletes and dropped sends
// are unknown and their duplicates unexplained).
func Rereport(dir string) (*Report, error) {
	if data, err := os.ReadFile(filepath.Join(dir, producerEvidenceFile)); err == nil {
		return rereportProducer(data)
	}
	data, err := os.ReadFile(filepath.Join(dir, evidenceFile))
	if err != nil {
		return nil, err
	}
	var ev evidence
	if err := json.Unmarshal(data, &ev); err != nil {
		return nil, fmt.Errorf("%s: %w", evidenceFile, err)
	}
	ev.Config.Dir = dir
	groups := 0
	if ev.Config.FIFO {
		groups = ev.Config.Groups
	}
	ev.Jobs = MakeJobs(ev.Config.Jobs, ev.Config.Mix, groups, ev.Config.Seed)
	ev.Jobs = ev.Jobs[:len(ev.Jobs)-ev.Unsent]
	if ev.Files, err = readWorkerFiles(dir, ev.Names); err != nil {
		return nil, err
	}
	if ev.Idem != nil {
		if err := readIdemFiles(dir, ev.Names, ev.Idem); err != nil {
			return nil, err
		}
	}
	if ev.Unique != nil {
		if err := eachLineOf(dir, releasesFile, func(r ReleaseRecord) { ev.Unique.Releases = append(ev.Unique.Releases, r) }); err != nil {
			return nil, err
		}
	}
	if ev.Config.Worker.Mode == ModeLambda {
		if ev.Invocations, err = readInvocations(dir, ev.Names); err != nil {
			return nil, err
		}
	}
	obs := newObserver(ev.Config.Visibility, ev.Config.Worker.CallTimeout)
	if err := eachLine(filepath.Join(dir, "proxy.jsonl"), obs.observe); err != nil {
		return nil, err
	}
	ev.Deletes, ev.LostSends = obs.deletes, obs.lostSends
	if err := readSoakFiles(dir, &ev); err != nil {
		return nil, err
	}
	return reconcile(ev), nil
}

func (c Config) check() error {
	switch {
	case c.SQS == "":
		return errors.New("chaos: Config.SQS is empty; give the emulator's endpoint (e.g. run through `make chaos`, which starts one)")
	case c.Jobs <= 0 || c.Workers <= 0:
		return fmt.Errorf("chaos: Jobs (%d) and Workers (%d) must be positive", c.Jobs, c.Workers)
	case c.Visibility < time.Second || c.Duration <= 0 || c.DrainTimeout <= 0:
		return errors.New("chaos: Visibility (at least 1 s), Duration and DrainTimeout must be set; start from Variant")
	case c.Worker.Concurrency <= 0 || c.Worker.ShutdownTimeout <= 0 || c.Worker.FlushTimeout <= 0 || c.Worker.MaxAttempts <= 0:
		return errors.New("chaos: Worker.Concurrency, ShutdownTimeout, FlushTimeout and MaxAttempts must be set; start from Variant")
	case c.Mix.Slow > 0 && c.Mix.SlowFor <= c.Visibility && c.Worker.Mode != ModeLambda:
		return fmt.Errorf("chaos: slow jobs (%v) must outlive the visibility timeout (%v)", c.Mix.SlowFor, c.Visibility)
	case c.FIFO && c.Groups <= 0:
		return errors.New("chaos: a FIFO run needs Groups")
	}
	return c.Soak.check(c.Workers, c.FIFO)
}

// buildWorker builds the worker program into dir.
func buildWorker(ctx context.Context, dir string, race bool) (string, error) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("chaos: the go command is needed to build the worker program: %w", err)
	}
	bin := filepath.Join(dir, "chaosworker")
	args := []string{"build", "-o", bin}
	if race {
		args = append(args, "-race")
	}
	cmd := exec.CommandContext(ctx, gobin, append(args, WorkerPackage)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("chaos: go build %s: %v\n%s", WorkerPackage, err, out)
	}
	return bin, nil
}

// directClient talks to the emulator without the proxy.
func directClient(endpoint, region string) *sqs.Client {
	return sqs.New(sqs.Options{
		BaseEndpoint: aws.String(endpoint),
		Region:       region,
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		// The orchestrator's sends and reads ride out the emulator's
		// occasional connection resets on a loaded machine.
		RetryMaxAttempts: 10,
		HTTPClient: awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
			t.MaxIdleConnsPerHost = 32
		}),
	})
}

// sendJobs sends every job, 10 per call: senders calls at a time (zero: 8)
// on a standard queue, one at a time in job order on a FIFO queue (so each
// group's order is the jobs' order).
func sendJobs(ctx context.Context, client *sqs.Client, url string, jobs []Job, fifo bool, senders int) error {
	var g errgroup.Group
	g.SetLimit(cmp.Or(senders, 8))
	if fifo {
		g.SetLimit(1)
	}
	for start := 0; start < len(jobs); start += 10 {
		batch := jobs[start:min(start+10, len(jobs))]
		g.Go(func() error {
			in := &sqs.SendMessageBatchInput{QueueUrl: aws.String(url)}
			for i, j := range batch {
				e := types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(j.Body())}
				if fifo {
					e.MessageGroupId, e.MessageDeduplicationId = aws.String(j.Group), aws.String(j.ID)
				}
				in.Entries = append(in.Entries, e)
			}
			out, err := client.SendMessageBatch(ctx, in)
			if err == nil && len(out.Failed) > 0 {
				err = fmt.Errorf("%d entries failed: %s", len(out.Failed), aws.ToString(out.Failed[0].Message))
			}
			if err != nil {
				return fmt.Errorf("chaos: sending jobs: %w", err)
			}
			return nil
		})
	}
	return g.Wait()
}

// startProxy starts the run's fault proxy in front of cfg.SQS with the
// run's faults, reporting every request to obs and, when cfg.ProxyLog is
// set, logging it to Dir/proxy.jsonl. stop closes the proxy and writes
// the log out; it may be called more than once (the first call's error
// is every call's).
func startProxy(cfg Config, obs *observer) (proxy *faultproxy.Proxy, stop func() error, err error) {
	popts := faultproxy.Options{Upstream: cfg.SQS, Rules: cfg.Faults, Seed: cfg.Seed, OnRequest: obs.observe}
	var f *os.File
	var log *bufio.Writer
	if cfg.ProxyLog {
		if f, err = os.Create(filepath.Join(cfg.Dir, "proxy.jsonl")); err != nil {
			return nil, nil, err
		}
		log = bufio.NewWriterSize(f, 1<<20)
		popts.Log = log
	}
	if proxy, err = faultproxy.Start(popts); err != nil {
		if f != nil {
			f.Close()
		}
		return nil, nil, err
	}
	var once sync.Once
	var stopErr error
	return proxy, func() error {
		once.Do(func() {
			proxy.Close()
			if f != nil {
				stopErr = errors.Join(log.Flush(), f.Close())
			}
		})
		return stopErr
	}, nil
}

// observer keeps what the proxy saw of each receipt handle's deletes, how
// many times each message body was sent by a call that reached SQS but
// whose answer the client never got, and how many times by a call that
// reached SQS at all (answered or not).
type observer struct {
	mu        sync.Mutex
	deletes   map[string]deleteSeen
	lostSends map[string]int // by faultproxy.BodyDigest
	reached   map[string]int // by faultproxy.BodyDigest
	// vis is the queue's visibility timeout; leases the earliest moment,
	// by the proxy's clock, each received handle's message may have become
	// visible again (the start of its receive, or of its last extension SQS
	// answered, plus vis), until a delete carrying it reached SQS in time.
	vis    time.Duration
	leases map[string]time.Time
	// unread is how long a call may take at the proxy before its client,
	// whose timer started earlier and which on a loaded machine reads
	// later, may have given up on the answer (zero: never).
	unread time.Duration
}

// newObserver returns an observer of a queue whose visibility timeout is
// vis (zero: leases are not followed, and every delete that reached SQS
// counts as in time), for clients whose calls time out after callTimeout
// (zero: an answer the proxy wrote was read).
func newObserver(vis, callTimeout time.Duration) *observer {
	o := &observer{deletes: map[string]deleteSeen{}, lostSends: map[string]int{}, reached: map[string]int{}, vis: vis, leases: map[string]time.Time{}}
	if callTimeout > 0 {
		o.unread = max(callTimeout-time.Second, callTimeout/2)
	}
	return o
}

func (o *observer) observe(e faultproxy.Entry) {
	switch e.Action {
	case "ReceiveMessage":
		if o.vis > 0 && e.Status == http.StatusOK {
			o.mu.Lock()
			for _, h := range e.Received {
				o.leases[h] = e.Time.Add(o.vis)
			}
			o.mu.Unlock()
		}
		return
	case "ChangeMessageVisibilityBatch", "ChangeMessageVisibility":
		if o.vis > 0 && e.Status == http.StatusOK {
			o.mu.Lock()
			for _, h := range e.Handles {
				if d, ok := o.leases[h]; ok && e.Time.Add(o.vis).After(d) {
					o.leases[h] = e.Time.Add(o.vis)
				}
			}
			o.mu.Unlock()
		}
		return
	case "SendMessageBatch", "SendMessage":
		lost := e.Fault == faultproxy.DropResponse || e.Fault == faultproxy.UpstreamError || e.Fault == faultproxy.ClientGone ||
			// An answer written so late that its client may have timed
			// out first: the proxy sees that only when the client left
			// before the answer was written.
			(o.unread > 0 && e.Status == http.StatusOK && time.Duration(e.Millis*float64(time.Millisecond)) >= o.unread)
		o.mu.Lock()
		for _, b := range e.Bodies {
			if lost {
				o.lostSends[b]++
			}
			// A send SQS answered 200 (whether the client got the answer
			// or not: its timeout can end the call with the answer unread)
			// or whose answer the proxy could not read may have enqueued.
			if e.Status == http.StatusOK || e.Fault == faultproxy.UpstreamError {
				o.reached[b]++
			}
		}
		o.mu.Unlock()
		return
	case "DeleteMessageBatch", "DeleteMessage":
	default:
		return
	}
	faulted := e.Fault != faultproxy.None
	reached := e.Status == http.StatusOK
	// SQS applied the call somewhere between its start and its answer.
	applied := e.Time.Add(time.Duration(e.Millis * float64(time.Millisecond)))
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, h := range e.Handles {
		d := o.deletes[h]
		d.Faulted = d.Faulted || faulted
		if reached {
			// A delete the emulator may have applied after the message
			// became visible again is no proof that it deleted it: SQS
			// (and fauxqs) answer success for a handle no longer in
			// flight, and the message comes back.
			if lapse, ok := o.leases[h]; ok && applied.After(lapse) {
				d.ReachedLate = true
			} else {
				d.Reached = true
				delete(o.leases, h)
			}
		}
		o.deletes[h] = d
	}
}

func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}
