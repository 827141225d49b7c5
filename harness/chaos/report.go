package chaos

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/sqsworker/sqsworker/harness/faultproxy"
)

// Report is what one chaos run found. Failures lists the acceptance
// criteria it broke; empty means the run passed.
type Report struct {
	Variant string `json:"variant"`
	Seed    uint64 `json:"seed"`
	Jobs    int    `json:"jobs"`
	Workers int    `json:"workers"`
	FIFO    bool   `json:"fifo"`
	Config  Config `json:"config"`

	// Every sent job is done (a success recorded), in the DLQ, or still
	// pending in the source queue; Lost counts the others.
	Done         int                  `json:"done"`
	DeadLettered int                  `json:"deadLettered"`
	Pending      int                  `json:"pending"`
	Lost         int                  `json:"lost"`
	LostJobs     []string             `json:"lostJobs,omitempty"`
	Unread       int                  `json:"unread,omitempty"`    // messages the source still counted that the final read did not see
	DLQUnread    int                  `json:"dlqUnread,omitempty"` // the same for the DLQ
	ByKind       map[Kind]*KindCounts `json:"byKind"`

	// Duplicates counts successes beyond the first of each job
	// (DuplicateJobs the jobs concerned), by cause; DLQDuplicates counts
	// dead-letter copies beyond the first of each job.
	Duplicates      int           `json:"duplicates"`
	DuplicateJobs   int           `json:"duplicateJobs"`
	DuplicatesBy    map[Cause]int `json:"duplicatesBy"`
	DLQDuplicates   int           `json:"dlqDuplicates"`
	DLQDuplicatesBy map[Cause]int `json:"dlqDuplicatesBy"`
	Unexplained     []Example     `json:"unexplained,omitempty"`
	// MissingSettlements counts completed runs whose delete reached SQS but
	// whose process, though not killed, logged no settlement event.
	MissingSettlements int `json:"missingSettlements"`
	// LapsedUnreported counts settlements the worker reported confirmed on
	// time (not Late) that its own record shows confirmed after the
	// message's lease had run out.
	LapsedUnreported int `json:"lapsedUnreported"`

	SucceededInDLQ          int      `json:"succeededInDLQ"`
	TransientInDLQ          int      `json:"transientInDLQ"`
	OtherInDLQ              int      `json:"otherInDLQ"`
	PoisonNotInDLQ          int      `json:"poisonNotInDLQ"`
	PoisonWithoutProvenance int      `json:"poisonWithoutProvenance"`
	PoisonSucceeded         int      `json:"poisonSucceeded"`
	DLQWithoutProvenance    int      `json:"dlqWithoutProvenance"`
	DLQUnknown              int      `json:"dlqUnknown"`
	Misplaced               []string `json:"misplaced,omitempty"`

	// FIFO: groups, jobs whose order was checked, and violations.
	Groups          int      `json:"groups,omitempty"`
	OrderChecked    int      `json:"orderChecked,omitempty"`
	OrderViolations int      `json:"orderViolations"`
	OrderExamples   []string `json:"orderExamples,omitempty"`

	Processes     Processes     `json:"processes"`
	ShutdownBound time.Duration `json:"shutdownBound"`
	// WorkerStats sums worker.Stats over the processes that exited
	// through Run (SIGKILLed ones leave none).
	WorkerStats WorkerStats `json:"workerStats"`

	HandlerRuns    int                          `json:"handlerRuns"`
	RunsPerJob     float64                      `json:"runsPerJob"`
	TotalRequests  int                          `json:"totalRequests"`
	RequestsPerJob float64                      `json:"requestsPerJob"`
	Requests       map[string]faultproxy.Counts `json:"requests"`
	Timing         Timing                       `json:"timing"`
	// Throughput is jobs settled (done or dead-lettered) per second, from
	// the first worker's start to the last success or dead-letter move.
	Throughput float64 `json:"throughput"`
	// Memory is a soak's memory watch (nil for other runs).
	Memory *MemoryReport `json:"memory,omitempty"`

	// Idempotency is what the idempotency variant found, Lambda what the
	// lambda variant's invocations did.
	Idempotency *IdemReport   `json:"idempotency,omitempty"`
	Lambda      *LambdaReport `json:"lambda,omitempty"`
	// Unique is what the unique variant found.
	Unique *UniqueReport `json:"unique,omitempty"`

	Failures []string `json:"failures"`

	// Fanout is the fan-out variant's SNS side (nil for the others): the
	// jobs in the subscription's dead-letter queue are neither lost nor
	// counted in DeadLettered (the queue's DLQ).
	Fanout *FanoutFigures `json:"fanout,omitempty"`
	// Producer is the producer variant's own figures (nil for the others).
	Producer *ProducerFigures `json:"producer,omitempty"`
}

