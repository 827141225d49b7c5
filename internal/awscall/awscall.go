// Package awscall is sqsworker's one retry rule for the AWS calls it makes
// (SQS, SNS, DynamoDB, S3, EventBridge Scheduler, CloudWatch). Every call
// goes through it, or through internal/sqsbatch, which retries batch
// entries by the same rule:
//
//   - the SDK's own retryer is off on every call (aws.NopRetryer, set per
//     call by the service's Off option), so no request is repeated unseen;
//   - a call makes at most Rule.Attempts requests (DefaultAttempts, 5),
//     each bounded by Rule.Timeout (DefaultTimeout, 30 s), waiting
//     Backoff(n) before retry n: 100 ms doubling up to 5 s, the upper half
//     random;
//   - internal/sqserr alone decides which errors are worth another request
//     (throttling, server faults, the network, a request's own timeout);
//     the caller's context ending stops the call at once;
//   - every request is reported once to Rule.OnRequest, retries included,
//     so the package that makes it counts it.
//
// A call that needs other limits says so with a Rule and the reason beside
// it: the fleet controls make two requests at most (a job waits on them),
// S3 requests carry bodies of up to 256 MiB and are bounded by the
// caller's context alone.
package awscall

import (
	"context"
	"io"
	"math/rand/v2"
	"reflect"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/cenkalti/backoff/v4"

	"github.com/sqsworker/sqsworker/internal/sqserr"
)

// The rule's defaults.
const (
	// DefaultAttempts is how many requests one call makes at most when
	// Rule.Attempts is zero.
	DefaultAttempts = 5
	// DefaultTimeout bounds each request when Rule.Timeout is zero.
	DefaultTimeout = 30 * time.Second
)

// Retry timing.
const (
	backoffMin = 100 * time.Millisecond
	backoffMax = 5 * time.Second
)

// Backoff is the wait before retry n (1, 2, …): 100 ms doubling up to 5 s,
// the upper half of it random (so retries of many callers spread out).
func Backoff(n int) time.Duration {
	d := interval(n)
	return d/2 + rand.N(d/2+1)
}

// interval is retry n's ceiling: cenkalti/backoff's exponential sequence,
// without its own randomisation (Backoff draws in the upper half instead),
// from backoffMin doubling to backoffMax.
func interval(n int) time.Duration {
	b := backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(backoffMin),
		backoff.WithMultiplier(2),
		backoff.WithMaxInterval(backoffMax),
		backoff.WithRandomizationFactor(0),
		backoff.WithMaxElapsedTime(0),
	)
	d := backoffMin
	// The sequence reaches backoffMax by the 7th value; later ones repeat it.
	for range min(max(n, 1), 8) {
		d = b.NextBackOff()
	}
	return d
}

// Sleep waits for d or until ctx ends, and returns ctx's cause then (nil
// after the wait; ctx's cause at once when d is not positive and ctx has
// ended).
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return context.Cause(ctx)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// Request is one request, as Rule.OnRequest sees it.
type Request struct {
	// Service is the SDK's service ID: "SQS", "SNS", "DynamoDB" or "S3".
	Service string
	// Op is the action, e.g. "UpdateItem".
	Op string
	// Attempt is 1 for a call's first request, 2 for its first retry, …
	Attempt int
	// Err is the request's error, nil when AWS answered it.
	Err error
}

// Rule is how one call is made. Every field's zero value selects the
// package's default.
type Rule struct {
	// Attempts is the most requests the call makes. Zero value:
	// DefaultAttempts.
	Attempts int
	// Timeout bounds each request. Zero value: DefaultTimeout; negative:
	// no bound but the caller's context.
	Timeout time.Duration
	// Detach makes each request on a context that the caller's end does
	// not cancel (each still bounded by Timeout): a request that may take
	// effect is not abandoned in flight, as when a receive must learn
	// which messages it hid. The caller's end still stops further requests
	// and waits. Zero value: requests end with the caller's context.
	Detach bool
	// OnRequest, when set, is told about every request, retries included,
	// once it returned. It may be called from several goroutines at once.
	OnRequest func(Request)
}

// Retryable reports whether a request that failed with err may succeed if
// made again: sqserr's Transient and Throttled classes.
func Retryable(err error) bool { return sqserr.Of(err).Retryable() }

// Do makes call under r: up to r.Attempts requests, each with r.Timeout,
// Backoff between them, as long as the error is Retryable and ctx has not
// ended. It returns the last request's result. call must make exactly one
// request with the SDK's retryer off (the service helpers below do both).
func Do[T any](ctx context.Context, r Rule, service, op string, call func(ctx context.Context) (T, error)) (T, error) {
	attempts := r.Attempts
	if attempts <= 0 {
		attempts = DefaultAttempts
	}
	timeout := r.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	rctx := ctx
	if r.Detach {
		rctx = context.WithoutCancel(ctx)
	}
	for n := 1; ; n++ {
		out, err := once(rctx, timeout, call)
		if r.OnRequest != nil {
			r.OnRequest(Request{Service: service, Op: op, Attempt: n, Err: err})
		}
		if err == nil || n >= attempts || ctx.Err() != nil || !Retryable(err) {
			return out, err
		}
		if Sleep(ctx, Backoff(n)) != nil {
			return out, err
		}
	}
}

