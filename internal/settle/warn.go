package settle

import (
	"log/slog"
	"sync"
	"time"
)

// WarnInterval is how often, at most, one cause is logged.
const WarnInterval = 10 * time.Second

// Warner logs one WARN per cause per interval, not one per message: the
// first occurrence of a cause is logged at once; later ones within the
// interval are counted and reported with the next line for that cause.
//
// Its zero value discards its logs; set Log.
type Warner struct {
	// Log receives the warnings. Zero value: discarded.
	Log *slog.Logger

	mu     sync.Mutex
	causes map[string]*warnState
}

type warnState struct {
	last       time.Time
	suppressed int
}

// Warn logs msg with args for cause, unless cause was logged within the
// interval; then it only counts the occurrence.
func (w *Warner) Warn(cause, msg string, args ...any) {
	if w == nil {
		return
	}
	now := time.Now()
	w.mu.Lock()
	if w.causes == nil {
		w.causes = map[string]*warnState{}
	}
	s := w.causes[cause]
	if s == nil {
		s = &warnState{}
		w.causes[cause] = s
	}
	if !s.last.IsZero() && now.Sub(s.last) < WarnInterval {
		s.suppressed++
		w.mu.Unlock()
		return
	}
	n := s.suppressed
	s.last, s.suppressed = now, 0
	w.mu.Unlock()
	if n > 0 {
		args = append(args, "alsoSinceLastLog", n)
	}
	if w.Log != nil {
		w.Log.Warn(msg, args...)
	}
}