// KindCounts is the fate of one kind of job.
type KindCounts struct {
	Jobs         int `json:"jobs"`
	Done         int `json:"done"`
	DeadLettered int `json:"deadLettered"`
	Pending      int `json:"pending"`
	Lost         int `json:"lost"`
}

// Example shows the runs of a job with an unexplained duplicate, or one
// that a settlement reported on time after its lease lapsed explains.
type Example struct {
	Job   string   `json:"job"`
	Cause Cause    `json:"cause"`
	Runs  []string `json:"runs"`
}

// Processes is how the worker processes started and stopped.
type Processes struct {
	Started    int `json:"started"`
	Terminated int `json:"sigterm"`
	Killed     int `json:"sigkill"`
	// DeadlineKills counts lambda processes killed because an invocation
	// outlived its deadline (not counted in Killed).
	DeadlineKills int `json:"deadlineKills,omitempty"`
	Hung          int `json:"hung"`
	Crashed       int `json:"crashed"`
	// ExitMax is the longest a SIGTERMed process took to exit (from the
	// signal sent to the process gone); RunReturnMax the longest its Run
	// took to return after the process got the signal.
	ExitMax      time.Duration `json:"exitMax"`
	RunReturnMax time.Duration `json:"runReturnMax"`
	RunOverBound int           `json:"runOverBound"`
	// ReceiveStopMax is the longest a SIGTERMed worker went on receiving
	// (ExitRecord.ReceiveStop); ReceivesAfterSignal counts the receive calls
	// begun after the signal.
	ReceiveStopMax      time.Duration `json:"receiveStopMax"`
	ReceivesAfterSignal int           `json:"receivesAfterSignal"`
	// UnstartedReleased counts the messages SIGTERMed workers released
	// without running them, and ReleaseMax the longest from the signal to
	// SQS's confirmation of such a release.
	UnstartedReleased int           `json:"unstartedReleased"`
	ReleaseMax        time.Duration `json:"releaseMax"`
	HungNames         []string      `json:"hungNames,omitempty"`
	CrashedNames      []string      `json:"crashedNames,omitempty"`
	Races             int           `json:"races"`
	RaceNames         []string      `json:"raceNames,omitempty"`
	RunErrors         []string      `json:"runErrors,omitempty"`
}

// WorkerStats is the sum of the worker.Stats fields the report shows.
type WorkerStats struct {
	Received, Succeeded, Failed, Deleted, Retried, DeadLettered, Released,
	Lost, Abandoned, DeleteRetried, SettledLate, HookDropped, Extensions, LateExtensions int64
}

// Timing is how long the phases took.
type Timing struct {
	Send  time.Duration `json:"send"`  // sending the jobs
	Chaos time.Duration `json:"chaos"` // faults and kills
	Drain time.Duration `json:"drain"` // no faults, until the queue was empty
	// Work is from the first worker's start to the drained queue.
	Work    time.Duration `json:"work"`
	Drained bool          `json:"drained"` // the queue was empty before DrainTimeout
	// Start is when the first worker started.
	Start time.Time `json:"start"`
	// Feed is the time spent sending the jobs sent while the workers
	// worked (Soak.Backlog); Send counts only the ones sent before.
	Feed time.Duration `json:"feed,omitempty"`
}

