package chaos

import (
	"strings"
	"testing"
	"time"

	"github.com/sqsworker/sqsworker/idempotency"
)

// idemWorld is a world of the idempotency variant: side-effect attempts,
// completions and the tables as read at the end.
func idemWorld(jobs ...Job) *world {
	w := newWorld(jobs...)
	w.ev.Config.Worker.Mode = ModeIdempotency
	w.ev.Idem = &idemEvidence{Effects: map[string]string{}, Records: map[string]string{}}
	return w
}

// effect records a side-effect attempt of job by run ("w1/3") at second
// sec; applied makes the effect table hold it.
func (w *world) effect(job, run string, sec int, result EffectResult, owner string) {
	wk, _, _ := strings.Cut(run, "/")
	w.ev.Idem.Attempts = append(w.ev.Idem.Attempts, EffectRecord{Job: job, Worker: wk, Run: run, Result: result, Owner: owner, Time: w.t0.Add(time.Duration(sec) * time.Second)})
	if result == EffectApplied || (result == EffectError && owner == "applied") {
		w.ev.Idem.Effects[job] = run
	}
}

func (w *world) completion(job, worker string, sec int, ok bool) {
	t := w.t0.Add(time.Duration(sec) * time.Second)
	w.ev.Idem.Completions = append(w.ev.Idem.Completions, CompletionRecord{Job: job, Worker: worker, OK: ok, Start: t, End: t})
	if ok {
		w.ev.Idem.Records[job] = string(idempotency.Completed)
	}
}

// TestReconcileIdempotencyExplainsReruns: each re-run after a side effect
// gets its cause from the run that made the effect — killed or stopped
// before its completion record (the window of doubt), its completion not
// recorded, its side effect's answer lost — and a clean run passes.
func TestReconcileIdempotencyExplainsReruns(t *testing.T) {
	w := idemWorld(Job{ID: "clean", Kind: Succeed}, Job{ID: "killed", Kind: Succeed}, Job{ID: "stopped", Kind: Succeed},
		Job{ID: "nocomplete", Kind: Succeed}, Job{ID: "lost", Kind: Succeed})
	w.ev.Procs["w3"] = procInfo{Signal: "SIGKILL"}
	w.ev.Procs["w4"] = procInfo{Signal: "SIGTERM"}

	w.settle(w.run("clean", "w1", 1, true), "deleted", false)
	w.effect("clean", "w1/1", 1, EffectApplied, "")
	w.completion("clean", "w1", 2, true)

	// Killed between its side effect and its completion: the effect is
	// there (its record may be lost with the process), no completion.
	w.run("killed", "w3", 1, false)
	w.ev.Idem.Effects["killed"] = "w3/1"
	w.settle(w.run("killed", "w1", 20, true), "deleted", false)
	w.effect("killed", "w1/2", 20, EffectPresent, "w3/1")
	w.completion("killed", "w1", 21, true)

	w.settle(w.run("stopped", "w4", 1, true), "abandoned", false) // its shutdown flush ended first
	w.effect("stopped", "w4/1", 1, EffectApplied, "")
	w.settle(w.run("stopped", "w2", 20, true), "deleted", false)
	w.effect("stopped", "w2/1", 20, EffectPresent, "w4/1")
	w.completion("stopped", "w2", 21, true)

	w.settle(w.run("nocomplete", "w1", 1, true), "deleted", true) // late: delivered again meanwhile
	w.effect("nocomplete", "w1/3", 1, EffectApplied, "")
	w.completion("nocomplete", "w1", 2, false)
	w.settle(w.run("nocomplete", "w2", 20, true), "deleted", false)
	w.effect("nocomplete", "w2/2", 20, EffectPresent, "w1/3")
	w.completion("nocomplete", "w2", 21, true)

	w.settle(w.run("lost", "w1", 1, false), "retrying", false)
	w.effect("lost", "w1/4", 1, EffectError, "applied") // applied, its answer lost
	w.settle(w.run("lost", "w2", 5, true), "deleted", false)
	w.effect("lost", "w2/3", 5, EffectPresent, "w1/4")
	w.completion("lost", "w2", 6, true)

	r := reconcile(w.ev)
	ir := r.Idempotency
	if !r.Passed() {
		t.Fatalf("failures: %v", r.Failures)
	}
	want := map[IdemCause]int{IdemKilled: 1, IdemStopped: 1, IdemCompleteFailed: 1, IdemEffectUnknown: 1}
	for c, n := range want {
		if ir.RerunsBy[c] != n {
			t.Errorf("re-runs by %q: %d, want %d (all: %v)", c, ir.RerunsBy[c], n, ir.RerunsBy)
		}
	}
	if ir.Reruns != 4 || ir.Effects != 5 || ir.Errors != 1 || ir.Completions != 5 || ir.CompletionsFailed != 1 || ir.DoneWithoutEffect != 0 {
		t.Errorf("report %+v", ir)
	}
}

