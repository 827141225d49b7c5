package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sqsworker/sqsworker/fleet"
	"github.com/sqsworker/sqsworker/unique"
)

// uniqueTable is the unique keys table's layout, as unique.CreateTable
// makes it and the package documentation describes it.
var uniqueTable = keyTableSpec{kind: "unique keys", cmd: "unique", key: "key", ttl: "expiresAt", stale: "(keys whose job was lost)"}

func uniqueCreateTableCommand() *command {
	return &command{
		path:     "unique create-table",
		args:     "TABLE",
		synopsis: "create the unique keys table (one job per key), or check an existing one",
		help: `Creates the DynamoDB table that package unique keeps the keys of unique jobs
in, with unique.CreateTable: partition key key (S), on-demand capacity,
time-to-live on expiresAt. It waits until the table is ACTIVE (at most
--wait). On an existing table it checks the key schema and turns
time-to-live on if it is off; it changes nothing that is already right, so
running it twice is safe. Then pass the table to unique.New in the
producers and the consumers.

DynamoDB is reached through the standard configuration (--region, --profile,
AWS_ENDPOINT_URL_DYNAMODB for DynamoDB Local or LocalStack).

IAM: dynamodb:CreateTable, dynamodb:DescribeTable, dynamodb:DescribeTimeToLive
and dynamodb:UpdateTimeToLive on the table.`,
		run: runUniqueCreateTable,
	}
}

func uniqueCheckCommand() *command {
	return &command{
		path:     "unique check",
		args:     "TABLE",
		synopsis: "check that a unique keys table exists with the right key and time-to-live",
		help: `Checks, without changing anything, that TABLE is a unique keys table that
unique.New accepts: it exists in this account and region, its key is key (S)
with no sort key, and time-to-live is on for expiresAt (without it the items
of keys whose job was lost stay in the table after their expiry; they no
longer hold the key). Each problem says what to run. Exit status 0 when the
table is right, 1 otherwise.

IAM: dynamodb:DescribeTable and dynamodb:DescribeTimeToLive on the table.`,
		run: runUniqueCheck,
	}
}

// uniqueKeyTable is the unique keys table's commands.
var uniqueKeyTable = keyTable{
	spec: uniqueTable, label: "unique keys table",
	create: func(ctx context.Context, db fleet.API, table string, wait time.Duration) error {
		u, ok := db.(unique.API)
		if !ok {
			return errors.New("the DynamoDB client cannot create tables")
		}
		return unique.CreateTable(ctx, u, table, wait)
	},
	next: func(table string) string {
		return fmt.Sprintf("use it with unique.New(client, %q) in the producers and consumers", table)
	},
}

func runUniqueCreateTable(a *app, ctx context.Context, cmd *command, args []string) int {
	return runCreateKeyTable(a, ctx, cmd, args, uniqueKeyTable)
}

func runUniqueCheck(a *app, ctx context.Context, cmd *command, args []string) int {
	return runCheckKeyTable(a, ctx, cmd, args, uniqueKeyTable)
}