// Passed reports whether the run met every acceptance criterion.
func (r *Report) Passed() bool { return len(r.Failures) == 0 }

// Text is the report for people.
func (r *Report) Text() string {
	if r.Producer != nil {
		return r.producerText()
	}
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	c := r.Config
	kind := "standard"
	if r.FIFO {
		kind = fmt.Sprintf("FIFO, %d groups", c.Groups)
	}
	p("chaos report: variant %s, seed %d, %d jobs, %d worker processes, %s queue", r.Variant, r.Seed, r.Jobs, r.Workers, kind)
	p("  faults: %s", faultsText(c.Faults))
	if c.Kills.MaxEvery > 0 {
		p("  kills: every %v-%v, %.0f%% SIGKILL, the rest SIGTERM", c.Kills.MinEvery, c.Kills.MaxEvery, 100*c.Kills.KillShare)
	} else {
		p("  kills: none")
	}
	p("  visibility %v, slow jobs %v, concurrency %d per worker, ShutdownTimeout %v + FlushTimeout %v, CallTimeout %v",
		c.Visibility, c.Mix.SlowFor, c.Worker.Concurrency, c.Worker.ShutdownTimeout, c.Worker.FlushTimeout, c.Worker.CallTimeout)
	p("  time: send %v, chaos %v, drain %v (drained: %v); %.0f jobs/s", r.Timing.Send.Round(time.Millisecond), r.Timing.Chaos.Round(time.Millisecond),
		r.Timing.Drain.Round(time.Millisecond), r.Timing.Drained, r.Throughput)
	p("")
	p("fate: sent %d = done %d + DLQ %d + pending %d + lost %d (overlaps counted in misplaced)", r.Jobs, r.Done, r.DeadLettered, r.Pending, r.Lost)
	if r.Fanout != nil {
		p("  and the subscription DLQ: %d (SNS could not deliver them)", r.Fanout.SubscriptionDLQ)
	}
	for _, k := range kinds() {
		kc := r.ByKind[k]
		if kc == nil || kc.Jobs == 0 {
			continue
		}
		p("  %-9s %6d jobs: done %d, DLQ %d, pending %d, lost %d", k, kc.Jobs, kc.Done, kc.DeadLettered, kc.Pending, kc.Lost)
	}
	if r.Unread > 0 || r.DLQUnread > 0 {
		p("  the queue still counted %d messages and the DLQ %d that the final reads could not see", r.Unread, r.DLQUnread)
	}
	p("misplaced: succeeded in DLQ %d, transient in DLQ %d, other in DLQ %d, poison not in DLQ %d, poison without provenance %d, DLQ without provenance %d",
		r.SucceededInDLQ, r.TransientInDLQ, r.OtherInDLQ, r.PoisonNotInDLQ, r.PoisonWithoutProvenance, r.DLQWithoutProvenance)
	for _, m := range r.Misplaced {
		p("  %s", m)
	}
	p("duplicates: %d extra successes over %d jobs%s", r.Duplicates, r.DuplicateJobs, causesText(r.DuplicatesBy))
	p("DLQ duplicates: %d extra copies%s", r.DLQDuplicates, causesText(r.DLQDuplicatesBy))
	for _, ex := range r.Unexplained {
		p("  %s (%s):", ex.Job, ex.Cause)
		for _, run := range ex.Runs {
			p("    %s", run)
		}
	}
	if r.LapsedUnreported > 0 {
		p("  %d settlements were confirmed after their lease lapsed yet reported on time (not Late)", r.LapsedUnreported)
	}
	if r.MissingSettlements > 0 {
		p("  %d completed runs of processes that were not killed logged no settlement event", r.MissingSettlements)
	}
	if r.FIFO {
		p("FIFO order: %d jobs checked in %d groups, %d violations", r.OrderChecked, r.Groups, r.OrderViolations)
		for _, e := range r.OrderExamples {
			p("  %s", e)
		}
	}
	if r.Fanout != nil {
		r.Fanout.text(p)
	}
	pr := r.Processes
	p("processes: %d started, %d SIGTERM, %d SIGKILL, %d hung, %d crashed; after SIGTERM Run returned within %v (bound %v), processes exited within %v",
		pr.Started, pr.Terminated, pr.Killed, pr.Hung, pr.Crashed, pr.RunReturnMax.Round(time.Millisecond), r.ShutdownBound, pr.ExitMax.Round(time.Millisecond))
	p("after SIGTERM receiving stopped within %v (the end of the last receive call); %d receive calls began after the signal",
		pr.ReceiveStopMax.Round(time.Millisecond), pr.ReceivesAfterSignal)
	p("  %d messages released unstarted (prefetched, or received as the worker stopped), each confirmed within %v of the signal",
		pr.UnstartedReleased, pr.ReleaseMax.Round(time.Millisecond))
	w := r.WorkerStats
	if c.Worker.Mode != ModeLambda { // the Lambda adapter keeps no Stats
		p("worker stats (processes that exited through Run): received %d, succeeded %d, failed %d, deleted %d, retried %d, dead-lettered %d, released %d, lost %d, abandoned %d, deletes retried %d, settled late %d, hook dropped %d, extensions %d (late %d)",
			w.Received, w.Succeeded, w.Failed, w.Deleted, w.Retried, w.DeadLettered, w.Released, w.Lost, w.Abandoned, w.DeleteRetried, w.SettledLate, w.HookDropped, w.Extensions, w.LateExtensions)
	}
	if r.Memory != nil {
		r.Memory.text(p, r)
	}
	p("handler runs: %d (%.4f per job)", r.HandlerRuns, r.RunsPerJob)
	p("requests through the proxy: %d (%.3f per job)", r.TotalRequests, r.RequestsPerJob)
	names := make([]string, 0, len(r.Requests))
	for n := range r.Requests {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		c := r.Requests[n]
		var faults []string
		for _, k := range []faultproxy.Kind{faultproxy.Throttle, faultproxy.ServerError, faultproxy.Reset, faultproxy.DropResponse, faultproxy.Hang} {
			if v := c.Faults[k]; v > 0 {
				faults = append(faults, fmt.Sprintf("%d %s", v, k))
			}
		}
		p("  %-28s %7d (%.3f per job)  faults: %s", n, c.Requests, float64(c.Requests)/float64(max(r.Jobs, 1)), strings.Join(faults, ", "))
	}
	b.WriteString(r.idempotencyText())
	b.WriteString(r.uniqueText())
	b.WriteString(r.lambdaText())
	p("")
	if r.Passed() {
		p("PASS")
	} else {
		p("FAIL:")
		for _, f := range r.Failures {
			p("  - %s", f)
		}
	}
	return b.String()
}

