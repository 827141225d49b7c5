package fleet

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/worker"
)

// ByGroup keys a RateLimit or Cap by the message's MessageGroupId: the
// tenant of an SQS fair queue (a standard queue whose producers set
// MessageGroupId, as producer.Message.GroupID does), or the group of a
// FIFO queue. A message without one has no key: by default it shares the
// key "" with every such message (see CapOptions.Unkeyed and
// RateLimitOptions.Unkeyed, which can snooze or refuse it instead); the
// first one is logged, and Stats.Unkeyed counts them.
func ByGroup(m *worker.Message) string { return m.GroupID }

// ByAttribute returns a key function that keys a RateLimit or Cap by the
// string value of the message attribute name (the tenant as the sender
// set it). A message without it has no key, as with ByGroup.
func ByAttribute(name string) func(m *worker.Message) string {
	return func(m *worker.Message) string {
		if v, ok := m.MessageAttributes[name]; ok && v.StringValue != nil {
			return *v.StringValue
		}
		return ""
	}
}

// What a RateLimit or Cap does with a message its Key function gives no
// key ("": no MessageGroupId for ByGroup, no attribute for ByAttribute):
// the values of CapOptions.Unkeyed and RateLimitOptions.Unkeyed.
const (
	unkeyedShare  = "share"  // the default: one key "" for all of them
	unkeyedSnooze = "snooze" // snoozed for ErrorSnooze (no attempt counted)
	unkeyedRefuse = "refuse" // dead-lettered at once with the reason (retry.Permanent)
)

// unkeyed is a control's rule for messages without a key.
type unkeyed struct {
	f       *Fleet
	control string // e.g. `cap "tenant"`
	mode    string
	snooze  time.Duration
	warned  atomic.Bool
}

// newUnkeyed checks an Unkeyed option: "" (share), "share", "snooze" or
// "refuse".
func newUnkeyed(f *Fleet, control, mode string, snooze time.Duration) (*unkeyed, error) {
	switch mode {
	case "":
		mode = unkeyedShare
	case unkeyedShare, unkeyedSnooze, unkeyedRefuse:
	default:
		return nil, fmt.Errorf("fleet: %s: Unkeyed is %q; use \"share\" (the default), \"snooze\" or \"refuse\"", control, mode)
	}
	return &unkeyed{f: f, control: control, mode: mode, snooze: snooze}, nil
}

// handle is called for a message without a key: it counts it, logs the
// first, and returns nil to run it under the key "" (share), or the
// error its handler returns instead (a snooze, a refusal).
func (u *unkeyed) handle(m *worker.Message) error {
	u.f.st.unkeyed.Add(1)
	var verb string
	switch u.mode {
	case unkeyedSnooze:
		verb = fmt.Sprintf("is snoozed (Unkeyed %q, for %v each time)", u.mode, u.snooze)
	case unkeyedRefuse:
		verb = fmt.Sprintf("is dead-lettered (Unkeyed %q)", u.mode)
	default:
		verb = `shares the key "" with every message without one (set Unkeyed to "snooze" or "refuse" to hold or refuse them)`
	}
	if u.warned.CompareAndSwap(false, true) {
		u.f.o.Logger.Warn("fleet: "+u.control+": a message has no key (ByGroup: no MessageGroupId; ByAttribute: no such attribute) and "+verb+"; Stats.Unkeyed counts them; this is logged once",
			"message", m.ID, "group", m.GroupID)
	}
	switch u.mode {
	case unkeyedSnooze:
		return retry.Snooze(u.snooze, "fleet: "+u.control+": the message has no key (Unkeyed \"snooze\")")
	case unkeyedRefuse:
		return retry.Permanent(errors.New("fleet: " + u.control + ": the message has no key (ByGroup: no MessageGroupId) and Unkeyed is \"refuse\""))
	}
	return nil
}
