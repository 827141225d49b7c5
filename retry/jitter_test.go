package retry_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sqsworker/sqsworker/retry"
)

// fixedSource always returns the same value: 0 gives the low end of a jitter
// range, math.MaxUint64 the high end.
type fixedSource uint64

func (f fixedSource) Uint64() uint64 { return uint64(f) }

type phaseKind int

const (
	immediate phaseKind = iota
	preBackoff
	backoffPhase
	postBackoff
)

func phaseOf(h retry.HealthyRetryPolicy, n int) phaseKind {
	back := h.NumRetries - h.NumNoDelayRetries - h.NumMinDelayRetries - h.NumMaxDelayRetries
	switch {
	case n <= h.NumNoDelayRetries:
		return immediate
	case n <= h.NumNoDelayRetries+h.NumMinDelayRetries:
		return preBackoff
	case n <= h.NumNoDelayRetries+h.NumMinDelayRetries+back:
		return backoffPhase
	}
	return postBackoff
}

// TestJitterBounds checks, for random valid policies, every jitter mode and
// several sources of randomness, that Delay stays in its documented range:
// immediate retries 0; never below 0 nor above the phase's bound; NoJitter
// the nominal delay, FullJitter [0, d], EqualJitter [d/2, d], DecorrelatedJitter
// [min, bound]. It also checks that MaxTotal bounds the sum of the draws.
func TestJitterBounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(42, 43))
	modes := []string{"none", "full", "equal", "decorrelated"}
	iterations := 1500
	if testing.Short() {
		iterations = 150
	}
	for iter := range iterations {
		base := randomPolicy(rng)
		h := base.HealthyRetryPolicy
		nominal := base.Delays()
		minD, maxD := time.Duration(h.MinDelayTarget)*time.Second, time.Duration(h.MaxDelayTarget)*time.Second
		sources := []rand.Source{fixedSource(0), fixedSource(math.MaxUint64), rand.NewPCG(uint64(iter), 1), nil}
		for _, mode := range modes {
			for _, src := range sources {
				p := base
				p.Jitter, p.Rand = mode, src
				var sum time.Duration
				for n := 1; n <= h.NumRetries; n++ {
					d, ok := p.Delay(n)
					if !ok {
						t.Fatalf("%+v %v: Delay(%d) gave up", h, mode, n)
					}
					sum += d
					nd := nominal[n-1]
					ph := phaseOf(h, n)
					bound := maxD
					if ph == preBackoff {
						bound = minD
					}
					lo, hi := time.Duration(0), bound
					switch {
					case ph == immediate:
						hi = 0
					case mode == "none":
						lo, hi = nd, nd
					case mode == "full":
						hi = nd
					case mode == "equal":
						lo, hi = nd/2, nd
					case mode == "decorrelated":
						lo = minD
					}
					if d < lo || d > hi {
						t.Fatalf("%+v %v src=%T: Delay(%d) = %v, want within [%v, %v] (nominal %v)", h, mode, src, n, d, lo, hi, nd)
					}
				}
				if sum > p.MaxTotal() {
					t.Fatalf("%+v %v: the draws sum to %v, above MaxTotal() %v", h, mode, sum, p.MaxTotal())
				}
				if mode != "decorrelated" && p.MaxTotal() != p.Total() {
					t.Fatalf("%+v %v: MaxTotal() = %v, want Total() %v", h, mode, p.MaxTotal(), p.Total())
				}
			}
		}
	}
}

