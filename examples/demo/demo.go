package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/queueref"
	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/worker"
)

// settings shape one run of the demo.
type settings struct {
	Jobs        int              // jobs sent; at least minJobs
	Concurrency int              // the worker's handler slots
	Visibility  time.Duration    // the queue's visibility timeout
	LongJob     time.Duration    // how long the long job runs; longer than Visibility
	Work        [2]time.Duration // an ordinary job runs between these two
	SendOver    time.Duration    // the jobs are sent at an even pace over this time
	Policy      string           // the delivery policy (SNS JSON); applied without jitter
	WaitTime    time.Duration    // the worker's long poll; zero for its default
	Progress    time.Duration    // how often the progress line is printed when not on a terminal
	Settle      time.Duration    // how long the jobs may take to settle before the demo gives up
}

func defaultSettings() settings {
	return settings{
		Jobs:        300,
		Concurrency: 32,
		Visibility:  5 * time.Second,
		LongJob:     12 * time.Second,
		Work:        [2]time.Duration{100 * time.Millisecond, 900 * time.Millisecond},
		SendOver:    10 * time.Second,
		Policy:      `{"healthyRetryPolicy": {"minDelayTarget": 2, "maxDelayTarget": 8, "numRetries": 3, "backoffFunction": "linear"}}`,
		Progress:    2 * time.Second,
		Settle:      90 * time.Second,
	}
}

// summary is the demo's outcome, computed from facts: the jobs sent, what
// the handlers completed, and what the queues hold at the end.
type summary struct {
	Sent       int // jobs sent
	Done       int // jobs whose handler succeeded
	InDLQ      int // jobs dlq.Inspect finds in the dead-letter queue
	Waiting    int // jobs still in the source queue
	Lost       int // jobs in none of those
	Duplicates int // extra successful runs, plus jobs both done and dead-lettered

	DLQCount       int     // dlq.Count's total for the dead-letter queue
	WorkerRequests int64   // SQS calls the worker made (receive, delete, heartbeat, retries, DLQ moves)
	RequestsPerJob float64 // WorkerRequests / Sent
	// CostPerMillionJobs is what a million jobs would cost in SQS requests
	// at this run's rate, in US dollars (worker.Stats.Cost, standard-queue
	// pricing): the worker's requests, billed in 64 KiB chunks, per job sent.
	CostPerMillionJobs float64

	LongJobRuns       int // handler starts of the long job
	LongJobExtensions int // heartbeat extensions of the long job seen on the wire
	Retries           []retryRecord
	Redriven          int // jobs moved back from the dead-letter queue
	Elapsed           time.Duration
}

// errLost is wrapped by run's error when a job is unaccounted for.
var errLost = errors.New("jobs lost")

