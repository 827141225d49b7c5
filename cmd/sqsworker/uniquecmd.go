package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sqsworker/sqsworker/internal/awscall"
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

func runUniqueCreateTable(a *app, ctx context.Context, cmd *command, args []string) int {
	fs := a.flags(cmd)
	conn := awsFlagsOn(fs)
	out := outputFlag(fs)
	wait := 5 * time.Minute
	fs.Var(durationValue{&wait}, "wait", "how long to wait for a new table to become ACTIVE")
	pos, code, ok := a.parseWithOutput(cmd, fs, args, 1, 1, out)
	if !ok {
		return code
	}
	table := pos[0]
	fdb, err := a.newDynamo(ctx, *conn)
	if err != nil {
		return a.fail(cmd, err)
	}
	db, ok := fdb.(unique.API)
	if !ok {
		return a.fail(cmd, errors.New("the DynamoDB client cannot create tables"))
	}
	_, err = awscall.DynamoDB(ctx, awscall.Rule{}, db.DescribeTable, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	var nf *types.ResourceNotFoundException
	existed := !errors.As(err, &nf)
	if err != nil && existed {
		return a.fail(cmd, err)
	}
	if err := unique.CreateTable(ctx, db, table, wait); err != nil {
		return a.fail(cmd, err)
	}
	r := a.describeKeyTable(ctx, db, table, uniqueTable)
	r.Created = !existed
	if *out == "json" {
		a.writeJSON(r)
	} else {
		what := "created"
		if existed {
			what = "exists"
		}
		fmt.Fprintf(a.stdout, "unique keys table %s %s: partition key %s, on-demand, time-to-live on %s\n", table, what, uniqueTable.key, uniqueTable.ttl)
		a.printFleetProblems(r)
		if r.OK {
			fmt.Fprintf(a.stdout, "use it with unique.New(client, %q) in the producers and consumers\n", table)
		}
	}
	if !r.OK {
		return exitProblems
	}
	return exitOK
}

func runUniqueCheck(a *app, ctx context.Context, cmd *command, args []string) int {
	fs := a.flags(cmd)
	conn := awsFlagsOn(fs)
	out := outputFlag(fs)
	pos, code, ok := a.parseWithOutput(cmd, fs, args, 1, 1, out)
	if !ok {
		return code
	}
	table := pos[0]
	db, err := a.newDynamo(ctx, *conn)
	if err != nil {
		return a.fail(cmd, err)
	}
	r := a.describeKeyTable(ctx, db, table, uniqueTable)
	if ctx.Err() != nil {
		return a.fail(cmd, ctx.Err())
	}
	if *out == "json" {
		a.writeJSON(r)
	} else {
		if r.OK {
			fmt.Fprintf(a.stdout, "unique keys table %s: ok (partition key %s, time-to-live on %s)\n", table, uniqueTable.key, uniqueTable.ttl)
		} else {
			fmt.Fprintf(a.stdout, "unique keys table %s: %s\n", table, count(len(r.Problems), "problem"))
		}
		a.printFleetProblems(r)
	}
	if !r.OK {
		return exitProblems
	}
	return exitOK
}
