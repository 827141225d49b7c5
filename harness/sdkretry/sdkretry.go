// Package sdkretry stands for the AWS SDK's retryer in tests: a test
// client wraps a call with Do to see whether the code under test lets the
// SDK repeat a failed request unseen, or turns those retries off
// (RetryMaxAttempts 1) and retries, and counts, by itself.
package sdkretry

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// DefaultAttempts is the SDK's default RetryMaxAttempts.
const DefaultAttempts = 3

// Do makes call until it succeeds, up to the RetryMaxAttempts that optFns
// set (DefaultAttempts when they set none), as the SDK's retryer makes a
// failed request again, or until ctx ends. requests, when not nil, counts
// every request made.
func Do[T any](ctx context.Context, optFns []func(*sqs.Options), requests *int, call func() (T, error)) (T, error) {
	o := sqs.Options{RetryMaxAttempts: DefaultAttempts}
	for _, fn := range optFns {
		fn(&o)
	}
	for attempt := 1; ; attempt++ {
		if requests != nil {
			*requests++
		}
		out, err := call()
		if err == nil || attempt >= o.RetryMaxAttempts || ctx.Err() != nil {
			return out, err
		}
	}
}
