package worker

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

func testFlow(concurrency int, fifo bool) *flow {
	return newFlow(&Options{Concurrency: concurrency, MaxPrefetch: 300, MaxUnsettled: 100, ReceiveBatchWait: 10 * time.Millisecond}, fifo)
}

func jobsIn(group string, n int) []*job {
	jobs := make([]*job, n)
	for i := range jobs {
		jobs[i] = &job{}
		jobs[i].Msg.GroupID = group
	}
	return jobs
}

// Handlers that take the last buffered jobs wake a poller: with handlers
// still idle and nothing buffered or on its way, a receive goes out at
// once rather than when some handler finishes (a long job may take
// hours).
func TestTakingTheLastBufferedJobWakesAPoller(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := testFlow(4, false)
		ctx := context.Background()
		n := f.reserve(ctx)
		if !f.received(n, jobsIn("", 2), time.Millisecond) {
			t.Fatal("flow stopped")
		}
		got := make(chan int, 1)
		go func() { got <- f.reserve(ctx) }()
		synctest.Wait() // the poller waits: two jobs are buffered for idle handlers
		f.next()
		f.next()
		time.Sleep(time.Second)
		synctest.Wait()
		select {
		case n := <-got:
			if n == 0 {
				t.Fatal("reserve returned 0")
			}
		default:
			t.Fatal("2 handlers idle with nothing buffered and no receive in flight, and no poller woken")
		}
		f.stop()
	})
}

// Jobs received by a call that ends after the flow stopped are released by
// the caller: they count as settling until then, and their settlement
// touches no FIFO group they never joined.
func TestJobsReceivedAfterStopSettleCleanly(t *testing.T) {
	f := testFlow(4, true)
	ctx := context.Background()
	n := f.reserve(ctx)
	f.received(n, jobsIn("g", 1), time.Millisecond)
	active := f.next()
	f.stop()
	late := jobsIn("g", 3)
	if f.received(1, late, time.Millisecond) {
		t.Fatal("received after stop reported success")
	}
	for _, j := range late {
		if rest := f.settled(j, false); len(rest) > 0 {
			t.Fatalf("a late job's release released %d others", len(rest))
		}
	}
	if held, ok := f.groups.Active("g"); f.settling != 0 || !ok || held != active {
		t.Fatalf("settling %d, group held %v by %p; want 0 and the group still held by its running job %p", f.settling, ok, held, active)
	}
	f.handled(time.Millisecond)
	f.settled(active, true)
	if f.settling != 0 || f.running != 0 || f.buffered != 0 || f.groups.Len() != 0 {
		t.Fatalf("settling %d running %d buffered %d groups %d; want all 0", f.settling, f.running, f.buffered, f.groups.Len())
	}
}

// The prefetch target follows what the worker can take × twice the receive
// latency, plus one batch, within MaxPrefetch. While receives come back
// full that is the handlers' capacity (Concurrency / mean handler time),
// not the rate they happened to complete at: fast handlers that wait for
// receives still get the whole cap, slow ones what keeps them busy. While
// receives come back partial (the queue is drained) it is the arrival
// rate, so that more receives in flight do not split the arrivals into
// smaller batches.
func TestPrefetchTargetFollowsWhatTheWorkerCanTake(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cases := []struct {
			name        string
			concurrency int
			handler     time.Duration
			drained     bool // receives bring 1 message instead of all they ask for
			want        int
		}{
			{"fast handlers starved by receives", 10, 10 * time.Microsecond, false, 300},
			{"50 ms handlers", 50, 50 * time.Millisecond, false, 50},              // 1,000/s × 2 × 20 ms + 10
			{"6 s jobs", 50, 6 * time.Second, false, 11},                          // ⌈50/6 per s × 2 × 20 ms + 10⌉
			{"fast handlers, drained queue", 10, 10 * time.Microsecond, true, 11}, // ⌈10/s × 2 × 20 ms + 10⌉
		}
		for _, c := range cases {
			f := testFlow(c.concurrency, false)
			ctx := context.Background()
			for range 20 { // 2 s of receives that take 20 ms, one every 100 ms
				n := f.reserve(ctx)
				got := n
				if c.drained {
					got = 1
				}
				f.received(n, jobsIn("", got), 20*time.Millisecond)
				time.Sleep(100 * time.Millisecond)
				for range got {
					f.next()
					f.handled(c.handler)
					f.settling--
				}
			}
			if _, target := f.snapshot(); target != c.want {
				t.Errorf("%s: target %d, want %d (rate %.1f/s, latency %v)", c.name, target, c.want, f.rate, f.latency)
			}
			f.stop()
		}
	})
}

// The first estimate comes with the first batch's worth of completions
// while receives come back full, not 100 ms after the start: a worker
// started on a backlog gets its whole prefetch target within one receive
// latency instead of receiving with its starting target meanwhile.
func TestFirstTargetDoesNotWaitForTheFirstInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := testFlow(20, false)
		if _, target := f.snapshot(); target != 20 {
			t.Fatalf("starting target %d, want Concurrency (20)", target)
		}
		ctx := context.Background()
		n := f.reserve(ctx)
		time.Sleep(15 * time.Millisecond)
		f.received(n, jobsIn("", n), 15*time.Millisecond)
		for range n - 1 {
			f.next()
			f.handled(10 * time.Microsecond)
		}
		if _, target := f.snapshot(); target != 20 {
			t.Fatalf("after %d completions: target %d, want still 20 (fewer than a batch measured)", n-1, target)
		}
		f.next()
		f.handled(10 * time.Microsecond)
		if _, target := f.snapshot(); target != 300 {
			t.Fatalf("15 ms after the start, a full batch handled: target %d, want MaxPrefetch (300)", target)
		}
		f.stop()
	})
}
