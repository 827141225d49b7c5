package fleet_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sqsworker/sqsworker/fleet"
	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/worker"
)

// Four processes' caps of 3 on one key, twelve jobs competing: never
// more than 3 hold a slot at once, and slots are used.
func TestCapNeverExceededAcrossProcesses(t *testing.T) {
	client, table := newTable(t)
	var running, peak, total atomic.Int64
	warmUp(t, client, table)
	// The run ends when 40 jobs have run (a few seconds on a quiet
	// machine) or after 60 s on a loaded one: what is checked is counts,
	// not how fast DynamoDB Local answers.
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	var fleets []*fleet.Fleet
	defer func() {
		for _, f := range fleets {
			t.Logf("%+v", f.Stats())
		}
	}()
	for p := range 4 {
		f := newFleet(t, client, table, fmt.Sprintf("proc-%d", p))
		fleets = append(fleets, f)
		c, err := f.Cap("tenant", 3)
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			wg.Go(func() {
				for ctx.Err() == nil {
					slot, err := c.Acquire(ctx, "A", time.Now().Add(10*time.Second))
					if errors.Is(err, fleet.ErrCapFull) {
						time.Sleep(50 * time.Millisecond) // a snoozed job comes back later
						continue
					}
					if err != nil {
						if ctx.Err() == nil {
							t.Errorf("Acquire: %v", err)
						}
						return
					}
					n := running.Add(1)
					if total.Add(1) >= 40 {
						cancel()
					}
					for {
						old := peak.Load()
						if n <= old || peak.CompareAndSwap(old, n) {
							break
						}
					}
					time.Sleep(200 * time.Millisecond) // long enough for others to acquire meanwhile
					running.Add(-1)                    // before the release reaches DynamoDB
					if err := slot.Release(context.Background()); err != nil {
						t.Errorf("Release: %v", err)
					}
				}
			})
		}
	}
	wg.Wait()
	t.Logf("%d jobs ran, at most %d at once", total.Load(), peak.Load())
	if peak.Load() > 3 {
		t.Errorf("%d jobs held a slot at once; the cap is 3", peak.Load())
	}
	// How many slots are in use at once depends on DynamoDB Local's pace
	// on the shared cores; that several are, and jobs keep running, not.
	if peak.Load() < 2 || total.Load() < 10 {
		t.Errorf("peak %d, %d jobs: the cap's slots were not used", peak.Load(), total.Load())
	}
}

// A holder that stops renewing (a killed process) keeps its slots only
// until their lease expires; a renewed slot outlives its first lease; a
// slot renewed after it was taken back says so.
func TestCapSlotsExpireWithTheirLease(t *testing.T) {
	client, table := newTable(t)
	clk := newClock()
	dead := newFleet(t, client, table, "dead", func(o *fleet.Options) { o.Now = clk.Now })
	alive := newFleet(t, client, table, "alive", func(o *fleet.Options) { o.Now = clk.Now })
	cd, _ := dead.Cap("tenant", 2)
	ca, _ := alive.Cap("tenant", 2)
	ctx := t.Context()

	lease := clk.Now().Add(30 * time.Second)
	s1, err := cd.Acquire(ctx, "A", lease)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := ca.Acquire(ctx, "A", lease)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ca.Acquire(ctx, "A", lease); !errors.Is(err, fleet.ErrCapFull) {
		t.Fatalf("third Acquire under a cap of 2 = %v; want ErrCapFull", err)
	}
	if _, err := ca.Acquire(ctx, "B", lease); err != nil {
		t.Fatalf("another key: %v; keys have their own slots", err)
	}
	// The live holder renews; the dead one does not.
	clk.Add(20 * time.Second)
	if err := s2.Renew(ctx, clk.Now().Add(30*time.Second)); err != nil {
		t.Fatalf("Renew: %v", err)
	}
	clk.Add(11 * time.Second) // past the first lease
	s3, err := ca.Acquire(ctx, "A", clk.Now().Add(30*time.Second))
	if err != nil {
		t.Fatalf("Acquire after the dead holder's lease expired: %v; want its slot back", err)
	}
	if _, err := ca.Acquire(ctx, "A", clk.Now().Add(30*time.Second)); !errors.Is(err, fleet.ErrCapFull) {
		t.Fatalf("Acquire with the renewed slot and the new one held = %v; want ErrCapFull", err)
	}
	if err := s1.Renew(ctx, clk.Now().Add(30*time.Second)); !errors.Is(err, fleet.ErrSlotLost) {
		t.Fatalf("the dead holder's late Renew = %v; want ErrSlotLost", err)
	}
	if err := s3.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := cd.Acquire(ctx, "A", clk.Now().Add(30*time.Second)); err != nil {
		t.Fatalf("Acquire after a Release: %v", err)
	}
	if s := dead.Stats(); s.SlotsLost != 1 {
		t.Errorf("Stats %+v; want 1 slot lost", s)
	}
}

