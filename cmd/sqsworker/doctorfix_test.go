package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/sqsworker/sqsworker/dlq"
)

// setupFixPattern matches a command a fix gives.
var setupFixPattern = regexp.MustCompile("`sqsworker (setup [^`]+)`")

// doctor gives each fix setup can apply as the command that applies it, not
// as a RedrivePolicy JSON or an attribute value: running the commands it
// prints clears those findings.
func TestDoctorFixesAreSetupCommands(t *testing.T) {
	h := newHarness(t)
	doctorQueues(t, h)
	args := []string{"doctor", "emails", "invoices", "--policy", "testdata/doctor-policy.json", "--lambda-timeout", "1m", "--no-subscriptions", "-o", "json"}
	code, out, errOut := h.run(t, args...)
	if code != exitProblems {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var reports []doctorReport
	if err := json.Unmarshal([]byte(out), &reports); err != nil {
		t.Fatal(err)
	}
	applicable := map[string]bool{"no-redrive-policy": true, "max-receive-count-low": true, "retention-short": true,
		"visibility-too-short": true, "lambda-visibility": true, "dlq-retention-not-longer": true}
	var commands []string
	seen := map[string]bool{}
	for _, r := range reports {
		for _, f := range r.Findings {
			if !applicable[f.Code] {
				continue
			}
			seen[f.Code] = true
			if strings.Contains(f.Fix, "deadLetterTargetArn") || strings.Contains(f.Fix, "1209600") {
				t.Errorf("%s %s: the fix gives a raw value: %q", r.Queue, f.Code, f.Fix)
			}
			m := setupFixPattern.FindStringSubmatch(f.Fix)
			if m == nil || !strings.HasPrefix(f.Fix, "run `sqsworker setup "+r.Queue+" ") {
				t.Errorf("%s %s: the fix is not a setup command: %q", r.Queue, f.Code, f.Fix)
				continue
			}
			commands = append(commands, m[1])
		}
	}
	if len(seen) != len(applicable) {
		t.Fatalf("doctor reported %v of %v; the test's queues should have them all", seen, applicable)
	}
	for _, c := range commands {
		if code, out, errOut := h.run(t, strings.Fields(c)...); code != exitOK {
			t.Errorf("sqsworker %s: exit %d\n%s%s", c, code, out, errOut)
		}
	}
	_, out, _ = h.run(t, args...)
	reports = nil
	if err := json.Unmarshal([]byte(out), &reports); err != nil {
		t.Fatal(err)
	}
	for _, r := range reports {
		for _, f := range r.Findings {
			if f.Severity >= dlq.SeverityWarning {
				t.Errorf("after running the fixes, %s still has %s: %s (fix: %s)", r.Queue, f.Code, f.Message, f.Fix)
			}
		}
	}
}
