package fleet_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/fleet"
	"github.com/sqsworker/sqsworker/sqstest"
	"github.com/sqsworker/sqsworker/worker"
)

// runWorker runs a worker on the fake until the test ends.
func runWorker(t *testing.T, sq *sqstest.Fake, src string, h worker.Handler, optFns ...func(*worker.Options)) *worker.Worker {
	t.Helper()
	opts := append([]func(*worker.Options){func(o *worker.Options) { o.Logger = quiet; o.WaitTime = time.Second }}, optFns...)
	w, err := worker.New(sq, src, h, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return w
}

// A slot follows its message's lease in the worker: while the handler
// runs past the visibility timeout, the heartbeat extends the message and
// the slot's expiry moves with it; when the handler returns, the slot is
// released.
func TestCapSlotFollowsTheMessageLease(t *testing.T) {
	client, table := newTable(t)
	f := newFleet(t, client, table, "p1")
	c, err := f.Cap("report", 1)
	if err != nil {
		t.Fatal(err)
	}
	sq := sqstest.For(t)
	src, _ := sq.MustCreateQueueWithDLQ(t, "reports", 3, map[string]string{"VisibilityTimeout": "2"})
	sq.MustSend(t, src, "long job")
	var first, later time.Time
	finished := make(chan struct{})
	runWorker(t, sq, src, c.Middleware()(worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
		first = slotExpiry(t, client, table)
		time.Sleep(5 * time.Second) // well past the 2 s visibility timeout
		later = slotExpiry(t, client, table)
		close(finished)
		return nil
	})))
	select {
	case <-finished:
	case <-time.After(30 * time.Second):
		t.Fatal("the job did not run")
	}
	if first.IsZero() || !later.After(first.Add(2*time.Second)) || later.Before(time.Now()) {
		t.Fatalf("slot expiry at the start %v, 5 s later %v; want it moved with the heartbeat's extensions, into the future", first, later)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !slotExpiry(t, client, table).IsZero() {
		if time.Now().After(deadline) {
			t.Fatal("the slot was not released after the handler returned")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// slotExpiry reads the one slot of cap "report"; zero when none is held.
func slotExpiry(t *testing.T, client *dynamodb.Client, table string) time.Time {
	t.Helper()
	for _, exp := range slotHolders(t, client, table, "cap|report|") {
		return exp
	}
	return time.Time{}
}

// slotHolders reads the slots of a cap item: holder → lease expiry.
func slotHolders(t *testing.T, client *dynamodb.Client, table, pk string) map[string]time.Time {
	t.Helper()
	out, err := client.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{fleet.KeyAttribute: &types.AttributeValueMemberS{Value: pk}},
	})
	if err != nil {
		t.Fatal(err)
	}
	slots := map[string]time.Time{}
	holders, _ := out.Item["holders"].(*types.AttributeValueMemberM)
	if holders == nil {
		return slots
	}
	for h, v := range holders.Value {
		ms, err := strconv.ParseInt(v.(*types.AttributeValueMemberN).Value, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		slots[h] = time.UnixMilli(ms)
	}
	return slots
}

// Tenant fairness on a standard queue whose producer sets MessageGroupId
// (SQS fair queues): tenant A floods 200 jobs ahead of tenant B's 2. With a
// per-tenant cap of 2 and 4 handlers, A never runs more than 2 at once
// and B's jobs run within seconds instead of waiting behind A's backlog
// (4 handlers × 200 ms would take 10 s to get through A's 200 first);
// nothing is dead-lettered for the snoozes.
func TestTenantCapKeepsAFloodingTenantFromEveryHandler(t *testing.T) {
	client, table := newTable(t)
	f := newFleet(t, client, table, "p1")
	c, err := f.Cap("tenant", 2, func(o *fleet.CapOptions) { o.Key = fleet.ByGroup; o.FullSnooze = time.Second })
	if err != nil {
		t.Fatal(err)
	}
	warmUp(t, client, table)
	sq := sqstest.For(t)
	src, dlq := sq.MustCreateQueueWithDLQ(t, "jobs", 100, map[string]string{"VisibilityTimeout": "30"})
	group := func(g string) func(*sqs.SendMessageInput) {
		return func(in *sqs.SendMessageInput) { in.MessageGroupId = aws.String(g) }
	}
	for range 200 {
		sq.MustSend(t, src, "a", group("tenant-a"))
	}
	for range 2 {
		sq.MustSend(t, src, "b", group("tenant-b"))
	}
	var (
		mu       sync.Mutex
		runningA int
		peakA    int
		bDone    []time.Duration
	)
	var done atomic.Int64
	begin := time.Now()
	w := runWorker(t, sq, src, c.Middleware()(worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
		mu.Lock()
		if m.GroupID == "tenant-a" {
			runningA++
			peakA = max(peakA, runningA)
		}
		mu.Unlock()
		time.Sleep(200 * time.Millisecond)
		mu.Lock()
		if m.GroupID == "tenant-a" {
			runningA--
		} else {
			bDone = append(bDone, time.Since(begin))
		}
		mu.Unlock()
		done.Add(1)
		return nil
	})), func(o *worker.Options) { o.Concurrency = 4 })

	deadline := time.Now().Add(20 * time.Second)
	for {
		mu.Lock()
		b := len(bDone)
		mu.Unlock()
		if b == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of tenant B's 2 jobs done in 20 s; worker %+v", b, w.Stats())
		}
		time.Sleep(50 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("tenant B's jobs done after %v; %d jobs of A done by then, at most %d at once; %+v", bDone, done.Load()-2, peakA, f.Stats())
	if peakA > 2 {
		t.Errorf("tenant A ran %d jobs at once; the cap is 2", peakA)
	}
	if bDone[1] > 3*time.Second {
		t.Errorf("tenant B's jobs done after %v; want both within 3 s, not behind A's 200", bDone)
	}
	if s := w.Stats(); s.DeadLettered != 0 || s.Snoozed == 0 {
		t.Errorf("worker %+v; want A's jobs over the cap snoozed, none dead-lettered", s)
	}
	if n := len(sq.Messages(dlq)); n != 0 {
		t.Errorf("the DLQ holds %d messages", n)
	}
}

// When DynamoDB cannot be asked (here: the table was deleted), a rate
// limit and a cap fail closed by default — the job is snoozed for
// ErrorSnooze, not run, not failed — or, with FailOpen, run unchecked; a
// Pauser keeps the worker receiving.
func TestControlsWhenDynamoDBFails(t *testing.T) {
	client, table := newTable(t)
	f := newFleet(t, client, table, "p1")
	closedLimit, _ := f.RateLimit("api", 10)
	openLimit, _ := f.RateLimit("api", 10, func(o *fleet.RateLimitOptions) { o.FailOpen = true })
	closedCap, _ := f.Cap("tenant", 2)
	openCap, _ := f.Cap("tenant", 2, func(o *fleet.CapOptions) { o.FailOpen = true })
	p, _ := f.Pauser("orders")
	if _, err := client.DeleteTable(t.Context(), &dynamodb.DeleteTableInput{TableName: aws.String(table)}); err != nil {
		t.Fatal(err)
	}

	ran := 0
	h := worker.HandlerFunc(func(context.Context, *worker.Message) error { ran++; return nil })
	for _, mw := range []worker.Middleware{closedLimit.Middleware(), closedCap.Middleware()} {
		err := mw(h).Handle(t.Context(), &worker.Message{ID: "m"})
		if d, ok := retrySnooze(err); !ok || d != 10*time.Second || ran != 0 {
			t.Fatalf("fail closed: %v, ran %d; want a 10 s snooze (ErrorSnooze), not run", err, ran)
		}
	}
	for _, mw := range []worker.Middleware{openLimit.Middleware(), openCap.Middleware()} {
		if err := mw(h).Handle(t.Context(), &worker.Message{ID: "m"}); err != nil {
			t.Fatalf("FailOpen: %v; want the job run", err)
		}
	}
	if s := f.Stats(); ran != 2 || s.FailedClosed != 2 || s.FailedOpen != 2 {
		t.Fatalf("ran %d, Stats %+v; want 2 run open, 2 snoozed closed", ran, s)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	reports := make(chan bool, 1)
	go p.Watch(ctx, func(open bool) { reports <- open })
	if open := <-reports; !open {
		t.Fatal("a Pauser that cannot read the switch closed the gate; it must fail open")
	}
}

// A downstream that fails for a while (5 s here) behind a breaker: its
// failures are snoozed, not failed, the breaker opens and probes, and
// once the downstream is back every job is done, none dead-lettered and
// no job's retries spent.
func TestBreakerCarriesJobsThroughAnOutage(t *testing.T) {
	client, table := newTable(t)
	f := newFleet(t, client, table, "p1")
	b, err := f.Breaker("downstream", func(o *fleet.BreakerOptions) {
		o.Counts = func(err error) bool { return errors.Is(err, errDown) }
		o.Threshold = 3
		o.OpenFor = time.Second
		o.MaxOpenFor = 2 * time.Second
	})
	if err != nil {
		t.Fatal(err)
	}
	sq := sqstest.For(t)
	src, dlq := sq.MustCreateQueueWithDLQ(t, "payments", 100, map[string]string{"VisibilityTimeout": "30"})
	const n = 40
	for range n {
		sq.MustSend(t, src, "charge")
	}
	downUntil := time.Now().Add(5 * time.Second)
	var done, calls atomic.Int64
	w := runWorker(t, sq, src, b.Middleware()(worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
		calls.Add(1)
		if time.Now().Before(downUntil) {
			return fmt.Errorf("charging: %w", errDown)
		}
		done.Add(1)
		return nil
	})), func(o *worker.Options) {
		o.Concurrency = 4
		o.RetryPolicy = fixedRetries(1) // one retry: an outage spending attempts would dead-letter
	})
	deadline := time.Now().Add(60 * time.Second)
	for done.Load() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d jobs done 60 s in; worker %+v; fleet %+v", done.Load(), n, w.Stats(), f.Stats())
		}
		time.Sleep(50 * time.Millisecond)
	}
	s := w.Stats()
	t.Logf("%d handler calls for %d jobs; worker snoozed %d, failed %d; fleet %+v", calls.Load(), n, s.Snoozed, s.Failed, f.Stats())
	if s.DeadLettered != 0 || s.Retried != 0 {
		t.Errorf("worker %+v; an outage behind the breaker must spend no attempt and dead-letter nothing", s)
	}
	if n := len(sq.Messages(dlq)); n != 0 {
		t.Errorf("the DLQ holds %d messages", n)
	}
	if calls.Load() > n+20 {
		t.Errorf("%d handler calls for %d jobs; the open breaker should have kept most jobs from the failing downstream", calls.Load(), n)
	}
}

