package sqsotel_test

import (
	"testing"

	"github.com/sqsworker/sqsworker/unique"
)

// uniqueStats is a unique Store's Stats source with fixed counters.
type uniqueStats unique.Stats

func (s uniqueStats) Stats() unique.Stats { return unique.Stats(s) }

// ObserveUnique reports unique.Stats: sends by result (refused as
// duplicates among them), the keys held on balance, releases, recoveries,
// release errors and requests by result.
func TestUniqueMetricsMatchStats(t *testing.T) {
	tel := newTelemetry(t)
	s := unique.Stats{Claimed: 20, Refused: 57, Debounced: 4, FailedOpen: 2, SendErrors: 1, Recovered: 3, Released: 11, ReleaseErrors: 2, Requests: 90, RequestErrors: 5}
	reg, err := tel.ins.ObserveUnique(uniqueStats(s))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = reg.Unregister() }()
	rm := tel.collect(t)
	for _, c := range []struct {
		name  string
		attrs map[string]string
		want  float64
	}{
		{"sqsworker.unique.sends", map[string]string{"sqsworker.result": "claimed"}, 20},
		{"sqsworker.unique.sends", map[string]string{"sqsworker.result": "refused"}, 57},
		{"sqsworker.unique.sends", map[string]string{"sqsworker.result": "debounced"}, 4},
		{"sqsworker.unique.sends", map[string]string{"sqsworker.result": "failed_open"}, 2},
		{"sqsworker.unique.sends", map[string]string{"sqsworker.result": "send_error"}, 1},
		{"sqsworker.unique.keys.held", nil, 20 - 11 - 3 - 1},
		{"sqsworker.unique.released", nil, 11},
		{"sqsworker.unique.recovered", nil, 3},
		{"sqsworker.unique.release_errors", nil, 2},
		{"sqsworker.unique.requests", map[string]string{"sqsworker.result": "ok"}, 85},
		{"sqsworker.unique.requests", map[string]string{"sqsworker.result": "error"}, 5},
	} {
		if got := value(t, rm, c.name, c.attrs); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.attrs, got, c.want)
		}
	}
}
