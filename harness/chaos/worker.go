package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/fanout"
	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/worker"
)

// WorkerConfig is what a worker process is told (as JSON, in a file the
// orchestrator writes).
type WorkerConfig struct {
	Endpoint string `json:"endpoint"` // the fault proxy's URL
	Region   string `json:"region"`
	Queue    string `json:"queue"` // the source queue's URL
	Dir      string `json:"dir"`   // where the process writes its files

	Concurrency     int           `json:"concurrency"`
	ShutdownTimeout time.Duration `json:"shutdownTimeout"`
	FlushTimeout    time.Duration `json:"flushTimeout"`
	CallTimeout     time.Duration `json:"callTimeout"`
	StartupTimeout  time.Duration `json:"startupTimeout"`
	WaitTime        time.Duration `json:"waitTime"`
	// RetryDelay is the delay before each retry of a failed job;
	// MaxAttempts the attempts before the worker gives up and dead-letters.
	RetryDelay  time.Duration `json:"retryDelay"`
	MaxAttempts int           `json:"maxAttempts"`
	// Unwrap puts fanout.Unwrap in front of the handler (the queue gets
	// SNS envelopes).
	Unwrap bool `json:"unwrap,omitempty"`

	// Mode is what the process runs: "" a worker.Worker, ModeIdempotency
	// a worker.Worker whose handler an idempotency.Guard wraps (see
	// IdemConfig), ModeLambda sqslambda.RunLocal (see LambdaConfig).
	Mode   string        `json:"mode,omitempty"`
	Idem   *IdemConfig   `json:"idempotency,omitempty"`
	Lambda *LambdaConfig `json:"lambda,omitempty"`
	// Unique, when set, has the worker's OnSettled free the jobs' unique
	// keys too (the unique variant; see UniqueConfig).
	Unique *UniqueConfig `json:"unique,omitempty"`
	// HeapEvery, when positive, has the process write a HeapSample (its Go
	// heap and its worker's counters) this often to its heap file.
	HeapEvery time.Duration `json:"heapEvery,omitempty"`
}

// LoadWorkerConfig reads a WorkerConfig file.
func LoadWorkerConfig(path string) (WorkerConfig, error) { return loadJSON[WorkerConfig](path) }

