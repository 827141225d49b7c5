package worker_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/worker"
)

// TestDecide pins down worker.Decide, the lifecycle decision the Handler
// shares with worker.Worker.
func TestDecide(t *testing.T) {
	policy := fixedPolicy(2, 5*time.Second)
	boom := errors.New("boom")
	for _, tc := range []struct {
		name    string
		err     error
		attempt int
		want    worker.Decision
	}{
		{"success", nil, 1, worker.Decision{Outcome: worker.Delete}},
		{"ordinary error, first attempt", boom, 1, worker.Decision{Outcome: worker.RetryAfter, Delay: 5 * time.Second}},
		{"ordinary error, last retry", boom, 2, worker.Decision{Outcome: worker.RetryAfter, Delay: 5 * time.Second}},
		{"ordinary error, exhausted", boom, 3, worker.Decision{Outcome: worker.DeadLetter, Reason: "retries exhausted after 3 attempts"}},
		{"permanent", retry.Permanent(boom), 1, worker.Decision{Outcome: worker.DeadLetter, Reason: "permanent failure"}},
		{"wrapped permanent", fmt.Errorf("order 7: %w", retry.ErrPermanent), 1, worker.Decision{Outcome: worker.DeadLetter, Reason: "permanent failure"}},
		{"permanent wins over after", retry.Permanent(retry.After(time.Minute, boom)), 1, worker.Decision{Outcome: worker.DeadLetter, Reason: "permanent failure"}},
		{"after", retry.After(90*time.Second, boom), 1, worker.Decision{Outcome: worker.RetryAfter, Delay: 90 * time.Second}},
		{"after, policy exhausted", retry.After(90*time.Second, boom), 9, worker.Decision{Outcome: worker.DeadLetter, Reason: "retries exhausted after 9 attempts"}},
		{"after beyond 12h is capped", retry.After(48*time.Hour, nil), 1, worker.Decision{Outcome: worker.RetryAfter, Delay: retry.MaxVisibilityTimeout}},
		{"wrapped after", fmt.Errorf("upstream: %w", retry.After(3*time.Second, boom)), 1, worker.Decision{Outcome: worker.RetryAfter, Delay: 3 * time.Second}},
		{"panic", fmt.Errorf("%w: oops", worker.ErrPanic), 1, worker.Decision{Outcome: worker.RetryAfter, Delay: 5 * time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := worker.Decide(tc.err, tc.attempt, policy); got != tc.want {
				t.Fatalf("Decide = %+v, want %+v", got, tc.want)
			}
		})
	}
	if s := worker.DeadLetter.String(); s != "dead-letter" {
		t.Errorf("DeadLetter.String() = %q", s)
	}
}
