package idempotency_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/idempotency"
	"github.com/sqsworker/sqsworker/worker"
	"github.com/sqsworker/sqsworker/worker/sqslambda"
)

// env is where a scenario runs: the in-memory SQS and DynamoDB under
// testing/synctest (TestScenarios), or the emulators in real time
// (TestScenariosEmulator). The scenarios are the acceptance checks,
// once for the worker and once for the Lambda adapter through RunLocal.
type env struct {
	sqs   worker.API
	db    idempotency.API
	table string
	// newQueue creates a queue with the visibility timeout and its DLQ
	// (maxReceiveCount 100).
	newQueue func(t *testing.T, visibility time.Duration) (src, dlq string)
	// left is how many messages a queue still holds, in any state.
	left func(t *testing.T, url string) int
	// item reads a record (nil when there is none).
	item func(t *testing.T, key string) map[string]types.AttributeValue
	// name makes a name unique to this run.
	name func(prefix string) string
}

// setupQueue is env.newQueue for any client that dlq.Setup takes.
func setupQueue(client dlq.API, name func(string) string) func(t *testing.T, visibility time.Duration) (string, string) {
	return func(t *testing.T, visibility time.Duration) (string, string) {
		t.Helper()
		queues, err := dlq.Setup(t.Context(), client, dlq.SetupOptions{Name: name("idem"), MaxReceiveCount: 100, VisibilityTimeout: visibility})
		if err != nil {
			t.Fatalf("dlq.Setup: %v", err)
		}
		return queues.QueueURL, queues.DLQURL
	}
}

func (e *env) send(t *testing.T, url, body string) {
	t.Helper()
	if _, err := e.sqs.(interface {
		SendMessage(context.Context, *sqs.SendMessageInput, ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	}).SendMessage(t.Context(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body)}); err != nil {
		t.Fatalf("send: %v", err)
	}
}

// scenario is one acceptance check.
type scenario struct {
	name string
	run  func(t *testing.T, e *env)
}

var scenarios = []scenario{
	{"worker/same message to 10 workers at once", workerTenDeliveries},
	{"worker/handler slower than the lock expiry", workerSlowHandler},
	{"worker/killed mid-handler", workerKilled},
	{"worker/killed between success and delete", workerDroppedDelete},
	{"lambda/same message to 10 invocations at once", lambdaTenDeliveries},
	{"lambda/handler running most of the invocation", lambdaSlowHandler},
	{"lambda/killed mid-handler", lambdaKilled},
	{"lambda/killed between success and delete", lambdaDroppedDelete},
}

// guardOpts are the scenarios' Guard options: a 1 s lock margin, so locks
// outlive their 2 s leases by half.
func guardOpts(prefix string) func(*idempotency.Options) {
	return func(o *idempotency.Options) {
		o.LockMargin = time.Second
		o.KeyPrefix = prefix
	}
}

// sumStats adds up guards' counters.
func sumStats(guards ...*idempotency.Guard) idempotency.Stats {
	var s idempotency.Stats
	for _, g := range guards {
		x := g.Stats()
		s.Ran += x.Ran
		s.Completed += x.Completed
		s.DuplicatesCompleted += x.DuplicatesCompleted
		s.DuplicatesInProgress += x.DuplicatesInProgress
		s.TakenOver += x.TakenOver
		s.Released += x.Released
		s.Extensions += x.Extensions
		s.LocksLost += x.LocksLost
	}
	return s
}

// checkEmpty fails t unless the queue and its DLQ are empty.
func checkEmpty(t *testing.T, e *env, src, dlqURL string) {
	t.Helper()
	if n := e.left(t, dlqURL); n != 0 {
		t.Errorf("the dead-letter queue holds %d messages; no duplicate may be dead-lettered", n)
	}
	if n := e.left(t, src); n != 0 {
		t.Errorf("the queue still holds %d messages; every delivery should be deleted", n)
	}
}

// blockUntil waits for cond without failing (handlers cannot call t.Fatal);
// it reports whether cond held before ctx ended.
func blockUntil(ctx context.Context, cond func() bool) bool {
	for !cond() {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(50 * time.Millisecond):
		}
	}
	return true
}

