package idempotency

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sqsworker/sqsworker/internal/dynamo"
)

// TableAPI is the part of the DynamoDB client CreateTable uses.
type TableAPI interface {
	CreateTable(ctx context.Context, params *dynamodb.CreateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	DescribeTable(ctx context.Context, params *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	DescribeTimeToLive(ctx context.Context, params *dynamodb.DescribeTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTimeToLiveOutput, error)
	UpdateTimeToLive(ctx context.Context, params *dynamodb.UpdateTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error)
}

var _ TableAPI = (*dynamodb.Client)(nil)

// TableOptions configures CreateTable.
type TableOptions struct {
	// MaxWait bounds the wait for a new table to become ACTIVE. Zero value:
	// 5 minutes. ctx's deadline, if sooner, applies too.
	MaxWait time.Duration
}

// CreateTable makes table ready for a Guard: it creates it if it does not
// exist (partition key "key" of type S, on-demand capacity), waits until it
// is ACTIVE, and enables time-to-live on expiresAt, so DynamoDB deletes
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
func CreateTable(ctx context.Context, client TableAPI, table string, optFns ...func(*TableOptions)) error {
	o := TableOptions{MaxWait: dynamo.DefaultMaxWait}
	for _, fn := range optFns {
		fn(&o)
	}
	return recordTable(table).Create(ctx, client, o.MaxWait)
}