// Over the cap, the middleware snoozes the job (no attempt, never run);
// under it the job runs and its slot is released when it returns.
func TestCapMiddleware(t *testing.T) {
	client, table := newTable(t)
	f := newFleet(t, client, table, "p1")
	c, err := f.Cap("tenant", 1, func(o *fleet.CapOptions) { o.Key = fleet.ByGroup })
	if err != nil {
		t.Fatal(err)
	}
	inside := make(chan struct{})
	release := make(chan struct{})
	h := c.Middleware()(worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
		if m.ID == "first" {
			close(inside)
			<-release
		}
		return nil
	}))
	done := make(chan error, 1)
	go func() { done <- h.Handle(t.Context(), &worker.Message{ID: "first", GroupID: "tenant-a"}) }()
	<-inside
	err = h.Handle(t.Context(), &worker.Message{ID: "second", GroupID: "tenant-a"})
	if d, ok := retrySnooze(err); !ok || d < time.Second {
		t.Fatalf("a second job of tenant-a under a cap of 1 = %v; want a snooze of FullSnooze (1 s) or more", err)
	}
	if err := h.Handle(t.Context(), &worker.Message{ID: "other", GroupID: "tenant-b"}); err != nil {
		t.Fatalf("tenant-b's job: %v; want it run", err)
	}
	// tenant-b's slot stays with the process a quarter of a second for the
	// next job of its key, then is released.
	for deadline := time.Now().Add(5 * time.Second); f.Stats().SlotsHeld != 1 && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	if s := f.Stats(); s.SlotsHeld != 1 || s.CapSnoozed != 1 {
		t.Errorf("Stats %+v; want 1 slot held, 1 snoozed", s)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := h.Handle(t.Context(), &worker.Message{ID: "third", GroupID: "tenant-a"}); err != nil {
		t.Fatalf("after the first job ended: %v; want its slot released", err)
	}
	for deadline := time.Now().Add(5 * time.Second); f.Stats().SlotsHeld != 0; {
		if time.Now().After(deadline) {
			t.Fatalf("Stats %+v; want every slot released", f.Stats())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A job that finds the cap full waits in-process (MaxWaiting, 1, at a
// time: the next is snoozed at once) and is handed the slot of the job
// that ends, without a release and an acquisition; a slot handed on with
// less than half of the new job's lease left is renewed to that lease.
func TestCapHandsAFreedSlotToAWaitingJob(t *testing.T) {
	client, table := newTable(t)
	clk := newClock()
	f := newFleet(t, client, table, "p1", func(o *fleet.Options) { o.Now = clk.Now })
	c, err := f.Cap("report", 1, func(o *fleet.CapOptions) { o.MaxWait = time.Minute })
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan string, 2)
	release := make(chan struct{})
	var secondSaw time.Time
	h := c.Middleware()(worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
		if m.ID == "second" {
			secondSaw = slotExpiry(t, client, table)
		}
		started <- m.ID
		<-release
		return nil
	}))
	firstErr, secondErr := make(chan error, 1), make(chan error, 1)
	go func() { firstErr <- h.Handle(t.Context(), &worker.Message{ID: "first"}) }()
	if id := <-started; id != "first" {
		t.Fatalf("%s started first", id)
	}
	firstLease := slotExpiry(t, client, table) // now + Lease (30 s): no worker deadline here
	clk.Add(20 * time.Second)                  // 10 s of the slot's lease left
	go func() { secondErr <- h.Handle(t.Context(), &worker.Message{ID: "second"}) }()
	for f.Stats().CapWaits == 0 {
		select {
		case err := <-secondErr:
			t.Fatalf("the second job, over the cap, returned %v; want it waiting for the slot", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	if s := f.Stats(); s.WaitingForSlot != 1 {
		t.Fatalf("Stats().WaitingForSlot = %d while the second job waits; want 1", s.WaitingForSlot)
	}
	err = h.Handle(t.Context(), &worker.Message{ID: "third"})
	if _, ok := retrySnooze(err); !ok {
		t.Fatalf("a third job while one waits = %v; want it snoozed at once (MaxWaiting 1)", err)
	}
	before := f.Stats().Requests
	release <- struct{}{} // the first job ends
	select {
	case id := <-started:
		if id != "second" {
			t.Fatalf("%s started after the first ended; want the waiting job", id)
		}
	case err := <-secondErr:
		t.Fatalf("the waiting job returned %v; want it handed the first job's slot", err)
	}
	if want := clk.Now().Add(30 * time.Second); secondSaw.Sub(want).Abs() > time.Millisecond {
		t.Errorf("the handed slot expires at %v (it expired at %v); want it renewed to the second job's lease, %v", secondSaw, firstLease, want)
	}
	if s := f.Stats(); s.CapHandoffs != 1 || s.CapWaits != 1 || s.CapSnoozed != 1 || s.SlotsHeld != 1 || s.Requests-before != 1 || s.WaitingForSlot != 0 {
		t.Errorf("Stats %+v, %d requests for the hand-over; want 1 handed over (one renewal), 1 waited, 1 snoozed, 1 held, none waiting", s, s.Requests-before)
	}
	close(release)
	for _, errs := range []chan error{firstErr, secondErr} {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	// The slot stays with the process for the next job of its key for a
	// quarter of a second (no job comes here), then is released.
	for deadline := time.Now().Add(5 * time.Second); !slotExpiry(t, client, table).IsZero() || f.Stats().SlotsHeld != 0; {
		if time.Now().After(deadline) {
			t.Fatalf("the slot was not released after the second job ended; Stats %+v", f.Stats())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// answerLost is a DynamoDB client whose first successful UpdateItem
// loses its answer and is sent again, as the SDK's retry does after a
// dropped response: the write took effect, the retry fails its
// condition.
type answerLost struct {
	fleet.API
	lost atomic.Bool
}

func (a *answerLost) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	out, err := a.API.UpdateItem(ctx, in, optFns...)
	if err == nil && a.lost.CompareAndSwap(false, true) {
		return a.API.UpdateItem(ctx, in, optFns...)
	}
	return out, err
}

// An acquisition whose answer was lost took the slot: the retry's failed
// condition shows this holder in the item, and the slot is held (and
// released), not left to expire with nobody running under it.
func TestCapAcquisitionWhoseAnswerWasLost(t *testing.T) {
	client, table := newTable(t)
	f := newFleet(t, &answerLost{API: client}, table, "p1")
	other := newFleet(t, client, table, "p2")
	c, _ := f.Cap("tenant", 1)
	co, _ := other.Cap("tenant", 1)
	ctx := t.Context()
	slot, err := c.Acquire(ctx, "A", time.Now().Add(time.Minute))
	if err != nil {
		t.Fatalf("Acquire whose write took effect and whose answer was lost = %v; want the slot", err)
	}
	if _, err := co.Acquire(ctx, "A", time.Now().Add(time.Minute)); !errors.Is(err, fleet.ErrCapFull) {
		t.Fatalf("another process's Acquire = %v; want ErrCapFull (one slot, held)", err)
	}
	if err := slot.Release(ctx); err != nil {
		t.Fatal(err)
	}
	third, _ := newFleet(t, client, table, "p3").Cap("tenant", 1) // p2 takes "A" for full for 0.5 s
	if _, err := third.Acquire(ctx, "A", time.Now().Add(time.Minute)); err != nil {
		t.Fatalf("Acquire after the Release = %v; want the slot", err)
	}
	if s := f.Stats(); s.SlotsHeld != 0 {
		t.Errorf("Stats %+v; want no slot held after the Release", s)
	}
}

// answerNeverCame is a DynamoDB client whose first successful UpdateItem
// reports an error, and so does the request after it (the retry the
// library's rule makes): the write took effect, the caller cannot know
// (the retries ran out on dropped answers).
type answerNeverCame struct {
	fleet.API
	lost atomic.Int32 // answers lost so far, of the two
}

func (a *answerNeverCame) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	out, err := a.API.UpdateItem(ctx, in, optFns...)
	if (err == nil || a.lost.Load() == 1) && a.lost.Load() < 2 {
		a.lost.Add(1)
		return nil, errors.New("read tcp: connection reset by peer")
	}
	return out, err
}

// An acquisition that failed may still have written its slot: no job
// runs under it (the middleware fails closed), and this process's next
// acquisition of the key drops it instead of waiting for its lease.
func TestCapAcquisitionThatFailedLeavesNoSlotTaken(t *testing.T) {
	client, table := newTable(t)
	f := newFleet(t, &answerNeverCame{API: client}, table, "p1")
	c, _ := f.Cap("tenant", 1)
	ctx := t.Context()
	if _, err := c.Acquire(ctx, "A", time.Now().Add(time.Minute)); err == nil || errors.Is(err, fleet.ErrCapFull) {
		t.Fatalf("Acquire whose answer never came = %v; want its error", err)
	}
	slot, err := c.Acquire(ctx, "A", time.Now().Add(time.Minute))
	if err != nil {
		t.Fatalf("the next Acquire = %v; want the slot (the failed acquisition's entry dropped)", err)
	}
	if got := slotHolders(t, client, table, "cap|tenant|A"); len(got) != 1 {
		t.Errorf("the item holds %v; want only the slot taken", got)
	}
	if err := slot.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// A message ByGroup finds no MessageGroupId for has no key: by default it
// shares the key "" (the first one is logged, every one counted in
// Stats.Unkeyed); with Unkeyed "snooze" it is snoozed for ErrorSnooze, with
// "refuse" dead-lettered at once (retry.Permanent); another value is
// refused by the constructor. The same holds for a RateLimit.
func TestUnkeyedMessages(t *testing.T) {
	client, table := newTable(t)
	var logs strings.Builder
	var mu sync.Mutex
	f := newFleet(t, client, table, "p1", func(o *fleet.Options) {
		o.Logger = slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
			mu.Lock()
			defer mu.Unlock()
			return logs.Write(p)
		}), nil))
	})
	ran := 0
	run := worker.HandlerFunc(func(context.Context, *worker.Message) error { ran++; return nil })
	share, err := f.Cap("share", 2, func(o *fleet.CapOptions) { o.Key = fleet.ByGroup })
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := share.Middleware()(run).Handle(t.Context(), &worker.Message{ID: "no-group"}); err != nil {
			t.Fatalf("share: %v; want the job run under the key \"\"", err)
		}
	}
	mu.Lock()
	warnings := strings.Count(logs.String(), "has no key")
	mu.Unlock()
	if ran != 3 || warnings != 1 || f.Stats().Unkeyed != 3 {
		t.Fatalf("share: %d ran, %d warnings, Stats.Unkeyed %d; want 3 run, the first logged, 3 counted", ran, warnings, f.Stats().Unkeyed)
	}
	snooze, err := f.Cap("snooze", 2, func(o *fleet.CapOptions) { o.Key, o.Unkeyed, o.ErrorSnooze = fleet.ByGroup, "snooze", 30*time.Second })
	if err != nil {
		t.Fatal(err)
	}
	if d, ok := retrySnooze(snooze.Middleware()(run).Handle(t.Context(), &worker.Message{ID: "no-group"})); !ok || d != 30*time.Second {
		t.Fatalf("snooze: a snooze of %v (%v); want ErrorSnooze, 30 s", d, ok)
	}
	refuse, err := f.RateLimit("refuse", 10, func(o *fleet.RateLimitOptions) { o.Key, o.Unkeyed = fleet.ByGroup, "refuse" })
	if err != nil {
		t.Fatal(err)
	}
	if err := refuse.Middleware()(run).Handle(t.Context(), &worker.Message{ID: "no-group"}); !errors.Is(err, retry.ErrPermanent) || !strings.Contains(err.Error(), "MessageGroupId") {
		t.Fatalf("refuse: %v; want a permanent error naming the missing MessageGroupId", err)
	}
	if err := refuse.Middleware()(run).Handle(t.Context(), &worker.Message{ID: "grouped", GroupID: "tenant-a"}); err != nil {
		t.Fatalf("refuse, a message with a group: %v; want it run", err)
	}
	if ran != 4 || f.Stats().Unkeyed != 5 {
		t.Fatalf("%d ran, Stats.Unkeyed %d; want 4 run, 5 counted", ran, f.Stats().Unkeyed)
	}
	if _, err := f.Cap("bad", 1, func(o *fleet.CapOptions) { o.Unkeyed = "drop" }); err == nil || !strings.Contains(err.Error(), `"refuse"`) {
		t.Fatalf("Unkeyed \"drop\": %v; want it refused, naming the values", err)
	}
}

// writerFunc is an io.Writer.
type writerFunc func(p []byte) (int, error)

func (w writerFunc) Write(p []byte) (int, error) { return w(p) }
