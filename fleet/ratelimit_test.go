package fleet_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sqsworker/sqsworker/fleet"
	"github.com/sqsworker/sqsworker/worker"
)

// Four processes' limiters share one key of 40 tokens/s (burst 8), with
// five jobs each asking for tokens as fast as they are given: in no
// window do more start than Burst + rate × window, the limit is used, and
// a job costs well under one DynamoDB request.
func TestRateLimitSharedAcrossProcesses(t *testing.T) {
	client, table := newTable(t)
	const (
		rate    = 40.0
		burst   = 8
		procs   = 4
		workers = 5
		run     = 4 * time.Second
	)
	var (
		mu     sync.Mutex
		starts []time.Time
		fleets []*fleet.Fleet
	)
	warmUp(t, client, table)
	ctx, cancel := context.WithTimeout(t.Context(), run)
	defer cancel()
	var wg sync.WaitGroup
	begin := time.Now()
	for p := range procs {
		f := newFleet(t, client, table, fmt.Sprintf("proc-%d", p))
		fleets = append(fleets, f)
		l, err := f.RateLimit("shared-api", rate, func(o *fleet.RateLimitOptions) { o.Burst = burst })
		if err != nil {
			t.Fatal(err)
		}
		for range workers {
			wg.Go(func() {
				for ctx.Err() == nil {
					wait, err := l.Take(ctx, "")
					if err != nil {
						if ctx.Err() == nil {
							t.Errorf("Take: %v", err)
						}
						return
					}
					if wait > 0 {
						continue // no token within MaxWait: ask again
					}
					mu.Lock()
					starts = append(starts, time.Now())
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	elapsed := time.Since(begin)
	slices.SortFunc(starts, func(a, b time.Time) int { return a.Compare(b) })

	// Every window of 1 s: at most burst + rate, plus what a response's
	// latency may shift (tokens are counted when written, seen when the
	// response arrives): 50 ms worth.
	for _, window := range []time.Duration{time.Second, 2 * time.Second} {
		allowed := burst + int(rate*window.Seconds()) + int(rate*0.05) + 1
		worst := 0
		for i, s := range starts {
			j, _ := slices.BinarySearchFunc(starts, s.Add(window), func(a, b time.Time) int { return a.Compare(b) })
			worst = max(worst, j-i)
		}
		if worst > allowed {
			t.Errorf("a %v window started %d jobs; the limit allows %d", window, worst, allowed)
		}
		t.Logf("%v windows: at most %d starts (limit %d)", window, worst, allowed)
	}
	want := rate * elapsed.Seconds()
	if got := float64(len(starts)); got < 0.85*want {
		t.Errorf("%d jobs started in %v; want at least 85%% of the limit's %.0f", len(starts), elapsed, want)
	}
	var requests int64
	for _, f := range fleets {
		requests += f.Stats().Requests - 1 // New's check
	}
	for _, f := range fleets {
		if s := f.Stats(); s.WaitingForToken != 0 {
			t.Errorf("%d jobs still counted as waiting for a token after every Take returned", s.WaitingForToken)
		}
	}
	perJob := float64(requests) / float64(len(starts))
	t.Logf("%d jobs in %v (%.1f/s for a limit of %v/s); %d DynamoDB requests, %.2f per job", len(starts), elapsed.Round(time.Millisecond), float64(len(starts))/elapsed.Seconds(), rate, requests, perJob)
	if perJob > 1 {
		t.Errorf("%.2f DynamoDB requests per job; want at most 1", perJob)
	}
}

// A job that finds no token due within MaxWait is snoozed until one is,
// without running and without counting an attempt; a job with a token
// runs.
func TestRateLimitMiddlewareSnoozes(t *testing.T) {
	client, table := newTable(t)
	f := newFleet(t, client, table, "p1")
	l, err := f.RateLimit("slow-api", 0.2, func(o *fleet.RateLimitOptions) { o.MaxWait = -1 }) // one job per 5 s
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	h := l.Middleware()(worker.HandlerFunc(func(context.Context, *worker.Message) error { ran++; return nil }))
	if err := h.Handle(t.Context(), &worker.Message{ID: "m1"}); err != nil || ran != 1 {
		t.Fatalf("first job: %v, ran %d; want it run with the bucket's one token", err, ran)
	}
	err = h.Handle(t.Context(), &worker.Message{ID: "m2"})
	d, ok := retrySnooze(err)
	if !ok || d < 4*time.Second || d > 7*time.Second || ran != 1 {
		t.Fatalf("second job: %v (snooze %v, %v), ran %d; want snoozed about 5 s (the next token, plus jitter) without running", err, d, ok, ran)
	}
	if s := f.Stats(); s.RateSnoozed != 1 || s.Tokens != 1 {
		t.Errorf("Stats %+v; want 1 token taken, 1 job snoozed", s)
	}
}

// A job that waits in-process for a token is counted in
// Stats.WaitingForToken while it waits, and in TokenWaits once it is done.
func TestRateLimitCountsTheJobsWaitingNow(t *testing.T) {
	client, table := newTable(t)
	f := newFleet(t, client, table, "p1")
	l, err := f.RateLimit("slow-api", 1, func(o *fleet.RateLimitOptions) { o.Burst, o.MaxWait = 1, 10*time.Second })
	if err != nil {
		t.Fatal(err)
	}
	if wait, err := l.Take(t.Context(), ""); wait != 0 || err != nil {
		t.Fatalf("the first Take = %v, %v; want the burst's token at once", wait, err)
	}
	took := make(chan error, 1)
	go func() {
		wait, err := l.Take(t.Context(), "")
		if err == nil && wait != 0 {
			err = fmt.Errorf("snoozed for %v; want a token within MaxWait", wait)
		}
		took <- err
	}()
	deadline := time.Now().Add(5 * time.Second)
	for f.Stats().WaitingForToken != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("Stats %+v; want the second job counted as waiting for a token", f.Stats())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := <-took; err != nil {
		t.Fatal(err)
	}
	if s := f.Stats(); s.WaitingForToken != 0 || s.TokenWaits != 1 {
		t.Fatalf("Stats %+v; want none waiting now, 1 that waited", s)
	}
}
