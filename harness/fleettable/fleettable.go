// Package fleettable gives a test a fleet table of its own (package
// fleet) on the local DynamoDB, deleted when the test ends.
package fleettable

import (
	"context"
	"errors"
	"fmt"
	"sync"
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
// (HoldSlots), by f's holder.
func Occupy(t testing.TB, f *fleet.Fleet) {
	t.Helper()
	b, err := f.Breaker("payments-api", func(o *fleet.BreakerOptions) {
		o.Counts, o.Threshold, o.Shared, o.OpenFor = func(error) bool { return true }, 1, true, time.Minute
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = b.Middleware()(worker.HandlerFunc(func(context.Context, *worker.Message) error { return errors.New("down") })).Handle(context.Background(), &worker.Message{})
	HoldSlots(t, f, "tenant", 3, "acme", 2)
}

// HoldSlots holds n slots of key under f's cap name (of limit slots a key,
// leased a minute and renewed) until t ends, as n running jobs of the key
// would: each is a handler behind the cap's Middleware that blocks until
// then.
func HoldSlots(t testing.TB, f *fleet.Fleet, name string, limit int, key string, n int) {
	t.Helper()
	capped, err := f.Cap(name, limit, func(o *fleet.CapOptions) {
		o.Key, o.Lease, o.MaxWait = fleet.ByGroup, time.Minute, -1
	})
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	var wg sync.WaitGroup
	t.Cleanup(func() { close(release); wg.Wait() })
	for i := range n {
		running, done := make(chan struct{}), make(chan error, 1)
		h := capped.Middleware()(worker.HandlerFunc(func(context.Context, *worker.Message) error {
			close(running)
			<-release
			return nil
		}))
		wg.Go(func() {
			done <- h.Handle(context.Background(), &worker.Message{ID: fmt.Sprintf("held-%d", i), GroupID: key})
		})
		select {
		case <-running:
		case err := <-done:
			t.Fatalf("holding slot %d of cap %s, key %q: the job did not run (%v)", i+1, name, key, err)
		}
	}
}
