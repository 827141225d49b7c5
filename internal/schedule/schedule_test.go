package schedule

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sqsworker/sqsworker/internal/sqslimit"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestDecideTable(t *testing.T) {
	due := t0.Add(30 * 24 * time.Hour)
	base := Input{Due: due, ReceiveCount: 1, MaxReceiveCount: 5, Retention: 4 * 24 * time.Hour}
	at := func(now time.Time, mut func(*Input)) Input {
		in := base
		in.Now, in.ReceivedAt, in.SentAt, in.FirstReceivedAt = now, now, now.Add(-15*time.Minute), now
		if mut != nil {
			mut(&in)
		}
		return in
	}
	for _, tc := range []struct {
		name string
		in   Input
		want Decision
	}{
		{"far off: hide for 12 h", at(t0, nil), Decision{Hide, 12 * time.Hour}},
		{"12 h cap counts from the receive", at(t0, func(in *Input) { in.ReceivedAt = t0.Add(-2 * time.Hour) }), Decision{Hide, 10 * time.Hour}},
		{"hide ends at the final approach", at(due.Add(-time.Hour), nil), Decision{Hide, 45 * time.Minute}},
		{"final approach: fresh copy due on time", at(due.Add(-10*time.Minute-300*time.Millisecond), nil), Decision{Resend, 10*time.Minute + time.Second}},
		{"due: run", at(due, nil), Decision{Run, 0}},
		{"overdue, first copy: run", at(due.Add(time.Hour), nil), Decision{Run, 0}},
		{"retry of the due delivery: run", at(due.Add(time.Hour), func(in *Input) { in.ReceiveCount, in.FirstReceivedAt = 3, due }), Decision{Run, 0}},
		{"late after hops: fresh copy runs as attempt 1", at(due.Add(time.Hour), func(in *Input) { in.ReceiveCount, in.FirstReceivedAt = 3, due.Add(-48*time.Hour) }), Decision{Resend, 0}},
		{"receive count near the limit: re-send", at(t0, func(in *Input) { in.ReceiveCount = 4 }), Decision{Resend, 15 * time.Minute}},
		{"last hide the count allows", at(t0, func(in *Input) { in.ReceiveCount = 3 }), Decision{Hide, 12 * time.Hour}},
		{"no redrive policy: hide at any count", at(t0, func(in *Input) { in.ReceiveCount, in.MaxReceiveCount = 400, 0 }), Decision{Hide, 12 * time.Hour}},
		{"maxReceiveCount 2: re-send only", at(t0, func(in *Input) { in.MaxReceiveCount = 2 }), Decision{Resend, 15 * time.Minute}},
		{"retention: hide ends at half the retention", at(t0, func(in *Input) { in.SentAt = t0.Add(-40 * time.Hour) }), Decision{Hide, 8 * time.Hour}},
		{"retention: too little left, re-send", at(t0, func(in *Input) { in.SentAt = t0.Add(-48*time.Hour + 10*time.Minute) }), Decision{Resend, 15 * time.Minute}},
		{"short retention shortens hops", at(due.Add(-50*time.Second), func(in *Input) { in.Retention = time.Minute }), Decision{Resend, 20 * time.Second}},
		{"NoHide", at(t0, func(in *Input) { in.NoHide = true }), Decision{Resend, 15 * time.Minute}},
		{"zero times default to Now", Input{Due: due, Now: t0, ReceiveCount: 1}, Decision{Hide, 12 * time.Hour}},
	} {
		if got := Decide(tc.in); got != tc.want {
			t.Errorf("%s: Decide = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// sqsModel simulates one delayed job on an SQS queue, driven by Decide: the
// copies SQS holds, their receive counts and retention, a consumer that
// receives each copy when it becomes visible (after a lag), and the calls
// made.
type sqsModel struct {
	t         *testing.T
	rng       *rand.Rand
	maxRecv   int           // RedrivePolicy maxReceiveCount; 0: none
	retention time.Duration // queue retention
	vis       time.Duration // queue visibility timeout (a lost hide ends after it)
	lag       time.Duration // most a receive trails visibility
	lost      float64       // chance that a receive is one the consumer never sees
	noHide    bool
	failures  int // handler failures before success

	due        time.Time
	receives   int
	hides      int
	sends      int // re-sends (the producer's first send not counted)
	deletes    int
	runs       []run
	maxCount   int
	failedLeft int
}

type run struct {
	at    time.Time
	count int
}

type copyState struct {
	sent, visible, firstRecv time.Time
	count, unseen            int
}

// simulate runs one job sent at start and due at due; it returns when the
// job has run successfully, or fails t when SQS would dead-letter or expire
// it.
func (s *sqsModel) simulate(start, due time.Time) {
	s.t.Helper()
	s.due = due
	s.failedLeft = s.failures
	delay, attr := Send(due, start)
	c := &copyState{sent: start, visible: start.Add(delay)}
	if !attr {
		s.t.Fatalf("job due in %v sent without the due attribute", due.Sub(start))
	}
	for steps := 0; ; steps++ {
		if steps > 10_000_000 {
			s.t.Fatal("no end after 10 million steps")
		}
		now := c.visible
		if s.lag > 0 {
			now = now.Add(time.Duration(s.rng.Int64N(int64(s.lag))))
		}
		if !now.Before(c.sent.Add(s.retention)) {
			s.t.Fatalf("copy sent at %v expired (retention %v) before its receive at %v", c.sent, s.retention, now)
		}
		s.receives++
		c.count++
		if s.maxRecv > 0 && c.count > s.maxRecv {
			s.t.Fatalf("receive %d of a copy exceeds maxReceiveCount %d: SQS dead-letters the job (due %v, now %v)", c.count, s.maxRecv, due, now)
		}
		s.maxCount = max(s.maxCount, c.count)
		if c.firstRecv.IsZero() {
			c.firstRecv = now
		}
		// A receive the consumer never sees (abandoned poll, failed call):
		// the copy stays hidden for the visibility timeout. The schedule
		// keeps Reserve receives spare for these, per copy.
		if c.unseen < Reserve && s.rng.Float64() < s.lost {
			c.unseen++
			c.visible = now.Add(s.vis)
			continue
		}
		d := Decide(Input{Due: due, Now: now, ReceivedAt: now, SentAt: c.sent, FirstReceivedAt: c.firstRecv,
			ReceiveCount: c.count, MaxReceiveCount: s.maxRecv, Retention: s.retention, NoHide: s.noHide})
		switch d.Action {
		case Run:
			s.runs = append(s.runs, run{now, c.count})
			if s.failedLeft > 0 {
				s.failedLeft--
				c.visible = now.Add(time.Minute) // the retry policy's delay
				continue
			}
			s.deletes++
			return
		case Hide:
			if d.Delay <= 0 || d.Delay > sqslimit.MaxVisibility-now.Sub(now) {
				s.t.Fatalf("hide of %v", d.Delay)
			}
			s.hides++
			c.visible = now.Add(d.Delay)
		case Resend:
			if d.Delay < 0 || d.Delay > 15*time.Minute {
				s.t.Fatalf("re-send with a delay of %v", d.Delay)
			}
			s.sends++
			s.deletes++
			c = &copyState{sent: now, visible: now.Add(d.Delay)}
		}
	}
}

func (s *sqsModel) requests() int { return s.receives + s.hides + s.sends + s.deletes }

// TestScheduleProperties simulates thousands of jobs delayed by up to 400
// days on queues of every kind and checks what the package promises: the
// job runs once, on time, as receive 1 of a fresh copy; SQS never
// dead-letters it nor lets it expire.
func TestScheduleProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	maxRecvs := []int{0, 1, 2, 3, 4, 5, 10, 100, 1000}
	retentions := []time.Duration{time.Hour, 2 * time.Hour, 24 * time.Hour, 4 * 24 * time.Hour, 14 * 24 * time.Hour}
	for i := range 3000 {
		s := &sqsModel{
			t: t, rng: rng,
			maxRecv:   maxRecvs[rng.IntN(len(maxRecvs))],
			retention: retentions[rng.IntN(len(retentions))],
			vis:       time.Duration(1+rng.IntN(120)) * time.Second,
			lag:       time.Duration(rng.IntN(30_000)) * time.Millisecond,
			noHide:    rng.IntN(8) == 0,
		}
		if s.maxRecv != 1 { // with maxReceiveCount 1 no receive may be lost
			s.lost = 0.2 * rng.Float64()
		}
		start := t0.Add(time.Duration(rng.Int64N(int64(24 * time.Hour))))
		delay := 15*time.Minute + time.Duration(rng.Int64N(int64(400*24*time.Hour)))
		if i%4 == 0 {
			delay = 15*time.Minute + time.Duration(rng.Int64N(int64(time.Hour))) // near the native limit
		}
		if s.retention < 24*time.Hour || s.noHide || (s.maxRecv > 0 && s.maxRecv <= 2) {
			delay = min(delay, 20*24*time.Hour) // 15-minute hops: keep the step count sane
		}
		due := start.Add(delay)
		name := fmt.Sprintf("job %d: delay %v, maxReceiveCount %d, retention %v, lag %v, lost %.2f, noHide %v",
			i, delay, s.maxRecv, s.retention, s.lag, s.lost, s.noHide)
		s.t = t
		t.Run("", func(t *testing.T) {
			s.t = t
			s.simulate(start, due)
			if len(s.runs) != 1 {
				t.Fatalf("%s: ran %d times", name, len(s.runs))
			}
			r := s.runs[0]
			if r.at.Before(due) {
				t.Errorf("%s: ran %v early", name, due.Sub(r.at))
			}
			if late := r.at.Sub(due); late > s.lag*(1+Reserve)+s.vis*Reserve+time.Second {
				t.Errorf("%s: ran %v late", name, late)
			}
			if r.count != 1 && !(s.lost > 0 && r.count <= 1+Reserve) {
				t.Errorf("%s: ran as receive %d of its copy, want 1", name, r.count)
			}
		})
		if t.Failed() {
			return
		}
	}
}

// TestRetriesAfterTheDueTimeCountAttempts checks that once the job has run,
// its retries keep their receive counts (attempt 2, 3, …): the rule that
// re-sends a late copy must not reset a failing job's attempts forever.
func TestRetriesAfterTheDueTimeCountAttempts(t *testing.T) {
	s := &sqsModel{t: t, rng: rand.New(rand.NewPCG(3, 4)), maxRecv: 10, retention: 4 * 24 * time.Hour, vis: 30 * time.Second, failures: 4}
	s.simulate(t0, t0.Add(30*24*time.Hour))
	if len(s.runs) != 5 {
		t.Fatalf("ran %d times, want 5 (4 failures, then success)", len(s.runs))
	}
	for i, r := range s.runs {
		if r.count != i+1 {
			t.Errorf("run %d was receive %d of its copy, want %d", i+1, r.count, i+1)
		}
	}
}

// costPerDay is the package documentation's formula: requests (receives,
// visibility changes, sends, deletes) per message per day of delay, in the
// steady state of a long delay.
func costPerDay(maxRecv int, retention time.Duration, noHide bool) float64 {
	hop := min(15*time.Minute, (retention / 2).Truncate(time.Second))
	k := math.MaxInt // hides per copy allowed by the receive count
	if maxRecv > 0 {
		k = max(maxRecv-1-Reserve, 0)
	}
	if noHide {
		k = 0
	}
	// A copy's hides end at half its retention; a last, shorter hide is
	// taken when at least hop long.
	span := retention/2 - hop // from a copy's first receive to half its retention
	kRet := int(span / sqslimit.MaxVisibility)
	if span%sqslimit.MaxVisibility >= hop {
		kRet++
	}
	var cycle time.Duration
	if k <= kRet {
		cycle = hop + time.Duration(k)*sqslimit.MaxVisibility
	} else {
		k, cycle = kRet, retention/2
	}
	return float64(2*k+3) * float64(24*time.Hour) / float64(cycle)
}

// TestCostPerDay measures requests per delayed day in the simulation and
// compares them with the documented formula (and the figures the package
// documentation quotes).
func TestCostPerDay(t *testing.T) {
	for _, tc := range []struct {
		maxRecv   int
		retention time.Duration
		noHide    bool
		doc       float64 // as quoted in doc.go; 0: not quoted
	}{
		{5, 4 * 24 * time.Hour, false, 5.96},
		{10, 4 * 24 * time.Hour, false, 5.50},
		{10, 14 * 24 * time.Hour, false, 4.74},
		{1000, 14 * 24 * time.Hour, false, 4.43},
		{0, 14 * 24 * time.Hour, false, 4.43},
		{3, 4 * 24 * time.Hour, false, 0},
		{2, 4 * 24 * time.Hour, false, 288},
		{5, 4 * 24 * time.Hour, true, 288},
		{5, 24 * time.Hour, false, 0},
	} {
		const days = 365
		s := &sqsModel{t: t, rng: rand.New(rand.NewPCG(5, 6)), maxRecv: tc.maxRecv, retention: tc.retention, vis: 30 * time.Second, noHide: tc.noHide}
		s.simulate(t0, t0.Add(days*24*time.Hour))
		measured := float64(s.requests()) / days
		formula := costPerDay(tc.maxRecv, tc.retention, tc.noHide)
		t.Logf("maxReceiveCount %d, retention %v, noHide %v: %.2f requests/day simulated, formula %.2f (hides %d, receives %d, re-sends %d, deletes %d; highest receive count %d)",
			tc.maxRecv, tc.retention, tc.noHide, measured, formula, s.hides, s.receives, s.sends, s.deletes, s.maxCount)
		if math.Abs(measured-formula) > 0.01*formula {
			t.Errorf("maxReceiveCount %d, retention %v: simulated %.3f requests/day, formula %.3f", tc.maxRecv, tc.retention, measured, formula)
		}
		if tc.doc != 0 && math.Abs(formula-tc.doc) > 0.005 {
			t.Errorf("maxReceiveCount %d, retention %v: formula gives %.3f, doc.go quotes %.2f", tc.maxRecv, tc.retention, formula, tc.doc)
		}
	}
}
