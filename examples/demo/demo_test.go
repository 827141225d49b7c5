package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sqsworker/sqsworker/harness/testenv"
	"github.com/sqsworker/sqsworker/sqstest"
)

// quickSettings is the demo scaled down to a few seconds: the same story
// with fewer jobs, a 2 s visibility timeout, a 5 s long job and retries
// after 1 s and 2 s.
func quickSettings() settings {
	return settings{
		Jobs:        60,
		Concurrency: 16,
		Visibility:  2 * time.Second,
		LongJob:     5 * time.Second,
		Work:        [2]time.Duration{20 * time.Millisecond, 100 * time.Millisecond},
		SendOver:    time.Second,
		Policy:      `{"healthyRetryPolicy": {"minDelayTarget": 1, "maxDelayTarget": 2, "numRetries": 2}}`,
		Progress:    time.Second,
		Settle:      30 * time.Second,
	}
}

// checkSummary checks the reconciliation of a run with s.
func checkSummary(t *testing.T, sum summary, s settings, out string) {
	t.Helper()
	// Done: all but the doomed job and the two poison ones (the fixable one
	// is redriven and done).
	want := summary{Sent: s.Jobs, Done: s.Jobs - 3, InDLQ: 3, DLQCount: 3, Redriven: 1, LongJobRuns: 1}
	if sum.Sent != want.Sent || sum.Done != want.Done || sum.InDLQ != want.InDLQ || sum.DLQCount != want.DLQCount ||
		sum.Lost != 0 || sum.Waiting != 0 || sum.Duplicates != 0 || sum.Redriven != want.Redriven ||
		sum.LongJobRuns != want.LongJobRuns || sum.LongJobExtensions == 0 {
		t.Errorf("summary %+v; want sent %d = done %d + in DLQ %d (dlq.Count %d), none lost, waiting or duplicated, 1 redriven, the long job run once and extended",
			sum, want.Sent, want.Done, want.InDLQ, want.DLQCount)
	}
	// Three flaky jobs retried twice, the doomed one twice before the DLQ.
	if len(sum.Retries) != 8 {
		t.Errorf("%d retries recorded, want 8: %+v", len(sum.Retries), sum.Retries)
	}
	// What the output says reads in order: the redrive's move of job 37
	// before the worker receiving it again, and stamps never going back.
	moved, again := strings.Index(out, "job 37 moved back to"), strings.Index(out, "job 37 received again")
	if moved < 0 || again < 0 || again < moved {
		t.Errorf("\"job 37 received again\" (at %d) printed before \"moved back\" (at %d)", again, moved)
	}
	checkStampsInOrder(t, out)
	for _, jargon := range []string{"dlq.Inspect", "dlq.Count", "dlq.Redrive"} {
		if strings.Contains(out, jargon) {
			t.Errorf("output speaks of %s; say it in words", jargon)
		}
	}
	for _, line := range []string{
		"job 0 heartbeat: visibility extended",
		"job 17 retry 2 at +",
		"job 23 -> dead-letter queue: retries exhausted after 3 attempts",
		"job 31 -> dead-letter queue: permanent failure",
		"job 37 moved back to",
		"job 37 done by handler v2",
		"lost 0, duplicates 0, SQS requests per job",
		"SQS cost per million jobs $",
	} {
		if !strings.Contains(out, line) {
			t.Errorf("output lacks %q", line)
		}
	}
}

