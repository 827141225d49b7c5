// Package fleettable gives a test a fleet table of its own (package
// fleet) on the local DynamoDB, deleted when the test ends.
package fleettable

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sqsworker/sqsworker/fleet"
	"github.com/sqsworker/sqsworker/harness/testenv"
	"github.com/sqsworker/sqsworker/worker"
)

// New creates a fleet table named after prefix on the local DynamoDB
// (testenv: a missing emulator fails the test under make test) and returns
// the client and the table's name. The table is deleted when t ends.
func New(t testing.TB, prefix string) (*dynamodb.Client, string) {
	t.Helper()
	db := testenv.DynamoDB(t)
	table := testenv.UniqueName(prefix)
	if err := fleet.CreateTable(context.Background(), db, table, 0); err != nil {
		t.Fatalf("creating the fleet table %s: %v", table, err)
	}
	t.Cleanup(func() {
		_, _ = db.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	})
	return db, table
}

// Occupy leaves in f's table what a busy worker process would, for the
// pages and commands that show it: the shared breaker "payments-api" open
// for a minute, and 2 of the 3 slots of cap "tenant" held for key "acme"
// (a minute's lease), by f's holder.
func Occupy(t testing.TB, f *fleet.Fleet) {
	t.Helper()
	b, err := f.Breaker("payments-api", func(o *fleet.BreakerOptions) {
		o.Counts, o.Threshold, o.Shared, o.OpenFor = func(error) bool { return true }, 1, true, time.Minute
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = b.Middleware()(worker.HandlerFunc(func(context.Context, *worker.Message) error { return errors.New("down") })).Handle(context.Background(), &worker.Message{})
	capped, err := f.Cap("tenant", 3)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := capped.Acquire(context.Background(), "acme", time.Now().Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
}