// doomed is a consumer that dies inside its first handler (kill -9): from
// then on nothing it sends reaches SQS or DynamoDB, so its lease and its
// lock are abandoned, not released.
type doomed struct {
	sqs     *twist
	guard   *idempotency.Guard
	handler worker.Handler
	started chan struct{} // closed when the handler has died
}

func newDoomed(t *testing.T, e *env, runs *atomic.Int64) *doomed {
	var dark atomic.Bool
	d := &doomed{sqs: &twist{API: e.sqs}, started: make(chan struct{})}
	d.guard = mustGuard(t, darkDB{API: e.db, dark: &dark}, e.table, guardOpts("killed"))
	d.handler = worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
		runs.Add(1)
		dark.Store(true)
		d.sqs.dark.Store(true)
		close(d.started)
		<-ctx.Done() // the lease is lost (or the invocation ends); a dead process would not even see this
		return context.Cause(ctx)
	})
	return d
}

// slowJob is a handler that takes d (or stops with its context); started
// is closed when it first starts.
func slowJob(runs *atomic.Int64, d time.Duration) (h worker.Handler, started chan struct{}) {
	started = make(chan struct{})
	return worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
		if runs.Add(1) == 1 {
			close(started)
		}
		select {
		case <-time.After(d):
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}), started
}

// counting is a handler that succeeds and counts its runs.
func counting(runs *atomic.Int64) worker.Handler {
	return worker.HandlerFunc(func(context.Context, *worker.Message) error {
		runs.Add(1)
		return nil
	})
}

// --- the worker ---

// workerTenDeliveries: the same message delivered to 10 workers at once
// runs once; the other deliveries are snoozed, then deleted as duplicates
// of a completed job; none is dead-lettered.
func workerTenDeliveries(t *testing.T, e *env) {
	const n = 10
	src, dlqURL := e.newQueue(t, 2*time.Second)
	id := e.name("message")
	for range n {
		e.send(t, src, "charge order 1")
	}
	var runs atomic.Int64
	guards := make([]*idempotency.Guard, n)
	workers := make([]*running, n)
	for i := range n {
		guards[i] = mustGuard(t, e.db, e.table, guardOpts("charge"))
	}
	h := worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
		runs.Add(1)
		// Hold the job until every other delivery has met the lock.
		if !blockUntil(ctx, func() bool { return sumStats(guards...).DuplicatesInProgress >= n-1 }) {
			return context.Cause(ctx)
		}
		return nil
	})
	for i := range n {
		tw := &twist{API: e.sqs, sameID: map[string]string{"charge order 1": id}}
		workers[i] = startWorker(t, tw, src, worker.Chain(h, guards[i].Wrap), func(o *worker.Options) { o.Concurrency = 1 })
	}
	deleted := func() int {
		d := 0
		for _, w := range workers {
			d += w.outcomes()[worker.Deleted]
		}
		return d
	}
	waitFor(t, 2*time.Minute, "all 10 deliveries deleted", func() bool { return deleted() == n })
	var dead, snoozed int
	for _, w := range workers {
		if err := w.stop(); err != nil {
			t.Errorf("Run: %v", err)
		}
		dead += w.outcomes()[worker.DeadLettered]
		snoozed += w.outcomes()[worker.Snoozed]
	}
	s := sumStats(guards...)
	if runs.Load() != 1 || s.Ran != 1 || s.Completed != 1 {
		t.Errorf("the handler ran %d times (guards: ran %d, completed %d); want once", runs.Load(), s.Ran, s.Completed)
	}
	if s.DuplicatesCompleted != n-1 {
		t.Errorf("%d deliveries acknowledged as duplicates of the completed job, want %d", s.DuplicatesCompleted, n-1)
	}
	if snoozed < n-1 || dead != 0 {
		t.Errorf("%d snoozed (want ≥ %d), %d dead-lettered (want 0)", snoozed, n-1, dead)
	}
	checkEmpty(t, e, src, dlqURL)
	t.Logf("1 run, %d snoozes, %d duplicates deleted; DynamoDB requests %v", snoozed, s.DuplicatesCompleted, requests(guards...))
}

