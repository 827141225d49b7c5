package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/harness/testenv"
)

// doctorQueues sets up one healthy queue and a few broken ones.
func doctorQueues(t *testing.T, h *harness) {
	t.Helper()
	ctx := context.Background()
	f := h.fake
	set := func(url string, attrs map[string]string) {
		t.Helper()
		if _, err := f.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url), Attributes: attrs}); err != nil {
			t.Fatal(err)
		}
	}
	// healthy: 14-day DLQ, maxReceiveCount above the policy's attempts.
	_, dlq := f.MustCreateQueueWithDLQ(t, "orders", 8, nil)
	set(dlq, map[string]string{"MessageRetentionPeriod": "1209600"})
	// no RedrivePolicy at all.
	f.MustCreateQueue(t, "emails", nil)
	// everything short: maxReceiveCount, retention, DLQ retention, visibility; a message in the DLQ.
	_, dlq = f.MustCreateQueueWithDLQ(t, "invoices", 2, map[string]string{"MessageRetentionPeriod": "600", "VisibilityTimeout": "3"})
	set(dlq, map[string]string{"MessageRetentionPeriod": "600"})
	f.MustSend(t, dlq, "dead")
	// its DLQ deleted.
	_, dlq = f.MustCreateQueueWithDLQ(t, "reports", 8, nil)
	if _, err := f.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(dlq)}); err != nil {
		t.Fatal(err)
	}
}

func TestDoctorGolden(t *testing.T) {
	h := newHarness(t)
	doctorQueues(t, h)
	policy := []string{"--policy", "testdata/doctor-policy.json", "--handler-timeout", "1m"}

	code, out, errOut := h.run(t, append([]string{"doctor", "orders"}, policy...)...)
	if code != exitOK || errOut != "" {
		t.Errorf("healthy queue: exit %d, stderr %q", code, errOut)
	}
	golden(t, "doctor-ok", out)

	code, out, errOut = h.run(t, append([]string{"doctor", "orders", "emails", "invoices", "reports", "missing"}, policy...)...)
	if code != exitProblems {
		t.Errorf("broken queues: exit %d, want %d", code, exitProblems)
	}
	if errOut != "" {
		t.Errorf("stderr %q", errOut)
	}
	golden(t, "doctor-problems", out)

	code, out, _ = h.run(t, "doctor", "invoices", "--attempts", "4", "--lambda-timeout", "30s", "-o", "json")
	if code != exitProblems {
		t.Errorf("json: exit %d", code)
	}
	golden(t, "doctor-json", out)
	var reports []doctorReport
	if err := json.Unmarshal([]byte(out), &reports); err != nil || len(reports) != 1 || len(reports[0].Findings) == 0 {
		t.Errorf("json output does not decode into reports: %v %+v", err, reports)
	}
}

func TestDoctorInfoFindingsDoNotFail(t *testing.T) {
	h := newHarness(t)
	doctorQueues(t, h)
	_, dlq := h.fake.MustCreateQueueWithDLQ(t, "quiet", 8, nil)
	if _, err := h.fake.SetQueueAttributes(context.Background(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(dlq), Attributes: map[string]string{"MessageRetentionPeriod": "1209600"}}); err != nil {
		t.Fatal(err)
	}
	h.fake.MustSend(t, dlq, "dead")
	code, out, _ := h.run(t, "doctor", "quiet")
	if code != exitOK || !strings.Contains(out, "quiet: ok, 1 note") || !strings.Contains(out, "dlq-not-empty") {
		t.Errorf("exit %d\n%s", code, out)
	}
}

func TestDoctorBadPolicyFileIsUsageError(t *testing.T) {
	h := newHarness(t)
	h.stdin = `{"numRetries": "three"}`
	code, _, errOut := h.run(t, "doctor", "orders", "--policy", "-")
	if code != exitUsage || !strings.Contains(errOut, "numRetries") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}

// A dead-letter queue whose MaximumMessageSize is below its queue's is a
// problem doctor reports, with the fix.
func TestDoctorDLQSmallerThanItsQueue(t *testing.T) {
	h := newHarness(t)
	_, dlq := h.fake.MustCreateQueueWithDLQ(t, "uploads", 8, nil)
	if _, err := h.fake.SetQueueAttributes(context.Background(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(dlq),
		Attributes: map[string]string{"MessageRetentionPeriod": "1209600", "MaximumMessageSize": "262144"}}); err != nil {
		t.Fatal(err)
	}
	code, out, _ := h.run(t, "doctor", "uploads")
	if code != exitProblems {
		t.Errorf("exit %d, want %d", code, exitProblems)
	}
	for _, want := range []string{"uploads: 1 problem", "warning  dlq-max-message-size-smaller", "256 KiB", "1048576, as queue uploads"} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor output lacks %q:\n%s", want, out)
		}
	}
}

