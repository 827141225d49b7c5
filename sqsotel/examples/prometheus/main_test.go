package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/sqsworker/sqsworker/harness/testenv"
)

// TestRun runs the example against the local SQS (the emulator under make
// test, or the configured endpoint), scrapes its /metrics with Prometheus's
// parser, and checks the series and Prometheus's naming conventions.
func TestRun(t *testing.T) {
	client := testenv.SQS(t)
	var out bytes.Buffer
	families, err := run(t.Context(), &out, client, "127.0.0.1:0", 0)
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}
	sum := func(name string, labels map[string]string) float64 {
		var v float64
		f := families[name]
		if f == nil {
			t.Errorf("no metric family %s", name)
			return 0
		}
	metrics:
		for _, m := range f.Metric {
			for k, want := range labels {
				if label(m, k) != want {
					continue metrics
				}
			}
			v += m.GetCounter().GetValue() + m.GetGauge().GetValue() + float64(m.GetHistogram().GetSampleCount())
		}
		return v
	}
	// 50 jobs: 44 succeed at once, 5 fail once and then succeed, 1 is poison.
	if got := sum("sqsworker_messages_total", map[string]string{"sqsworker_outcome": "deleted"}); got != 49 {
		t.Errorf("deleted %v, want 49", got)
	}
	if got := sum("sqsworker_messages_total", map[string]string{"sqsworker_outcome": "retrying"}); got != 5 {
		t.Errorf("retrying %v, want 5", got)
	}
	if got := sum("sqsworker_dead_letters_total", map[string]string{"sqsworker_reason": "permanent"}); got != 1 {
		t.Errorf("dead letters %v, want 1", got)
	}
	if got := sum("messaging_client_consumed_messages_total", nil); got != 55 {
		t.Errorf("consumed %v, want 55", got)
	}
	if got := sum("messaging_process_duration_seconds", nil); got != 55 {
		t.Errorf("handler runs %v, want 55", got)
	}
	if got := sum("sqsworker_sqs_requests_total", map[string]string{"rpc_method": "ReceiveMessage", "sqsworker_result": "ok"}); got == 0 {
		t.Error("no successful receives counted")
	}
	if got := sum("sqsworker_cost_usd_per_million_messages", nil); got <= 0 || got > 1 {
		t.Errorf("cost per million messages $%v; want a positive estimate below $1", got)
	}
	// Prometheus's conventions: snake_case names, _total on counters and
	// only there, base units as suffixes, our metrics under our prefixes.
	valid := regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)
	for name, f := range families {
		if !valid.MatchString(name) {
			t.Errorf("%s: not a snake_case metric name", name)
		}
		if name == "target_info" || strings.HasPrefix(name, "otel_") {
			continue
		}
		if !strings.HasPrefix(name, "sqsworker_") && !strings.HasPrefix(name, "messaging_") {
			t.Errorf("%s: not under sqsworker_ or messaging_", name)
		}
		counter := f.GetType() == dto.MetricType_COUNTER
		if counter != strings.HasSuffix(name, "_total") {
			t.Errorf("%s: type %v; counters, and only counters, end in _total", name, f.GetType())
		}
		if f.GetType() == dto.MetricType_HISTOGRAM && !strings.HasSuffix(name, "_seconds") {
			t.Errorf("%s: a duration histogram must be in seconds", name)
		}
		for _, bad := range []string{"milliseconds", "_ms", "kilobytes"} {
			if strings.Contains(name, bad) {
				t.Errorf("%s: use base units", name)
			}
		}
	}
	if f := families["sqsworker_sqs_payload_bytes_total"]; f == nil {
		t.Error("no sqsworker_sqs_payload_bytes_total: the unit By should become _bytes")
	}
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.Label {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
