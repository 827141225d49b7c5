package chaos

import (
	"strings"
	"testing"
	"time"
)

// soakEvidence is a soak of 1,000 jobs whose long-lived worker w1 had the
// given RSS (MiB) at 0, 100, 200, … jobs settled, sampled every 5 s.
func soakEvidence(rssMiB ...int64) evidence {
	cfg, _ := Variant("soak")
	cfg.Jobs = 1000
	cfg.Soak.MinSamples = 3
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ev := evidence{Config: cfg, LongLived: []string{"w1"}, Procs: map[string]procInfo{"w1": {Signal: "SIGTERM"}, "w2": {Signal: "SIGKILL"}},
		Heap: map[string][]HeapSample{}}
	for i, m := range rssMiB {
		t := t0.Add(time.Duration(i) * 5 * time.Second)
		ev.Memory = append(ev.Memory,
			MemorySample{Time: t, Process: "w1", RSS: m << 20, Settled: min(100*i, 1000)},
			MemorySample{Time: t, Process: orchestrator, RSS: int64(50+i) << 20, Settled: min(100*i, 1000)})
		ev.Heap["w1"] = append(ev.Heap["w1"], HeapSample{Time: t, HeapLive: uint64(m) << 19, Goroutines: uint64(100 + i), Received: int64(50 * i)})
	}
	return ev
}

// TestSoakMemory checks the soak's memory verdict: the baseline is the
// first sample at or past the warm-up (10% of the jobs settled), the
// verdict is the last sample against it, and a worker whose memory was not
// watched fails the run.
func TestSoakMemory(t *testing.T) {
	for _, tc := range []struct {
		name string
		rss  []int64
		edit func(*evidence)
		fail string // a failure containing this; "" for none
	}{
		// The start-up's growth comes before the warm-up and does not count.
		{name: "flat after warm-up", rss: []int64{10, 40, 42, 44, 41, 43, 45, 44, 46, 47, 47}},
		{name: "falls after warm-up", rss: []int64{10, 40, 42, 44, 41, 43, 45, 44, 30, 28, 25}},
		{name: "grows 25%", rss: []int64{10, 40, 42, 44, 41, 43, 45, 44, 46, 48, 50}, fail: "grew 25.0%"},
		{name: "too few samples", rss: []int64{10, 11}, fail: "fewer than 3"},
		{name: "never warmed up", rss: []int64{10}, edit: func(ev *evidence) { ev.Memory[0].Settled = 50 }, fail: "has 0 RSS samples"},
		{name: "killed", rss: []int64{10, 40, 42, 44}, edit: func(ev *evidence) { ev.Procs["w1"] = procInfo{Signal: "SIGKILL"} }, fail: "did not live to the end"},
		{name: "crashed", rss: []int64{10, 40, 42, 44}, edit: func(ev *evidence) { ev.Procs["w1"] = procInfo{Crashed: true} }, fail: "(crashed)"},
		{name: "no heap samples", rss: []int64{10, 40, 42, 44}, edit: func(ev *evidence) { delete(ev.Heap, "w1") }, fail: "no heap samples"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := soakEvidence(tc.rss...)
			if tc.edit != nil {
				tc.edit(&ev)
			}
			r := &Report{Config: ev.Config}
			r.memory(ev)
			f := r.memoryFailures()
			if tc.fail == "" && len(f) > 0 {
				t.Fatalf("failures %q, want none", f)
			}
			if tc.fail != "" && !strings.Contains(strings.Join(f, "\n"), tc.fail) {
				t.Fatalf("failures %q, want one with %q", f, tc.fail)
			}
		})
	}
	r := &Report{Config: soakEvidence().Config}
	ev := soakEvidence(10, 40, 42, 44, 41, 43, 45, 44, 46, 47, 47)
	r.memory(ev)
	w := r.Memory.Workers[0]
	if w.WarmUp.RSS != 40<<20 || w.WarmUp.Settled != 100 || w.End.RSS != 47<<20 || w.Samples != 10 ||
		w.Min != 40<<20 || w.Median != 44<<20 || w.Max != 47<<20 || w.HeapWarmUp != 20<<20 || w.HeapEnd != 47<<19 || w.GoroutinesMax != 110 || w.Received != 500 {
		t.Fatalf("summary %+v", w)
	}
	if len(w.Points) < 9 || w.Points[0] != w.WarmUp || w.Points[len(w.Points)-1] != w.End {
		t.Fatalf("series %+v: want about every tenth of the jobs from the warm-up to the end", w.Points)
	}
	if r.Memory.OrchestratorMax != 60<<20 {
		t.Fatalf("orchestrator max %d, want %d", r.Memory.OrchestratorMax, 60<<20)
	}
}

// TestKillable checks that the chaos phase's kills never pick a long-lived
// worker.
func TestKillable(t *testing.T) {
	f := &fleet{keep: 1, procs: []*proc{{name: "w1", longLived: true}, {name: "w2"}, {name: "w3", signal: "SIGKILL"}}}
	got := f.killable()
	if len(got) != 1 || got[0].name != "w2" {
		t.Fatalf("killable %v, want only w2", got)
	}
	if ll := f.longLived(); len(ll) != 1 || ll[0] != "w1" {
		t.Fatalf("longLived %v, want [w1]", ll)
	}
}