func once[T any](ctx context.Context, timeout time.Duration, call func(ctx context.Context) (T, error)) (T, error) {
	if timeout < 0 {
		return call(ctx)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return call(ctx)
}

// Op is the action of an SDK input or output type: "UpdateItem" for
// *dynamodb.UpdateItemInput and *dynamodb.UpdateItemOutput.
func Op[T any]() string {
	t := reflect.TypeFor[T]()
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	name := t.Name()
	if n, ok := strings.CutSuffix(name, "Input"); ok {
		return n
	}
	return strings.TrimSuffix(name, "Output")
}

// withOff returns optFns followed by off, without changing optFns' array.
func withOff[O any](optFns []func(*O), off func(*O)) []func(*O) {
	return append(optFns[:len(optFns):len(optFns)], off)
}

// The SDK's retryer, off for one call. Each sets aws.NopRetryer and
// RetryMaxAttempts 1, so that a client whose options say otherwise still
// makes one request per call.

// SQSOff turns the SDK's retryer off for one SQS call.
func SQSOff(o *sqs.Options) { o.Retryer, o.RetryMaxAttempts = aws.NopRetryer{}, 1 }

// SQSOffOpts is SQSOff as a call's options (call(ctx, in, SQSOffOpts...)):
// passing the one func by itself makes the SDK's variadic slice, an
// allocation, on every call. Read only.
var SQSOffOpts = []func(*sqs.Options){SQSOff}

// SNSOff turns the SDK's retryer off for one SNS call.
func SNSOff(o *sns.Options) { o.Retryer, o.RetryMaxAttempts = aws.NopRetryer{}, 1 }

// DynamoDBOff turns the SDK's retryer off for one DynamoDB call.
func DynamoDBOff(o *dynamodb.Options) { o.Retryer, o.RetryMaxAttempts = aws.NopRetryer{}, 1 }

// SchedulerOff turns the SDK's retryer off for one EventBridge Scheduler
// call.
func SchedulerOff(o *scheduler.Options) { o.Retryer, o.RetryMaxAttempts = aws.NopRetryer{}, 1 }

// CloudWatchOff turns the SDK's retryer off for one CloudWatch call.
func CloudWatchOff(o *cloudwatch.Options) { o.Retryer, o.RetryMaxAttempts = aws.NopRetryer{}, 1 }

// S3Off turns the SDK's retryer off for one S3 call.
func S3Off(o *s3.Options) { o.Retryer, o.RetryMaxAttempts = aws.NopRetryer{}, 1 }

// SQS makes the SQS call fn(ctx, in, optFns...) under r, with the SDK's
// retryer off: awscall.SQS(ctx, r, client.GetQueueAttributes, in).
func SQS[In, Out any](ctx context.Context, r Rule, fn func(context.Context, In, ...func(*sqs.Options)) (Out, error), in In, optFns ...func(*sqs.Options)) (Out, error) {
	opts := withOff(optFns, SQSOff)
	return Do(ctx, r, "SQS", Op[In](), func(ctx context.Context) (Out, error) { return fn(ctx, in, opts...) })
}

// SNS is SQS for SNS calls.
func SNS[In, Out any](ctx context.Context, r Rule, fn func(context.Context, In, ...func(*sns.Options)) (Out, error), in In, optFns ...func(*sns.Options)) (Out, error) {
	opts := withOff(optFns, SNSOff)
	return Do(ctx, r, "SNS", Op[In](), func(ctx context.Context) (Out, error) { return fn(ctx, in, opts...) })
}

// DynamoDB is SQS for DynamoDB calls.
func DynamoDB[In, Out any](ctx context.Context, r Rule, fn func(context.Context, In, ...func(*dynamodb.Options)) (Out, error), in In, optFns ...func(*dynamodb.Options)) (Out, error) {
	opts := withOff(optFns, DynamoDBOff)
	return Do(ctx, r, "DynamoDB", Op[In](), func(ctx context.Context) (Out, error) { return fn(ctx, in, opts...) })
}

// S3 is SQS for S3 calls. A PutObject whose body is an io.Seeker is
// rewound to where it started before each retry; one whose body is not
// is made once. A GetObject's body is read after the call returns, so
// give it a Rule whose Timeout is negative (the caller's context bounds
// the read).
func S3[In, Out any](ctx context.Context, r Rule, fn func(context.Context, In, ...func(*s3.Options)) (Out, error), in In, optFns ...func(*s3.Options)) (Out, error) {
	opts := withOff(optFns, S3Off)
	if put, ok := any(in).(*s3.PutObjectInput); ok && put.Body != nil {
		seeker, ok := put.Body.(io.Seeker)
		if !ok {
			r.Attempts = 1 // the body cannot be sent again
		} else if start, err := seeker.Seek(0, io.SeekCurrent); err != nil {
			r.Attempts = 1
		} else {
			first := true
			return Do(ctx, r, "S3", Op[In](), func(ctx context.Context) (Out, error) {
				if !first {
					if _, err := seeker.Seek(start, io.SeekStart); err != nil {
						var zero Out
						return zero, err
					}
				}
				first = false
				return fn(ctx, in, opts...)
			})
		}
	}
	return Do(ctx, r, "S3", Op[In](), func(ctx context.Context) (Out, error) { return fn(ctx, in, opts...) })
}
