package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/sqsworker/sqsworker/fleet"
	"github.com/sqsworker/sqsworker/harness/fleettable"
)

// status shows a queue's counts and its DLQ's, and with a fleet table
// (DynamoDB Local) the pause switch, the shared breakers and the cap
// slots in use, as the controls wrote them; without one it says how to
// add them.
func TestStatusCommand(t *testing.T) {
	h, table := newFleetHarness(t, "fleet-status")
	h.now = time.Now()
	src, _ := h.fake.MustCreateQueueWithDLQ(t, "orders", 100, nil)
	for range 3 {
		h.fake.MustSend(t, src, "job")
	}

	code, out, errOut := h.run(t, "status", "orders")
	for _, want := range []string{"queue orders: 3 visible, 0 in flight, 0 delayed", "dead-letter queue orders-dlq: 0 visible", "(maxReceiveCount 100)", "fleet controls: not shown; pass --table"} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Fatalf("status without a table: exit %d, want %q in\n%s%s", code, want, out, errOut)
		}
	}

	// A worker process's controls: the queue paused, a shared breaker
	// opened, two slots of tenant acme held.
	f, err := fleet.New(h.dynamo, table, func(o *fleet.Options) { o.Holder = "worker-7" })
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Pause(t.Context(), "orders", "database migration"); err != nil {
		t.Fatal(err)
	}
	fleettable.Occupy(t, f)

	code, out, errOut = h.run(t, "status", "--table", table, "orders")
	for _, want := range []string{"paused: yes, since", "by worker-7: database migration (`sqsworker resume orders`)",
		"breaker payments-api: open until", `cap tenant, key "acme": 2 slots in use, held by worker-7`} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Fatalf("status with a table: exit %d, want %q in\n%s%s", code, want, out, errOut)
		}
	}
	t.Setenv(tableEnv, table)
	code, out, _ = h.run(t, "status", "-o", "json", "orders")
	var r statusReport
	if err := json.Unmarshal([]byte(out), &r); code != exitOK || err != nil || r.Fleet == nil || !r.Fleet.Paused || r.Messages.Visible != 3 ||
		len(r.Fleet.Breakers) != 1 || !r.Fleet.Breakers[0].Open || len(r.Fleet.Caps) != 1 || r.Fleet.Caps[0].Slots != 2 {
		t.Fatalf("status -o json: exit %d, %v\n%s", code, err, out)
	}
	if code, _, errOut := h.run(t, "status", "--table", "no-such-table", "orders"); code != exitProblems || !strings.Contains(errOut, "`sqsworker fleet create-table no-such-table`") {
		t.Fatalf("status with a missing table: exit %d, %q; want it to say how to create one", code, errOut)
	}
}
