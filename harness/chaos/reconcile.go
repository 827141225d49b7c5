package chaos

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/harness/faultproxy"
)

// Cause is why a job ran to completion more than once.
type Cause string

// The causes of a duplicate, each tied to one completed run that did not
// end its message.
const (
	// CauseKilled: the run's process was SIGKILLed before SQS confirmed the
	// run's delete (the success was recorded; the delete never confirmed).
	CauseKilled Cause = "killed before its delete"
	// CauseDeleteFault: the proxy faulted a delete carrying the run's
	// receipt handle, and the worker could not confirm the delete in time
	// (abandoned at the end of its shutdown flush).
	CauseDeleteFault Cause = "delete faulted"
	// CauseLease: the worker lost the message's lease before settling it,
	// or SQS confirmed the settlement after the lease's deadline (Lost, or
	// Late): another consumer could receive the message meanwhile.
	CauseLease Cause = "handler outlived its lease"
	// CauseSendLost: a send carrying the job's dead-letter copy reached
	// SQS but its answer never reached the worker (the proxy dropped it,
	// or the call timed out first), so the worker sent the copy again
	// (only for DLQ copies).
	CauseSendLost Cause = "DLQ send's answer lost"
	// CauseAbandoned: the worker reported the settlement abandoned (its
	// shutdown flush ended) with no fault on the run's own delete.
	CauseAbandoned Cause = "abandoned at shutdown, no fault on its delete"
	// CauseLapsedUnreported: the worker reported the run's settlement
	// confirmed on time, but the settlement record shows it confirmed
	// after the message's lease had run out (another consumer could
	// receive the message meanwhile): the runtime should have said Late.
	CauseLapsedUnreported Cause = "confirmed after its lease lapsed, reported on time"
	// CauseEventDropped: the run has no settlement event, its process was
	// not killed, and the process counted settlement events its hook
	// dropped (Stats.HookDropped: the shutdown flush used the budget the
	// hook's last events needed), so the run's fate is not known.
	CauseEventDropped Cause = "its settlement event dropped at shutdown"
	// CauseRedelivered: SNS delivered the job to the queue again (fan-out
	// runs): a delivery send of it reached SQS but its answer never
	// reached SNS, which retried it, so the queue got two messages.
	CauseRedelivered Cause = "SNS delivery's answer lost"
	// CauseUnexplained: nothing above; a bug until shown otherwise.
	CauseUnexplained Cause = "unexplained"
)

// causes lists the causes in report order.
func causes() []Cause {
	return []Cause{CauseKilled, CauseDeleteFault, CauseLease, CauseSendLost, CauseRedelivered, CauseAbandoned, CauseEventDropped, CauseLapsedUnreported, CauseUnexplained}
}

// procInfo is what the orchestrator knows about one worker process.
type procInfo struct {
	Signal  string // "", "SIGTERM" or "SIGKILL"
	Hung    bool   // did not exit within the bound after SIGTERM, and then got SIGKILL
	Crashed bool   // exited without being signalled
	// SignaledAt is when the orchestrator sent Signal.
	SignaledAt time.Time
	// Races is how many data races the race detector reported in the
	// process (when built with Config.Race).
	Races int
	// DeadlineKill: a lambda process that killed itself because an
	// invocation outlived its deadline (Signal is then "SIGKILL").
	DeadlineKill bool `json:",omitempty"`
}

// deleteSeen is what the proxy saw of the deletes carrying one receipt
// handle.
type deleteSeen struct {
	Faulted bool // a delete carrying it was faulted (the worker saw a failure)
	Reached bool // a delete carrying it reached SQS and succeeded (even if its answer was then dropped) while its lease held, by the proxy's clock
	// ReachedLate: a delete carrying it reached SQS and succeeded, but SQS
	// may have applied it after the message became visible again, when a
	// success proves nothing.
	ReachedLate bool
}