// workerSlowHandler: a handler that runs four times as long as a lock
// without extensions would last keeps its lock (the heartbeat moves it):
// duplicates arriving meanwhile never run.
func workerSlowHandler(t *testing.T, e *env) {
	src, dlqURL := e.newQueue(t, 2*time.Second) // a lock lasts lease (2 s) + margin (1 s)
	id := e.name("message")
	key := "slow#" + id
	ga, gb := mustGuard(t, e.db, e.table, guardOpts("slow")), mustGuard(t, e.db, e.table, guardOpts("slow"))
	var runs atomic.Int64
	h, started := slowJob(&runs, 12*time.Second)
	sameID := map[string]string{"slow job": id}
	e.send(t, src, "slow job")
	wa := startWorker(t, &twist{API: e.sqs, sameID: sameID}, src, worker.Chain(h, ga.Wrap), func(o *worker.Options) { o.Concurrency = 2 })
	<-started
	wb := startWorker(t, &twist{API: e.sqs, sameID: sameID}, src, worker.Chain(h, gb.Wrap), func(o *worker.Options) { o.Concurrency = 2 })
	// Duplicates arrive after the first lock would have expired.
	lapsed := duplicatesDuringRun(t, e, src, "slow job", key, 11*time.Second, 4*time.Second, 8*time.Second)
	waitFor(t, time.Minute, "the job and its two duplicates deleted", func() bool {
		return wa.outcomes()[worker.Deleted]+wb.outcomes()[worker.Deleted] == 3
	})
	for _, w := range []*running{wa, wb} {
		if err := w.stop(); err != nil {
			t.Errorf("Run: %v", err)
		}
	}
	s := sumStats(ga, gb)
	if runs.Load() != 1 {
		t.Errorf("the handler ran %d times; want once", runs.Load())
	}
	if len(lapsed) > 0 {
		t.Errorf("the lock lapsed while the handler ran: %v", lapsed)
	}
	if s.Extensions < 4 || s.LocksLost != 0 {
		t.Errorf("%d lock extensions (want ≥ 4 over 12 s of a 2 s lease), %d locks lost", s.Extensions, s.LocksLost)
	}
	if s.DuplicatesInProgress < 2 || s.DuplicatesCompleted != 2 {
		t.Errorf("duplicates: %d snoozed (want ≥ 2), %d deleted as completed (want 2)", s.DuplicatesInProgress, s.DuplicatesCompleted)
	}
	if d := wa.outcomes()[worker.DeadLettered] + wb.outcomes()[worker.DeadLettered]; d != 0 {
		t.Errorf("%d dead-lettered", d)
	}
	checkEmpty(t, e, src, dlqURL)
	t.Logf("1 run of 12 s, %d lock extensions, %d snoozes; DynamoDB requests %v", s.Extensions, s.DuplicatesInProgress, requests(ga, gb))
}

// workerKilled: a worker that dies mid-handler (it goes dark: its lease
// and its lock are abandoned) leaves a lock that expires with the lease;
// then the job runs again on another worker and completes once.
func workerKilled(t *testing.T, e *env) {
	src, dlqURL := e.newQueue(t, 2*time.Second)
	var runs atomic.Int64
	a := newDoomed(t, e, &runs)
	gb := mustGuard(t, e.db, e.table, guardOpts("killed"))
	e.send(t, src, "job")
	wa := startWorker(t, a.sqs, src, worker.Chain(a.handler, a.guard.Wrap))
	<-a.started
	wb := startWorker(t, e.sqs, src, worker.Chain(counting(&runs), gb.Wrap))
	waitFor(t, time.Minute, "the job to complete on the second worker", func() bool { return wb.outcomes()[worker.Deleted] == 1 })
	_ = wa.stop()
	if err := wb.stop(); err != nil {
		t.Errorf("Run: %v", err)
	}
	sa, sb := a.guard.Stats(), gb.Stats()
	if runs.Load() != 2 || sa.Completed != 0 || sb.Completed != 1 {
		t.Errorf("runs %d (want 2: the killed one and the retry), completed by the killed worker %d (want 0), by the other %d (want 1)", runs.Load(), sa.Completed, sb.Completed)
	}
	if sb.TakenOver != 1 {
		t.Errorf("the second worker took over %d expired locks, want 1", sb.TakenOver)
	}
	if d := wb.outcomes()[worker.DeadLettered]; d != 0 {
		t.Errorf("%d dead-lettered", d)
	}
	checkEmpty(t, e, src, dlqURL)
	t.Logf("worker B: %d snoozes before the lock expired, took it over, completed; requests %v", sb.DuplicatesInProgress, requests(gb))
}

