package fleet_test

import (
	"errors"
	"testing"
	"time"

	"github.com/sqsworker/sqsworker/fleet"
)

// skewed gives a Fleet the test's clock moved by d: one process's clock
// off from the others'.
func skewed(clk *clock, d time.Duration) func(*fleet.Options) {
	return func(o *fleet.Options) { o.Now = func() time.Time { return clk.Now().Add(d) } }
}

// Two processes whose clocks are 2 s behind and 2 s ahead (4 s apart).
// Caps: a slot is taken by the process ahead once less than 4 s of its
// lease is left on its holder's clock, so a cap holds while slots keep
// more lease than the clocks' difference (in the worker, their margin: a
// quarter of the visibility timeout, 250 ms to 5 s). Rate limits: the
// process ahead adds at most one Burst, once; the process behind moves
// the bucket's time on by what its own clock measured, so it is not
// starved: over t seconds the two together take at most Burst + rate × t
// + Burst, and both get their share.
func TestClockSkewBetweenProcesses(t *testing.T) {
	client, table := newTable(t)
	ctx := t.Context()
	clk := newClock()
	behind := newFleet(t, client, table, "behind", skewed(clk, -2*time.Second))
	ahead := newFleet(t, client, table, "ahead", skewed(clk, 2*time.Second))

	cb, _ := behind.Cap("skew", 1)
	ca, _ := ahead.Cap("skew", 1)
	if _, err := cb.Acquire(ctx, "5s-left", clk.Now().Add(-2*time.Second).Add(5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := ca.Acquire(ctx, "5s-left", clk.Now().Add(30*time.Second)); !errors.Is(err, fleet.ErrCapFull) {
		t.Errorf("a slot with 5 s of lease left, 4 s of skew: Acquire = %v; want ErrCapFull (the cap holds)", err)
	}
	short, err := cb.Acquire(ctx, "3s-left", clk.Now().Add(-2*time.Second).Add(3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ca.Acquire(ctx, "3s-left", clk.Now().Add(30*time.Second)); err != nil {
		t.Errorf("a slot with 3 s of lease left, 4 s of skew: Acquire = %v; want the slot taken (the clock ahead sees it expired)", err)
	}
	if err := short.Renew(ctx, clk.Now().Add(-2*time.Second).Add(30*time.Second)); !errors.Is(err, fleet.ErrSlotLost) {
		t.Errorf("the holder's renewal after its slot was taken = %v; want ErrSlotLost (counted, logged)", err)
	}

	const rate, burst, steps, stepLen = 10.0, 2, 26, 200 * time.Millisecond
	span := (steps - 1) * stepLen
	never := func(o *fleet.RateLimitOptions) { o.Burst, o.MaxWait = burst, -1 }
	lb, _ := behind.RateLimit("skew", rate, never)
	la, _ := ahead.RateLimit("skew", rate, never)
	took := map[string]int{}
	for step := range steps {
		order := []string{"behind", "ahead"}
		if step%2 == 1 {
			order = []string{"ahead", "behind"}
		}
		for _, name := range order {
			l := map[string]*fleet.RateLimit{"behind": lb, "ahead": la}[name]
			for {
				wait, err := l.Take(ctx, "k")
				if err != nil {
					t.Fatal(err)
				}
				if wait > 0 {
					break
				}
				took[name]++
			}
		}
		if step < steps-1 {
			clk.Add(stepLen)
		}
	}
	total := took["behind"] + took["ahead"]
	t.Logf("over %v at %v/s (Burst %d), clocks 4 s apart: %d tokens (behind %d, ahead %d)", span, rate, burst, total, took["behind"], took["ahead"])
	if bound := burst + int(rate*span.Seconds()) + burst; total > bound {
		t.Errorf("%d tokens taken in %v; at most Burst + rate × %v + Burst (once, for the clock ahead) = %d", total, span, span, bound)
	}
	if total < int(rate*span.Seconds())-burst || took["behind"] < total/4 || took["ahead"] < total/4 {
		t.Errorf("%d tokens taken in %v (behind %d, ahead %d); want the limit (%v/s) used, by both processes", total, span, took["behind"], took["ahead"], rate)
	}
}
