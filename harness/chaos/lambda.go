package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/worker"
	"github.com/sqsworker/sqsworker/worker/sqslambda"
)

// ModeLambda is WorkerConfig.Mode for the lambda variant: the process is
// one Lambda execution environment, sqslambda.RunLocal invoking a
// sqslambda.Handler one batch at a time.
const ModeLambda = "lambda"

// LambdaConfig is the lambda variant's part of a worker process's
// configuration.
type LambdaConfig struct {
	// FunctionTimeout is the function's timeout (LocalOptions);
	// DeadlineMargin the Handler's (Options); BatchSize the event source
	// mapping's.
	FunctionTimeout time.Duration `json:"functionTimeout"`
	DeadlineMargin  time.Duration `json:"deadlineMargin"`
	BatchSize       int           `json:"batchSize"`
}

// The files a lambda process writes besides the others.
const (
	deadlineFile    = ".deadline.json"     // a DeadlineKill, just before the process kills itself
	invocationsFile = ".invocations.jsonl" // an InvocationRecord per invocation that returned (write, no fsync)
)

// InvocationRecord is one invocation that returned (one that returned at
// or after its deadline is then also a deadline kill).
type InvocationRecord struct {
	Worker  string        `json:"w"`
	Records int           `json:"records"`
	Failed  int           `json:"failed"` // reported in batchItemFailures
	Took    time.Duration `json:"took"`
	// Cutoff: the invocation ran past its deadline minus DeadlineMargin,
	// when the Handler cancels the handlers still running (ErrDeadline) and
	// starts no more records.
	Cutoff bool `json:"cutoff,omitempty"`
}

// LambdaReport is what the lambda variant adds to a Report.
type LambdaReport struct {
	// Invocations counts the invocations that returned, Records
	// their records, Failed the records they reported failed, Cutoff those
	// that reached the Handler's cutoff (deadline minus DeadlineMargin),
	// and Longest the longest one.
	Invocations int           `json:"invocations"`
	Records     int           `json:"records"`
	Failed      int           `json:"failed"`
	Cutoff      int           `json:"cutoff"`
	Longest     time.Duration `json:"longest"`
	// DeadlineKills counts the invocations still running at their deadline:
	// their processes were killed.
	DeadlineKills int `json:"deadlineKills"`
}

// lambdaFigures sums the lambda variant's invocations into r.
func (r *Report) lambdaFigures(ev evidence) {
	if ev.Config.Worker.Mode != ModeLambda {
		return
	}
	lr := &LambdaReport{DeadlineKills: r.Processes.DeadlineKills}
	for _, inv := range ev.Invocations {
		lr.Invocations++
		lr.Records += inv.Records
		lr.Failed += inv.Failed
		lr.Longest = max(lr.Longest, inv.Took)
		if inv.Cutoff {
			lr.Cutoff++
		}
	}
	r.Lambda = lr
}

// lambdaText is the lambda variant's part of the report text.
func (r *Report) lambdaText() string {
	lr := r.Lambda
	if lr == nil {
		return ""
	}
	lc := r.Config.Worker.Lambda
	return fmt.Sprintf("lambda: function timeout %v, DeadlineMargin %v, batches of up to %d records in batch order\n"+
		"  invocations that returned: %d (%d records, %d reported failed), longest %v; %d reached the Handler's cutoff (deadline − DeadlineMargin); %d not back by their deadline, their processes killed\n",
		lc.FunctionTimeout, lc.DeadlineMargin, lc.BatchSize, lr.Invocations, lr.Records, lr.Failed, lr.Longest.Round(time.Millisecond), lr.Cutoff, lr.DeadlineKills)
}

// DeadlineKill is what a lambda process records before it kills itself
// because an invocation was still running at its deadline.
type DeadlineKill struct {
	Worker   string    `json:"w"`
	Deadline time.Time `json:"deadline"`
	Time     time.Time `json:"t"`
	Records  int       `json:"records"`
}

// RunLambda is a lambda process: one execution environment. It runs
// sqslambda.RunLocal on cfg.Queue through cfg.Endpoint, one invocation at
// a time, with a sqslambda.Handler (Options.Client set, so failed records
// get the retry delay and poison ones are moved to the DLQ with their
// provenance) around the same job handler as RunWorker, recording every
// run, success and settlement the same way (successes are reported to
// OnSettled before Lambda deletes them, so they are not recorded as
// settlements: the proxy sees the deletes). An invocation still running
// at its deadline kills the process (SIGKILL, after a DeadlineKill
// record), as Lambda ends a timed-out invocation's environment: nothing of
// it is deleted and whatever it had not finished dies with it. SIGTERM
// (ctx) stops polling; the invocation in progress finishes and is settled.
func RunLambda(ctx context.Context, cfg WorkerConfig, name string, stoppedAt func() time.Time) error {
	lc := cfg.Lambda
	if lc == nil {
		return errors.New("chaos: the lambda mode needs WorkerConfig.Lambda")
	}
	base := filepath.Join(cfg.Dir, name)
	pf, err := openProcFiles(base)
	if err != nil {
		return err
	}
	defer pf.close()
	client := proxyClient(cfg, name)
	h := &handler{name: name, runs: pf.runs, successes: pf.successes}
	record := settlementRecorder(name, pf.settled, pf.logger)
	lh, err := sqslambda.New(h, func(o *sqslambda.Options) {
		o.Client = client
		o.RetryPolicy = retry.PolicyFunc(func(attempt int) (time.Duration, bool) {
			return cfg.RetryDelay, attempt < cfg.MaxAttempts
		})
		o.OnSettled = func(s worker.Settlement) {
			if s.Outcome != worker.Deleted { // Lambda deletes after Handle returns: the proxy sees whether it did
				record(s)
			}
		}
		o.Logger = pf.logger
		o.HandlerName = "chaos-" + name
		o.CallTimeout = cfg.CallTimeout
		o.DeadlineMargin = lc.DeadlineMargin
	})
	if err != nil {
		return err
	}
	invocations, err := openAppender(base + invocationsFile)
	if err != nil {
		return err
	}
	defer invocations.close()
	fn := killAtDeadline(recordInvocations(lh.Handle, name, lc.DeadlineMargin, invocations), name, base)
	exit := ExitRecord{Worker: name, PID: os.Getpid()}
	// RunLocal reads the queue through the faulty proxy when it starts; a
	// failed start is tried again, as Lambda retries a mapping's poller.
	var runErr error
	for try := 1; ; try++ {
		runErr = sqslambda.RunLocal(ctx, client, cfg.Queue, fn, func(o *sqslambda.LocalOptions) {
			o.BatchSize, o.WaitTime, o.FunctionTimeout = lc.BatchSize, cfg.WaitTime, lc.FunctionTimeout
			o.ReportBatchItemFailures, o.Concurrency = true, 1
			o.FunctionName, o.Logger = "chaos-"+name, pf.logger
		})
		if runErr == nil || ctx.Err() != nil || try == 20 {
			break
		}
		pf.logger.Warn("chaos: RunLocal failed; starting it again", "try", try, "err", runErr)
		time.Sleep(250 * time.Millisecond)
	}
	exit.Signal, exit.Returned = stoppedAt(), time.Now()
	if runErr != nil {
		exit.Err = runErr.Error()
	}
	if err := writeExit(base, exit); err != nil {
		return err
	}
	return runErr
}