// TestJitterExtremes pins the ends of each range with fixed sources.
func TestJitterExtremes(t *testing.T) {
	p := mustParse(t, `{"minDelayTarget":10,"maxDelayTarget":100,"numRetries":6,"numNoDelayRetries":1,"numMinDelayRetries":1,"numMaxDelayRetries":1}`)
	// Nominal: 0, 10s, 10s (backoff start), 55s, 100s (backoff end), 100s.
	if got, want := p.Delays(), secs(0, 10, 10, 55, 100, 100); !slices.Equal(got, want) {
		t.Fatalf("Delays() = %v, want %v", got, want)
	}
	tests := []struct {
		mode   string
		src    rand.Source
		n      int
		lo, hi time.Duration
	}{
		{"equal", fixedSource(0), 4, 27500 * time.Millisecond, 27500 * time.Millisecond},
		{"full", fixedSource(0), 4, 0, 0},
		{"full", fixedSource(math.MaxUint64), 4, 54 * time.Second, 55 * time.Second},
		{"equal", fixedSource(math.MaxUint64), 6, 99 * time.Second, 100 * time.Second},
		{"decorrelated", fixedSource(0), 4, 10 * time.Second, 10 * time.Second},
		// Previous nominal 10 s → up to 30 s, below the phase bound of 100 s.
		{"decorrelated", fixedSource(math.MaxUint64), 4, 29 * time.Second, 30 * time.Second},
		// Pre-backoff: the bound is min, so no room for jitter.
		{"decorrelated", fixedSource(math.MaxUint64), 2, 10 * time.Second, 10 * time.Second},
		// Immediate retries stay 0 whatever the mode.
		{"full", fixedSource(math.MaxUint64), 1, 0, 0},
		{"decorrelated", fixedSource(math.MaxUint64), 1, 0, 0},
	}
	for _, tt := range tests {
		q := p
		q.Jitter, q.Rand = tt.mode, tt.src
		d, ok := q.Delay(tt.n)
		if !ok || d < tt.lo || d > tt.hi {
			t.Errorf("%v Delay(%d) = %v, %v; want within [%v, %v]", tt.mode, tt.n, d, ok, tt.lo, tt.hi)
		}
	}
}

// TestJitterIsDeterministicWithASeededSource checks that injected randomness
// makes Delay reproducible.
func TestJitterIsDeterministicWithASeededSource(t *testing.T) {
	p := mustParse(t, seedPolicy50)
	draw := func() []time.Duration {
		q := p
		q.Jitter, q.Rand = "full", rand.NewPCG(9, 9)
		var out []time.Duration
		for n := 1; n <= 50; n++ {
			d, _ := q.Delay(n)
			out = append(out, d)
		}
		return out
	}
	a, b := draw(), draw()
	if !slices.Equal(a, b) {
		t.Errorf("same seed, different delays:\n%v\n%v", a, b)
	}
	if slices.Equal(a, p.Delays()) {
		t.Error("FullJitter returned the nominal schedule")
	}
}

// TestSeededSourceConcurrentDelay runs Delay from many goroutines on one
// seeded source; -race checks that Delay serialises its calls to it.
func TestSeededSourceConcurrentDelay(t *testing.T) {
	p := mustParse(t, seedPolicy50)
	p.Rand = rand.NewPCG(1, 2)
	var wg sync.WaitGroup
	for g := range 20 {
		wg.Go(func() {
			for n := 1; n <= 50; n++ {
				if d, ok := p.Delay(n + g%2); ok && (d < 0 || d > time.Minute) {
					t.Errorf("Delay(%d) = %v", n, d)
				}
			}
		})
	}
	wg.Wait()
}

func TestJitterNames(t *testing.T) {
	p := retry.DefaultDeliveryPolicy()
	for _, j := range []string{"", "equal", "none", "full", "decorrelated", "NONE", "Decorrelated"} {
		p.Jitter = j
		if err := p.Validate(); err != nil {
			t.Errorf("Validate() with jitter %q = %v", j, err)
		}
	}
	var pe *retry.PolicyError
	for _, j := range []string{"Jitter(9)", "nojitter", " equal"} {
		p.Jitter = j
		if err := p.Validate(); !errors.As(err, &pe) || pe.Field != "Jitter" {
			t.Errorf("Validate() with jitter %q = %v; want a PolicyError on Jitter", j, err)
		}
	}
}
