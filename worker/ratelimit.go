package worker

import (
	"context"
	"sync"
	"time"

	"github.com/sqsworker/sqsworker/internal/awscall"
)

// rateLimiter is a token bucket over received messages: it refills at rate
// tokens per second up to one second's worth (at least one token).
type rateLimiter struct {
	mu     sync.Mutex
	rate   float64
	burst  float64
	tokens float64
	last   time.Time
}

func newRateLimiter(perSecond float64) *rateLimiter {
	burst := max(perSecond, 1)
	return &rateLimiter{rate: perSecond, burst: burst, tokens: burst, last: time.Now()}
}

func (l *rateLimiter) refillLocked(now time.Time) {
	l.tokens = min(l.burst, l.tokens+now.Sub(l.last).Seconds()*l.rate)
	l.last = now
}

// take waits for at least one token and takes up to n. It returns 0 when
// ctx ends first.
func (l *rateLimiter) take(ctx context.Context, n int) int {
	for {
		l.mu.Lock()
		l.refillLocked(time.Now())
		if l.tokens >= 1 {
			k := min(n, int(l.tokens))
			l.tokens -= float64(k)
			l.mu.Unlock()
			return k
		}
		wait := time.Duration((1 - l.tokens) / l.rate * float64(time.Second))
		l.mu.Unlock()
		if awscall.Sleep(ctx, max(wait, time.Millisecond)) != nil {
			return 0
		}
	}
}

// refund returns tokens taken for messages a receive did not return.
func (l *rateLimiter) refund(n int) {
	if n <= 0 {
		return
	}
	l.mu.Lock()
	l.tokens = min(l.burst, l.tokens+float64(n))
	l.mu.Unlock()
}
