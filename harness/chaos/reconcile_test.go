package chaos

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/harness/faultproxy"
	"github.com/sqsworker/sqsworker/worker"
)

// world builds evidence by hand: jobs, runs and their settlements.
type world struct {
	t0 time.Time
	ev evidence
	n  int
}

func newWorld(jobs ...Job) *world {
	cfg, _ := Variant("chaos")
	return &world{t0: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), ev: evidence{
		Config: cfg, Jobs: jobs, Procs: map[string]procInfo{"w1": {}, "w2": {}}, Deletes: map[string]deleteSeen{},
		Files: workerFiles{Exits: map[string]ExitRecord{}},
	}}
}

// run records a handler run of job by worker w at second sec and returns
// its receipt handle; success adds a success record.
func (w *world) run(job, worker string, sec int, success bool) string {
	w.n++
	h := "rh-" + job + "-" + string(rune('a'+w.n))
	rec := RunRecord{Job: job, Handle: h, Worker: worker, Time: w.t0.Add(time.Duration(sec) * time.Second)}
	w.ev.Files.Runs = append(w.ev.Files.Runs, rec)
	if success {
		w.ev.Files.Successes = append(w.ev.Files.Successes, rec)
	}
	return h
}

func (w *world) settle(h, outcome string, late bool) {
	w.ev.Files.Settled = append(w.ev.Files.Settled, SettledRecord{Handle: h, Outcome: outcome, Late: late})
}

func (w *world) dead(job string, prov bool) {
	c := dlqCopy{Job: job, HasProvenance: prov}
	if prov {
		c.Provenance = dlq.Provenance{SourceQueue: "src", Error: "chaos: job " + job + " is poison"}
	}
	w.ev.DLQ = append(w.ev.DLQ, c)
}

func TestReconcileCleanRun(t *testing.T) {
	w := newWorld(Job{ID: "a", Kind: Succeed}, Job{ID: "b", Kind: Transient, Fails: 1}, Job{ID: "p", Kind: Poison})
	w.settle(w.run("a", "w1", 1, true), "deleted", false)
	w.settle(w.run("b", "w1", 1, false), "retrying", false)
	w.settle(w.run("b", "w2", 3, true), "deleted", false)
	w.settle(w.run("p", "w2", 1, false), "dead-lettered", false)
	w.dead("p", true)
	r := reconcile(w.ev)
	if !r.Passed() || r.Done != 2 || r.DeadLettered != 1 || r.Lost != 0 || r.Duplicates != 0 || r.HandlerRuns != 4 {
		t.Fatalf("report: done %d, DLQ %d, lost %d, duplicates %d, runs %d, failures %v", r.Done, r.DeadLettered, r.Lost, r.Duplicates, r.HandlerRuns, r.Failures)
	}
}