// dlqCopy is one message read from the dead-letter queue.
type dlqCopy struct {
	Job           string
	Provenance    dlq.Provenance
	HasProvenance bool
}

// evidence is everything a run collected, for reconcile. Run saves it
// (but the worker files, the jobs and the proxy's observations, which are
// read or rebuilt) as evidence.json, so Rereport can reconcile again.
type evidence struct {
	Config    Config                `json:"config"`
	Jobs      []Job                 `json:"-"`
	Files     workerFiles           `json:"-"`
	Names     []string              `json:"names"` // the worker processes
	Procs     map[string]procInfo   `json:"procs"`
	DLQ       []dlqCopy             `json:"dlq"`
	Pending   []string              `json:"pending"`   // job IDs still in the source queue after the drain
	Unread    int                   `json:"unread"`    // messages the source queue still counted but the read could not see
	DLQUnread int                   `json:"dlqUnread"` // the same for the DLQ
	Deletes   map[string]deleteSeen `json:"-"`
	// LostSends counts, by faultproxy.BodyDigest, the sends of a message
	// body that reached SQS but whose answer the worker never got.
	LostSends map[string]int               `json:"-"`
	Counts    map[string]faultproxy.Counts `json:"counts"`
	Timing    Timing                       `json:"timing"`
	ExitMax   time.Duration                `json:"exitMax"`
	// Fanout is the SNS side of a fan-out run (nil for the others).
	Fanout *fanoutEvidence `json:"fanout,omitempty"`
	// Idem is the idempotency variant's evidence; Invocations the lambda
	// variant's invocations (read from the worker files).
	Idem *idemEvidence `json:"idempotency,omitempty"`
	// Unique is the unique variant's evidence.
	Unique      *uniqueEvidence    `json:"unique,omitempty"`
	Invocations []InvocationRecord `json:"-"`
	// Unsent counts the jobs a soak's feeder had not sent when the chaos
	// phase ended at its Duration: Jobs holds only the ones sent.
	Unsent int `json:"unsent,omitempty"`
	// LongLived names a soak's long-lived workers; Memory and Heap are
	// their samples (read from the run's files).
	LongLived []string                `json:"longLived,omitempty"`
	Memory    []MemorySample          `json:"-"`
	Heap      map[string][]HeapSample `json:"-"`
}

