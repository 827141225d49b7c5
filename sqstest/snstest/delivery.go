package snstest

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/internal/sqserr"
	"github.com/sqsworker/sqsworker/retry"
)

// delivery is one subscription's delivery of a publish.
type delivery struct {
	sub *subscription
	in  *sqs.SendMessageInput
}

// managedRetries is how many times SNS retries a delivery to an SQS queue
// (an AWS managed endpoint) that fails on the server side, over 23 days.
const managedRetries = 100_015

// retryDelay returns the wait before retry n (1 ≤ n ≤ managedRetries) of
// SNS's delivery policy for SQS endpoints: 3 immediate retries, 2 after
// 1 s, 10 on an exponential curve from 1 s to 20 s, then 100,000 after
// 20 s. SNS adds jitter; the fake keeps the nominal delays.
func retryDelay(n int) time.Duration {
	const shaped = 15 // retries before the post-backoff phase
	if n > shaped {
		return 20 * time.Second
	}
	p := retry.DeliveryPolicy{Jitter: "none", HealthyRetryPolicy: retry.HealthyRetryPolicy{
		MinDelayTarget: 1, MaxDelayTarget: 20, NumRetries: shaped,
		NumNoDelayRetries: 3, NumMinDelayRetries: 2, BackoffFunction: "exponential",
	}}
	d, _ := p.Delay(n)
	return d
}

// clientError reports whether a failed delivery is one SNS does not retry:
// the delivery is refused (a queue policy, a KMS key), or SQS says the
// request cannot succeed (the queue does not exist, access is denied, the
// request is invalid). Server errors, throttling and timeouts are retried.
func clientError(err error) bool {
	return errors.Is(err, errRefused) || !sqserr.Of(err).Retryable()
}

// attempt makes delivery d's attempt after retries retries, and the
// immediate retries after it; a later retry is left to a timer.
func (f *Fake) attempt(ctx context.Context, d delivery, retries int) {
	for {
		err := f.deliver(ctx, d.sub.endpoint, d.sub.topicARN, d.in)
		switch {
		case err == nil:
			f.mu.Lock()
			f.stats.Delivered++
			f.mu.Unlock()
			return
		case clientError(err), retries >= f.opts.DeliveryRetries:
			f.deadLetter(ctx, d)
			return
		}
		retries++
		wait := retryDelay(retries)
		if wait == 0 {
			f.mu.Lock()
			f.stats.Retried++
			f.mu.Unlock()
			continue
		}
		f.later(wait, d, retries)
		return
	}
}

// later makes retry n of d after wait, unless the test ended or the
// subscription was removed meanwhile.
func (f *Fake) later(wait time.Duration, d delivery, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		return
	}
	f.stats.Waiting++
	var t *time.Timer
	t = time.AfterFunc(wait, func() {
		f.mu.Lock()
		if !f.retries[t] {
			f.mu.Unlock()
			return // stopped
		}
		delete(f.retries, t)
		f.stats.Waiting--
		if f.subs[d.sub.arn] != d.sub {
			f.stats.Lost++ // unsubscribed meanwhile
			f.mu.Unlock()
			return
		}
		f.stats.Retried++
		f.mu.Unlock()
		f.attempt(context.Background(), d, n)
	})
	f.retries[t] = true
}

// stopRetries drops the deliveries waiting for a retry.
func (f *Fake) stopRetries() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stopped = true
	for t := range f.retries {
		t.Stop()
	}
	clear(f.retries)
}

// deadLetter sends d to its subscription's dead-letter queue, or counts it
// lost without one (or when that send fails too), as SNS discards it.
func (f *Fake) deadLetter(ctx context.Context, d delivery) {
	f.mu.Lock()
	policy := d.sub.attrs["RedrivePolicy"]
	f.mu.Unlock()
	lost := policy == ""
	if !lost {
		var p struct {
			Target string `json:"deadLetterTargetArn"`
		}
		_ = json.Unmarshal([]byte(policy), &p)
		lost = f.deliver(ctx, p.Target, d.sub.topicARN, d.in) != nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if lost {
		f.stats.Lost++
	} else {
		f.stats.DeadLettered++
	}
}