// run is the demo: it creates fresh queues through client, sends
// s.Jobs jobs, runs a worker until every job is done or dead-lettered,
// redrives the fixed job, stops the worker, and reconciles. It writes what
// happens to out and returns the reconciliation; the error is non-nil when
// a step failed or a job was lost.
func run(ctx context.Context, out io.Writer, client sqsAPI, s settings) (sum summary, err error) {
	if s.Jobs < minJobs {
		return sum, fmt.Errorf("settings: %d jobs; the demo needs at least %d", s.Jobs, minJobs)
	}
	policy, err := retry.ParseDeliveryPolicy([]byte(s.Policy))
	if err != nil {
		return sum, fmt.Errorf("settings: %w", err)
	}
	policy.Jitter = "none" // so each retry can be compared with the schedule
	con := newConsole(out)
	d := newDemo(con, policy)

	// Queues: fresh names, so no earlier run (or aborted long poll) is in the way.
	name := "sqsworker-demo-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	setup, err := dlq.Setup(ctx, client, dlq.SetupOptions{
		Name:              name,
		VisibilityTimeout: s.Visibility,
		// Above the policy's attempts, so the worker (not SQS) decides when
		// a job is dead-lettered, and records why.
		MaxReceiveCount: d.attempts + 6,
	})
	if err != nil {
		return sum, err
	}
	target := setup.Target()
	keep := false
	defer func() {
		if keep || (err != nil && !errors.Is(err, context.Canceled)) {
			con.Printf("queues kept for a look: %s and %s", target.SourceURL, target.DLQURL)
			return
		}
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		for _, u := range []string{target.SourceURL, target.DLQURL} {
			if _, derr := client.DeleteQueue(dctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(u)}); derr != nil {
				con.Printf("deleting queue %s: %v", queueref.Name(u), derr)
			}
		}
	}()

	con.Printf("sqsworker demo")
	con.Printf("  queue   %s (visibility timeout %v, maxReceiveCount %d)", queueref.Name(target.SourceURL), s.Visibility, target.MaxReceiveCount)
	con.Printf("  DLQ     %s", queueref.Name(target.DLQURL))
	con.Printf("  policy  %d retries after %s (%s, no jitter): a job failing every time is dead-lettered after %d attempts, %v after its first failure",
		len(d.schedule), joinDurations(policy.Delays()), policy.HealthyRetryPolicy.BackoffFunction, d.attempts, policy.Total())
	con.Printf("  jobs    %d: 1 long (%v), %d flaky (fail twice), 1 failing every time, %d poison, 1 hit by a handler bug (fixed later), %d ordinary",
		s.Jobs, s.LongJob, len(flakyJobs), len(poisonJobs), s.Jobs-4-len(flakyJobs)-len(poisonJobs))
	con.Printf("")

	// The worker, on a client that reports heartbeat extensions as they
	// happen; dead-letter moves come from its settlement hook once SQS has
	// confirmed them.
	obs := &observed{sqsAPI: client, watched: d.watchedHandle, onExtend: d.extended}
	w, err := worker.New(obs, target.SourceURL, worker.HandlerFunc(d.handle), func(o *worker.Options) {
		o.OnSettled = func(st worker.Settlement) {
			if st.Outcome == worker.DeadLettered {
				id, _ := jobOf(st.Message.MessageAttributes)
				d.deadLettered(id, fmt.Sprintf("%s: %v", st.Reason, st.Err))
			}
		}
		o.Concurrency = s.Concurrency
		o.RetryPolicy = policy
		o.WaitTime = s.WaitTime
		o.HandlerName = "demo.processOrder"
		// On Ctrl-C, give running jobs 3 s (the default is 30 s), then
		// cancel them and release their messages.
		o.ShutdownTimeout = 3 * time.Second
		o.Logger = slog.New(slog.NewTextHandler(con.logWriter(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	})
	if err != nil {
		return sum, err
	}
	runCtx, cancelRun := context.WithCancel(ctx)
	var runErr error
	runExited := make(chan struct{})
	go func() {
		defer close(runExited)
		runErr = w.Run(runCtx)
	}()
	stopWorker := func() error {
		cancelRun()
		<-runExited
		return runErr
	}
	defer stopWorker() // on every path: the worker never outlives run

	// Phase 1: the jobs arrive in batches of ten over s.SendOver, as from a
	// busy producer, and each is done or dead-lettered; a progress line
	// counts them.
	var sent atomic.Int64
	sendCtx, cancelSend := context.WithCancel(ctx)
	defer cancelSend()
	sendErr := make(chan error, 1)
	go func() { sendErr <- send(sendCtx, client, target.SourceURL, s, &sent) }()
	sendDone := false
	progress := func() {
		done, retrying, dead := d.counts()
		st := w.Stats()
		con.Status(fmt.Sprintf("sent %d, done %d, retrying %d, in DLQ %d, running %d, SQS calls %d",
			sent.Load(), done, retrying, dead, st.InFlight, st.TotalRequests()))
	}
	settled := func() (bool, error) {
		if !sendDone {
			select {
			case err := <-sendErr:
				if err != nil {
					return false, err
				}
				sendDone = true
			default:
				return false, nil
			}
		}
		done, _, _ := d.counts()
		st := w.Stats()
		return int64(done)+st.DeadLettered >= int64(s.Jobs) && st.InFlight == 0, nil
	}
	if err := await(ctx, con, runExited, &runErr, s, progress, settled); err != nil {
		return sum, fmt.Errorf("waiting for the jobs to settle: %w", err)
	}
	sum.Sent = int(sent.Load())
	con.Printf("")

	// Phase 2: what the dead-letter queue holds, and why.
	counts, err := dlq.Count(ctx, client, target.DLQURL)
	if err != nil {
		return sum, err
	}
	dead, err := dlq.Inspect(ctx, client, target.DLQURL, dlq.InspectOptions{})
	if err != nil {
		return sum, err
	}
	con.Printf("The dead-letter queue holds %d messages; read back, each says where and why it failed:", counts.Total())
	printDead(con, dead)
	con.Printf("")

	// Deploy the fix and redrive what it fixes.
	d.deployFix()
	con.Eventf("handler v2 deployed: it accepts CHF; redriving the jobs rejected for their currency")
	res, err := dlq.Redrive(ctx, client, target, dlq.RedriveOptions{
		Filter: dlq.Filter{ErrorContains: "unsupported currency"},
		OnMessage: func(m dlq.Message, a string, err error) {
			id, _ := jobOf(m.Attributes)
			if a == "moved" {
				d.redrivenTo(id, queueref.Name(target.SourceURL))
			}
		},
	})
	if err != nil {
		return sum, err
	}
	sum.Redriven = res.Moved
	con.Eventf("redrive of the jobs whose error contains \"unsupported currency\": looked at %d, moved %d back, left %d in the dead-letter queue",
		res.Scanned, res.Moved, res.Skipped)
	fixedDone := func() (bool, error) { return d.isDone(fixableJob) && w.Stats().InFlight == 0, nil }
	if err := await(ctx, con, runExited, &runErr, s, nil, fixedDone); err != nil {
		return sum, fmt.Errorf("waiting for the redriven job: %w", err)
	}

	// Stop the worker: Run returns once pending deletes are flushed.
	if err := stopWorker(); err != nil {
		return sum, fmt.Errorf("worker: %w", err)
	}
	st := w.Stats()
	con.Eventf("worker stopped: received %d, succeeded %d, failed %d, retried %d, dead-lettered %d, released %d",
		st.Received, st.Succeeded, st.Failed, st.Retried, st.DeadLettered, st.Released)
	con.Printf("")

	sum, err = reconcile(ctx, client, target, d, sum)
	if err != nil {
		return sum, err
	}
	sum.WorkerRequests = st.TotalRequests()
	sum.RequestsPerJob = float64(sum.WorkerRequests) / float64(sum.Sent)
	sum.CostPerMillionJobs = st.Cost(worker.Pricing{}).PerMillion(int64(sum.Sent))
	sum.Elapsed = con.since()
	printSummary(con, sum, st)

	if sum.Lost > 0 {
		keep = true
		return sum, fmt.Errorf("%d %w", sum.Lost, errLost)
	}
	if sum.Waiting > 0 {
		keep = true
		return sum, fmt.Errorf("%d jobs still wait in the source queue; the demo expected every job settled", sum.Waiting)
	}
	if sum.LongJobRuns != 1 || sum.LongJobExtensions == 0 {
		return sum, fmt.Errorf("the long job ran %d times with %d heartbeat extensions; want once, extended", sum.LongJobRuns, sum.LongJobExtensions)
	}
	return sum, nil
}

// send sends the jobs with SendMessageBatch, ten per call, spread evenly
// over s.SendOver, counting what SQS accepted in sent.
func send(ctx context.Context, client sqsAPI, queueURL string, s settings, sent *atomic.Int64) error {
	calls := (s.Jobs + 9) / 10
	tick := time.NewTicker(max(s.SendOver/time.Duration(calls), time.Millisecond))
	defer tick.Stop()
	for first := 0; first < s.Jobs; first += 10 {
		if first > 0 {
			select {
			case <-ctx.Done():
				return context.Cause(ctx)
			case <-tick.C:
			}
		}
		in := &sqs.SendMessageBatchInput{QueueUrl: aws.String(queueURL)}
		for id := first; id < min(first+10, s.Jobs); id++ {
			in.Entries = append(in.Entries, types.SendMessageBatchRequestEntry{
				Id:          aws.String(strconv.Itoa(id)),
				MessageBody: aws.String(body(id, s)),
				MessageAttributes: map[string]types.MessageAttributeValue{
					jobAttr: {DataType: aws.String("Number"), StringValue: aws.String(strconv.Itoa(id))},
				},
			})
		}
		out, err := client.SendMessageBatch(ctx, in)
		if err == nil && len(out.Failed) > 0 {
			f := out.Failed[0]
			err = fmt.Errorf("%d of %d entries failed, e.g. job %s: %s", len(out.Failed), len(in.Entries), aws.ToString(f.Id), aws.ToString(f.Message))
		}
		if err != nil {
			return fmt.Errorf("sending jobs %d-%d: %w", first, first+len(in.Entries)-1, err)
		}
		sent.Add(int64(len(in.Entries)))
	}
	return nil
}

// await polls until ok reports true, showing progress (if not nil) on the
// way. It fails when ok fails, when ctx ends, when the worker's Run returns
// early, or after s.Settle.
func await(ctx context.Context, con *console, runExited <-chan struct{}, runErr *error, s settings, progress func(), ok func() (bool, error)) error {
	every := s.Progress
	if con.tty {
		every = 200 * time.Millisecond
	}
	deadline := time.NewTimer(s.Settle)
	defer deadline.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var shown time.Time
	for {
		if progress != nil && time.Since(shown) >= every {
			progress()
			shown = time.Now()
		}
		done, err := ok()
		if err != nil {
			return err
		}
		if done {
			if progress != nil {
				progress()
				con.EndStatus()
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-runExited:
			return fmt.Errorf("the worker stopped early: %v", *runErr)
		case <-deadline.C:
			return fmt.Errorf("not settled after %v", s.Settle)
		case <-tick.C:
		}
	}
}

// printDead lists dead-lettered messages with their provenance.
func printDead(con *console, msgs []dlq.Message) {
	slices.SortFunc(msgs, func(a, b dlq.Message) int {
		ia, _ := jobOf(a.Attributes)
		ib, _ := jobOf(b.Attributes)
		return cmp.Compare(ia, ib)
	})
	for _, m := range msgs {
		id, _ := jobOf(m.Attributes)
		p := m.Provenance
		if !m.HasProvenance {
			con.Printf("  job %-3d  no provenance (moved by SQS's own redrive from %s)", id, m.Origin())
			continue
		}
		con.Printf("  job %-3d  attempt %d, handler %s, from %s, failed at %s",
			id, p.Attempt, p.Handler, queueref.Name(p.SourceQueue), p.FailedAt.Local().Format("15:04:05.000"))
		con.Printf("           %s", p.Error)
	}
}

// reconcile accounts for every job sent: done (a handler succeeded), in the
// dead-letter queue (dlq.Inspect finds it), waiting in the source queue, or
// lost.
func reconcile(ctx context.Context, client sqsAPI, target dlq.Target, d *demo, sum summary) (summary, error) {
	dlqCounts, err := dlq.Count(ctx, client, target.DLQURL)
	if err != nil {
		return sum, err
	}
	dead, err := dlq.Inspect(ctx, client, target.DLQURL, dlq.InspectOptions{})
	if err != nil {
		return sum, err
	}
	srcCounts, err := dlq.Count(ctx, client, target.SourceURL)
	if err != nil {
		return sum, err
	}
	var waiting []dlq.Message
	if srcCounts.Total() > 0 {
		if waiting, err = dlq.Inspect(ctx, client, target.SourceURL, dlq.InspectOptions{}); err != nil {
			return sum, err
		}
	}

	inDLQ := map[int]bool{}
	for _, m := range dead {
		if id, ok := jobOf(m.Attributes); ok {
			inDLQ[id] = true
		}
	}
	inSource := map[int]bool{}
	for _, m := range waiting {
		if id, ok := jobOf(m.Attributes); ok {
			inSource[id] = true
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for id := range sum.Sent {
		r, ran := d.jobs[id]
		done := ran && r.successes > 0
		switch {
		case done:
			sum.Done++
			sum.Duplicates += r.successes - 1
			if inDLQ[id] {
				sum.Duplicates++
			}
		case inDLQ[id]:
		case inSource[id]:
			sum.Waiting++
		default:
			sum.Lost++
		}
	}
	sum.InDLQ = len(inDLQ)
	sum.DLQCount = dlqCounts.Total()
	if r, ok := d.jobs[longJob]; ok {
		sum.LongJobRuns, sum.LongJobExtensions = r.starts, r.extensions
	}
	sum.Retries = slices.Clone(d.retries)
	return sum, nil
}

// printSummary prints the reconciliation.
func printSummary(con *console, sum summary, st worker.Stats) {
	con.Printf("Reconciliation: every job sent is done (its handler succeeded) or in the dead-letter queue (read back there, one by one; the queue counts %d messages)", sum.DLQCount)
	waiting := ""
	if sum.Waiting > 0 {
		waiting = fmt.Sprintf(" + waiting %d", sum.Waiting)
	}
	con.Printf("  sent %d = done %d + in DLQ %d%s, lost %d, duplicates %d, SQS requests per job %.2f",
		sum.Sent, sum.Done, sum.InDLQ, waiting, sum.Lost, sum.Duplicates, sum.RequestsPerJob)
	names := slices.SortedFunc(maps.Keys(st.Requests), func(a, b string) int {
		return cmp.Or(cmp.Compare(st.Requests[b], st.Requests[a]), strings.Compare(a, b))
	})
	var parts []string
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s %d", n, st.Requests[n]))
	}
	con.Printf("  the worker's %d SQS requests: %s", sum.WorkerRequests, strings.Join(parts, ", "))
	con.Printf("  SQS cost per million jobs $%.2f (the worker's requests at $%.2f per million, 64 KiB chunks; the producer's sends come on top)",
		sum.CostPerMillionJobs, worker.PriceStandard)
	con.Printf("  finished in %.1fs", sum.Elapsed.Seconds())
}

// joinDurations formats delays as "2s, 5s, 8s".
func joinDurations(ds []time.Duration) string {
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = d.String()
	}
	return strings.Join(parts, ", ")
}