// reconcile turns the evidence into a report.
func reconcile(ev evidence) *Report {
	cfg := ev.Config
	r := &Report{
		Variant: cfg.Variant, Seed: cfg.Seed, Jobs: len(ev.Jobs), Workers: cfg.Workers, FIFO: cfg.FIFO,
		Config: cfg, ByKind: map[Kind]*KindCounts{}, DuplicatesBy: map[Cause]int{}, DLQDuplicatesBy: map[Cause]int{},
		Timing: ev.Timing, Requests: ev.Counts, Unread: ev.Unread, DLQUnread: ev.DLQUnread,
	}
	for _, k := range kinds() {
		r.ByKind[k] = &KindCounts{}
	}
	byID := make(map[string]Job, len(ev.Jobs))
	for _, j := range ev.Jobs {
		byID[j.ID] = j
		r.ByKind[j.Kind].Jobs++
	}
	settled := make(map[string]SettledRecord, len(ev.Files.Settled))
	lapsed := map[string]bool{}
	for _, s := range ev.Files.Settled {
		settled[s.Handle] = s
		if (s.Outcome == "deleted" || s.Outcome == "dead-lettered" || s.Outcome == "retrying") && !s.Late && s.lapsed(cfg.Visibility, LapseTolerance) {
			lapsed[s.Handle] = true
			r.LapsedUnreported++
		}
	}
	successes := map[string][]RunRecord{}
	for _, s := range ev.Files.Successes {
		successes[s.Job] = append(successes[s.Job], s)
	}
	r.HandlerRuns = len(ev.Files.Runs)
	copies := map[string][]dlqCopy{}
	for _, c := range ev.DLQ {
		copies[c.Job] = append(copies[c.Job], c)
		if !c.HasProvenance {
			r.DLQWithoutProvenance++
		}
	}
	// The runs of the jobs with more than one DLQ copy, which explain the
	// extra copies (only those: a million-job run has a million runs).
	runs := map[string][]RunRecord{}
	for _, s := range ev.Files.Runs {
		if len(copies[s.Job]) > 1 {
			runs[s.Job] = append(runs[s.Job], s)
		}
	}
	pending := map[string]bool{}
	for _, id := range ev.Pending {
		pending[id] = true
	}

	// status says whether a completed run ended its message (clean) and,
	// if not, why.
	status := func(run RunRecord, want string) (clean bool, cause Cause) {
		seen := ev.Deletes[run.Handle]
		if s, ok := settled[run.Handle]; ok {
			switch {
			case s.Outcome == want && !s.Late && lapsed[run.Handle]:
				return false, CauseLapsedUnreported
			case s.Outcome == want && !s.Late:
				return true, ""
			case s.Late || s.Outcome == "lost":
				return false, CauseLease
			case s.Outcome == "abandoned" && seen.Faulted:
				return false, CauseDeleteFault
			case s.Outcome == "abandoned":
				return false, CauseAbandoned
			}
			return false, CauseUnexplained
		}
		p := ev.Procs[run.Worker]
		switch {
		case seen.Reached && !seen.Faulted:
			// SQS deleted it; the process did not get to log the event.
			// (The lambda variant records no event for a success: the
			// adapter reports it before Lambda deletes it.)
			if p.Signal != "SIGKILL" && !p.Hung && !p.Crashed && cfg.Worker.Mode != ModeLambda {
				r.MissingSettlements++
			}
			return true, ""
		case p.Signal == "SIGKILL" || p.Hung || p.Crashed:
			return false, CauseKilled
		case seen.ReachedLate:
			// Its delete reached SQS only when the lease may have lapsed.
			return false, CauseLease
		case seen.Faulted:
			// A delete carrying it faulted (it hung, say); one that
			// reached SQS may have come after the lease lapsed.
			return false, CauseDeleteFault
		case ev.Files.Exits[run.Worker].Stats.HookDropped > 0:
			return false, CauseEventDropped
		}
		return false, CauseUnexplained
	}
	var budget fanoutBudget
	if ev.Fanout != nil {
		r.Fanout = newFanoutFigures(ev.Fanout)
		budget = fanoutBudget{}
		for job, n := range ev.Fanout.Redelivered {
			budget[job] = n
		}
	}
	examples := map[Cause]int{}
	// explain assigns a cause to each of the n extra completions among
	// runs: runs that did not end their message first, in time order.
	explain := func(job string, runs []RunRecord, n int, want string, into map[Cause]int) {
		type ranked struct {
			run   RunRecord
			clean bool
			cause Cause
		}
		rs := make([]ranked, len(runs))
		for i, run := range runs {
			rs[i].run = run
			rs[i].clean, rs[i].cause = status(run, want)
		}
		sort.SliceStable(rs, func(a, b int) bool {
			if rs[a].clean != rs[b].clean {
				return !rs[a].clean
			}
			return rs[a].run.Time.Before(rs[b].run.Time)
		})
		for i := range n {
			cause := CauseUnexplained
			if i < len(rs) && !rs[i].clean {
				cause = rs[i].cause
			}
			into[cause]++
			if (cause == CauseUnexplained || cause == CauseLapsedUnreported) && examples[cause] < 10 {
				examples[cause]++
				ex := Example{Job: job, Cause: cause}
				for _, x := range rs {
					ex.Runs = append(ex.Runs, fmt.Sprintf("%s %s %s", x.run.Worker, x.run.Time.Format("15:04:05.000"), describe(x.run, settled, ev.Deletes, ev.Procs)))
				}
				r.Unexplained = append(r.Unexplained, ex)
			}
		}
	}

	for _, j := range ev.Jobs {
		kc := r.ByKind[j.Kind]
		succ, dead := successes[j.ID], copies[j.ID]
		done := len(succ) > 0
		if done {
			kc.Done++
			r.Done++
		}
		if len(dead) > 0 {
			kc.DeadLettered++
			r.DeadLettered++
		}
		if pending[j.ID] {
			kc.Pending++
			r.Pending++
		}
		inSub := ev.Fanout != nil && ev.Fanout.SubDLQ[j.ID] > 0
		if inSub {
			r.Fanout.subscriptionDLQ(ev.Fanout, j.ID, done || len(dead) > 0 || pending[j.ID])
		}
		if !done && len(dead) == 0 && !pending[j.ID] && !inSub {
			kc.Lost++
			r.Lost++
			if len(r.LostJobs) < 20 {
				r.LostJobs = append(r.LostJobs, j.ID)
			}
		}
		if n := len(succ) - 1; n > 0 {
			r.Duplicates += n
			r.DuplicateJobs++
			if k := budget.take(j.ID, n); k > 0 {
				r.DuplicatesBy[CauseRedelivered] += k
				n -= k
			}
			explain(j.ID, succ, n, "deleted", r.DuplicatesBy)
		}
		if n := len(dead) - 1; n > 0 {
			r.DLQDuplicates += n
			sent := ev.LostSends[faultproxy.BodyDigest(j.Body())]
			if ev.Fanout != nil { // the copies are the envelopes SNS delivered
				for _, d := range ev.Fanout.Envelopes[j.ID] {
					sent += ev.LostSends[d]
				}
			}
			lost := min(n, sent)
			r.DLQDuplicatesBy[CauseSendLost] += lost
			n -= lost
			if k := budget.take(j.ID, n); k > 0 {
				r.DLQDuplicatesBy[CauseRedelivered] += k
				n -= k
			}
			explain(j.ID, runs[j.ID], n, "dead-lettered", r.DLQDuplicatesBy)
		}
		switch {
		case done && len(dead) > 0:
			r.SucceededInDLQ++
			r.misplaced(j.ID, "succeeded and in the DLQ")
		case j.Kind == Transient && len(dead) > 0:
			r.TransientInDLQ++
			r.misplaced(j.ID, "transient job in the DLQ")
		case j.Kind != Poison && len(dead) > 0:
			r.OtherInDLQ++
			r.misplaced(j.ID, fmt.Sprintf("%s job in the DLQ without a success", j.Kind))
		case j.Kind == Poison && done:
			r.PoisonSucceeded++
			r.misplaced(j.ID, "poison job recorded a success")
		case j.Kind == Poison && len(dead) == 0 && inSub:
			// SNS dead-lettered it before it reached the queue.
		case j.Kind == Poison && len(dead) == 0:
			r.PoisonNotInDLQ++
			r.misplaced(j.ID, "poison job not in the DLQ")
		case j.Kind == Poison:
			for _, c := range dead {
				if !c.HasProvenance || !strings.Contains(c.Provenance.Error, "poison") || c.Provenance.SourceQueue == "" {
					r.PoisonWithoutProvenance++
					r.misplaced(j.ID, fmt.Sprintf("poison job in the DLQ without its provenance (%+v)", c.Provenance))
					break
				}
			}
		}
	}
	for id := range copies {
		if _, ok := byID[id]; !ok {
			r.DLQUnknown++
		}
	}
	if cfg.FIFO {
		r.checkOrder(ev.Jobs, successes)
	}
	r.processes(ev)
	r.idempotency(ev)
	r.uniqueKeys(ev)
	r.lambdaFigures(ev)
	r.memory(ev)
	r.Failures = append(r.failures(), r.memoryFailures()...)
	return r
}