// workerDroppedDelete: the process dies between the handler's success and
// the delete (the delete never goes out); the redelivery is acknowledged
// without running the handler.
func workerDroppedDelete(t *testing.T, e *env) {
	src, dlqURL := e.newQueue(t, 2*time.Second)
	tw := &twist{API: e.sqs}
	tw.dropDeletes.Store(1)
	g := mustGuard(t, e.db, e.table, guardOpts("dropped"))
	var runs atomic.Int64
	h := worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error { runs.Add(1); return nil })
	e.send(t, src, "job")
	w := startWorker(t, tw, src, worker.Chain(h, g.Wrap))
	waitFor(t, time.Minute, "the redelivery deleted", func() bool { return w.outcomes()[worker.Deleted] == 2 })
	if err := w.stop(); err != nil {
		t.Errorf("Run: %v", err)
	}
	s := g.Stats()
	if runs.Load() != 1 || s.DuplicatesCompleted != 1 {
		t.Errorf("the handler ran %d times (want 1); %d redeliveries acknowledged without running (want 1)", runs.Load(), s.DuplicatesCompleted)
	}
	checkEmpty(t, e, src, dlqURL)
}

// --- the Lambda adapter, through RunLocal ---

// lambdaRun runs fn as Lambda's event source mapping would over src until
// the returned stop.
func lambdaRun(t *testing.T, client sqslambda.LocalAPI, src string, fn *sqslambda.Handler, functionTimeout time.Duration, concurrency int) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- sqslambda.RunLocal(ctx, client, src, fn.Handle, func(o *sqslambda.LocalOptions) {
			o.BatchSize = 1
			o.Concurrency = concurrency
			o.FunctionTimeout = functionTimeout
			o.WaitTime = time.Second
			o.ReportBatchItemFailures = true
			o.Logger = quiet
		})
	}()
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("RunLocal: %v", err)
		}
	}
}

// lambdaFunction is a sqslambda.Handler over h guarded by g, with client
// for snoozes and retry delays; it records outcomes.
type lambdaFunction struct {
	*sqslambda.Handler
	mu       sync.Mutex
	outcomes map[worker.Outcome]int
}

