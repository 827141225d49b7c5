package retry

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/sqsworker/sqsworker/internal/sqslimit"
)

// The four backoff functions of an SNS delivery policy, the values of
// HealthyRetryPolicy.BackoffFunction; the package documentation gives the
// formulas.
const (
	backoffLinear      = "linear"      // from min to max in equal steps
	backoffArithmetic  = "arithmetic"  // fast first, steps shrinking by a constant amount
	backoffGeometric   = "geometric"   // each delay the previous times a constant ratio
	backoffExponential = "exponential" // near min longest, rising late
)

// backoffCanonical returns f's lower-case name ("linear" for the empty
// string) and whether f is a backoff function.
func backoffCanonical(f string) (string, bool) {
	if f == "" {
		return backoffLinear, true
	}
	for _, k := range [...]string{backoffLinear, backoffArithmetic, backoffGeometric, backoffExponential} {
		if strings.EqualFold(f, k) {
			return k, true
		}
	}
	return f, false
}

// HealthyRetryPolicy is the retry part of an SNS delivery policy. Delays are
// in whole seconds; see the package documentation for the phases.
type HealthyRetryPolicy struct {
	// MinDelayTarget is the delay of the pre-backoff retries and of the first
	// backoff retry, in seconds (SNS default 20).
	MinDelayTarget int `json:"minDelayTarget"`
	// MaxDelayTarget is the delay of the last backoff retry and of the
	// post-backoff retries, in seconds (SNS default 20).
	MaxDelayTarget int `json:"maxDelayTarget"`
	// NumRetries is the total number of retries, all phases included (SNS
	// default 3). The message is delivered at most NumRetries+1 times.
	NumRetries int `json:"numRetries"`
	// NumNoDelayRetries is the number of immediate retries (default 0).
	NumNoDelayRetries int `json:"numNoDelayRetries"`
	// NumMinDelayRetries is the number of pre-backoff retries (default 0).
	NumMinDelayRetries int `json:"numMinDelayRetries"`
	// NumMaxDelayRetries is the number of post-backoff retries (default 0).
	NumMaxDelayRetries int `json:"numMaxDelayRetries"`
	// BackoffFunction is the backoff phase's curve: "linear" (SNS's
	// default; also the empty string), "arithmetic", "geometric" or
	// "exponential", in any case. The package documentation gives the
	// formulas.
	BackoffFunction string `json:"backoffFunction"`
}

// ThrottlePolicy is the rate part of an SNS delivery policy.
type ThrottlePolicy struct {
	// MaxReceivesPerSecond caps how many messages per second the consumer
	// takes in. Zero means no limit (in JSON: leave the field out). This
	// package only parses and validates it; the worker enforces it.
	MaxReceivesPerSecond int `json:"maxReceivesPerSecond,omitzero"`
}

// DeliveryPolicy is an SNS delivery retry policy applied to SQS. It
// implements [Policy]. Build one with [ParseDeliveryPolicy] or
// [DefaultDeliveryPolicy], or as a literal checked with [DeliveryPolicy.Validate]
// or [DeliveryPolicy.ValidateSQS]. Its methods never panic: on an invalid
// policy they compute a best-effort schedule (counts and delays clamped to
// the SQS limits), so validate first.
//
// json.Marshal writes the subscription shape ({"healthyRetryPolicy": …,
// "throttlePolicy": …}); json.Unmarshal reads any shape ParseDeliveryPolicy
// reads, with the same strictness, but does not check the limits. Jitter and
// Rand are not part of the JSON and are left alone by Unmarshal.
//
// A DeliveryPolicy is a value; it is safe for concurrent use.
type DeliveryPolicy struct {
	HealthyRetryPolicy HealthyRetryPolicy `json:"healthyRetryPolicy"`
	ThrottlePolicy     ThrottlePolicy     `json:"throttlePolicy,omitzero"`

	// Jitter is how Delay randomises a nominal delay d (the package
	// documentation gives the exact ranges): "equal", uniform in [d/2, d]
	// (the default; also the empty string); "none", d as is; "full",
	// uniform in [0, d]; "decorrelated", uniform in [min, min(bound,
	// 3·previous nominal delay)], where bound is minDelayTarget in the
	// pre-backoff phase and maxDelayTarget after it. Names compare
	// case-insensitively. Immediate retries are never jittered, and no mode
	// goes below 0 or above the phase's bound.
	Jitter string `json:"-"`
	// Rand is the randomness Delay draws from. Nil means math/rand/v2's
	// global generator. Delay serialises its calls to a non-nil source, so
	// one seeded source (rand.NewPCG(1, 2)) can serve the concurrent Delay
	// calls of a worker and make its draws reproducible.
	Rand rand.Source `json:"-"`
}

