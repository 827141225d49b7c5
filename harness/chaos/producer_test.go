package chaos

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sqsworker/sqsworker/harness/faultproxy"
)

// TestProducerBounded is the producer variant, bounded for `make test`:
// 4 producer processes (built with the race detector when this test is)
// send 4,000 jobs through every fault (heavier than the variant's) with
// MaxAttempts 2, and up to three of them are SIGKILLed or SIGTERMed while
// sending. Every job reported sent
// must be in the queue under the message ID reported, every one reported
// failed absent or there from a send whose answer was lost, every copy
// beyond a job's first explained by a lost answer; and the run must have
// injected faults, lost answers, failed sends and a SIGKILL.
func TestProducerBounded(t *testing.T) {
	cfg := boundedVariant(t, "producer", false)
	cfg.Jobs, cfg.Seed = 4000, 11
	cfg.Producer.Producers, cfg.Producer.Rate, cfg.Producer.MaxKills = 4, 100, 3
	cfg.Workers = cfg.Producer.Producers
	cfg.Kills = Kills{MinEvery: 2 * time.Second, MaxEvery: 4 * time.Second, KillShare: 0.7}
	// Heavier faults than the variant's, so that some sends fail both
	// their attempts in 4,000 jobs.
	cfg.Faults = map[string]faultproxy.Rule{"*": {Throttle: 0.08, ServerError: 0.05, Reset: 0.04, DropResponse: 0.05, Hang: 0.005,
		LatencyJitter: 20 * time.Millisecond}}
	cfg.Duration = time.Minute
	cfg.Race = raceEnabled
	r := runBounded(t, cfg, 3*time.Minute, fmt.Sprintf("make chaos VARIANT=producer SEED=%d JOBS=%d", cfg.Seed, cfg.Jobs))
	pf := r.Producer
	if r.Processes.Killed == 0 || pf.LostAnswers == 0 || pf.ReportedFailed == 0 || pf.ReportedSent == 0 ||
		r.Requests["SendMessageBatch"].Faults[faultproxy.Throttle] == 0 {
		t.Fatalf("the run did not exercise what it should: %d SIGKILL, %d answers lost, %d sends failed, %d sent, %v",
			r.Processes.Killed, pf.LostAnswers, pf.ReportedFailed, pf.ReportedSent, r.Requests["SendMessageBatch"])
	}
}

// producerWorld builds a producer run's evidence by hand.
func producerWorld(jobs ...Job) *producerEvidence {
	cfg, _ := Variant("producer")
	return &producerEvidence{Config: cfg, Jobs: jobs, Names: []string{"w1", "w2"}, Procs: map[string]procInfo{"w1": {}, "w2": {Signal: "SIGKILL"}},
		Exits: map[string]ProducerExit{}, LostSends: map[string]int{}, Reached: map[string]int{}}
}

func (ev *producerEvidence) send(job, worker string, evs ...string) {
	for _, e := range evs {
		r := SendRecord{Job: job, Worker: worker, Ev: e}
		if e == "sent" {
			r.Message = "m-" + job
		}
		ev.Sends = append(ev.Sends, r)
	}
}

func (ev *producerEvidence) copy(job, id string) {
	ev.Received = append(ev.Received, receivedCopy{Job: job, Message: id})
}