// Short jobs under a cap: 60 jobs of 500 ms, a cap of 3, one worker of 4
// handlers (the cap plus one waiting job, MaxWaiting's default). A job
// that finds the cap full waits in-process and is handed the slot of the
// job that ends, so the slots stay busy: never more than 3 run, next to
// no job is snoozed, and most slots pass from job to job without a
// request. (With snoozes alone, as before MaxWait, nearly every job past
// the first 3 was snoozed and the run took minutes: BENCHMARKS.md.)
func TestCapShortJobsWaitForASlotInProcess(t *testing.T) {
	const n, limit = 60, 3
	client, table := newTable(t)
	warmUp(t, client, table)
	f := newFleet(t, client, table, "p1")
	c, err := f.Cap("tenant", limit, func(o *fleet.CapOptions) { o.Key = fleet.ByGroup })
	if err != nil {
		t.Fatal(err)
	}
	sq := sqstest.For(t)
	src, dlq := sq.MustCreateQueueWithDLQ(t, "short", 100, map[string]string{"VisibilityTimeout": "30"})
	for range n {
		sq.MustSend(t, src, "a", func(in *sqs.SendMessageInput) { in.MessageGroupId = aws.String("tenant-a") })
	}
	var running, peak, done atomic.Int64
	allDone := make(chan struct{})
	begin := time.Now()
	w := runWorker(t, sq, src, c.Middleware()(worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
		r := running.Add(1)
		for p := peak.Load(); r > p && !peak.CompareAndSwap(p, r); p = peak.Load() {
		}
		time.Sleep(500 * time.Millisecond)
		running.Add(-1) // before the slot is released or handed over
		if done.Add(1) == n {
			close(allDone)
		}
		return nil
	})), func(o *worker.Options) { o.Concurrency = limit + 1 })
	select {
	case <-allDone:
	case <-time.After(90 * time.Second):
		t.Fatalf("%d of %d jobs done in 90 s; worker %+v; fleet %+v", done.Load(), n, w.Stats(), f.Stats())
	}
	took := time.Since(begin)
	s := f.Stats()
	t.Logf("%d jobs of 500 ms under a cap of %d, %d handlers: %v (3 slots busy throughout: %v); at most %d at once; %d waited, %d handed over, %d snoozed; %d DynamoDB requests",
		n, limit, limit+1, took.Round(10*time.Millisecond), time.Duration(n/limit)*500*time.Millisecond, peak.Load(), s.CapWaits, s.CapHandoffs, s.CapSnoozed, s.Requests)
	if peak.Load() > limit {
		t.Errorf("%d jobs ran at once; the cap is %d", peak.Load(), limit)
	}
	// A waiting job is handed a freed slot at once; on a loaded machine
	// one may still reach MaxWait (1 s) and be snoozed now and then.
	if s.CapSnoozed > 3 {
		t.Errorf("%d jobs snoozed; want next to none (a freed slot goes to the job waiting for it)", s.CapSnoozed)
	}
	if s.CapHandoffs < n/2 || s.Requests > n/2 {
		t.Errorf("%d slots handed over from job to job, %d DynamoDB requests; want most of the %d jobs past the first %d handed a slot, without a request", s.CapHandoffs, s.Requests, n, limit)
	}
	if ws := w.Stats(); ws.DeadLettered != 0 {
		t.Errorf("worker %+v; nothing may be dead-lettered", ws)
	}
	if n := len(sq.Messages(dlq)); n != 0 {
		t.Errorf("the DLQ holds %d messages", n)
	}
}
