package chaos

import (
	"maps"
	"net/http"
	"testing"
	"time"

	"github.com/sqsworker/sqsworker/harness/faultproxy"
)

// A delete the emulator answered with a 200 proves the message deleted only
// if SQS applied it before the message could have become visible again:
// SQS (and fauxqs) answer success for a handle no longer in flight. By the
// proxy's clock a receive or an answered extension starts the lease; a
// delete counts as in time when it was answered before the lease's earliest
// end.
func TestObserverTellsDeletesAfterTheLeaseLapsed(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	o := newObserver(5*time.Second, 0)
	o.observe(faultproxy.Entry{Time: t0, Action: "ReceiveMessage", Status: http.StatusOK, Millis: 100, Received: []string{"early", "late", "extended"}})
	// "extended" is extended at 4 s: its lease runs to 9 s at the earliest.
	o.observe(faultproxy.Entry{Time: t0.Add(4 * time.Second), Action: "ChangeMessageVisibilityBatch", Status: http.StatusOK, Millis: 50, Handles: []string{"extended"}})
	// A delete started at 4 s and answered at 4.5 s, in time; one started
	// at 4 s that took 2 s, answered after the 5 s lease; the extended one
	// deleted at 6 s, in its extended lease.
	o.observe(faultproxy.Entry{Time: t0.Add(4 * time.Second), Action: "DeleteMessageBatch", Status: http.StatusOK, Millis: 500, Handles: []string{"early"}})
	o.observe(faultproxy.Entry{Time: t0.Add(4 * time.Second), Action: "DeleteMessageBatch", Status: http.StatusOK, Millis: 2000, Handles: []string{"late"}})
	o.observe(faultproxy.Entry{Time: t0.Add(6 * time.Second), Action: "DeleteMessageBatch", Status: http.StatusOK, Millis: 100, Handles: []string{"extended"}})
	want := map[string]deleteSeen{"early": {Reached: true}, "late": {ReachedLate: true}, "extended": {Reached: true}}
	for h, w := range want {
		if got := o.deletes[h]; got != w {
			t.Errorf("%s: %+v, want %+v", h, got, w)
		}
	}
	if len(o.leases) != 1 {
		t.Errorf("%d leases still followed, want 1 (the one whose delete came late): %v", len(o.leases), o.leases)
	}
}

// A SIGKILLed worker's run with no settlement event whose only delete
// reached SQS after the lease may have lapsed did not end its message: the
// next run of the job is the killed worker's duplicate, not unexplained.
func TestKilledRunWhoseDeleteCameLateIsNotClean(t *testing.T) {
	w := newWorld(Job{ID: "a", Kind: Succeed})
	w.ev.Procs["w4"] = procInfo{Signal: "SIGKILL"}
	h := w.run("a", "w4", 1, true)
	w.ev.Deletes[h] = deleteSeen{ReachedLate: true}
	w.settle(w.run("a", "w1", 9, true), "deleted", false)
	r := reconcile(w.ev)
	want := map[Cause]int{CauseKilled: 1}
	if r.Duplicates != 1 || !maps.Equal(r.DuplicatesBy, want) || !r.Passed() {
		t.Fatalf("duplicates %d by %v, failures %v; want 1 by %v, passed", r.Duplicates, r.DuplicatesBy, r.Failures, want)
	}
	// The same run with its delete in time ended the message: the second
	// run is then unexplained.
	w.ev.Deletes[h] = deleteSeen{Reached: true}
	if r := reconcile(w.ev); r.DuplicatesBy[CauseUnexplained] != 1 || r.Passed() {
		t.Fatalf("duplicates by %v, passed %v; want 1 unexplained, failed", r.DuplicatesBy, r.Passed())
	}
}

// A send the proxy answered within its client's call timeout was read; one
// answered so late that the client may have given up first may have been
// sent again, so its copy counts as from a lost answer.
func TestObserverCountsAnswersTooLateToBeRead(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	o := newObserver(5*time.Second, 5*time.Second)
	o.observe(faultproxy.Entry{Time: t0, Action: "SendMessageBatch", Status: http.StatusOK, Millis: 300, Bodies: []string{"quick"}})
	o.observe(faultproxy.Entry{Time: t0, Action: "SendMessageBatch", Status: http.StatusOK, Millis: 4700, Bodies: []string{"slow"}})
	if o.lostSends["quick"] != 0 || o.lostSends["slow"] != 1 || o.reached["quick"] != 1 || o.reached["slow"] != 1 {
		t.Fatalf("lost %v, reached %v; want only the slow answer counted lost, both reached", o.lostSends, o.reached)
	}
}