// TestReconcileIdempotencyFailsBrokenGuarantees: a run that began after
// its job's completion was confirmed, a lock taken over a COMPLETED
// record, a job done without its side effect, a poison job with one, and a
// re-run whose first run had recorded its completion each fail the run.
func TestReconcileIdempotencyFailsBrokenGuarantees(t *testing.T) {
	w := idemWorld(Job{ID: "again", Kind: Succeed}, Job{ID: "noeffect", Kind: Succeed}, Job{ID: "p", Kind: Poison}, Job{ID: "overlap", Kind: Succeed})
	w.settle(w.run("again", "w1", 1, true), "deleted", false)
	w.effect("again", "w1/1", 1, EffectApplied, "")
	w.completion("again", "w1", 2, true)
	w.settle(w.run("again", "w2", 30, true), "deleted", false) // after the confirmed completion
	w.effect("again", "w2/1", 30, EffectPresent, "w1/1")
	w.ev.Idem.Completions = append(w.ev.Idem.Completions, CompletionRecord{Job: "again", Worker: "w2", OK: true, Overwrote: true})

	w.settle(w.run("noeffect", "w1", 1, true), "deleted", false)

	w.settle(w.run("p", "w1", 1, false), "dead-lettered", false)
	w.dead("p", true)
	w.ev.Idem.Effects["p"] = "w1/9"

	// Two runs at once: the second found the effect while the first,
	// which then recorded its completion, still ran.
	w.settle(w.run("overlap", "w1", 10, true), "deleted", false)
	w.effect("overlap", "w1/2", 10, EffectApplied, "")
	w.settle(w.run("overlap", "w2", 11, true), "deleted", false)
	w.effect("overlap", "w2/2", 11, EffectPresent, "w1/2")
	w.completion("overlap", "w1", 12, true)

	r := reconcile(w.ev)
	ir := r.Idempotency
	if ir.RerunsOfCompleted != 1 || ir.OverwroteCompleted != 1 || ir.DoneWithoutEffect != 1 || ir.EffectNotDone != 1 || ir.RerunsBy[IdemUnexplained] != 2 {
		t.Errorf("report %+v", ir)
	}
	for _, want := range []string{"after their job's completion", "over a COMPLETED record", "without their side effect", "neither done nor pending", "unexplained re-runs"} {
		found := false
		for _, f := range r.Failures {
			found = found || strings.Contains(f, want)
		}
		if !found {
			t.Errorf("no failure mentions %q: %v", want, r.Failures)
		}
	}
}

// TestMarkDeadlineKills: a lambda process that killed itself at an
// invocation's deadline counts as a deadline kill (its runs as killed),
// not as a crash; a process that exited without a record stays a crash.
func TestMarkDeadlineKills(t *testing.T) {
	dir := t.TempDir()
	if err := writeJSON(dir+"/w1"+deadlineFile, DeadlineKill{Worker: "w1", Time: time.Now()}); err != nil {
		t.Fatal(err)
	}
	procs := map[string]procInfo{"w1": {Crashed: true}, "w2": {Crashed: true}, "w3": {Signal: "SIGTERM"}}
	markDeadlineKills(dir, procs)
	if p := procs["w1"]; p.Crashed || !p.DeadlineKill || p.Signal != "SIGKILL" {
		t.Errorf("w1 %+v; want a deadline kill", p)
	}
	if p := procs["w2"]; !p.Crashed || p.DeadlineKill {
		t.Errorf("w2 %+v; want a crash", p)
	}
	w := newWorld(Job{ID: "a", Kind: Succeed})
	w.ev.Procs = procs
	w.ev.Config.Worker.Mode = ModeLambda
	w.run("a", "w1", 1, true)
	w.run("a", "w3", 9, true)
	w.ev.Deletes = map[string]deleteSeen{w.ev.Files.Runs[1].Handle: {Reached: true}}
	r := reconcile(w.ev)
	if r.Processes.DeadlineKills != 1 || r.Processes.Killed != 0 || r.Processes.Crashed != 1 || r.DuplicatesBy[CauseKilled] != 1 {
		t.Errorf("processes %+v, duplicates %v", r.Processes, r.DuplicatesBy)
	}
}
