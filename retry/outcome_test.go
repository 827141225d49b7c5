package retry_test

import (
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/sqsworker/sqsworker/internal/settle"
	"github.com/sqsworker/sqsworker/retry"
)

func TestPermanent(t *testing.T) {
	if err := retry.Permanent(nil); err != nil {
		t.Fatalf("Permanent(nil) = %v, want nil", err)
	}
	base := io.ErrUnexpectedEOF
	err := retry.Permanent(base)
	if err.Error() != base.Error() {
		t.Errorf("Error() = %q, want the wrapped message %q", err, base)
	}
	if !errors.Is(err, base) {
		t.Error("errors.Is(Permanent(e), e) = false")
	}
	if !errors.Is(err, retry.ErrPermanent) || !errors.Is(err, retry.ErrPermanent) {
		t.Error("Permanent(e) is not permanent")
	}
	if errors.Unwrap(err) != base {
		t.Errorf("errors.Unwrap(Permanent(e)) = %v, want e", errors.Unwrap(err))
	}
	wrapped := fmt.Errorf("handling order 7: %w", err)
	if !errors.Is(wrapped, retry.ErrPermanent) || !errors.Is(wrapped, base) {
		t.Error("a wrapped Permanent error lost its classification or its cause")
	}
	if again := retry.Permanent(wrapped); again != wrapped {
		t.Errorf("Permanent(already permanent) = %#v, want it unchanged", again)
	}
	if !errors.Is(fmt.Errorf("order has no items: %w", retry.ErrPermanent), retry.ErrPermanent) {
		t.Error("an error wrapping ErrPermanent is not permanent")
	}
	for _, e := range []error{nil, base, retry.After(time.Second, base)} {
		if errors.Is(e, retry.ErrPermanent) {
			t.Errorf("errors.Is(%v, ErrPermanent) = true", e)
		}
	}
}

func TestAfter(t *testing.T) {
	base := errors.New("rate limited")
	err := retry.After(30*time.Second, base)
	if err.Error() != "rate limited" || !errors.Is(err, base) {
		t.Errorf("After(30s, e) = %q, Is(e) = %v", err, errors.Is(err, base))
	}
	if d, ok := settle.AfterDelay(fmt.Errorf("calling API: %w", err)); !ok || d != 30*time.Second {
		t.Errorf("AfterDelay = %v, %v; want 30s, true", d, ok)
	}
	var ae *retry.AfterError
	if !errors.As(err, &ae) || ae.Delay != 30*time.Second {
		t.Errorf("errors.As(*AfterError) = %+v", ae)
	}

	// After(d, nil) must not be nil: nil would mean success and delete the job.
	notYet := retry.After(time.Minute, nil)
	if notYet == nil {
		t.Fatal("After(d, nil) = nil")
	}
	if notYet.Error() != "retry after 1m0s" || errors.Unwrap(notYet) != nil {
		t.Errorf("After(1m, nil) = %q, unwraps to %v", notYet, errors.Unwrap(notYet))
	}
	if d, ok := settle.AfterDelay(notYet); !ok || d != time.Minute {
		t.Errorf("AfterDelay(After(1m, nil)) = %v, %v", d, ok)
	}

	if d, _ := settle.AfterDelay(retry.After(-time.Second, base)); d != 0 {
		t.Errorf("After(-1s) delay = %v, want 0", d)
	}
	if d, _ := settle.AfterDelay(&retry.AfterError{Delay: -time.Hour}); d != 0 {
		t.Errorf("AfterDelay of a negative literal = %v, want 0", d)
	}
	for _, e := range []error{nil, base, retry.Permanent(base)} {
		if _, ok := settle.AfterDelay(e); ok {
			t.Errorf("AfterDelay(%v) found a delay", e)
		}
	}
	// The outermost After wins.
	if d, _ := settle.AfterDelay(retry.After(time.Second, retry.After(time.Hour, base))); d != time.Second {
		t.Errorf("nested After: delay %v, want the outer 1s", d)
	}
	// Both classifications can be seen; the documented precedence is Permanent.
	both := retry.After(time.Second, retry.Permanent(base))
	if !errors.Is(both, retry.ErrPermanent) {
		t.Error("IsPermanent(After(d, Permanent(e))) = false")
	}
}

func TestSnooze(t *testing.T) {
	err := retry.Snooze(90*time.Second, "duplicate in progress")
	if d, ok := settle.SnoozeDelay(err); !ok || d != 90*time.Second {
		t.Fatalf("SnoozeDelay = %v, %v", d, ok)
	}
	if err.Error() != "snoozed for 1m30s: duplicate in progress" {
		t.Errorf("Error() = %q", err.Error())
	}
	if d, ok := settle.SnoozeDelay(retry.Snooze(-time.Second, "")); !ok || d != 0 {
		t.Errorf("negative snooze = %v, %v; want 0", d, ok)
	}
	if _, ok := settle.SnoozeDelay(retry.Permanent(err)); ok {
		t.Error("a permanent error is not a snooze")
	}
	if _, ok := settle.SnoozeDelay(retry.After(time.Second, err)); ok {
		t.Error("an After error is not a snooze")
	}
	if _, ok := settle.SnoozeDelay(errors.New("x")); ok {
		t.Error("an ordinary error is not a snooze")
	}
	if errors.Is(err, retry.ErrPermanent) {
		t.Error("a snooze is not permanent")
	}
}