func TestReconcileClassifiesDuplicates(t *testing.T) {
	w := newWorld(Job{ID: "killed", Kind: Succeed}, Job{ID: "faulted", Kind: Succeed}, Job{ID: "lease", Kind: Slow},
		Job{ID: "late", Kind: Succeed}, Job{ID: "abandoned", Kind: Succeed}, Job{ID: "dropped", Kind: Succeed})
	w.ev.Procs["w3"] = procInfo{Signal: "SIGKILL"}
	w.ev.Procs["w4"] = procInfo{Signal: "SIGTERM"}

	// Killed before its delete: success recorded, no event, process SIGKILLed.
	w.run("killed", "w3", 1, true)
	w.settle(w.run("killed", "w1", 9, true), "deleted", false)

	// Delete faulted: the first run's delete was throttled and, at shutdown, abandoned.
	h := w.run("faulted", "w4", 1, true)
	w.ev.Deletes[h] = deleteSeen{Faulted: true}
	w.settle(h, "abandoned", false)
	w.settle(w.run("faulted", "w1", 9, true), "deleted", false)

	// Outlived its lease: lost, and confirmed late.
	w.settle(w.run("lease", "w1", 1, true), "lost", false)
	w.settle(w.run("lease", "w2", 2, true), "deleted", false)
	w.settle(w.run("late", "w1", 1, true), "deleted", true)
	w.settle(w.run("late", "w2", 2, true), "deleted", false)

	// Abandoned with no fault on its own delete.
	w.settle(w.run("abandoned", "w4", 1, true), "abandoned", false)
	w.settle(w.run("abandoned", "w2", 9, true), "deleted", false)

	// No event: the process's hook dropped events at shutdown.
	w.ev.Procs["w5"] = procInfo{Signal: "SIGTERM"}
	w.ev.Files.Exits["w5"] = ExitRecord{Worker: "w5", Stats: worker.Stats{HookDropped: 3}}
	w.run("dropped", "w5", 1, true)
	w.settle(w.run("dropped", "w2", 9, true), "deleted", false)

	r := reconcile(w.ev)
	want := map[Cause]int{CauseKilled: 1, CauseDeleteFault: 1, CauseLease: 2, CauseAbandoned: 1, CauseEventDropped: 1}
	if r.Duplicates != 6 || r.DuplicateJobs != 6 || !maps.Equal(r.DuplicatesBy, want) {
		t.Fatalf("duplicates %d over %d jobs by %v; want 6 over 6 by %v", r.Duplicates, r.DuplicateJobs, r.DuplicatesBy, want)
	}
	if !r.Passed() {
		t.Fatalf("explained duplicates failed the run: %v", r.Failures)
	}
	// graceful accepts only duplicates from faults on their own delete.
	w.ev.Config.Checks.OnlyDeleteFaultDuplicates = true
	if r := reconcile(w.ev); r.Passed() || !strings.Contains(strings.Join(r.Failures, ";"), "5 duplicates not explained by a fault") {
		t.Fatalf("failures %v; want the 5 duplicates without a delete fault", r.Failures)
	}
}

// A run without a settlement event whose delete hung, and whose retried
// delete reached SQS only after the message had come back to another
// worker, is a duplicate caused by its delete's fault, not a clean run.
func TestReconcileFaultedDeleteReachedLate(t *testing.T) {
	w := newWorld(Job{ID: "a", Kind: Succeed})
	w.ev.Procs["w4"] = procInfo{Signal: "SIGTERM"}
	h := w.run("a", "w4", 1, true)
	w.ev.Deletes[h] = deleteSeen{Faulted: true, Reached: true}
	w.settle(w.run("a", "w1", 9, true), "deleted", false)
	r := reconcile(w.ev)
	want := map[Cause]int{CauseDeleteFault: 1}
	if r.Duplicates != 1 || !maps.Equal(r.DuplicatesBy, want) || !r.Passed() {
		t.Fatalf("duplicates %d by %v, failures %v; want 1 by %v, passed", r.Duplicates, r.DuplicatesBy, r.Failures, want)
	}
}

func TestReconcileFailsWhatBreaksThePromise(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(w *world)
		want  string
	}{
		{"lost", func(w *world) {}, "1 jobs lost"},
		{"pending is not lost", func(w *world) { w.ev.Pending = []string{"a"} }, ""},
		{"unexplained duplicate", func(w *world) {
			w.settle(w.run("a", "w1", 1, true), "deleted", false)
			w.settle(w.run("a", "w2", 2, true), "deleted", false)
		}, "1 unexplained duplicates"},
		{"no event, process not killed", func(w *world) {
			w.run("a", "w1", 1, true)
			w.settle(w.run("a", "w2", 2, true), "deleted", false)
		}, "1 unexplained duplicates"},
		{"succeeded in the DLQ", func(w *world) {
			w.settle(w.run("a", "w1", 1, true), "deleted", false)
			w.dead("a", false)
		}, "1 succeeded jobs in the DLQ"},
		{"hung worker", func(w *world) {
			w.settle(w.run("a", "w1", 1, true), "deleted", false)
			w.ev.Procs["w1"] = procInfo{Signal: "SIGTERM", Hung: true}
		}, "1 workers hung"},
		{"Run over its bound", func(w *world) {
			w.settle(w.run("a", "w1", 1, true), "deleted", false)
			w.ev.Files.Exits["w1"] = ExitRecord{Worker: "w1", Signal: w.t0, Returned: w.t0.Add(w.ev.Config.ShutdownBound() + time.Second)}
		}, "returned from Run later than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(Job{ID: "a", Kind: Succeed})
			tc.setup(w)
			r := reconcile(w.ev)
			got := strings.Join(r.Failures, "; ")
			if tc.want == "" && !r.Passed() || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Fatalf("failures %q; want %q", got, tc.want)
			}
		})
	}
}

