package schedules_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sqsworker/sqsworker/harness/testenv"
	"github.com/sqsworker/sqsworker/idempotency"
	"github.com/sqsworker/sqsworker/schedules"
	"github.com/sqsworker/sqsworker/worker"
)

func tickMessage(id, arn, at, overlap string) *worker.Message {
	b, _ := json.Marshal(struct {
		V       string `json:"sqsworker"`
		ARN     string `json:"arn"`
		Time    string `json:"time"`
		Overlap string `json:"overlap"`
		Body    string `json:"body"`
	}{"sqsworker.schedule/1", arn, at, overlap, "job"})
	return &worker.Message{ID: id, Body: string(b)}
}

// Table without DynamoDB (or the reverse) fails every scheduled job with
// what to set, rather than running it unprotected.
func TestUnwrapTableNeedsDynamoDB(t *testing.T) {
	h := schedules.Unwrap(func(o *schedules.UnwrapOptions) { o.Table = "ticks" })(worker.HandlerFunc(func(context.Context, *worker.Message) error {
		t.Error("the job ran")
		return nil
	}))
	err := h.Handle(t.Context(), tickMessage("m1", "arn:aws:scheduler:us-east-1:1:schedule/g/s", "2026-01-01T00:00:00Z", "skip"))
	if err == nil || !strings.Contains(err.Error(), "Table and DynamoDB go together") {
		t.Fatalf("err %v", err)
	}
}

// On DynamoDB Local: a run whose lease another run took over (after it
// expired, as when this process stalled) has its context cancelled with
// the reason; the lease item is gone once a run ends normally.
func TestEmulatorLeaseLostCancelsTheRun(t *testing.T) {
	db := testenv.DynamoDB(t)
	table := testenv.UniqueName("schedlease")
	if err := idempotency.CreateTable(t.Context(), db, table); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = db.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	})
	arn := "arn:aws:scheduler:us-east-1:123456789012:schedule/g/" + testenv.UniqueName("lease")
	key := map[string]types.AttributeValue{"key": &types.AttributeValueMemberS{Value: "sqsworker.schedule/run/" + arn}}
	unwrap := schedules.Unwrap(func(o *schedules.UnwrapOptions) { o.Table, o.DynamoDB, o.Lease = table, db, 900*time.Millisecond })

	started := make(chan struct{})
	var cause error
	h := unwrap(worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
		close(started)
		select {
		case <-ctx.Done():
			cause = context.Cause(ctx)
		case <-time.After(5 * time.Second):
		}
		return cause
	}))
	done := make(chan error, 1)
	go func() { done <- h.Handle(t.Context(), tickMessage("m1", arn, "2026-01-01T00:00:00Z", "skip")) }()
	<-started
	// Another run takes the lease over.
	if _, err := db.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
		"key": key["key"], "token": &types.AttributeValueMemberS{Value: "someone-else"}, "lockedUntil": &types.AttributeValueMemberN{Value: "9999999999999"},
	}}); err != nil {
		t.Fatal(err)
	}
	took := time.Now()
	err := <-done
	if err == nil || !strings.Contains(err.Error(), "lease was lost") || time.Since(took) > 2*time.Second {
		t.Fatalf("after the takeover the run ended with %v after %s; want the lease-lost cause within a renewal", err, time.Since(took))
	}

	// A run that ends normally removes its lease.
	if _, err := db.DeleteItem(t.Context(), &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: key}); err != nil {
		t.Fatal(err)
	}
	ok := unwrap(worker.HandlerFunc(func(context.Context, *worker.Message) error { return nil }))
	if err := ok.Handle(t.Context(), tickMessage("m2", arn, "2026-01-01T00:01:00Z", "skip")); err != nil {
		t.Fatal(err)
	}
	out, err := db.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: aws.String(table), Key: key})
	if err != nil || len(out.Item) != 0 {
		t.Fatalf("after a normal run the lease item is %v (%v); want none", out.Item, err)
	}
}