// LapseTolerance is how far past its lease's deadline (as the settlement
// record shows it) a settlement reported on time may be confirmed before
// the report calls it a lapse. It is zero: the record's deadline is the
// runtime's own (receipt or extension time plus the visibility timeout,
// never earlier than SQS's), and a confirmation after it is what the
// runtime itself must report as Late.
const LapseTolerance = 0

// describe says what is known of one run, for an example.
func describe(run RunRecord, settled map[string]SettledRecord, deletes map[string]deleteSeen, procs map[string]procInfo) string {
	var parts []string
	if s, ok := settled[run.Handle]; ok {
		parts = append(parts, "settled "+s.Outcome)
		if s.Late {
			parts = append(parts, "late")
		}
		if s.Reason != "" {
			parts = append(parts, fmt.Sprintf("(%s)", s.Reason))
		}
		parts = append(parts, fmt.Sprintf("received %s, %d extensions, confirmed %s", s.Received.Format("15:04:05.000"), len(s.Extensions), s.Time.Format("15:04:05.000")))
	} else {
		parts = append(parts, "no settlement event")
	}
	d := deletes[run.Handle]
	parts = append(parts, fmt.Sprintf("delete faulted=%v reached=%v", d.Faulted, d.Reached))
	if d.ReachedLate && !d.Reached {
		parts = append(parts, "reached after the lease may have lapsed")
	}
	if p := procs[run.Worker]; p.Signal != "" {
		parts = append(parts, "process got "+p.Signal)
	}
	return strings.Join(parts, ", ")
}