// DefaultDeliveryPolicy returns SNS's default policy: 3 retries, all in the
// backoff phase, 20 s apart (minDelayTarget = maxDelayTarget = 20), linear,
// no throttling, with the default jitter.
func DefaultDeliveryPolicy() DeliveryPolicy {
	return DeliveryPolicy{HealthyRetryPolicy: HealthyRetryPolicy{
		MinDelayTarget:  20,
		MaxDelayTarget:  20,
		NumRetries:      3,
		BackoffFunction: backoffLinear,
	}}
}

// MarshalJSON writes the subscription shape ({"healthyRetryPolicy": …,
// "throttlePolicy": …}, the latter only when set), with the backoff
// function's lower-case name ("linear" for the empty string). It fails for
// an unknown backoff function.
func (p DeliveryPolicy) MarshalJSON() ([]byte, error) {
	f, ok := backoffCanonical(p.HealthyRetryPolicy.BackoffFunction)
	if !ok {
		return nil, fmt.Errorf("retry: %q is not a backoff function; use linear, arithmetic, geometric or exponential", p.HealthyRetryPolicy.BackoffFunction)
	}
	type document struct {
		HealthyRetryPolicy HealthyRetryPolicy `json:"healthyRetryPolicy"`
		ThrottlePolicy     ThrottlePolicy     `json:"throttlePolicy,omitzero"`
	}
	d := document{HealthyRetryPolicy: p.HealthyRetryPolicy, ThrottlePolicy: p.ThrottlePolicy}
	d.HealthyRetryPolicy.BackoffFunction = f
	return json.Marshal(d)
}

// Delays returns the nominal schedule, without jitter: element n−1 is the
// delay before retry n (the wait after attempt n fails). Its length is
// NumRetries.
func (p DeliveryPolicy) Delays() []time.Duration {
	s := p.schedule()
	out := make([]time.Duration, s.n)
	for i := range out {
		_, out[i] = s.at(i + 1)
	}
	return out
}

// Total returns the sum of the nominal delays: how long the schedule takes,
// not counting handler run time. With the jitter modes "none", "full" and
// "equal" it is also the longest the retries can take; see MaxTotal.
func (p DeliveryPolicy) Total() time.Duration {
	s := p.schedule()
	var total time.Duration
	for n := 1; n <= s.n; n++ {
		_, d := s.at(n)
		total += d
	}
	return total
}

// MaxTotal returns the longest the retries can take under p.Jitter: the sum
// of each retry's upper bound. It equals Total except with jitter
// "decorrelated", which can wait longer than the nominal delay (up to the
// phase's bound). Compare it with the queue's retention period.
func (p DeliveryPolicy) MaxTotal() time.Duration {
	s := p.schedule()
	var total time.Duration
	for n := 1; n <= s.n; n++ {
		_, hi := s.jitterRange(p.Jitter, n)
		total += hi
	}
	return total
}

// Delay implements [Policy]: when attempt n fails (1-based; attempt 1 is the
// first delivery), it returns retry n's delay with jitter applied and true,
// or 0 and false once n > NumRetries. Immediate retries return 0.
func (p DeliveryPolicy) Delay(attempt int) (time.Duration, bool) {
	s := p.schedule()
	attempt = max(attempt, 1)
	if attempt > s.n {
		return 0, false
	}
	lo, hi := s.jitterRange(p.Jitter, attempt)
	if hi <= lo {
		return sqslimit.CapVisibility(lo), true
	}
	d := lo + time.Duration(p.uniform()*float64(hi-lo))
	return sqslimit.CapVisibility(min(max(d, lo), hi)), true
}

