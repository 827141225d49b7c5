package idempotency

import (
	"context"

	"github.com/sqsworker/sqsworker/internal/dynamo"
)

// CreateTable makes table ready for a Guard: it creates it if it does not
// exist (partition key "key" of type S, on-demand capacity), waits until it
// is ACTIVE (up to 5 minutes, or until ctx ends if that is sooner), and enables time-to-live on expiresAt, so DynamoDB deletes
// records some time after they stop counting. It is idempotent: on an
// existing table it checks the key schema and the TTL setting and changes
// nothing that is already right. It needs dynamodb:CreateTable,
// dynamodb:DescribeTable, dynamodb:DescribeTimeToLive and
// dynamodb:UpdateTimeToLive; run it from a deployment step if the worker's
// role should not hold those.
//
// Use a table of its own: DynamoDB allows one TTL attribute per table, and
// retry/dynamocounter's table has another key. Handlers may share one
// idempotency table when their keys cannot collide (Options.KeyPrefix).
func CreateTable(ctx context.Context, client API, table string) error {
	return recordTable(table).Create(ctx, client, dynamo.DefaultMaxWait)
}