func (r *Report) misplaced(job, what string) {
	if len(r.Misplaced) < 20 {
		r.Misplaced = append(r.Misplaced, job+": "+what)
	}
}

// checkOrder checks that within each FIFO group no job's first success
// comes before the first success of a job sent earlier in that group.
func (r *Report) checkOrder(jobs []Job, successes map[string][]RunRecord) {
	first := func(id string) (time.Time, bool) {
		var t time.Time
		for _, s := range successes[id] {
			if t.IsZero() || s.Time.Before(t) {
				t = s.Time
			}
		}
		return t, !t.IsZero()
	}
	groups := map[string][]Job{}
	for _, j := range jobs {
		groups[j.Group] = append(groups[j.Group], j)
	}
	r.Groups = len(groups)
	for _, g := range groups {
		sort.Slice(g, func(a, b int) bool { return g[a].Seq < g[b].Seq })
		var latest time.Time
		var latestJob string
		for _, j := range g {
			t, ok := first(j.ID)
			if !ok {
				continue
			}
			r.OrderChecked++
			if t.Before(latest) {
				r.OrderViolations++
				if len(r.OrderExamples) < 20 {
					r.OrderExamples = append(r.OrderExamples, fmt.Sprintf("group %s: %s (seq %d) completed at %s, before %s completed at %s",
						j.Group, j.ID, j.Seq, t.Format("15:04:05.000"), latestJob, latest.Format("15:04:05.000")))
				}
				continue
			}
			latest, latestJob = t, j.ID
		}
	}
}

