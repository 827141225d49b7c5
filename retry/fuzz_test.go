package retry_test

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/sqsworker/sqsworker/retry"
)

// FuzzParseDeliveryPolicy checks that parsing never panics, that every error
// is a *PolicyError naming a field (present in the message) or saying the
// JSON is malformed, that SQS's limits accept whatever SNS's accept, and that
// an accepted policy's schedule obeys its bounds and survives a JSON round
// trip. The seed corpus is the documents of SNS's delivery-retry pages.
func FuzzParseDeliveryPolicy(f *testing.F) {
	for _, s := range []string{
		seedPolicy50, topicDoc, subscriptionDoc, bareDoc,
		`{}`,
		`{"healthyRetryPolicy":{"numRetries":5}}`,
		`{"http":{"defaultHealthyRetryPolicy":{"numRetries":5}}}`,
		`{"healthyRetryPolicy":{"minDelayTarget":20,"maxDelayTarget":40,"numRetries":3,"backoffFunction":"linear"}}`,
		`{"healthyRetryPolicy":{"minDelayTarget":10,"maxDelayTarget":600,"numRetries":50,"numMinDelayRetries":2,"numMaxDelayRetries":38,"backoffFunction":"exponential"}}`,
		`{"healthyRetryPolicy":{"minDelayTarget":5,"maxDelayTarget":260,"numRetries":10,"backoffFunction":"arithmetic"},"sicklyRetryPolicy":null,"throttlePolicy":null,"guaranteed":false}`,
		`{"healthyRetryPolicy":{"minDelayTarget":0,"maxDelayTarget":0,"numRetries":0,"numMinDelayRetries":0,"numMaxDelayRetries":0,"numNoDelayRetries":0,"backoffFunction":"exponential"}}`,
		`{"healthyRetryPolicy":{"numRetrys":5}}`,
		`{"throttlePolicy":{"maxReceivesPerSecond":0}}`,
		`{"numRetries": 2.5}`, `{"numRetries": "3"}`, `{"numRetries": 1e400}`,
		``, `{`, `null`, `[]`, `"linear"`, `{"a":1,"a":2}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		snsPolicy, snsErr := retry.ParseDeliveryPolicy(data)
		sqsPolicy, sqsErr := retry.ParseDeliveryPolicySQS(data)
		var viaUnmarshal retry.DeliveryPolicy
		unmarshalErr := json.Unmarshal(data, &viaUnmarshal)

		for _, err := range []error{snsErr, sqsErr} {
			if err != nil {
				checkPolicyError(t, data, err)
			}
		}
		if snsErr == nil && sqsErr != nil {
			t.Fatalf("%q: SNS's rules accept it but SQS's limits refuse it: %v", data, sqsErr)
		}
		if sqsErr == nil && unmarshalErr != nil {
			t.Fatalf("%q: ParseDeliveryPolicySQS accepts it but json.Unmarshal fails: %v", data, unmarshalErr)
		}
		if sqsErr != nil {
			return
		}
		checkSchedule(t, data, sqsPolicy)
		if snsErr != nil {
			return
		}
		checkSchedule(t, data, snsPolicy)
		h := snsPolicy.HealthyRetryPolicy
		if h.MaxDelayTarget > retry.SNSMaxDelayTarget || h.NumRetries > retry.SNSMaxRetries || snsPolicy.Total() > retry.SNSMaxTotal {
			t.Fatalf("%q: accepted under SNS's rules but exceeds them: %+v, total %v", data, h, snsPolicy.Total())
		}
		out, err := json.Marshal(snsPolicy)
		if err != nil {
			t.Fatalf("%q: Marshal: %v", data, err)
		}
		again, err := retry.ParseDeliveryPolicy(out)
		if err != nil || again.HealthyRetryPolicy != h || again.ThrottlePolicy != snsPolicy.ThrottlePolicy {
			t.Fatalf("%q: round trip through %s gave %+v, %v", data, out, again, err)
		}
	})
}

func checkPolicyError(t *testing.T, data []byte, err error) {
	t.Helper()
	var pe *retry.PolicyError
	if !errors.As(err, &pe) {
		t.Fatalf("%q: error %T %v is not a *PolicyError matching ErrInvalidPolicy", data, err, err)
	}
	msg := err.Error()
	if pe.Field == "" {
		if !strings.Contains(msg, "malformed JSON") {
			t.Fatalf("%q: error %q names no field and does not say the JSON is malformed", data, msg)
		}
		return
	}
	if !strings.Contains(msg, pe.Field) {
		t.Fatalf("%q: error %q does not name its field %q", data, msg, pe.Field)
	}
	if pe.Problem == "" {
		t.Fatalf("%q: error for %q says nothing", data, pe.Field)
	}
}

func checkSchedule(t *testing.T, data []byte, p retry.DeliveryPolicy) {
	t.Helper()
	h := p.HealthyRetryPolicy
	minD, maxD := time.Duration(h.MinDelayTarget)*time.Second, time.Duration(h.MaxDelayTarget)*time.Second
	ds := p.Delays()
	if len(ds) != h.NumRetries {
		t.Fatalf("%q: %d delays for numRetries %d", data, len(ds), h.NumRetries)
	}
	var total time.Duration
	for i, d := range ds {
		n := i + 1
		if n <= h.NumNoDelayRetries {
			if d != 0 {
				t.Fatalf("%q: immediate retry %d waits %v", data, n, d)
			}
		} else if d < minD || d > maxD {
			t.Fatalf("%q: retry %d waits %v, outside [%v, %v]", data, n, d, minD, maxD)
		}
		if i > 0 && d < ds[i-1] {
			t.Fatalf("%q: schedule decreases at retry %d: %v", data, n, ds)
		}
		total += d
	}
	if p.Total() != total {
		t.Fatalf("%q: Total() = %v, want %v", data, p.Total(), total)
	}
	p.Rand = rand.NewPCG(uint64(len(data)), 1)
	for _, j := range []string{"equal", "full", "decorrelated"} {
		p.Jitter = j
		for n := 1; n <= h.NumRetries; n++ {
			d, ok := p.Delay(n)
			if !ok || d < 0 || d > maxD || (n <= h.NumNoDelayRetries && d != 0) {
				t.Fatalf("%q: %v Delay(%d) = %v, %v", data, j, n, d, ok)
			}
		}
		if _, ok := p.Delay(h.NumRetries + 1); ok {
			t.Fatalf("%q: Delay(numRetries+1) retries", data)
		}
	}
}
