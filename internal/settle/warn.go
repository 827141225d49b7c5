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
type Warner struct {
	log      *slog.Logger
	interval time.Duration

	mu     sync.Mutex
	causes map[string]*warnState
}

type warnState struct {
	last       time.Time
	suppressed int
}

// NewWarner returns a Warner that logs to log.
func NewWarner(log *slog.Logger) *Warner {
	return &Warner{log: log, interval: WarnInterval, causes: map[string]*warnState{}}
}

// Warn logs msg with args for cause, unless cause was logged within the
// interval; then it only counts the occurrence.
func (w *Warner) Warn(cause, msg string, args ...any) {
	if w == nil {
		return
	}
	now := time.Now()
	w.mu.Lock()
	s := w.causes[cause]
	if s == nil {
		s = &warnState{}
		w.causes[cause] = s
	}
	if !s.last.IsZero() && now.Sub(s.last) < w.interval {
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
	w.log.Warn(msg, args...)
}