// doctor --fleet checks a FIFO queue's maxReceiveCount against the fleet
// controls' snoozes (there a snooze hides the message, a receive): too few
// receives beyond the attempts, and attempts counted from
// ApproximateReceiveCount, are reported with their fix; a queue with room
// and exact attempts is ok; a standard queue is ok whatever its
// maxReceiveCount (snoozes are relayed there); --snoozes without --fleet is
// a usage error.
func TestDoctorFleet(t *testing.T) {
	h := newHarness(t)
	for name, maxReceives := range map[string]int{"payments.fifo": 8, "roomy.fifo": 100, "payments": 8} {
		_, dlq := h.fake.MustCreateQueueWithDLQ(t, name, maxReceives, nil)
		if _, err := h.fake.SetQueueAttributes(context.Background(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(dlq), Attributes: map[string]string{"MessageRetentionPeriod": "1209600"}}); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := h.run(t, "doctor", "--no-subscriptions", "--attempts", "4", "--fleet", "payments.fifo")
	for _, want := range []string{"fleet-receive-budget", "leaves room for 4 snoozes", "--max-receive-count 54 payments.fifo", "fleet-attempts-from-receive-count", "retry/dynamocounter"} {
		if code != exitProblems || !strings.Contains(out, want) {
			t.Fatalf("doctor --fleet payments.fifo: exit %d, want %q in\n%s%s", code, want, out, errOut)
		}
	}
	if code, out, errOut := h.run(t, "doctor", "--no-subscriptions", "--attempts", "4", "--fleet", "payments"); code != exitOK || strings.Contains(out, "fleet-") {
		t.Errorf("doctor --fleet on a standard queue: exit %d, fleet findings in\n%s%s", code, out, errOut)
	}
	if code, out, errOut := h.run(t, "doctor", "--no-subscriptions", "--attempts", "4", "payments"); code != exitOK || strings.Contains(out, "fleet-") {
		t.Errorf("doctor without --fleet: exit %d, fleet findings in\n%s%s", code, out, errOut)
	}
	if code, out, errOut := h.run(t, "doctor", "--no-subscriptions", "--attempts", "4", "--fleet", "--exact-attempts", "roomy.fifo"); code != exitOK || strings.Contains(out, "fleet-") {
		t.Errorf("doctor --fleet --exact-attempts roomy.fifo: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := h.run(t, "doctor", "--snoozes", "10", "roomy"); code != exitUsage || !strings.Contains(errOut, "--fleet") {
		t.Errorf("--snoozes without --fleet: exit %d, %q", code, errOut)
	}
}

// doctor --unique-table checks the unique keys table as `unique check`
// does: a missing table, or one keyed wrong, is an error of the queue
// (unique-table, with the command that fixes it); a right table is a note.
func TestDoctorUniqueTable(t *testing.T) {
	h, fleetTable := newFleetHarness(t, "doctor-unique")
	table := testenv.UniqueName("doctor-unique")
	if code, out, errOut := h.run(t, "unique", "create-table", table); code != exitOK {
		t.Fatalf("unique create-table: exit %d\n%s%s", code, out, errOut)
	}
	t.Cleanup(func() {
		if db, ok := h.dynamo.(*dynamodb.Client); ok {
			_, _ = db.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(table)})
		}
	})
	_, dlq := h.fake.MustCreateQueueWithDLQ(t, "reports", 4, nil)
	if _, err := h.fake.SetQueueAttributes(context.Background(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(dlq), Attributes: map[string]string{"MessageRetentionPeriod": "1209600"}}); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := h.run(t, "doctor", "--no-subscriptions", "--unique-table", table, "reports")
	if code != exitOK || !strings.Contains(out, "unique-table-ok") {
		t.Errorf("doctor --unique-table on a right table: exit %d\n%s%s", code, out, errOut)
	}
	for _, bad := range []string{"no-such-table", fleetTable} {
		code, out, errOut := h.run(t, "doctor", "--no-subscriptions", "--unique-table", bad, "reports")
		if code != exitProblems || !strings.Contains(out, "unique-table") || !strings.Contains(flat(out), "sqsworker unique create-table "+bad) {
			t.Errorf("doctor --unique-table %s: exit %d\n%s%s", bad, code, out, errOut)
		}
	}
	if code, out, _ := h.run(t, "doctor", "--no-subscriptions", "reports"); code != exitOK || strings.Contains(out, "unique-table") {
		t.Errorf("doctor without --unique-table: exit %d\n%s", code, out)
	}
}