func TestReconcilePoisonAndTransient(t *testing.T) {
	w := newWorld(Job{ID: "p1", Kind: Poison}, Job{ID: "p2", Kind: Poison}, Job{ID: "p3", Kind: Poison}, Job{ID: "t", Kind: Transient})
	w.settle(w.run("p1", "w1", 1, false), "dead-lettered", false)
	w.dead("p1", true)
	w.dead("p2", false) // SQS's own redrive: no provenance
	w.run("t", "w1", 1, false)
	w.dead("t", true)
	r := reconcile(w.ev)
	got := strings.Join(r.Failures, "; ")
	for _, want := range []string{"1 poison jobs not in the DLQ", "1 poison jobs in the DLQ without provenance", "1 transient jobs in the DLQ", "1 DLQ messages without provenance"} {
		if !strings.Contains(got, want) {
			t.Errorf("failures %q; want %q", got, want)
		}
	}
	if r.Lost != 1 || r.LostJobs[0] != "p3" {
		t.Errorf("lost %v; want p3, in no queue", r.LostJobs)
	}
}

// A settlement reported on time but confirmed after the lease the record
// shows (receipt, extensions, each for the visibility timeout) had run out
// is a silent duplicate's cause, and fails the run even without one.
func TestReconcileLapsedLeaseReportedOnTime(t *testing.T) {
	w := newWorld(Job{ID: "a", Kind: Succeed}, Job{ID: "b", Kind: Slow})
	vis := w.ev.Config.Visibility
	h := w.run("a", "w1", 0, true)
	w.ev.Files.Settled = append(w.ev.Files.Settled, SettledRecord{Handle: h, Outcome: "deleted", Received: w.t0, Time: w.t0.Add(vis + 3*time.Second)})
	w.settle(w.run("a", "w2", 6, true), "deleted", false)
	// b was extended in time, twice: no lapse.
	h = w.run("b", "w1", 0, true)
	w.ev.Files.Settled = append(w.ev.Files.Settled, SettledRecord{Handle: h, Outcome: "deleted", Received: w.t0,
		Extensions: []time.Time{w.t0.Add(vis - time.Second), w.t0.Add(2*vis - 2*time.Second)}, Time: w.t0.Add(3*vis - 3*time.Second)})
	r := reconcile(w.ev)
	if r.LapsedUnreported != 1 || r.DuplicatesBy[CauseLapsedUnreported] != 1 || r.Passed() {
		t.Fatalf("lapsed %d, duplicates by %v, failures %v; want a's first settlement lapsed, its duplicate explained by it, the run failed", r.LapsedUnreported, r.DuplicatesBy, r.Failures)
	}
}

func TestReconcileDLQDuplicates(t *testing.T) {
	w := newWorld(Job{ID: "p1", Kind: Poison}, Job{ID: "p2", Kind: Poison}, Job{ID: "p3", Kind: Poison})
	w.ev.LostSends = map[string]int{faultproxy.BodyDigest(Job{ID: "p1", Kind: Poison}.Body()): 1}
	w.ev.Procs["w3"] = procInfo{Signal: "SIGKILL"}
	// p1: the first send's answer was dropped, the copy sent again.
	w.settle(w.run("p1", "w1", 1, false), "dead-lettered", false)
	w.dead("p1", true)
	w.dead("p1", true)
	// p2: killed after its copy was sent, before the source was deleted.
	w.run("p2", "w3", 1, false)
	w.settle(w.run("p2", "w1", 9, false), "dead-lettered", false)
	w.dead("p2", true)
	w.dead("p2", true)
	// p3: two copies from one confirmed move, no dropped answer.
	w.settle(w.run("p3", "w1", 1, false), "dead-lettered", false)
	w.dead("p3", true)
	w.dead("p3", true)
	r := reconcile(w.ev)
	want := map[Cause]int{CauseSendLost: 1, CauseKilled: 1, CauseUnexplained: 1}
	if r.DLQDuplicates != 3 || !maps.Equal(r.DLQDuplicatesBy, want) {
		t.Fatalf("DLQ duplicates %d by %v; want 3 by %v", r.DLQDuplicates, r.DLQDuplicatesBy, want)
	}
	if got := strings.Join(r.Failures, "; "); got != "1 unexplained duplicate DLQ copies" {
		t.Fatalf("failures %q", got)
	}
}

