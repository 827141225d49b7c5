// Package leasehook is the worker's way into visibility, out of users'
// reach: it tracks a message with a visibility.Lease that lives inside its
// own job, told of a loss through an interface instead of a callback (one
// allocation per message fewer for the lease, one fewer for the callback
// bound to the job), and asks a lease whether the heartbeat has ended it
// before the owner is told. The public visibility API (Track and
// TrackUntil, which allocate the Lease and take a func) stays as it is.
package leasehook

// TrackInto is set by package visibility when it is initialised (so before
// any package that imports visibility uses it), to a
//
//	func(h *visibility.Heartbeat, l *visibility.Lease, receiptHandle string, receivedAt time.Time, owner interface{ OnLost(cause error) }) error
//
// that starts tracking the message in l, which the caller allocated and
// must not copy or reuse until the lease has ended (Stop returned). It is
// Heartbeat.Track in every other respect, owner.OnLost taking onLost's
// place. It is typed any because this package cannot import visibility
// (visibility imports it); the worker asserts its type once.
var TrackInto any

// Cause is set by package visibility to a
//
//	func(l *visibility.Lease) error
//
// that returns why the heartbeat ended l — an error wrapping ErrLost or
// ErrMaxVisibility — or nil while it has not. The heartbeat ends a call's
// leases together and only then tells their owners, one after another: a
// job about to start asks the lease, not only its own record of the
// notices, so that a message lost together with the one its handler was
// running is not started in between.
var Cause any
