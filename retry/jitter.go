package retry

import (
	"math/rand/v2"
	"strconv"
	"sync"
)

// Jitter selects how [DeliveryPolicy.Delay] randomises a nominal delay d. The
// package documentation gives the exact ranges. Immediate retries are never
// jittered, and no mode goes below 0 or above the phase's bound.
type Jitter int

const (
	// EqualJitter draws from [d/2, d]. It is the zero value and the default.
	EqualJitter Jitter = iota
	// NoJitter uses d as is.
	NoJitter
	// FullJitter draws from [0, d].
	FullJitter
	// DecorrelatedJitter draws from [min, min(bound, 3·previous nominal
	// delay)], where bound is minDelayTarget in the pre-backoff phase and
	// maxDelayTarget after it.
	DecorrelatedJitter
)

// DefaultJitter is the jitter a DeliveryPolicy uses unless told otherwise.
const DefaultJitter = EqualJitter

// String returns the mode's name, such as "equal".
func (j Jitter) String() string {
	switch j {
	case EqualJitter:
		return "equal"
	case NoJitter:
		return "none"
	case FullJitter:
		return "full"
	case DecorrelatedJitter:
		return "decorrelated"
	}
	return "Jitter(" + strconv.Itoa(int(j)) + ")"
}

func (j Jitter) known() bool { return j >= EqualJitter && j <= DecorrelatedJitter }

// LockedSource returns a rand.Source that serialises calls to src, so one
// seeded source can serve the concurrent Delay calls of a worker:
//
//	p.Rand = retry.LockedSource(rand.NewPCG(1, 2))
func LockedSource(src rand.Source) rand.Source {
	return &lockedSource{src: src}
}

type lockedSource struct {
	mu  sync.Mutex
	src rand.Source
}

func (l *lockedSource) Uint64() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.src.Uint64()
}
