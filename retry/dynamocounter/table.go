package dynamocounter

import (
	"context"

	"github.com/sqsworker/sqsworker/internal/dynamo"
)

// CreateTable makes table ready for the counter: it creates it if it does
// not exist (partition key messageId of type S, on-demand capacity), waits
// until it is ACTIVE (at most Options.MaxWait, 5 minutes by default), and
// enables time-to-live on expiresAt. It is idempotent: on an existing table
// it checks the key schema and the TTL setting and changes nothing that is
// already right. It needs dynamodb:CreateTable, dynamodb:DescribeTable,
// dynamodb:DescribeTimeToLive and dynamodb:UpdateTimeToLive. Options.TTL
// and Options.Now do not matter here.
func CreateTable(ctx context.Context, client API, table string, optFns ...func(*Options)) error {
	o := Options{MaxWait: dynamo.DefaultMaxWait}
	for _, fn := range optFns {
		fn(&o)
	}
	return counterTable(table).Create(ctx, client, o.MaxWait)
}

// counterTable describes the counter's table to package dynamo.
func counterTable(name string) dynamo.Table {
	return dynamo.Table{
		Name: name, Key: keyAttribute, TTL: ttlAttribute,
		Pkg: "dynamocounter", Items: "counter items", Use: "the counter",
		NotFound: ErrTableNotFound, Throttled: ErrThrottled,
	}
}
