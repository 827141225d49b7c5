package idempotency

import "sync/atomic"

// Stats is a snapshot of a Guard's counters since New.
type Stats struct {
	// Ran counts handlers run under their job's lock.
	Ran int64
	// Completed counts jobs recorded as completed.
	Completed int64
	// DuplicatesCompleted counts messages acknowledged without running
	// because their job had completed.
	DuplicatesCompleted int64
	// DuplicatesInProgress counts messages snoozed because their job was in
	// progress under another message's lock.
	DuplicatesInProgress int64
	// TakenOver counts expired locks taken over: a run crashed or lost its
	// message, and the job ran again.
	TakenOver int64
	// Released counts records removed after a failed run, so that the retry
	// runs.
	Released int64
	// Extensions counts lock extensions written as the heartbeat extended
	// the message's visibility.
	Extensions int64
	// LocksLost counts handlers cancelled because their lock could not be
	// kept (cause ErrLockLost).
	LocksLost int64
	// Unavailable counts messages that could not take their lock because of
	// a DynamoDB error.
	Unavailable int64
	// FailedOpen counts runs that went on without their lock
	// (Options.FailOpen).
	FailedOpen int64
	// CompleteFailed counts successful runs whose completion could not be
	// recorded (a duplicate arriving after the lock expires would run).
	CompleteFailed int64
	// Requests counts DynamoDB calls by API (PutItem, UpdateItem,
	// DeleteItem).
	Requests map[string]int64
}

// TotalRequests is the sum of Requests.
func (s Stats) TotalRequests() int64 {
	var n int64
	for _, v := range s.Requests {
		n += v
	}
	return n
}

type counters struct {
	ran, completed, duplicatesCompleted, duplicatesInProgress, takenOver, released,
	extensions, locksLost, unavailable, failedOpen, completeFailed atomic.Int64
	calls countCalls
}

// Stats returns the Guard's counters.
func (g *Guard) Stats() Stats {
	s := Stats{
		Ran: g.c.ran.Load(), Completed: g.c.completed.Load(),
		DuplicatesCompleted: g.c.duplicatesCompleted.Load(), DuplicatesInProgress: g.c.duplicatesInProgress.Load(),
		TakenOver: g.c.takenOver.Load(), Released: g.c.released.Load(), Extensions: g.c.extensions.Load(),
		LocksLost: g.c.locksLost.Load(), Unavailable: g.c.unavailable.Load(), FailedOpen: g.c.failedOpen.Load(),
		CompleteFailed: g.c.completeFailed.Load(), Requests: make(map[string]int64, numAPIs),
	}
	for i, name := range apiNames {
		s.Requests[name] = g.c.calls[i].Load()
	}
	return s
}