// loadJSON reads a JSON file into a T.
func loadJSON[T any](path string) (T, error) {
	var c T
	data, err := os.ReadFile(path)
	if err != nil {
		return c, err
	}
	if err := json.Unmarshal(data, &c); err != nil {
		return c, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// RunWorker is a worker process: it runs a worker.Worker on cfg.Queue
// through cfg.Endpoint until ctx ends, recording every handler run, every
// success (durably, before the handler returns nil) and every settlement
// in files named after the process in cfg.Dir, and, once Run has
// returned, an ExitRecord. stoppedAt says when the process was asked to
// stop (SIGTERM), for the record.
func RunWorker(ctx context.Context, cfg WorkerConfig, name string, stoppedAt func() time.Time) error {
	base := filepath.Join(cfg.Dir, name)
	pf, err := openProcFiles(base)
	if err != nil {
		return err
	}
	defer pf.close()
	logger, runs, settled, successes := pf.logger, pf.runs, pf.settled, pf.successes
	client := proxyClient(cfg, name)
	watch := &receiveWatch{Client: client, stoppedAt: stoppedAt}
	h := &handler{name: name, runs: runs, successes: successes}
	var wh worker.Handler = h
	if cfg.Unwrap {
		wh = worker.Chain(wh, fanout.Unwrap())
	}
	var guarded *idemWorker
	if cfg.Mode == ModeIdempotency {
		if guarded, err = newIdemWorker(cfg, name, base, logger); err != nil {
			return err
		}
		defer guarded.close()
		h.effect, wh = guarded.effect, guarded.guard.Wrap(wh)
	}
	policy := retry.PolicyFunc(func(attempt int) (time.Duration, bool) {
		return cfg.RetryDelay, attempt < cfg.MaxAttempts
	})
	onSettled := settlementRecorder(name, settled, logger)
	var keys *uniqueWorker
	if cfg.Unique != nil {
		// unique.New checks the table through the faulty proxy: as with
		// worker.New below, a deployment would restart the process.
		for try := 1; ; try++ {
			if keys, err = newUniqueWorker(cfg, name, base, logger); err == nil {
				break
			}
			logger.Warn("chaos: unique.New failed", "try", try, "err", err)
			if try == 20 || ctx.Err() != nil {
				return err
			}
			time.Sleep(250 * time.Millisecond)
		}
		record := onSettled
		onSettled = func(s worker.Settlement) { record(s); keys.settled(s) }
		// As the package advises: a succeeded job's key is freed before
		// its delete, so a SIGKILL between them holds no key.
		wh = keys.store.Middleware(wh)
	}
	opts := func(o *worker.Options) {
		o.Concurrency = cfg.Concurrency
		o.ShutdownTimeout, o.FlushTimeout, o.CallTimeout, o.WaitTime = cfg.ShutdownTimeout, cfg.FlushTimeout, cfg.CallTimeout, cfg.WaitTime
		o.RetryPolicy = policy
		o.OnSettled = onSettled
		o.Logger = logger
		o.HandlerName = "chaos-" + name
		o.StartupTimeout = cfg.StartupTimeout
	}
	// New reads the queue through the faulty proxy: a deployment would
	// restart a process whose start-up failed; this one tries again. New
	// takes no context (Options.StartupTimeout bounds it), so a stop
	// during New does not wait for it: nothing is held yet.
	exit := ExitRecord{Worker: name, PID: os.Getpid()}
	type made struct {
		w   *worker.Worker
		err error
	}
	var w *worker.Worker
	for try := 1; w == nil; try++ {
		ch := make(chan made, 1)
		go func() {
			w, err := worker.New(watch, cfg.Queue, wh, opts)
			ch <- made{w, err}
		}()
		var m made
		select {
		case <-ctx.Done():
			exit.Signal, exit.Returned = stoppedAt(), time.Now()
			return writeExit(base, exit)
		case m = <-ch:
		}
		if m.err == nil {
			w = m.w
			break
		}
		logger.Warn("chaos: worker.New failed", "try", try, "err", m.err)
		if try == 20 {
			return fmt.Errorf("chaos: worker.New failed %d times: %w", try, m.err)
		}
		time.Sleep(250 * time.Millisecond)
	}
	var stopHeap func()
	if cfg.HeapEvery > 0 {
		if stopHeap, err = sampleHeap(base, w, cfg.HeapEvery); err != nil {
			return err
		}
	}
	runErr := w.Run(ctx)
	if stopHeap != nil {
		stopHeap()
	}
	exit.Signal, exit.Returned, exit.Stats = stoppedAt(), time.Now(), w.Stats()
	exit.LastReceiveEnd, exit.ReceivesAfterSignal = watch.last(), int(watch.afterSignal.Load())
	if guarded != nil {
		st := guarded.guard.Stats()
		exit.Idempotency = &st
	}
	if keys != nil {
		// The releases still in flight (Options.ReleaseConcurrency), as
		// a deployment's main would wait for them.
		if err := keys.close(cfg.FlushTimeout); err != nil {
			logger.Warn("chaos: releases still in flight at exit", "err", err)
		}
		st := keys.store.Stats()
		exit.Unique = &st
	}
	if runErr != nil {
		exit.Err = runErr.Error()
	}
	if err := writeExit(base, exit); err != nil {
		return err
	}
	return runErr
}

// settlementRecorder returns an OnSettled hook that writes a SettledRecord
// for every settlement to settled.
func settlementRecorder(name string, settled *appender, logger *slog.Logger) func(worker.Settlement) {
	return func(s worker.Settlement) {
		rec := SettledRecord{Worker: name, Outcome: s.Outcome.String(), Late: s.Late, Reason: s.Reason, Attempt: s.Attempt, Time: s.SettledAt,
			Received: s.ReceivedAt, Extensions: s.Extensions}
		if m := s.Message; m != nil {
			rec.Message, rec.Handle = m.ID, m.ReceiptHandle
			if j, err := parseMessageJob(m.Body); err == nil {
				rec.Job = j.ID
			}
		}
		if err := settled.write(rec); err != nil {
			logger.Error("chaos: writing a settlement", "err", err)
		}
	}
}

// procFiles are the files every worker process writes (see records.go).
type procFiles struct {
	log       *os.File
	logger    *slog.Logger
	runs      *appender
	settled   *appender
	successes *journal
}

// openProcFiles opens a process's files, named after base.
func openProcFiles(base string) (*procFiles, error) {
	pf := &procFiles{}
	var err error
	if pf.log, err = os.OpenFile(base+logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
		return nil, err
	}
	pf.logger = slog.New(slog.NewTextHandler(pf.log, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if pf.runs, err = openAppender(base + runsFile); err == nil {
		if pf.settled, err = openAppender(base + settledFile); err == nil {
			pf.successes, err = openJournal(base + successFile)
		}
	}
	if err != nil {
		pf.close()
		return nil, err
	}
	return pf, nil
}

// close closes what openProcFiles opened (waiting for pending commits).
func (pf *procFiles) close() {
	if pf.successes != nil {
		pf.successes.close()
	}
	if pf.settled != nil {
		pf.settled.close()
	}
	if pf.runs != nil {
		pf.runs.close()
	}
	pf.log.Close()
}

// proxyClient is a worker process's SQS client, through the fault proxy
// (cfg.Endpoint), named by its AppID.
func proxyClient(cfg WorkerConfig, name string) *sqs.Client {
	return sqs.New(sqs.Options{
		BaseEndpoint: &cfg.Endpoint,
		Region:       cfg.Region,
		AppID:        name,
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		HTTPClient: awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
			t.MaxIdleConnsPerHost = 2*cfg.Concurrency + 8
		}),
	})
}

// writeExit writes a process's ExitRecord.
func writeExit(base string, exit ExitRecord) error {
	data, err := json.Marshal(exit)
	if err != nil {
		return err
	}
	return os.WriteFile(base+exitFile, data, 0o644)
}

// handler runs the jobs.
type handler struct {
	name      string
	runs      *appender
	successes *journal
	// effect, when set, is the job's side effect, made once the work is
	// done and before the success is recorded (the idempotency variant).
	effect func(ctx context.Context, job Job) error
}

// Handle runs one job as its kind says, recording the run first and the
// success, durably, before returning nil.
func (h *handler) Handle(ctx context.Context, m *worker.Message) error {
	job, err := ParseJob(m.Body)
	if err != nil {
		return retry.Permanent(err)
	}
	rec := RunRecord{Job: job.ID, Message: m.ID, Handle: m.ReceiptHandle, Worker: h.name, Time: time.Now(), Receive: m.ReceiveCount}
	if err := h.runs.write(rec); err != nil {
		return fmt.Errorf("chaos: recording the run: %w", err)
	}
	switch job.Kind {
	case Poison:
		return retry.Permanent(fmt.Errorf("chaos: job %s is poison", job.ID))
	case Transient:
		if m.ReceiveCount <= job.Fails {
			return fmt.Errorf("chaos: job %s fails on receive %d (of the first %d)", job.ID, m.ReceiveCount, job.Fails)
		}
	}
	switch d := job.Work(); {
	case job.Kind == Slow:
		// A long job stops when its context ends (lost lease, shutdown).
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("chaos: job %s stopped: %w", job.ID, context.Cause(ctx))
		}
	case d > 0:
		time.Sleep(d) // a short job finishes its work regardless, as most handlers do
	}
	if h.effect != nil {
		if err := h.effect(ctx, job); err != nil {
			return err
		}
	}
	rec.Time = time.Now()
	if err := h.successes.commit(rec); err != nil {
		return fmt.Errorf("chaos: recording the success: %w", err)
	}
	return nil
}

// receiveWatch is the worker's SQS client, watching its receives: when the
// last one ended, and how many started after the process got SIGTERM.
type receiveWatch struct {
	*sqs.Client
	stoppedAt   func() time.Time
	lastEnd     atomic.Int64 // unix nanoseconds
	afterSignal atomic.Int64
}

// ReceiveMessage records the call's end (and whether it began after the
// signal) around the client's.
func (r *receiveWatch) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	if !r.stoppedAt().IsZero() {
		r.afterSignal.Add(1)
	}
	out, err := r.Client.ReceiveMessage(ctx, in, optFns...)
	r.lastEnd.Store(time.Now().UnixNano())
	return out, err
}

// last is when the last receive ended (zero: none).
func (r *receiveWatch) last() time.Time {
	if n := r.lastEnd.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Time{}
}