// killAtDeadline returns fn killing the process (SIGKILL, after writing a
// DeadlineKill record) when an invocation is still running at its context
// deadline, or returns after it: Lambda ends a timed-out invocation by
// stopping its execution environment, so nothing the function would do
// after its deadline happens, and its response never arrives.
func killAtDeadline(fn sqslambda.Function, name, base string) sqslambda.Function {
	return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		deadline, ok := ctx.Deadline()
		if !ok {
			return fn(ctx, ev)
		}
		die := func() {
			data, _ := json.Marshal(DeadlineKill{Worker: name, Deadline: deadline, Time: time.Now(), Records: len(ev.Records)})
			os.WriteFile(base+deadlineFile, data, 0o644)
			if p, err := os.FindProcess(os.Getpid()); err == nil {
				p.Signal(os.Kill)
			}
			select {} // the signal ends the process
		}
		t := time.AfterFunc(time.Until(deadline), die)
		resp, err := fn(ctx, ev)
		if !t.Stop() {
			select {} // the timer fired: the process is being killed
		}
		if !time.Now().Before(deadline) {
			die()
		}
		return resp, err
	}
}

// recordInvocations returns fn recording each invocation that returns.
func recordInvocations(fn sqslambda.Function, name string, margin time.Duration, out *appender) sqslambda.Function {
	return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		start := time.Now()
		resp, err := fn(ctx, ev)
		rec := InvocationRecord{Worker: name, Records: len(ev.Records), Failed: len(resp.BatchItemFailures), Took: time.Since(start)}
		if d, ok := ctx.Deadline(); ok && time.Now().After(d.Add(-margin)) {
			rec.Cutoff = true
		}
		out.write(rec)
		return resp, err
	}
}

// readInvocations reads the invocation records of the named processes.
func readInvocations(dir string, names []string) ([]InvocationRecord, error) {
	var all []InvocationRecord
	for _, name := range names {
		recs, err := readLines[InvocationRecord](filepath.Join(dir, name+invocationsFile))
		if err != nil {
			return nil, err
		}
		all = append(all, recs...)
	}
	return all, nil
}

// markDeadlineKills turns the processes that killed themselves at an
// invocation's deadline (a DeadlineKill record) from crashed into
// SIGKILLed, marked DeadlineKill.
func markDeadlineKills(dir string, procs map[string]procInfo) {
	for name, p := range procs {
		if !p.Crashed {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, name+deadlineFile))
		if err != nil {
			continue
		}
		var k DeadlineKill
		if json.Unmarshal(data, &k) != nil {
			continue
		}
		p.Crashed, p.Signal, p.DeadlineKill, p.SignaledAt = false, "SIGKILL", true, k.Time
		procs[name] = p
	}
}

// lambdaVariant makes c the lambda variant: the chaos variant's jobs, SQS
// faults and kills, run by sqslambda.RunLocal (4 processes, each one
// execution environment invoking one batch of up to 10 records at a time,
// the records in batch order) with a function timeout of 5 s and the
// Handler's default DeadlineMargin of 1 s. Slow jobs work 3 s: within one
// invocation, but two in one batch reach the Handler's cutoff (the second
// is cancelled with sqslambda.ErrDeadline and retried, the records after
// it released). The queue's visibility timeout is 8 s (at least the
// function timeout, as Lambda requires; AWS advises 6 ×, which would only
// make the records of killed invocations come back later). SIGTERM lets
// the invocation in progress finish: the shutdown bound is the function
// timeout plus RunLocal's 10 s delete call.
func lambdaVariant(c *Config) {
	c.Faults = chaosFaults()
	c.Kills = Kills{MinEvery: time.Second, MaxEvery: 4 * time.Second, KillShare: 0.5}
	c.Visibility = 8 * time.Second
	c.Mix.SlowFor = 3 * time.Second
	c.Worker.Mode = ModeLambda
	c.Worker.Lambda = &LambdaConfig{FunctionTimeout: 5 * time.Second, DeadlineMargin: time.Second, BatchSize: 10}
	c.Worker.ShutdownTimeout, c.Worker.FlushTimeout = 5*time.Second, 10*time.Second
}
