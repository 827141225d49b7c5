package snstest

import (
	"testing"
	"time"
)

// TestRetrySchedule checks the retry delays against SNS's policy for SQS
// endpoints: 3 immediate, 2 after 1 s, 10 from 1 s to 20 s, 100,000 after
// 20 s — 100,015 retries over 23 days.
func TestRetrySchedule(t *testing.T) {
	for n, want := range map[int]time.Duration{1: 0, 3: 0, 4: time.Second, 5: time.Second, 6: time.Second, 15: 20 * time.Second, 16: 20 * time.Second, managedRetries: 20 * time.Second} {
		if got := retryDelay(n); got != want {
			t.Errorf("retry %d waits %v, want %v", n, got, want)
		}
	}
	var total time.Duration
	for n := 1; n <= managedRetries; n++ {
		d := retryDelay(n)
		if n > 1 && d < retryDelay(n-1) {
			t.Fatalf("retry %d waits %v, less than the one before", n, d)
		}
		total += d
	}
	if days := total.Hours() / 24; days < 23 || days > 23.2 {
		t.Errorf("the retries take %.2f days; SNS says over 23", days)
	}
}