func TestReconcileProducerCleanRun(t *testing.T) {
	jobs := []Job{{ID: "a"}, {ID: "b"}, {ID: "c"}, {ID: "d"}, {ID: "e"}, {ID: "f"}}
	ev := producerWorld(jobs...)
	reached := func(i, n int) { ev.Reached[faultproxy.BodyDigest(jobs[i].Body())] = n }
	ev.send("a", "w1", "given", "sent")
	ev.copy("a", "m-a")
	reached(0, 1)
	ev.send("b", "w1", "given", "sent") // sent twice: the first answer was lost
	ev.copy("b", "m-b")
	ev.copy("b", "m-b2")
	reached(1, 2)
	ev.LostSends[faultproxy.BodyDigest(jobs[1].Body())] = 1
	ev.send("c", "w1", "given", "failed") // failed, absent
	ev.send("d", "w1", "given", "failed") // failed, present from a lost answer
	ev.copy("d", "m-d")
	reached(3, 1)
	ev.LostSends[faultproxy.BodyDigest(jobs[3].Body())] = 1
	ev.send("e", "w2", "given") // its producer was SIGKILLed first
	ev.copy("e", "m-e")
	reached(4, 1)
	// f was never given.
	r := reconcileProducer(*ev)
	if !r.Passed() {
		t.Fatalf("failures: %v", r.Failures)
	}
	pf := r.Producer
	if pf.ReportedSent != 2 || pf.ReportedFailed != 2 || pf.FailedAbsent != 1 || pf.FailedPresent != 1 || pf.Unreported != 1 ||
		pf.UnreportedPresent != 1 || pf.NotGiven != 1 || pf.Duplicates != 1 || pf.DuplicatesLostAnswer != 1 || pf.LostAnswers != 2 {
		t.Fatalf("figures %+v", pf)
	}
}

// TestReconcileProducerCatchesBrokenPromises: each way a producer could
// break its word fails the run.
func TestReconcileProducerCatchesBrokenPromises(t *testing.T) {
	for _, c := range []struct {
		name  string
		build func(ev *producerEvidence)
		want  string
	}{
		{"a reported send missing", func(ev *producerEvidence) {
			ev.send("a", "w1", "given", "sent")
			ev.Reached[faultproxy.BodyDigest(Job{ID: "a"}.Body())] = 1
		}, "not in the queue"},
		{"a reported send under another ID", func(ev *producerEvidence) {
			ev.send("a", "w1", "given", "sent")
			ev.copy("a", "m-other")
		}, "message ID"},
		{"a failed send present though none reached SQS", func(ev *producerEvidence) {
			ev.send("a", "w1", "given", "failed")
			ev.copy("a", "m-a")
		}, "reported failed are in the queue"},
		{"a duplicate without a second send reaching SQS", func(ev *producerEvidence) {
			ev.send("a", "w1", "given", "sent")
			ev.copy("a", "m-a")
			ev.copy("a", "m-a2")
			ev.Reached[faultproxy.BodyDigest(Job{ID: "a"}.Body())] = 1
		}, "duplicate copies"},
		{"a message never given", func(ev *producerEvidence) { ev.copy("a", "m-a") }, "never given"},
		{"no result without a kill", func(ev *producerEvidence) { ev.send("a", "w1", "given") }, "got no Result"},
		{"a message of another run", func(ev *producerEvidence) { ev.copy("?", "m-x") }, "no job of this run"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ev := producerWorld(Job{ID: "a"})
			c.build(ev)
			r := reconcileProducer(*ev)
			if r.Passed() || !strings.Contains(strings.Join(r.Failures, "; "), c.want) {
				t.Fatalf("failures %v; want one about %q", r.Failures, c.want)
			}
		})
	}
}

// TestRereportProducer: a producer run's saved evidence reconciles again
// to the same report.
func TestRereportProducer(t *testing.T) {
	ev := producerWorld(Job{ID: "a"}, Job{ID: "b"})
	ev.send("a", "w1", "given", "sent")
	ev.copy("a", "m-a")
	ev.Reached[faultproxy.BodyDigest(Job{ID: "a"}.Body())] = 1
	ev.send("b", "w2", "given")
	dir := t.TempDir()
	if err := writeJSON(filepath.Join(dir, producerEvidenceFile), ev); err != nil {
		t.Fatal(err)
	}
	r, err := Rereport(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := reconcileProducer(*ev)
	if !r.Passed() || r.Producer.ReportedSent != 1 || r.Producer.Unreported != 1 || r.Text() != want.Text() {
		t.Fatalf("rereported:\n%s\nwant:\n%s", r.Text(), want.Text())
	}
}
