package retry_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/sqsworker/sqsworker/retry"
)

// The example policy of SNS's documentation: 3 immediate retries, 2 after
// 1 s, 10 on an exponential curve from 1 s to 60 s, then 35 after 60 s.
func ExampleParseDeliveryPolicy() {
	p, err := retry.ParseDeliveryPolicy([]byte(`{
	  "healthyRetryPolicy": {
	    "minDelayTarget": 1, "maxDelayTarget": 60, "numRetries": 50,
	    "numNoDelayRetries": 3, "numMinDelayRetries": 2, "numMaxDelayRetries": 35,
	    "backoffFunction": "exponential"
	  },
	  "sicklyRetryPolicy": null,
	  "throttlePolicy": {"maxReceivesPerSecond": 10},
	  "guaranteed": false
	}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	ds := p.Delays()
	for i := 0; i < len(ds); {
		j := i
		for j+1 < len(ds) && ds[j+1] == ds[i] {
			j++
		}
		if i == j {
			fmt.Printf("retry %d: %v\n", i+1, ds[i].Round(time.Millisecond))
		} else {
			fmt.Printf("retries %d-%d: %v\n", i+1, j+1, ds[i])
		}
		i = j + 1
	}
	fmt.Println("total:", p.Total().Round(time.Second))
	fmt.Println("max receives per second:", p.ThrottlePolicy.MaxReceivesPerSecond)
	// Output:
	// retries 1-3: 0s
	// retries 4-6: 1s
	// retry 7: 1.024s
	// retry 8: 1.085s
	// retry 9: 1.235s
	// retry 10: 1.608s
	// retry 11: 2.534s
	// retry 12: 4.834s
	// retry 13: 10.549s
	// retry 14: 24.743s
	// retries 15-50: 1m0s
	// total: 36m51s
	// max receives per second: 10
}

// SNS's own illustration: the default policy with maxDelayTarget raised to
// 40 s retries after 20 s, 30 s and 40 s.
func ExampleDeliveryPolicy_Delays() {
	p, _ := retry.ParseDeliveryPolicy([]byte(`{"healthyRetryPolicy": {"maxDelayTarget": 40}}`))
	fmt.Println(p.Delays(), p.Total())
	fmt.Println(retry.DefaultDeliveryPolicy().Delays())
	// Output:
	// [20s 30s 40s] 1m30s
	// [20s 20s 20s]
}

// The four backoff functions with the parameters of SNS's comparison graph:
// 10 retries from 5 s to 260 s (delays in seconds).
func Example_backoffFunctions() {
	for _, f := range []string{"arithmetic", "linear", "geometric", "exponential"} {
		p := retry.DeliveryPolicy{HealthyRetryPolicy: retry.HealthyRetryPolicy{
			MinDelayTarget: 5, MaxDelayTarget: 260, NumRetries: 10, BackoffFunction: f,
		}}
		var row []string
		for _, d := range p.Delays() {
			row = append(row, fmt.Sprintf("%5.1f", d.Seconds()))
		}
		fmt.Printf("%-11s %s\n", f, strings.Join(row, " "))
	}
	// Output:
	// arithmetic    5.0  58.5 105.7 146.7 181.3 209.6 231.7 247.4 256.9 260.0
	// linear        5.0  33.3  61.7  90.0 118.3 146.7 175.0 203.3 231.7 260.0
	// geometric     5.0   7.8  12.0  18.7  28.9  44.9  69.7 108.1 167.6 260.0
	// exponential   5.0   5.1   5.5   6.2   8.1  12.5  23.2  49.0 110.9 260.0
}

// Delay is what the worker calls: the attempt that just failed in, the delay
// and whether to retry out. numRetries 3 means 4 deliveries.
func ExampleDeliveryPolicy_Delay() {
	p, _ := retry.ParseDeliveryPolicy([]byte(`{"healthyRetryPolicy": {"maxDelayTarget": 40}}`))

	p.Jitter = "none"
	for attempt := 1; attempt <= 4; attempt++ {
		d, ok := p.Delay(attempt)
		fmt.Printf("attempt %d failed: retry=%v after %v\n", attempt, ok, d)
	}

	// With the default jitter, "equal", each delay falls in [d/2, d]. A
	// seeded source makes the draw reproducible.
	p.Jitter, p.Rand = "equal", rand.NewPCG(1, 2)
	d, _ := p.Delay(3)
	fmt.Println(d >= 20*time.Second && d <= 40*time.Second)
	// Output:
	// attempt 1 failed: retry=true after 20s
	// attempt 2 failed: retry=true after 30s
	// attempt 3 failed: retry=true after 40s
	// attempt 4 failed: retry=false after 0s
	// true
}

// Validation errors name the field and say what to do.
func ExampleDeliveryPolicy_Validate() {
	_, err := retry.ParseDeliveryPolicy([]byte(`{"http": {"defaultHealthyRetryPolicy": {"maxDelayTarget": 7200}}}`))
	fmt.Println(err)

	// SQS can hide a message for up to 12 hours, so its limits accept it.
	p, err := retry.ParseDeliveryPolicySQS([]byte(`{"http": {"defaultHealthyRetryPolicy": {"maxDelayTarget": 7200}}}`))
	fmt.Println(p.Delays(), err)

	_, err = retry.ParseDeliveryPolicy([]byte(`{"healthyRetryPolicy": {"numRetrys": 5}}`))
	fmt.Println(errors.As(err, new(*retry.PolicyError)))
	// Output:
	// retry: delivery policy: http.defaultHealthyRetryPolicy.maxDelayTarget: 7200 is above SNS's limit of 3600 seconds; lower it, or validate with SQS's limits (ParseDeliveryPolicySQS, DeliveryPolicy.ValidateSQS), which allow up to 43200 seconds (12 h)
	// [20s 1h0m10s 2h0m0s] <nil>
	// true
}

// Any cenkalti/backoff/v4 BackOff is a retry.BackOff, and so can be a Policy; WithMaxRetries bounds the
// retries and backoff.Stop gives up.
func ExampleFromBackOff() {
	p, err := retry.FromBackOff(func() retry.BackOff {
		b := backoff.NewExponentialBackOff(
			backoff.WithInitialInterval(time.Second),
			backoff.WithMultiplier(3),
			backoff.WithRandomizationFactor(0), // for a reproducible example
			backoff.WithMaxInterval(time.Minute),
		)
		return backoff.WithMaxRetries(b, 5)
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for attempt := 1; attempt <= 6; attempt++ {
		d, ok := p.Delay(attempt)
		fmt.Println(attempt, d, ok)
	}
	// Output:
	// 1 1s true
	// 2 3s true
	// 3 9s true
	// 4 27s true
	// 5 1m0s true
	// 6 0s false
}

// How a worker tells the outcomes apart.
func ExamplePermanent() {
	classify := func(err error) string {
		if err == nil {
			return "done: delete"
		}
		if errors.Is(err, retry.ErrPermanent) {
			return "permanent: to the DLQ now: " + err.Error()
		}
		if ae := new(retry.AfterError); errors.As(err, &ae) {
			return fmt.Sprintf("retry after exactly %v: %v", ae.Delay, err)
		}
		return "retry per policy: " + err.Error()
	}
	parse := func(body string) error {
		if !strings.HasPrefix(body, "{") {
			return retry.Permanent(fmt.Errorf("body %q is not JSON", body))
		}
		return nil
	}
	fmt.Println(classify(parse("{}")))
	fmt.Println(classify(parse("hello")))
	fmt.Println(classify(fmt.Errorf("order 7: %w", retry.ErrPermanent)))
	fmt.Println(classify(retry.After(30*time.Second, errors.New("downstream asked us to wait"))))
	fmt.Println(classify(retry.After(time.Minute, nil)))
	fmt.Println(classify(errors.New("connection reset")))
	// Output:
	// done: delete
	// permanent: to the DLQ now: body "hello" is not JSON
	// permanent: to the DLQ now: order 7: permanent failure
	// retry after exactly 30s: downstream asked us to wait
	// retry after exactly 1m0s: retry after 1m0s
	// retry per policy: connection reset
}
