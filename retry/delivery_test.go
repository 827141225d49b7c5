package retry_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/sqsworker/sqsworker/retry"
)

// seedPolicy50 is the example policy of SNS's delivery-retry documentation:
// 3 immediate retries, 2 at 1 s, 10 exponential from 1 s to 60 s, 35 at 60 s.
const seedPolicy50 = `{ "healthyRetryPolicy": { "minDelayTarget": 1, "maxDelayTarget": 60, "numRetries": 50, "numNoDelayRetries": 3, "numMinDelayRetries": 2, "numMaxDelayRetries": 35, "backoffFunction": "exponential" }, "sicklyRetryPolicy": null, "throttlePolicy": { "maxReceivesPerSecond": 10 }, "guaranteed": false }`

func secs(ss ...int) []time.Duration {
	out := make([]time.Duration, len(ss))
	for i, s := range ss {
		out[i] = time.Duration(s) * time.Second
	}
	return out
}

func mustParse(t *testing.T, doc string) retry.DeliveryPolicy {
	t.Helper()
	p, err := retry.ParseDeliveryPolicy([]byte(doc))
	if err != nil {
		t.Fatalf("ParseDeliveryPolicy(%s): %v", doc, err)
	}
	return p
}

func TestDelaysFromTheSeeds(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want []time.Duration
	}{
		{"SNS default policy", `{}`, secs(20, 20, 20)},
		{"default with maxDelayTarget 40 is linear 20-30-40", `{"healthyRetryPolicy":{"maxDelayTarget":40}}`, secs(20, 30, 40)},
		{"explicit linear 20 to 40", `{"healthyRetryPolicy":{"minDelayTarget":20,"maxDelayTarget":40,"numRetries":3,"backoffFunction":"linear"}}`, secs(20, 30, 40)},
		{"five total retries", `{"healthyRetryPolicy":{"numRetries":5}}`, secs(20, 20, 20, 20, 20)},
		{"topic shape with five retries", `{"http":{"defaultHealthyRetryPolicy":{"numRetries":5}}}`, secs(20, 20, 20, 20, 20)},
		{"no retries", `{"numRetries":0}`, secs()},
		{"all phases", `{"minDelayTarget":2,"maxDelayTarget":8,"numRetries":7,"numNoDelayRetries":1,"numMinDelayRetries":2,"numMaxDelayRetries":1}`, secs(0, 2, 2, 2, 5, 8, 8)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := mustParse(t, tt.doc).Delays()
			if !slices.Equal(got, tt.want) {
				t.Errorf("Delays() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestSeedPolicyWith50Retries(t *testing.T) {
	p := mustParse(t, seedPolicy50)
	ds := p.Delays()
	if len(ds) != 50 {
		t.Fatalf("len(Delays()) = %d, want 50", len(ds))
	}
	for i, d := range ds[:3] {
		if d != 0 {
			t.Errorf("immediate retry %d waits %v, want 0", i+1, d)
		}
	}
	for i, d := range ds[3:5] {
		if d != time.Second {
			t.Errorf("pre-backoff retry %d waits %v, want 1s", i+4, d)
		}
	}
	backoff := ds[5:15]
	if backoff[0] != time.Second || backoff[9] != time.Minute {
		t.Errorf("backoff phase runs %v → %v, want 1s → 1m0s", backoff[0], backoff[9])
	}
	for i := 1; i < len(backoff); i++ {
		if backoff[i] <= backoff[i-1] {
			t.Errorf("backoff phase not increasing at retry %d: %v", i+6, backoff)
		}
	}
	for i, d := range ds[15:] {
		if d != time.Minute {
			t.Errorf("post-backoff retry %d waits %v, want 1m0s", i+16, d)
		}
	}
	if got := p.ThrottlePolicy.MaxReceivesPerSecond; got != 10 {
		t.Errorf("maxReceivesPerSecond = %d, want 10", got)
	}
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	if p.Total() != sum {
		t.Errorf("Total() = %v, want the sum of Delays() %v", p.Total(), sum)
	}
	if p.Total() > retry.SNSMaxTotal {
		t.Errorf("Total() = %v, above SNS's hour although SNS documents this policy", p.Total())
	}
}

// TestSeedManagedPolicies checks the policies SNS uses for its own endpoint
// types (from the seeds' table) against the two sets of limits.
func TestSeedManagedPolicies(t *testing.T) {
	// Customer-managed endpoints (SMTP, SMS, mobile push): 0 immediate, 2 at
	// 10 s, 10 exponential 10 s → 600 s, 38 at 600 s: "50 attempts, over 6 hours".
	p := retry.DeliveryPolicy{HealthyRetryPolicy: retry.HealthyRetryPolicy{
		MinDelayTarget: 10, MaxDelayTarget: 600, NumRetries: 50,
		NumMinDelayRetries: 2, NumMaxDelayRetries: 38, BackoffFunction: "exponential",
	}}
	if err := p.ValidateSQS(); err != nil {
		t.Errorf("ValidateSQS() = %v, want nil", err)
	}
	if err := p.Validate(); err == nil {
		t.Error("Validate() = nil, want an error: the schedule exceeds SNS's 3600 s total for HTTP/S policies")
	}
	if p.Total() <= 6*time.Hour {
		t.Errorf("Total() = %v, the seeds say over 6 hours", p.Total())
	}
	ds := p.Delays()
	if ds[2] != 10*time.Second || ds[11] != 600*time.Second {
		t.Errorf("backoff phase runs %v → %v, want 10s → 10m0s", ds[2], ds[11])
	}
}

func TestDefaultDeliveryPolicy(t *testing.T) {
	p := retry.DefaultDeliveryPolicy()
	if err := p.Validate(); err != nil {
		t.Fatalf("Validate() = %v", err)
	}
	parsed := mustParse(t, `{}`)
	if parsed.HealthyRetryPolicy != p.HealthyRetryPolicy || parsed.ThrottlePolicy != p.ThrottlePolicy {
		t.Errorf("ParseDeliveryPolicy({}) = %+v, want DefaultDeliveryPolicy() %+v", parsed, p)
	}
	if p.Jitter != "" {
		t.Errorf("default jitter = %q, want the zero value, equal", p.Jitter)
	}
	if got := p.Total(); got != time.Minute {
		t.Errorf("Total() = %v, want 1m0s", got)
	}
}

// TestDeliveryPolicyDelay checks the attempt semantics of the Policy
// implementation: numRetries = 3 means 4 deliveries.
func TestDeliveryPolicyDelay(t *testing.T) {
	p := mustParse(t, `{"healthyRetryPolicy":{"maxDelayTarget":40}}`)
	p.Jitter = "none"
	var policy retry.Policy = p
	for attempt, want := range map[int]time.Duration{1: 20 * time.Second, 2: 30 * time.Second, 3: 40 * time.Second} {
		d, ok := policy.Delay(attempt)
		if !ok || d != want {
			t.Errorf("Delay(%d) = %v, %v; want %v, true", attempt, d, ok, want)
		}
	}
	for _, attempt := range []int{4, 5, 1000} {
		if d, ok := policy.Delay(attempt); ok || d != 0 {
			t.Errorf("Delay(%d) = %v, %v; want 0, false (retries exhausted)", attempt, d, ok)
		}
	}
	for _, attempt := range []int{0, -1} {
		if d, ok := policy.Delay(attempt); !ok || d != 20*time.Second {
			t.Errorf("Delay(%d) = %v, %v; want it treated as attempt 1 (20s, true)", attempt, d, ok)
		}
	}
	none := mustParse(t, `{"numRetries":0}`)
	if _, ok := none.Delay(1); ok {
		t.Error("numRetries 0: Delay(1) retries, want give up after the first delivery")
	}
}

// randomPolicy returns a policy valid under SQS's limits.
func randomPolicy(rng *rand.Rand) retry.DeliveryPolicy {
	minD := 1 + rng.IntN(retry.SQSMaxDelayTarget)
	if rng.IntN(2) == 0 {
		minD = 1 + rng.IntN(60)
	}
	maxD := minD + rng.IntN(retry.SQSMaxDelayTarget-minD+1)
	if rng.IntN(4) == 0 {
		maxD = minD
	}
	n := rng.IntN(retry.SQSMaxRetries + 1)
	if rng.IntN(2) == 0 {
		n = rng.IntN(30)
	}
	a := rng.IntN(n + 1)
	b := rng.IntN(n - a + 1)
	c := rng.IntN(n - a - b + 1)
	return retry.DeliveryPolicy{HealthyRetryPolicy: retry.HealthyRetryPolicy{
		MinDelayTarget: minD, MaxDelayTarget: maxD, NumRetries: n,
		NumNoDelayRetries: a, NumMinDelayRetries: b, NumMaxDelayRetries: c,
		BackoffFunction: []string{"linear", "arithmetic", "geometric", "exponential"}[rng.IntN(4)],
	}}
}

type curveCase struct{ min, max, m int }

func curveCases() []curveCase {
	var cases []curveCase
	for _, minD := range []int{1, 2, 3, 5, 10, 20, 59, 60, 100, 1000, 3599, 3600, 43199} {
		for _, delta := range []int{0, 1, 2, 5, 40, 255, 3599, 43199} {
			if minD+delta > retry.SQSMaxDelayTarget {
				continue
			}
			for _, m := range []int{1, 2, 3, 4, 5, 10, 17, 50, 100, 999} {
				cases = append(cases, curveCase{minD, minD + delta, m})
			}
		}
	}
	rng := rand.New(rand.NewPCG(7, 11))
	for range 2000 {
		minD := 1 + rng.IntN(retry.SQSMaxDelayTarget)
		maxD := minD + rng.IntN(retry.SQSMaxDelayTarget-minD+1)
		cases = append(cases, curveCase{minD, maxD, 1 + rng.IntN(120)})
	}
	return cases
}

// TestBackoffFunctionProperties checks, for many (min, max, m) and all four
// functions: the first backoff retry waits exactly min, the last exactly max,
// the delays never decrease and stay within [min, max]; and for m ≥ 3 and
// min < max the four curves are pairwise distinct and strictly ordered
// arithmetic > linear > geometric > exponential inside the phase.
func TestBackoffFunctionProperties(t *testing.T) {
	fns := []string{"arithmetic", "linear", "geometric", "exponential"}
	for _, c := range curveCases() {
		minD, maxD := time.Duration(c.min)*time.Second, time.Duration(c.max)*time.Second
		curves := make([][]time.Duration, len(fns))
		for k, fn := range fns {
			p := retry.DeliveryPolicy{HealthyRetryPolicy: retry.HealthyRetryPolicy{
				MinDelayTarget: c.min, MaxDelayTarget: c.max, NumRetries: c.m, BackoffFunction: fn,
			}}
			if err := p.ValidateSQS(); err != nil {
				t.Fatalf("%+v: ValidateSQS() = %v", c, err)
			}
			ds := p.Delays()
			curves[k] = ds
			where := fmt.Sprintf("%s min=%d max=%d m=%d: %v", fn, c.min, c.max, c.m, ds)
			if len(ds) != c.m {
				t.Fatalf("%s: %d delays, want %d", where, len(ds), c.m)
			}
			if ds[0] != minD {
				t.Errorf("%s: first backoff retry waits %v, want min %v", where, ds[0], minD)
			}
			if c.m >= 2 && ds[c.m-1] != maxD {
				t.Errorf("%s: last backoff retry waits %v, want max %v", where, ds[c.m-1], maxD)
			}
			for i, d := range ds {
				if d < minD || d > maxD {
					t.Errorf("%s: retry %d waits %v, outside [min, max]", where, i+1, d)
				}
				if i > 0 && d < ds[i-1] {
					t.Errorf("%s: retry %d waits %v, less than retry %d", where, i+1, d, i)
				}
			}
		}
		if c.m < 3 || c.min == c.max {
			// Degenerate: all four coincide (documented).
			for k := 1; k < len(fns); k++ {
				if !slices.Equal(curves[k], curves[0]) {
					t.Errorf("min=%d max=%d m=%d: %s %v differs from %s %v in a degenerate case", c.min, c.max, c.m, fns[k], curves[k], fns[0], curves[0])
				}
			}
			continue
		}
		for k := 0; k < len(fns); k++ {
			for l := k + 1; l < len(fns); l++ {
				if slices.Equal(curves[k], curves[l]) {
					t.Errorf("min=%d max=%d m=%d: %s and %s give the same schedule %v", c.min, c.max, c.m, fns[k], fns[l], curves[k])
				}
			}
		}
		for i := 1; i < c.m-1; i++ {
			for k := 1; k < len(fns); k++ {
				if curves[k-1][i] <= curves[k][i] {
					t.Errorf("min=%d max=%d m=%d retry %d: %s %v not above %s %v", c.min, c.max, c.m, i+1, fns[k-1], curves[k-1][i], fns[k], curves[k][i])
				}
			}
		}
	}
}

// TestPhaseStructure checks random valid policies: one delay per retry, the
// phases in order with their fixed delays, and a non-decreasing schedule.
func TestPhaseStructure(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	for range 3000 {
		p := randomPolicy(rng)
		h := p.HealthyRetryPolicy
		if err := p.ValidateSQS(); err != nil {
			t.Fatalf("%+v: %v", h, err)
		}
		ds := p.Delays()
		if len(ds) != h.NumRetries {
			t.Fatalf("%+v: %d delays", h, len(ds))
		}
		minD, maxD := time.Duration(h.MinDelayTarget)*time.Second, time.Duration(h.MaxDelayTarget)*time.Second
		back := h.NumRetries - h.NumNoDelayRetries - h.NumMinDelayRetries - h.NumMaxDelayRetries
		var total time.Duration
		for i, d := range ds {
			n := i + 1
			switch {
			case n <= h.NumNoDelayRetries:
				if d != 0 {
					t.Fatalf("%+v: immediate retry %d waits %v", h, n, d)
				}
			case n <= h.NumNoDelayRetries+h.NumMinDelayRetries:
				if d != minD {
					t.Fatalf("%+v: pre-backoff retry %d waits %v", h, n, d)
				}
			case n <= h.NumNoDelayRetries+h.NumMinDelayRetries+back:
				if d < minD || d > maxD {
					t.Fatalf("%+v: backoff retry %d waits %v", h, n, d)
				}
			default:
				if d != maxD {
					t.Fatalf("%+v: post-backoff retry %d waits %v", h, n, d)
				}
			}
			if i > 0 && d < ds[i-1] {
				t.Fatalf("%+v: schedule decreases at retry %d", h, n)
			}
			total += d
			nd, ok := retry.DeliveryPolicy{HealthyRetryPolicy: h, Jitter: "none"}.Delay(n)
			if !ok || nd != d {
				t.Fatalf("%+v: Delay(%d) = %v, %v; want %v, true", h, n, nd, ok, d)
			}
		}
		if p.Total() != total {
			t.Fatalf("%+v: Total() = %v, want %v", h, p.Total(), total)
		}
		if _, ok := p.Delay(h.NumRetries + 1); ok {
			t.Fatalf("%+v: Delay(numRetries+1) retries", h)
		}
	}
}

// TestInvalidPoliciesDoNotPanic checks that the schedule methods stay bounded
// on policies that fail validation.
func TestInvalidPoliciesDoNotPanic(t *testing.T) {
	bad := []retry.HealthyRetryPolicy{
		{},
		{MinDelayTarget: -5, MaxDelayTarget: -1, NumRetries: 4},
		{MinDelayTarget: 0, MaxDelayTarget: 100, NumRetries: 5, BackoffFunction: "geometric"},
		{MinDelayTarget: 0, MaxDelayTarget: 100, NumRetries: 5, BackoffFunction: "exponential"},
		{MinDelayTarget: 50, MaxDelayTarget: 10, NumRetries: 5},
		{MinDelayTarget: 1, MaxDelayTarget: 1 << 40, NumRetries: 1 << 40, NumNoDelayRetries: -3, NumMaxDelayRetries: 1 << 50},
		{MinDelayTarget: 1, MaxDelayTarget: 5, NumRetries: 3, NumNoDelayRetries: 2, NumMinDelayRetries: 2, NumMaxDelayRetries: 2},
		{MinDelayTarget: 1, MaxDelayTarget: 5, NumRetries: 3, BackoffFunction: "bogus"},
	}
	for _, h := range bad {
		p := retry.DeliveryPolicy{HealthyRetryPolicy: h, Jitter: "bogus"}
		ds := p.Delays()
		if len(ds) > retry.SQSMaxRetries {
			t.Errorf("%+v: %d delays, want at most %d", h, len(ds), retry.SQSMaxRetries)
		}
		for i, d := range ds {
			if d < 0 || d > 12*time.Hour {
				t.Errorf("%+v: retry %d waits %v", h, i+1, d)
			}
			if dd, _ := p.Delay(i + 1); dd < 0 || dd > 12*time.Hour {
				t.Errorf("%+v: Delay(%d) = %v", h, i+1, dd)
			}
		}
		_ = p.Total()
		_ = p.MaxTotal()
	}
}
