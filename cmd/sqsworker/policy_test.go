package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestPolicyPreviewGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"policy-default", []string{"policy", "preview"}},
		{"policy-sns-example", []string{"policy", "preview", "testdata/sns-example-policy.json", "--width", "30"}},
		{"policy-flags", []string{"policy", "preview", "--min-delay", "5", "--max-delay", "260", "--retries", "10", "--backoff", "geometric"}},
		{"policy-compare", []string{"policy", "preview", "--compare", "--min-delay", "5", "--max-delay", "260", "--retries", "10"}},
		{"policy-compare-phases", []string{"policy", "preview", "testdata/sns-example-policy.json", "--compare", "--retries", "12", "--max-delay-retries", "2", "--width", "40"}},
		{"policy-sqs-only", []string{"policy", "preview", "--min-delay", "60", "--max-delay", "7200", "--retries", "5", "--backoff", "exponential"}},
		{"policy-json", []string{"policy", "preview", "--retries", "4", "--min-delay", "10", "--max-delay", "80", "--backoff", "exponential", "-o", "json"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := newHarness(t).run(t, tc.args...)
			if code != exitOK || errOut != "" {
				t.Fatalf("exit %d, stderr %q", code, errOut)
			}
			golden(t, tc.name, out)
		})
	}
}

func TestPolicyPreviewFromStdinAndSNSCheck(t *testing.T) {
	h := newHarness(t)
	h.stdin = `{"numRetries": 2, "minDelayTarget": 7200, "maxDelayTarget": 7200}`
	code, out, errOut := h.run(t, "policy", "preview", "-", "-o", "json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got struct {
		Deliveries   int     `json:"deliveries"`
		Total        float64 `json:"totalSeconds"`
		SNSCompliant bool    `json:"snsCompliant"`
		SNSError     string  `json:"snsError"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if got.Deliveries != 3 || got.Total != 14400 || got.SNSCompliant || got.SNSError == "" {
		t.Errorf("preview = %+v", got)
	}
	// --sns turns SNS's limits into errors.
	h.stdin = `{"numRetries": 2, "minDelayTarget": 7200, "maxDelayTarget": 7200}`
	if code, _, errOut := h.run(t, "policy", "preview", "-", "--sns"); code != exitUsage || !strings.Contains(errOut, "maxDelayTarget") {
		t.Errorf("--sns: exit %d, stderr %q", code, errOut)
	}
}
