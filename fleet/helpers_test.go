package fleet_test

import (
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sqsworker/sqsworker/fleet"
	"github.com/sqsworker/sqsworker/harness/fleettable"
	"github.com/sqsworker/sqsworker/retry"
)

var quiet = slog.New(slog.DiscardHandler)

// newTable creates a fleet table of its own for the test on the local
// DynamoDB, deleted at the end.
func newTable(t *testing.T) (*dynamodb.Client, string) {
	t.Helper()
	return fleettable.New(t, "fleet")
}

// newFleet is one process's Fleet on the table.
func newFleet(t *testing.T, client fleet.API, table, holder string, optFns ...func(*fleet.Options)) *fleet.Fleet {
	t.Helper()
	opts := append([]func(*fleet.Options){func(o *fleet.Options) { o.Holder, o.Logger = holder, quiet }}, optFns...)
	f, err := fleet.New(client, table, opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return f
}

// clock is an injected clock the test moves by hand.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Now()} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// warmUp makes DynamoDB Local's JVM compile its item paths before a test
// measures: its first few hundred requests take up to a second each.
func warmUp(t *testing.T, client *dynamodb.Client, table string) {
	t.Helper()
	f := newFleet(t, client, table, "warm-up")
	l, err := f.RateLimit("warm-up", 1e6, func(o *fleet.RateLimitOptions) { o.Burst = 1e6 })
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 40 {
				if _, err := l.Take(t.Context(), "k"); err != nil {
					t.Errorf("warming up: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// retrySnooze reports the delay of a snooze (retry.Snooze) and whether err
// is one.
func retrySnooze(err error) (time.Duration, bool) {
	var se *retry.SnoozeError
	if !errors.As(err, &se) || errors.Is(err, retry.ErrPermanent) {
		return 0, false
	}
	return se.Delay, true
}

// fixedRetries is a policy of n retries, 1 s apart.
func fixedRetries(n int) retry.Policy {
	return retry.PolicyFunc(func(attempt int) (time.Duration, bool) { return time.Second, attempt <= n })
}
