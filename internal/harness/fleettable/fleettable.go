// Package fleettable gives a test a fleet table of its own (package
// fleet) on the local DynamoDB, deleted when the test ends.
package fleettable

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sqsworker/sqsworker/fleet"
	"github.com/sqsworker/sqsworker/internal/harness/testenv"
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