// TestDemoFake runs the full-size demo against the in-memory SQS in a
// synctest bubble: a few seconds of SQS behaviour in virtual time, with the
// retries exactly on schedule.
func TestDemoFake(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := defaultSettings()
		var out bytes.Buffer
		sum, err := run(t.Context(), &out, sqstest.For(t), s)
		t.Log("\n" + out.String())
		if err != nil {
			t.Fatal(err)
		}
		want := summary{Sent: s.Jobs, Done: s.Jobs - 3, InDLQ: 3}
		if sum.Sent != want.Sent || sum.Done != want.Done || sum.InDLQ != want.InDLQ || sum.Lost != 0 || sum.Duplicates != 0 {
			t.Errorf("summary %+v; want sent %d = done %d + in DLQ %d", sum, want.Sent, want.Done, want.InDLQ)
		}
		if want := sum.RequestsPerJob * 0.40; sum.CostPerMillionJobs < want*0.99 || sum.CostPerMillionJobs > want*1.5 {
			t.Errorf("cost per million jobs $%.3f; want about %.2f requests per job × $0.40 = $%.3f", sum.CostPerMillionJobs, sum.RequestsPerJob, want)
		}
		if sum.LongJobRuns != 1 || sum.LongJobExtensions < 2 {
			t.Errorf("long job ran %d times with %d extensions; want once, extended at least twice (12 s on a 5 s timeout)", sum.LongJobRuns, sum.LongJobExtensions)
		}
		// 3 flaky jobs retried twice, the doomed job three times.
		if len(sum.Retries) != 9 {
			t.Errorf("%d retries, want 9: %+v", len(sum.Retries), sum.Retries)
		}
		for _, r := range sum.Retries {
			if late := r.At - r.Schedule; late < 0 || late > 500*time.Millisecond {
				t.Errorf("job %d retry %d at %v, schedule %v: want on schedule, within 0.5 s", r.Job, r.Retry, r.At, r.Schedule)
			}
		}
	})
}

// TestDemoEmulator runs the demo, scaled down, against the local SQS
// (fauxqs under make test, or the configured endpoint).
func TestDemoEmulator(t *testing.T) {
	client := testenv.SQS(t)
	s := quickSettings()
	var out bytes.Buffer
	sum, err := run(t.Context(), &out, client, s)
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}
	checkSummary(t, sum, s, out.String())
}

// TestDemoFakeQuick runs the scaled-down settings on the fake too, so the
// emulator test's expectations are checked without an emulator.
func TestDemoFakeQuick(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := quickSettings()
		var out bytes.Buffer
		sum, err := run(t.Context(), &out, sqstest.For(t), s)
		if err != nil {
			t.Fatalf("%v\n%s", err, out.String())
		}
		checkSummary(t, sum, s, out.String())
	})
}

func TestBodiesMatchKinds(t *testing.T) {
	s := defaultSettings()
	if b := body(longJob, s); !strings.Contains(b, `"work_ms":12000`) {
		t.Errorf("long job body %s", b)
	}
	for _, id := range poisonJobs {
		if b := body(id, s); !strings.HasPrefix(b, "<") && !strings.Contains(b, "12,50") {
			t.Errorf("poison job %d body %s is not malformed", id, b)
		}
	}
	if b := body(fixableJob, s); !strings.Contains(b, `"CHF"`) {
		t.Errorf("fixable job body %s", b)
	}
}

// checkStampsInOrder checks that the "+12.3s" stamps of out's lines never
// decrease.
func checkStampsInOrder(t *testing.T, out string) {
	t.Helper()
	last := -1.0
	for _, line := range strings.Split(out, "\n") {
		var secs float64
		if _, err := fmt.Sscanf(strings.TrimSpace(line), "+%fs", &secs); err != nil {
			continue
		}
		if secs < last {
			t.Errorf("line %q is stamped before the line above it (+%.1fs)", line, last)
		}
		last = secs
	}
}

// TestConsoleRedrawsTheProgressLineAsOfNow: on a terminal, an event printed
// above the progress line redraws it with the current time, not the time
// it was first drawn, which would be older than the event above it.
func TestConsoleRedrawsTheProgressLineAsOfNow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf bytes.Buffer
		c := newConsole(&buf)
		c.tty = true
		time.Sleep(time.Second)
		c.Status("sent 10")
		time.Sleep(2 * time.Second)
		c.Eventf("job 3 done")
		want := "\r\x1b[K  +1.0s  sent 10" + "\r\x1b[K  +3.0s  job 3 done\n" + "  +3.0s  sent 10"
		if got := buf.String(); got != want {
			t.Errorf("terminal output %q, want %q", got, want)
		}
	})
}
