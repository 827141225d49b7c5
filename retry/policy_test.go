package retry_test

import (
	"context"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/sqsworker/sqsworker/retry"
)

func TestPolicyFunc(t *testing.T) {
	var p retry.Policy = retry.PolicyFunc(func(attempt int) (time.Duration, bool) {
		return time.Duration(attempt) * time.Second, attempt < 3
	})
	if d, ok := p.Delay(2); d != 2*time.Second || !ok {
		t.Errorf("Delay(2) = %v, %v", d, ok)
	}
	if _, ok := p.Delay(3); ok {
		t.Error("Delay(3) retried")
	}
}

func TestFromBackOff(t *testing.T) {
	// WithMaxRetries(b, 3) allows 3 retries: 4 deliveries, like numRetries 3.
	p := mustPolicy(t, func() retry.BackOff {
		return backoff.WithMaxRetries(backoff.NewConstantBackOff(5*time.Second), 3)
	})
	for attempt := 1; attempt <= 3; attempt++ {
		if d, ok := p.Delay(attempt); !ok || d != 5*time.Second {
			t.Errorf("Delay(%d) = %v, %v; want 5s, true", attempt, d, ok)
		}
	}
	if d, ok := p.Delay(4); ok || d != 0 {
		t.Errorf("Delay(4) = %v, %v; want 0, false", d, ok)
	}

	// An exponential backoff without randomisation is replayed exactly, and
	// each call is independent of the previous ones (pure in the attempt).
	exp := mustPolicy(t, func() retry.BackOff {
		b := backoff.NewExponentialBackOff(
			backoff.WithInitialInterval(time.Second),
			backoff.WithMultiplier(2),
			backoff.WithRandomizationFactor(0),
			backoff.WithMaxInterval(time.Minute),
			backoff.WithMaxElapsedTime(0),
		)
		return b
	})
	want := map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 7: time.Minute, 3000: time.Minute}
	for _, attempt := range []int{3, 1, 7, 2, 3000, 3} {
		if d, ok := exp.Delay(attempt); !ok || d != want[attempt] {
			t.Errorf("exponential Delay(%d) = %v, %v; want %v, true", attempt, d, ok, want[attempt])
		}
	}
	if d, ok := exp.Delay(0); !ok || d != time.Second {
		t.Errorf("Delay(0) = %v, %v; want it treated as attempt 1", d, ok)
	}

	stop := mustPolicy(t, func() retry.BackOff { return &backoff.StopBackOff{} })
	if _, ok := stop.Delay(1); ok {
		t.Error("StopBackOff retried")
	}
	zero := mustPolicy(t, func() retry.BackOff { return &backoff.ZeroBackOff{} })
	if d, ok := zero.Delay(10); !ok || d != 0 {
		t.Errorf("ZeroBackOff Delay = %v, %v", d, ok)
	}
	long := mustPolicy(t, func() retry.BackOff { return backoff.NewConstantBackOff(48 * time.Hour) })
	if d, _ := long.Delay(1); d != 12*time.Hour {
		t.Errorf("48h backoff gave %v, want it capped at %v", d, 12*time.Hour)
	}
	negative := mustPolicy(t, func() retry.BackOff { return backoff.NewConstantBackOff(-time.Second) })
	if d, ok := negative.Delay(1); !ok || d != 0 {
		t.Errorf("negative backoff gave %v, %v; want 0, true", d, ok)
	}
}

func TestFromBackOffRefusesNil(t *testing.T) {
	if p, err := retry.FromBackOff(nil); err == nil || p != nil {
		t.Errorf("FromBackOff(nil) = %v, %v; want an error", p, err)
	}
	if p, err := retry.FromBackOff(func() retry.BackOff { return nil }); err == nil || p != nil {
		t.Errorf("FromBackOff(returns nil) = %v, %v; want an error", p, err)
	}
	calls := 0
	later := mustPolicy(t, func() retry.BackOff {
		calls++
		if calls > 1 {
			return nil
		}
		return &backoff.ZeroBackOff{}
	})
	if d, ok := later.Delay(1); ok || d != 0 {
		t.Errorf("Delay with a nil BackOff = %v, %v; want it to give up", d, ok)
	}
}

// mustPolicy is FromBackOff, failing t on error.
func mustPolicy(t *testing.T, newBackOff func() retry.BackOff) retry.Policy {
	t.Helper()
	p, err := retry.FromBackOff(newBackOff)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReceiveCount(t *testing.T) {
	c := retry.ReceiveCount()
	for rc, want := range map[int]int{-1: 1, 0: 1, 1: 1, 2: 2, 57: 57} {
		if got, err := c.Attempt(context.Background(), "m-1", rc); err != nil || got != want {
			t.Errorf("Attempt(receiveCount=%d) = %d, %v; want %d", rc, got, err, want)
		}
	}
	if err := c.Uncount(context.Background(), "m-1"); err != nil {
		t.Errorf("Uncount = %v, want nil (nothing to take back)", err)
	}
	if c != retry.ReceiveCount() {
		t.Error("ReceiveCount() differs between calls")
	}
}
