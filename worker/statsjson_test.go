package worker_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sqsworker/sqsworker/worker"
)

// The stats JSON gives durations as readable strings, and reads back both
// them and the integer nanoseconds of the shape before v1.
func TestStatsJSONDurations(t *testing.T) {
	s := worker.Stats{Received: 3, Concurrency: 8, HandlerRuns: 3, HandlerTime: 1500 * time.Millisecond,
		MeanHandlerTime: 500 * time.Millisecond, Capacity: 16, OldestAge: 2 * time.Minute,
		Requests: map[string]int64{"ReceiveMessage": 2}, Backlog: worker.QueueDepth{Visible: 4, At: time.Date(2025, 3, 1, 14, 0, 0, 0, time.UTC)}}
	data, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"HandlerTime":"1.5s"`, `"MeanHandlerTime":"500ms"`, `"OldestAge":"2m0s"`, `"Received":3,`, `"Backlog":{"Visible":4,`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("%s lacks %s", data, want)
		}
	}
	var back worker.Stats
	if err := json.Unmarshal(data, &back); err != nil || !reflect.DeepEqual(back, s) {
		t.Errorf("round trip: %+v, %v; want %+v", back, err, s)
	}
	// The keys are the Go field names, in the struct's order.
	var keys []string
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.Token()
	for dec.More() {
		k, _ := dec.Token()
		keys = append(keys, k.(string))
		var skip json.RawMessage
		dec.Decode(&skip)
	}
	var fields []string
	for f := range reflect.TypeFor[worker.Stats]().Fields() {
		fields = append(fields, f.Name)
	}
	if !reflect.DeepEqual(keys, fields) {
		t.Errorf("keys %v, want the fields %v", keys, fields)
	}

	old := `{"Received":3,"Concurrency":8,"HandlerRuns":3,"HandlerTime":1500000000,"MeanHandlerTime":500000000,"OldestAge":120000000000,"Capacity":16}`
	var fromOld worker.Stats
	if err := json.Unmarshal([]byte(old), &fromOld); err != nil {
		t.Fatal(err)
	}
	if fromOld.HandlerTime != 1500*time.Millisecond || fromOld.MeanHandlerTime != 500*time.Millisecond || fromOld.OldestAge != 2*time.Minute || fromOld.Concurrency != 8 {
		t.Errorf("the pre-v1 shape read as %+v", fromOld)
	}
	for _, bad := range []string{`{"MeanHandlerTime":"soon"}`, `{"MeanHandlerTime":true}`} {
		if err := json.Unmarshal([]byte(bad), &fromOld); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}
