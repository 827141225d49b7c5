package retry

import (
	"fmt"
	"strings"
	"sync"
)

// The jitter modes of DeliveryPolicy.Jitter; the package documentation
// gives the exact ranges.
const (
	jitterEqual        = "equal"        // [d/2, d]; the default ("")
	jitterNone         = "none"         // d as is
	jitterFull         = "full"         // [0, d]
	jitterDecorrelated = "decorrelated" // [min, min(bound, 3·previous nominal delay)]
)

// jitterMode returns j's mode in lower case ("equal" for the empty string)
// and whether j is known.
func jitterMode(j string) (string, bool) {
	if j == "" {
		return jitterEqual, true
	}
	for _, k := range [...]string{jitterEqual, jitterNone, jitterFull, jitterDecorrelated} {
		if strings.EqualFold(j, k) {
			return k, true
		}
	}
	return j, false
}

// checkJitter returns a *PolicyError when j is not a jitter mode.
func checkJitter(j string) error {
	if _, ok := jitterMode(j); ok {
		return nil
	}
	return &PolicyError{Field: "Jitter", Problem: fmt.Sprintf("%q is not a jitter mode; use \"equal\" (the default, also \"\"), \"none\", \"full\" or \"decorrelated\"", j)}
}

// randMu serialises the calls to every DeliveryPolicy.Rand, so one seeded
// source can serve the concurrent Delay calls of a worker.
var randMu sync.Mutex