// processes sums what the worker processes did and how they stopped.
func (r *Report) processes(ev evidence) {
	bound := ev.Config.ShutdownBound()
	r.ShutdownBound = bound
	for name, p := range ev.Procs {
		r.Processes.Started++
		switch {
		case p.DeadlineKill:
			r.Processes.DeadlineKills++
		case p.Signal == "SIGTERM":
			r.Processes.Terminated++
		case p.Signal == "SIGKILL":
			r.Processes.Killed++
		}
		if p.Hung {
			r.Processes.Hung++
			r.Processes.HungNames = append(r.Processes.HungNames, fmt.Sprintf("%s (SIGTERM at %s; its goroutines are in %s.out)", name, p.SignaledAt.Format("15:04:05.000"), name))
		}
		if p.Races > 0 {
			r.Processes.Races += p.Races
			r.Processes.RaceNames = append(r.Processes.RaceNames, name+".out")
		}
		if p.Crashed {
			r.Processes.Crashed++
			r.Processes.CrashedNames = append(r.Processes.CrashedNames, name)
		}
	}
	for _, e := range ev.Files.Exits {
		s := e.Stats
		t := &r.WorkerStats
		t.Received += s.Received
		t.Succeeded += s.Succeeded
		t.Failed += s.Failed
		t.Deleted += s.Deleted
		t.Retried += s.Retried
		t.DeadLettered += s.DeadLettered
		t.Released += s.Released
		t.Lost += s.Lost
		t.Abandoned += s.Abandoned
		t.DeleteRetried += s.DeleteRetried
		t.SettledLate += s.SettledLate
		t.HookDropped += s.HookDropped
		t.Extensions += s.Extensions
		t.LateExtensions += s.LateExtensions
		if d := e.RunAfterSignal(); d > 0 {
			r.Processes.RunReturnMax = max(r.Processes.RunReturnMax, d)
			if d > bound+RunSlack {
				r.Processes.RunOverBound++
			}
		}
		r.Processes.ReceiveStopMax = max(r.Processes.ReceiveStopMax, e.ReceiveStop())
		r.Processes.ReceivesAfterSignal += e.ReceivesAfterSignal
		if e.Err != "" {
			r.Processes.RunErrors = append(r.Processes.RunErrors, e.Worker+": "+e.Err)
		}
	}
	// Messages a SIGTERMed process released without running them (prefetched,
	// or brought by a receive that ended as it stopped): how soon after
	// the signal SQS confirmed each release.
	ran := make(map[string]bool, len(ev.Files.Runs))
	for _, run := range ev.Files.Runs {
		ran[run.Handle] = true
	}
	for _, s := range ev.Files.Settled {
		e, ok := ev.Files.Exits[s.Worker]
		if s.Outcome != "released" || ran[s.Handle] || !ok || e.Signal.IsZero() {
			continue
		}
		r.Processes.UnstartedReleased++
		r.Processes.ReleaseMax = max(r.Processes.ReleaseMax, s.Time.Sub(e.Signal))
	}
	r.Processes.ExitMax = ev.ExitMax
	var total int
	for _, c := range ev.Counts {
		total += c.Requests
	}
	r.TotalRequests = total
	if r.Jobs > 0 {
		r.RequestsPerJob = float64(total) / float64(r.Jobs)
		r.RunsPerJob = float64(r.HandlerRuns) / float64(r.Jobs)
	}
	// Throughput: jobs settled per second from the first worker's start to
	// the last success or dead-letter move recorded.
	last := ev.Timing.Start
	for _, s := range ev.Files.Successes {
		if s.Time.After(last) {
			last = s.Time
		}
	}
	for _, s := range ev.Files.Settled {
		if s.Outcome == "dead-lettered" && s.Time.After(last) {
			last = s.Time
		}
	}
	if s := last.Sub(ev.Timing.Start).Seconds(); s > 0 {
		r.Throughput = float64(r.Done+r.DeadLettered) / s
	}
}

