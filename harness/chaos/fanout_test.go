package chaos

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestFanoutBounded is the fan-out variant, bounded for `make test`: 400
// jobs published to an SNS topic (snstest) whose deliveries to the queue
// fail, are retried and end in the subscription's dead-letter queue when
// the retries run out; 3 worker processes unwrap the envelopes under every
// fault with SIGKILL and SIGTERM. Every job must be done or in a DLQ with
// its reason, nothing discarded by SNS, every duplicate explained (SNS's
// own redeliveries included); and the run must have sent jobs to both
// dead-letter queues, redelivered some, and killed workers.
func TestFanoutBounded(t *testing.T) {
	cfg := boundedVariant(t, "fanout", false)
	// Seed 21's kill schedule starts with a SIGKILL 1.1 s in.
	cfg.Jobs, cfg.Workers, cfg.Seed = 400, 3, 21
	// No slow jobs (TestChaosBounded has them): the run ends sooner. One
	// delivery retry on a timer (after 1 s) instead of two, and more
	// delivery faults, so that 400 jobs put some in the subscription DLQ.
	cfg.Mix.Slow = 0
	cfg.Fanout.DeliveryRetries = 4
	cfg.Fanout.DeliveryFaults.Throttle, cfg.Fanout.DeliveryFaults.ServerError = 0.2, 0.15
	cfg.Duration, cfg.DrainTimeout = 15*time.Second, time.Minute
	cfg.Race = raceEnabled
	r := runBounded(t, cfg, 3*time.Minute, fmt.Sprintf("make chaos VARIANT=fanout SEED=%d JOBS=%d WORKERS=%d", cfg.Seed, cfg.Jobs, cfg.Workers))
	f := r.Fanout
	if f.SubscriptionDLQ == 0 || f.Redelivered == 0 || f.SNS.Retried == 0 || r.DeadLettered == 0 || r.Done == 0 || r.Processes.Killed == 0 {
		t.Fatalf("the run did not exercise what it should: %d in the subscription DLQ, %d redelivered, %d delivery retries, %d in the queue's DLQ, %d done, %d SIGKILL",
			f.SubscriptionDLQ, f.Redelivered, f.SNS.Retried, r.DeadLettered, r.Done, r.Processes.Killed)
	}
}

// fanoutWorld is a world whose jobs came through SNS.
func fanoutWorld(jobs ...Job) *world {
	w := newWorld(jobs...)
	w.ev.Config, _ = Variant("fanout")
	w.ev.Fanout = &fanoutEvidence{SubDLQ: map[string]int{}, Reached: map[string]int{}, Redelivered: map[string]int{}, Envelopes: map[string][]string{},
		DeliveryFailed: map[string]int{}, DeliveryOK: map[string]int{}}
	return w
}

func TestReconcileFanout(t *testing.T) {
	w := fanoutWorld(Job{ID: "a", Kind: Succeed}, Job{ID: "b", Kind: Succeed}, Job{ID: "c", Kind: Succeed}, Job{ID: "d", Kind: Succeed}, Job{ID: "p", Kind: Poison})
	fe := w.ev.Fanout
	w.settle(w.run("a", "w1", 1, true), "deleted", false)
	fe.DeliveryOK["a"], fe.Reached["a"] = 1, 1
	// b: SNS delivered it twice (the first send's answer was lost); both
	// copies done.
	w.settle(w.run("b", "w1", 1, true), "deleted", false)
	w.settle(w.run("b", "w2", 2, true), "deleted", false)
	fe.DeliveryFailed["b"], fe.DeliveryOK["b"], fe.Reached["b"], fe.Redelivered["b"] = 1, 1, 2, 1
	// c: every delivery failed: in the subscription DLQ only.
	fe.DeliveryFailed["c"], fe.SubDLQ["c"] = 4, 1
	// d: its last delivery reached the queue with its answer lost, then
	// SNS gave up: done and in the subscription DLQ.
	w.settle(w.run("d", "w1", 1, true), "deleted", false)
	fe.DeliveryFailed["d"], fe.SubDLQ["d"], fe.Reached["d"] = 4, 1, 1
	// p: poison, never delivered: in the subscription DLQ, not the queue's.
	fe.DeliveryFailed["p"], fe.SubDLQ["p"] = 4, 1
	r := reconcile(w.ev)
	if !r.Passed() {
		t.Fatalf("failures: %v", r.Failures)
	}
	if r.Lost != 0 || r.Fanout.SubscriptionDLQ != 3 || r.DuplicatesBy[CauseRedelivered] != 1 || r.Done != 3 {
		t.Fatalf("lost %d, subscription DLQ %d, duplicates %v, done %d", r.Lost, r.Fanout.SubscriptionDLQ, r.DuplicatesBy, r.Done)
	}
}

// TestReconcileFanoutCatchesLosses: a job nowhere is lost, a duplicate
// without a redelivery is unexplained, a subscription dead-letter copy
// without failed deliveries is unexplained, and SNS discarding a message
// fails the run.
func TestReconcileFanoutCatchesLosses(t *testing.T) {
	w := fanoutWorld(Job{ID: "a", Kind: Succeed}, Job{ID: "b", Kind: Succeed}, Job{ID: "c", Kind: Succeed})
	fe := w.ev.Fanout
	fe.DeliveryOK["a"] = 1 // delivered, never seen again
	w.settle(w.run("b", "w1", 1, true), "deleted", false)
	w.settle(w.run("b", "w2", 2, true), "deleted", false)
	fe.DeliveryOK["b"] = 1
	fe.DeliveryOK["c"], fe.SubDLQ["c"] = 1, 1
	fe.SNS.Lost = 1
	r := reconcile(w.ev)
	got := strings.Join(r.Failures, "; ")
	for _, want := range []string{"1 jobs lost", "1 unexplained duplicates", "subscription DLQ without failed deliveries", "SNS discarded 1"} {
		if !strings.Contains(got, want) {
			t.Errorf("failures %q; want %q", got, want)
		}
	}
}