func causesText(by map[Cause]int) string {
	var parts []string
	for _, c := range causes() {
		if n := by[c]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", c, n))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return ": " + strings.Join(parts, ", ")
}

func faultsText(rules map[string]faultproxy.Rule) string {
	if len(rules) == 0 {
		return "none"
	}
	names := make([]string, 0, len(rules))
	for n := range rules {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []string
	for _, n := range names {
		r := rules[n]
		var parts []string
		for _, f := range []struct {
			name string
			p    float64
		}{{"throttle", r.Throttle}, {"5xx", r.ServerError}, {"reset", r.Reset}, {"dropped response", r.DropResponse}, {"hang", r.Hang}} {
			if f.p > 0 {
				parts = append(parts, fmt.Sprintf("%g%% %s", 100*f.p, f.name))
			}
		}
		if r.Every > 0 {
			parts = append(parts, fmt.Sprintf("every %d-th %s", r.Every, r.EveryKind))
		}
		if r.Latency > 0 || r.LatencyJitter > 0 {
			parts = append(parts, fmt.Sprintf("latency %v+%v", r.Latency, r.LatencyJitter))
		}
		who := n
		if n == "*" {
			who = "every action"
		}
		out = append(out, who+": "+strings.Join(parts, ", "))
	}
	return strings.Join(out, "; ")
}