// failures lists the acceptance criteria the run broke.
func (r *Report) failures() []string {
	var f []string
	add := func(n int, format string, args ...any) {
		if n > 0 {
			f = append(f, fmt.Sprintf(format, args...))
		}
	}
	add(r.Unread+r.DLQUnread, "the final reads could not see %d messages of the queue and %d of the DLQ (in flight or delayed): the lost count may include them", r.Unread, r.DLQUnread)
	add(r.Lost, "%d jobs lost (neither done, nor in the DLQ, nor pending): %v", r.Lost, r.LostJobs)
	add(r.Processes.Hung, "%d workers hung after SIGTERM (alive %v after it): %v", r.Processes.Hung, r.ShutdownBound+ExitSlack, r.Processes.HungNames)
	add(r.Processes.RunOverBound, "%d workers returned from Run later than ShutdownTimeout + FlushTimeout (%v) + %v after SIGTERM (longest %v)", r.Processes.RunOverBound, r.ShutdownBound, RunSlack, r.Processes.RunReturnMax)
	if max := r.Config.Checks.MaxReceiveStop; max > 0 && r.Processes.ReceiveStopMax > max {
		f = append(f, fmt.Sprintf("a worker went on receiving %v after SIGTERM, more than %v", r.Processes.ReceiveStopMax, max))
	}
	if max := r.Config.Checks.MaxRelease; max > 0 && r.Processes.ReleaseMax > max {
		f = append(f, fmt.Sprintf("a worker released an unstarted message %v after SIGTERM, more than %v", r.Processes.ReleaseMax, max))
	}
	if r.Config.Checks.NoDeadLetters && r.DeadLettered > 0 {
		f = append(f, fmt.Sprintf("%d jobs dead-lettered in a run whose jobs all succeed", r.DeadLettered))
	}
	add(r.Processes.Crashed, "%d workers exited without being signalled: %v", r.Processes.Crashed, r.Processes.CrashedNames)
	add(r.Processes.Races, "%d data races reported by worker processes (see %v)", r.Processes.Races, r.Processes.RaceNames)
	add(len(r.Processes.RunErrors), "Run returned errors: %v", r.Processes.RunErrors)
	add(r.SucceededInDLQ, "%d succeeded jobs in the DLQ", r.SucceededInDLQ)
	add(r.TransientInDLQ, "%d transient jobs in the DLQ", r.TransientInDLQ)
	add(r.OtherInDLQ, "%d succeeding or slow jobs in the DLQ", r.OtherInDLQ)
	add(r.PoisonNotInDLQ, "%d poison jobs not in the DLQ", r.PoisonNotInDLQ)
	add(r.PoisonWithoutProvenance, "%d poison jobs in the DLQ without provenance", r.PoisonWithoutProvenance)
	add(r.PoisonSucceeded, "%d poison jobs recorded a success", r.PoisonSucceeded)
	add(r.DLQWithoutProvenance, "%d DLQ messages without provenance (SQS's own redrive?)", r.DLQWithoutProvenance)
	add(r.DLQUnknown, "%d DLQ messages that are not jobs of this run", r.DLQUnknown)
	add(r.DuplicatesBy[CauseUnexplained], "%d unexplained duplicates", r.DuplicatesBy[CauseUnexplained])
	add(r.LapsedUnreported, "%d settlements confirmed after their lease lapsed were reported on time (not Late); %d duplicates came of it",
		r.LapsedUnreported, r.DuplicatesBy[CauseLapsedUnreported]+r.DLQDuplicatesBy[CauseLapsedUnreported])
	add(r.DLQDuplicatesBy[CauseUnexplained], "%d unexplained duplicate DLQ copies", r.DLQDuplicatesBy[CauseUnexplained])
	add(r.OrderViolations, "%d FIFO order violations", r.OrderViolations)
	if c := r.Config.Checks; c.MaxRunsPerJob > 0 && r.RunsPerJob > c.MaxRunsPerJob {
		f = append(f, fmt.Sprintf("%.4f handler runs per job, more than %.2f", r.RunsPerJob, c.MaxRunsPerJob))
	}
	if r.Fanout != nil {
		f = append(f, r.Fanout.failures()...)
	}
	if r.Config.Checks.OnlyDeleteFaultDuplicates {
		other := r.Duplicates - r.DuplicatesBy[CauseDeleteFault]
		add(other, "%d duplicates not explained by a fault on the job's own delete: %v", other, r.DuplicatesBy)
	}
	f = append(f, r.uniqueFailures()...)
	return append(f, r.idempotencyFailures()...)
}
