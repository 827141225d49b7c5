package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/sqsworker/sqsworker/fleet"
	"github.com/sqsworker/sqsworker/harness/fleettable"
)

// pause, paused and resume set and show a queue's switch in the fleet
// table (DynamoDB Local), as a Pauser reads it; a missing table flag, an
// unknown queue and a missing table are refused with what to do.
func TestPauseResumeCommands(t *testing.T) {
	h, table := newFleetHarness(t, "fleet-cli")
	url := h.fake.MustCreateQueue(t, "orders", nil)

	if code, _, errOut := h.run(t, "pause", "orders"); code != exitUsage || !strings.Contains(errOut, "--table") {
		t.Fatalf("pause without a table: exit %d, %q; want a usage error naming --table", code, errOut)
	}
	if code, _, errOut := h.run(t, "pause", "--table", table, "no-such-queue"); code != exitProblems || !strings.Contains(errOut, "no-such-queue") {
		t.Fatalf("pause of an unknown queue: exit %d, %q", code, errOut)
	}
	if code, _, errOut := h.run(t, "pause", "--table", "no-such-table", "orders"); code != exitProblems || !strings.Contains(errOut, "`sqsworker fleet create-table no-such-table`") {
		t.Fatalf("pause with a missing table: exit %d, %q; want it to say how to create one", code, errOut)
	}

	code, out, errOut := h.run(t, "pause", "--table", table, "--reason", "database migration", "orders")
	if code != exitOK || !strings.Contains(out, "orders: paused since") || !strings.Contains(out, "database migration") {
		t.Fatalf("pause: exit %d\n%s%s", code, out, errOut)
	}
	f, err := fleet.New(h.dynamo, table)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := f.PauseState(t.Context(), url); err != nil || !st.Paused || !strings.HasPrefix(st.By, "sqsworker-cli@") {
		t.Fatalf("the switch after pause: %+v, %v; want paused by the CLI", st, err)
	}
	t.Setenv(tableEnv, table)
	code, out, _ = h.run(t, "paused", "-o", "json", "orders")
	var st struct {
		Queue  string `json:"queue"`
		Paused bool   `json:"paused"`
		Reason string `json:"reason"`
	}
	if err := json.Unmarshal([]byte(out), &st); code != exitOK || err != nil || !st.Paused || st.Queue != "orders" || st.Reason != "database migration" {
		t.Fatalf("paused -o json: exit %d, %q, %v", code, out, err)
	}
	if code, out, _ := h.run(t, "resume", "orders"); code != exitOK || !strings.Contains(out, "orders: running (not paused)") {
		t.Fatalf("resume: exit %d, %q", code, out)
	}
	if st, err := f.PauseState(t.Context(), "orders"); err != nil || st.Paused {
		t.Fatalf("the switch after resume: %+v, %v", st, err)
	}
}

// newFleetHarness is a harness with a fleet table of its own on DynamoDB
// Local (deleted after the test) and no table from the environment.
func newFleetHarness(t *testing.T, prefix string) (*harness, string) {
	t.Helper()
	db, table := fleettable.New(t, prefix)
	t.Setenv(tableEnv, "")
	h := newHarness(t)
	h.dynamo = db
	return h, table
}
