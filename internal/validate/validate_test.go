package validate

import (
	"strings"
	"testing"
)

func TestQueueName(t *testing.T) {
	for _, tc := range []struct {
		name string
		fifo bool
		want string // "" for valid
	}{
		{"orders", false, ""},
		{"orders_v2-eu", false, ""},
		{"jobs.fifo", true, ""},
		{strings.Repeat("a", 80), false, ""},
		{strings.Repeat("a", 75) + ".fifo", true, ""},
		{strings.Repeat("a", 81), false, "81 characters long"},
		{strings.Repeat("a", 76) + ".fifo", true, "at most 80"},
		{"", false, "is empty"},
		{".fifo", true, "is empty"},
		{"bad name!", false, `has ' '`},
		{"orders.v2", false, `has '.'`},
		{"jobs", true, "ends in .fifo"},
		{"jobs.fifo", false, "drop the suffix"},
	} {
		err := QueueName(tc.name, tc.fifo)
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("QueueName(%q, %v) = %v; want %q", tc.name, tc.fifo, err, tc.want)
		}
	}
	if err := TopicName(strings.Repeat("t", 256), false); err != nil {
		t.Errorf("a 256-character topic name: %v", err)
	}
	if err := TopicName(strings.Repeat("t", 257), false); err == nil {
		t.Error("a 257-character topic name passed")
	}
}

func TestFilterPolicy(t *testing.T) {
	for _, tc := range []struct {
		policy, scope, want string
	}{
		{`{"order-status":["confirmed","canceled"]}`, "", ""},
		{`{"price":[{"numeric":[">",0]}],"store":["a"]}`, "MessageAttributes", ""},
		{`{"order":{"status":["confirmed"]}}`, "MessageBody", ""},
		{`{"$or":[{"a":["1"]},{"b":["2"]}]}`, "", ""},
		{`{"order-status":"confirmed"}`, "", `key "order-status" maps to "confirmed", not an array`},
		{`{"qty":3}`, "", `e.g. {"qty":[3]}`},
		{`{"order":{"status":"confirmed"}}`, "MessageBody", `key "order.status" maps to "confirmed"`},
		{`{"order":{"status":["confirmed"]}}`, "", ""},
		{`{"order":{"status":["confirmed"]}}`, "MessageAttributes", "only a MessageBody-scoped policy may nest"},
		{`{"$or":["a"]}`, "", "array of objects"},
		{`["a"]`, "", "not a JSON object"},
		{`{}`, "", "at least one key"},
		{`{"a":`, "", "not valid JSON"},
	} {
		err := FilterPolicy(tc.policy, tc.scope)
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("FilterPolicy(%s, %q) = %v; want %q", tc.policy, tc.scope, err, tc.want)
		}
	}
}