// uniform returns a number in [0, 1) from p.Rand or the global generator.
func (p DeliveryPolicy) uniform() float64 {
	if p.Rand == nil {
		return rand.Float64()
	}
	randMu.Lock()
	u := p.Rand.Uint64()
	randMu.Unlock()
	return float64(u>>11) / (1 << 53)
}

// phase identifies where a retry falls in the schedule.
type phase int

const (
	phaseImmediate phase = iota
	phasePre
	phaseBackoff
	phasePost
)

// schedule is a policy's shape with every count and delay clamped to what
// the SQS limits allow, so invalid policies still give a bounded schedule.
type schedule struct {
	n                         int // retries
	immediate, pre, back      int // retries per phase; post = n − the others
	min, max                  time.Duration
	fn                        string  // lower case
	logRatio, logRatioSquared float64 // ln(max/min), ln((max/min)²); 0 when min is 0
}

func (p DeliveryPolicy) schedule() schedule {
	h := p.HealthyRetryPolicy
	var s schedule
	s.n = min(max(h.NumRetries, 0), sqsMaxRetries)
	s.immediate = min(max(h.NumNoDelayRetries, 0), s.n)
	s.pre = min(max(h.NumMinDelayRetries, 0), s.n-s.immediate)
	post := min(max(h.NumMaxDelayRetries, 0), s.n-s.immediate-s.pre)
	s.back = s.n - s.immediate - s.pre - post
	minS := min(max(h.MinDelayTarget, 0), sqsMaxDelayTarget)
	maxS := min(max(h.MaxDelayTarget, minS), sqsMaxDelayTarget)
	s.min, s.max = time.Duration(minS)*time.Second, time.Duration(maxS)*time.Second
	s.fn, _ = backoffCanonical(h.BackoffFunction)
	if minS > 0 && maxS > minS {
		s.logRatio = math.Log(float64(maxS) / float64(minS))
		s.logRatioSquared = 2 * s.logRatio
	}
	return s
}

// at returns retry n's phase and nominal delay, for 1 ≤ n ≤ s.n.
func (s schedule) at(n int) (phase, time.Duration) {
	switch {
	case n <= s.immediate:
		return phaseImmediate, 0
	case n <= s.immediate+s.pre:
		return phasePre, s.min
	case n <= s.immediate+s.pre+s.back:
		return phaseBackoff, s.curve(n - s.immediate - s.pre - 1)
	default:
		return phasePost, s.max
	}
}

// curve returns the delay of backoff retry i (0-based) of s.back.
func (s schedule) curve(i int) time.Duration {
	m := s.back
	if m <= 1 || s.max <= s.min || i <= 0 {
		return s.min
	}
	if i >= m-1 {
		return s.max
	}
	t := float64(i) / float64(m-1)
	var f float64
	switch {
	case s.fn == backoffArithmetic:
		f = t * (2 - t)
	case s.fn == backoffGeometric && s.logRatio > 0:
		// min·R^t = min + (max−min)·(R^t − 1)/(R − 1)
		f = math.Expm1(t*s.logRatio) / math.Expm1(s.logRatio)
	case s.fn == backoffExponential && s.logRatio > 0:
		f = math.Expm1(t*s.logRatioSquared) / math.Expm1(s.logRatioSquared)
	default: // linear, and the ratio-based curves when min is 0 (invalid)
		f = t
	}
	d := s.min + time.Duration(math.Round(f*float64(s.max-s.min)))
	return min(max(d, s.min), s.max)
}

// jitterRange returns the interval retry n's delay is drawn from under
// jitter mode j.
func (s schedule) jitterRange(j string, n int) (lo, hi time.Duration) {
	ph, d := s.at(n)
	if ph == phaseImmediate {
		return 0, 0
	}
	mode, _ := jitterMode(j)
	switch mode {
	case jitterNone:
		return d, d
	case jitterFull:
		return 0, d
	case jitterDecorrelated:
		prev := s.min
		if n > 1 {
			if _, pd := s.at(n - 1); pd > prev {
				prev = pd
			}
		}
		bound := s.max
		if ph == phasePre {
			bound = s.min
		}
		return s.min, max(min(bound, 3*prev), s.min)
	default: // equal, and unknown modes (Validate reports those)
		return d / 2, d
	}
}