func newLambda(t *testing.T, client sqslambda.API, h worker.Handler, g *idempotency.Guard) *lambdaFunction {
	f := &lambdaFunction{outcomes: map[worker.Outcome]int{}}
	fn, err := sqslambda.New(worker.Chain(h, g.Wrap), func(o *sqslambda.Options) {
		o.Client = client
		o.Logger = quiet
		o.OnSettled = func(s worker.Settlement) {
			f.mu.Lock()
			f.outcomes[s.Outcome]++
			f.mu.Unlock()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	f.Handler = fn
	return f
}

func (f *lambdaFunction) count(o worker.Outcome) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.outcomes[o]
}

// lambdaTenDeliveries: the same message in 10 concurrent invocations runs
// once; the others are snoozed, then acknowledged; none dead-lettered.
func lambdaTenDeliveries(t *testing.T, e *env) {
	const n = 10
	src, dlqURL := e.newQueue(t, 6*time.Second)
	id := e.name("message")
	for range n {
		e.send(t, src, "charge order 1")
	}
	g := mustGuard(t, e.db, e.table, guardOpts("charge"))
	var runs atomic.Int64
	h := worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
		runs.Add(1)
		if !blockUntil(ctx, func() bool { return g.Stats().DuplicatesInProgress >= n-1 }) {
			return context.Cause(ctx)
		}
		return nil
	})
	tw := &twist{API: e.sqs, sameID: map[string]string{"charge order 1": id}}
	fn := newLambda(t, tw, h, g)
	stop := lambdaRun(t, tw, src, fn.Handler, 5*time.Second, n)
	waitFor(t, 2*time.Minute, "every delivery acknowledged", func() bool { return fn.count(worker.Deleted) == n })
	stop()
	s := g.Stats()
	if runs.Load() != 1 || s.Completed != 1 || s.DuplicatesCompleted != n-1 {
		t.Errorf("the handler ran %d times (want 1); completed %d, duplicates acknowledged %d (want %d)", runs.Load(), s.Completed, s.DuplicatesCompleted, n-1)
	}
	if fn.count(worker.Snoozed) < n-1 || fn.count(worker.DeadLettered) != 0 {
		t.Errorf("%d snoozed (want ≥ %d), %d dead-lettered", fn.count(worker.Snoozed), n-1, fn.count(worker.DeadLettered))
	}
	waitFor(t, 30*time.Second, "RunLocal's deletes", func() bool { return e.left(t, src) == 0 })
	checkEmpty(t, e, src, dlqURL)
}

// lambdaSlowHandler: on Lambda the lock lasts the invocation (its deadline
// does not move) plus the margin: duplicates arriving while a handler uses
// most of its function timeout never run.
func lambdaSlowHandler(t *testing.T, e *env) {
	src, dlqURL := e.newQueue(t, 6*time.Second)
	id := e.name("message")
	key := "slow#" + id
	g := mustGuard(t, e.db, e.table, guardOpts("slow"))
	var runs atomic.Int64
	h, started := slowJob(&runs, 3500*time.Millisecond) // of a 5 s function timeout, less 1 s of DeadlineMargin
	tw := &twist{API: e.sqs, sameID: map[string]string{"slow job": id}}
	fn := newLambda(t, tw, h, g)
	e.send(t, src, "slow job")
	stop := lambdaRun(t, tw, src, fn.Handler, 5*time.Second, 3)
	<-started
	lapsed := duplicatesDuringRun(t, e, src, "slow job", key, 3*time.Second, 0, 1500*time.Millisecond)
	waitFor(t, time.Minute, "the job and its two duplicates acknowledged", func() bool { return fn.count(worker.Deleted) == 3 })
	stop()
	s := g.Stats()
	if runs.Load() != 1 || s.DuplicatesInProgress < 2 || s.DuplicatesCompleted != 2 {
		t.Errorf("runs %d (want 1), snoozed %d (want ≥ 2), acknowledged %d (want 2)", runs.Load(), s.DuplicatesInProgress, s.DuplicatesCompleted)
	}
	if len(lapsed) > 0 {
		t.Errorf("the lock lapsed while the handler ran: %v", lapsed)
	}
	if s.Extensions != 0 {
		t.Errorf("%d lock extensions on Lambda, whose deadline does not move; want 0", s.Extensions)
	}
	waitFor(t, 30*time.Second, "RunLocal's deletes", func() bool { return e.left(t, src) == 0 })
	checkEmpty(t, e, src, dlqURL)
}