func TestReconcileFIFOOrder(t *testing.T) {
	jobs := []Job{{ID: "a", Kind: Succeed, Group: "g", Seq: 0}, {ID: "b", Kind: Poison, Group: "g", Seq: 1},
		{ID: "c", Kind: Succeed, Group: "g", Seq: 2}, {ID: "d", Kind: Succeed, Group: "g", Seq: 3}, {ID: "x", Kind: Succeed, Group: "h", Seq: 0}}
	w := newWorld(jobs...)
	w.ev.Config.FIFO = true
	w.settle(w.run("a", "w1", 1, true), "deleted", false)
	w.settle(w.run("b", "w1", 2, false), "dead-lettered", false)
	w.dead("b", true)
	w.settle(w.run("c", "w1", 5, true), "deleted", false)
	w.settle(w.run("d", "w2", 4, true), "deleted", false) // before c: out of order
	w.settle(w.run("x", "w2", 0, true), "deleted", false) // another group: no constraint
	r := reconcile(w.ev)
	if r.OrderViolations != 1 || r.OrderChecked != 4 || r.Groups != 2 || r.Passed() {
		t.Fatalf("order: %d violations of %d checked in %d groups (%v); want 1 of 4 in 2", r.OrderViolations, r.OrderChecked, r.Groups, r.OrderExamples)
	}
	if !strings.Contains(r.OrderExamples[0], "d (seq 3)") {
		t.Fatalf("example %q", r.OrderExamples[0])
	}
}

func TestJournalIsDurableAndReadable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w1"+successFile)
	j, err := openJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := j.commit(RunRecord{Job: string(rune('A' + i%26)), Worker: "w1"}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if err := j.close(); err != nil {
		t.Fatal(err)
	}
	// A process killed mid-write leaves a torn last line: it is skipped.
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"job":"torn`)
	f.Close()
	recs, err := readLines[RunRecord](path)
	if err != nil || len(recs) != 200 {
		t.Fatalf("read %d records, %v; want 200", len(recs), err)
	}
}

func TestMakeJobsIsSeededAndMixed(t *testing.T) {
	mix := Mix{Transient: 0.1, Poison: 0.05, Slow: 0.05, SlowFor: 8 * time.Second, MaxWork: 5 * time.Millisecond}
	a, b := MakeJobs(10_000, mix, 10, 7), MakeJobs(10_000, mix, 10, 7)
	if !slices.Equal(a, b) {
		t.Fatal("same seed, different jobs")
	}
	count := map[Kind]int{}
	seq := map[string]int{}
	for _, j := range a {
		count[j.Kind]++
		if j.Seq != seq[j.Group] {
			t.Fatalf("job %s has seq %d in group %s, want %d", j.ID, j.Seq, j.Group, seq[j.Group])
		}
		seq[j.Group]++
		if back, err := ParseJob(j.Body()); err != nil || back != j {
			t.Fatalf("ParseJob(Body()) = %+v, %v; want %+v", back, err, j)
		}
	}
	for k, share := range map[Kind]float64{Transient: 0.1, Poison: 0.05, Slow: 0.05, Succeed: 0.8} {
		if got := float64(count[k]) / 10_000; got < share*0.8 || got > share*1.2 {
			t.Errorf("%s: %.3f of the jobs, want about %.2f", k, got, share)
		}
	}
}
