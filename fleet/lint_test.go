package fleet_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/fleet"
	"github.com/sqsworker/sqsworker/sqstest"
)

// Lint's rule on a FIFO queue (where a snooze hides the message, a
// receive): maxReceiveCount ≥ attempts + the snoozes a job may meet (50 by
// default), else a warning (an error when no snooze fits); and a warning
// unless attempts are counted exactly (dynamocounter). Each finding says
// what to change. On a standard queue snoozes are relayed and spend no
// receive: nothing to report, whatever maxReceiveCount.
func TestLintReceiveBudget(t *testing.T) {
	sq := sqstest.For(t)
	codes := func(fs []dlq.Finding) map[string]dlq.Severity {
		m := map[string]dlq.Severity{}
		for _, f := range fs {
			m[f.Code] = f.Severity
			if f.Message == "" || f.Fix == "" {
				t.Errorf("finding %s without a message or a fix: %+v", f.Code, f)
			}
		}
		return m
	}
	for _, c := range []struct {
		name        string
		maxReceives int
		opts        fleet.LintOptions
		want        map[string]dlq.Severity
		fix         string
	}{
		{"default-5", 5, fleet.LintOptions{},
			map[string]dlq.Severity{fleet.CodeReceiveBudget: dlq.SeverityWarning, fleet.CodeApproximateAttempts: dlq.SeverityWarning}, "--max-receive-count 54"},
		{"no-room", 4, fleet.LintOptions{ExactAttempts: true},
			map[string]dlq.Severity{fleet.CodeReceiveBudget: dlq.SeverityError}, "at least 54"},
		{"roomy-exact", 100, fleet.LintOptions{ExactAttempts: true}, map[string]dlq.Severity{}, ""},
		{"roomy-approximate", 100, fleet.LintOptions{}, map[string]dlq.Severity{fleet.CodeApproximateAttempts: dlq.SeverityWarning}, "dynamocounter"},
		{"more-snoozes", 100, fleet.LintOptions{Attempts: 10, Snoozes: 200, ExactAttempts: true},
			map[string]dlq.Severity{fleet.CodeReceiveBudget: dlq.SeverityWarning}, "at least 210"},
		{"capped-at-1000", 1000, fleet.LintOptions{Attempts: 10, Snoozes: 5000, ExactAttempts: true}, map[string]dlq.Severity{}, ""},
	} {
		src, _ := sq.MustCreateQueueWithDLQ(t, "orders-"+c.name+".fifo", c.maxReceives, nil)
		fs, err := fleet.Lint(context.Background(), sq, src, c.opts)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := codes(fs); len(got) != len(c.want) {
			t.Errorf("%s: findings %v, want %v", c.name, got, c.want)
		} else {
			for code, sev := range c.want {
				if got[code] != sev {
					t.Errorf("%s: %s is %v, want %v", c.name, code, got[code], sev)
				}
			}
		}
		if c.fix != "" && !strings.Contains(fs[0].Fix, c.fix) {
			t.Errorf("%s: fix %q, want it to say %q", c.name, fs[0].Fix, c.fix)
		}
	}
	for _, maxReceives := range []int{2, 5, 100} {
		src, _ := sq.MustCreateQueueWithDLQ(t, fmt.Sprintf("standard-%d", maxReceives), maxReceives, nil)
		if fs, err := fleet.Lint(context.Background(), sq, src, fleet.LintOptions{}); err != nil || len(fs) != 0 {
			t.Errorf("a standard queue with maxReceiveCount %d: %v, %v; want nothing (snoozes are relayed)", maxReceives, fs, err)
		}
	}
	plain := sq.MustCreateQueue(t, "no-dlq", nil)
	if fs, err := fleet.Lint(context.Background(), sq, plain, fleet.LintOptions{}); err != nil || len(fs) != 0 {
		t.Errorf("a queue without a RedrivePolicy: %v, %v; want nothing (dlq.Lint reports it)", fs, err)
	}
	if _, err := fleet.Lint(context.Background(), sq, plain, fleet.LintOptions{Snoozes: -1}); err == nil {
		t.Error("negative Snoozes accepted")
	}
}