// lambdaKilled: an execution environment that dies mid-handler (its calls
// no longer reach AWS) leaves a lock that expires with the invocation; the
// record's redelivery runs the job again, which completes once.
func lambdaKilled(t *testing.T, e *env) {
	src, dlqURL := e.newQueue(t, 3*time.Second)
	var runs atomic.Int64
	a := newDoomed(t, e, &runs)
	gb := mustGuard(t, e.db, e.table, guardOpts("killed"))
	fnA := newLambda(t, a.sqs, a.handler, a.guard)
	fnB := newLambda(t, e.sqs, counting(&runs), gb)
	e.send(t, src, "job")
	stopA := lambdaRun(t, a.sqs, src, fnA.Handler, 3*time.Second, 1)
	<-a.started
	stopB := lambdaRun(t, e.sqs, src, fnB.Handler, 3*time.Second, 1)
	waitFor(t, time.Minute, "the job to complete in another invocation", func() bool { return fnB.count(worker.Deleted) == 1 })
	stopB()
	stopA()
	sa, sb := a.guard.Stats(), gb.Stats()
	if runs.Load() != 2 || sa.Completed != 0 || sb.Completed != 1 || sb.TakenOver != 1 {
		t.Errorf("runs %d (want 2), completed by the dead environment %d (want 0), by the other %d (want 1), locks taken over %d (want 1)", runs.Load(), sa.Completed, sb.Completed, sb.TakenOver)
	}
	waitFor(t, 30*time.Second, "RunLocal's deletes", func() bool { return e.left(t, src) == 0 })
	checkEmpty(t, e, src, dlqURL)
}

// lambdaDroppedDelete: RunLocal's delete after a successful invocation is
// lost; the redelivery is acknowledged without running the handler.
func lambdaDroppedDelete(t *testing.T, e *env) {
	src, dlqURL := e.newQueue(t, 3*time.Second)
	tw := &twist{API: e.sqs}
	tw.dropDeletes.Store(1)
	g := mustGuard(t, e.db, e.table, guardOpts("dropped"))
	var runs atomic.Int64
	fn := newLambda(t, tw, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error { runs.Add(1); return nil }), g)
	e.send(t, src, "job")
	stop := lambdaRun(t, tw, src, fn.Handler, 3*time.Second, 1)
	waitFor(t, time.Minute, "the redelivery acknowledged", func() bool { return fn.count(worker.Deleted) == 2 })
	stop()
	if s := g.Stats(); runs.Load() != 1 || s.DuplicatesCompleted != 1 {
		t.Errorf("the handler ran %d times (want 1); %d redeliveries acknowledged without running (want 1)", runs.Load(), s.DuplicatesCompleted)
	}
	waitFor(t, 30*time.Second, "RunLocal's deletes", func() bool { return e.left(t, src) == 0 })
	checkEmpty(t, e, src, dlqURL)
}

// duplicatesDuringRun sends a duplicate (body) at each offset in at, and
// samples the job's lock every 250 ms, for span; it returns the moments
// the lock was not live.
func duplicatesDuringRun(t *testing.T, e *env, src, body, key string, span time.Duration, at ...time.Duration) (lapsed []string) {
	t0 := time.Now()
	for time.Since(t0) < span {
		if len(at) > 0 && time.Since(t0) >= at[0] {
			e.send(t, src, body)
			at = at[1:]
		}
		if it := e.item(t, key); it == nil || numberAttr(it, "lockedUntil") < time.Now().UnixMilli() {
			lapsed = append(lapsed, lockState(time.Since(t0), it))
		}
		time.Sleep(250 * time.Millisecond)
	}
	return lapsed
}

// lockState describes a record's lock at a moment of a scenario.
func lockState(at time.Duration, item map[string]types.AttributeValue) string {
	if item == nil {
		return fmt.Sprintf("at +%v: no record", at.Round(time.Millisecond))
	}
	return fmt.Sprintf("at +%v: %s, locked until %s", at.Round(time.Millisecond), item["status"].(*types.AttributeValueMemberS).Value,
		time.UnixMilli(numberAttr(item, "lockedUntil")).Format("15:04:05.000"))
}

// numberAttr reads a number attribute (0 when absent).
func numberAttr(item map[string]types.AttributeValue, name string) int64 {
	if n, ok := item[name].(*types.AttributeValueMemberN); ok {
		v, _ := strconv.ParseInt(n.Value, 10, 64)
		return v
	}
	return 0
}

// requests sums the guards' DynamoDB requests by API.
func requests(guards ...*idempotency.Guard) map[string]int64 {
	out := map[string]int64{}
	for _, g := range guards {
		for k, v := range g.Stats().Requests {
			out[k] += v
		}
	}
	return out
}
