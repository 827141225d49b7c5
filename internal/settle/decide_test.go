package settle_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/sqsworker/sqsworker/internal/settle"
	"github.com/sqsworker/sqsworker/retry"
)

func fixedPolicy(n int, d time.Duration) retry.Policy {
	return retry.PolicyFunc(func(attempt int) (time.Duration, bool) { return d, attempt <= n })
}

// TestDecide pins down the lifecycle decision the worker and the Lambda
// adapter share.
func TestDecide(t *testing.T) {
	policy := fixedPolicy(2, 5*time.Second)
	boom := errors.New("boom")
	for _, tc := range []struct {
		name    string
		err     error
		attempt int
		want    settle.Decision
	}{
		{"success", nil, 1, settle.Decision{Action: settle.Delete}},
		{"ordinary error, first attempt", boom, 1, settle.Decision{Action: settle.Retry, Delay: 5 * time.Second}},
		{"ordinary error, last retry", boom, 2, settle.Decision{Action: settle.Retry, Delay: 5 * time.Second}},
		{"ordinary error, exhausted", boom, 3, settle.Decision{Action: settle.DeadLetter, Reason: "retries exhausted after 3 attempts"}},
		{"permanent", retry.Permanent(boom), 1, settle.Decision{Action: settle.DeadLetter, Reason: "permanent failure"}},
		{"wrapped permanent", fmt.Errorf("order 7: %w", retry.ErrPermanent), 1, settle.Decision{Action: settle.DeadLetter, Reason: "permanent failure"}},
		{"permanent wins over after", retry.Permanent(retry.After(time.Minute, boom)), 1, settle.Decision{Action: settle.DeadLetter, Reason: "permanent failure"}},
		{"after", retry.After(90*time.Second, boom), 1, settle.Decision{Action: settle.Retry, Delay: 90 * time.Second}},
		{"after, policy exhausted", retry.After(90*time.Second, boom), 9, settle.Decision{Action: settle.DeadLetter, Reason: "retries exhausted after 9 attempts"}},
		{"after beyond 12h is capped", retry.After(48*time.Hour, nil), 1, settle.Decision{Action: settle.Retry, Delay: 12 * time.Hour}},
		{"wrapped after", fmt.Errorf("upstream: %w", retry.After(3*time.Second, boom)), 1, settle.Decision{Action: settle.Retry, Delay: 3 * time.Second}},
		{"panic", fmt.Errorf("%w: oops", settle.ErrPanic), 1, settle.Decision{Action: settle.Retry, Delay: 5 * time.Second}},
		{"snooze", retry.Snooze(time.Minute, "duplicate in progress"), 1, settle.Decision{Action: settle.Retry, Delay: time.Minute, Snoozed: true}},
		{"snooze past the policy's limit", retry.Snooze(time.Minute, ""), 50, settle.Decision{Action: settle.Retry, Delay: time.Minute, Snoozed: true}},
		{"wrapped snooze", fmt.Errorf("lock: %w", retry.Snooze(time.Second, "")), 1, settle.Decision{Action: settle.Retry, Delay: time.Second, Snoozed: true}},
		{"snooze beyond 12h is capped", retry.Snooze(48*time.Hour, ""), 1, settle.Decision{Action: settle.Retry, Delay: 12 * time.Hour, Snoozed: true}},
		{"permanent wins over snooze", retry.Permanent(retry.Snooze(time.Second, "")), 1, settle.Decision{Action: settle.DeadLetter, Reason: "permanent failure"}},
		{"after wins over snooze", retry.After(2*time.Second, retry.Snooze(time.Second, "")), 1, settle.Decision{Action: settle.Retry, Delay: 2 * time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := settle.Decide(tc.err, tc.attempt, policy); got != tc.want {
				t.Fatalf("Decide = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestCapDelay(t *testing.T) {
	received := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		d, since, want time.Duration
	}{
		{time.Minute, time.Hour, time.Minute},
		{12 * time.Hour, 0, 12*time.Hour - 5*time.Second},
		{time.Hour, 11*time.Hour + 30*time.Minute, 30*time.Minute - 5*time.Second},
		{time.Hour, 13 * time.Hour, 0},
		{-time.Second, 0, 0},
	} {
		if got := settle.CapDelay(tc.d, received, received.Add(tc.since)); got != tc.want {
			t.Errorf("CapDelay(%v, %v after receipt) = %v, want %v", tc.d, tc.since, got, tc.want)
		}
	}
}

func TestInvokeRecoversPanics(t *testing.T) {
	err := settle.Invoke(context.Background(), quiet, "m", func(context.Context) error { panic("bug") })
	if !errors.Is(err, settle.ErrPanic) {
		t.Fatalf("Invoke = %v, want ErrPanic", err)
	}
}

func TestWithCause(t *testing.T) {
	cause := errors.New("deadline")
	boom := errors.New("boom")
	if err := settle.WithCause(boom, cause); !errors.Is(err, cause) || !errors.Is(err, boom) {
		t.Errorf("WithCause = %v, want both", err)
	}
	if err := settle.WithCause(retry.Permanent(boom), cause); errors.Is(err, cause) {
		t.Errorf("a permanent error's reason must stand: %v", err)
	}
	if settle.WithCause(nil, cause) != nil {
		t.Error("WithCause(nil) must stay nil")
	}
}
