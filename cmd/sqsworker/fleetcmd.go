package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sqsworker/sqsworker/fleet"
	"github.com/sqsworker/sqsworker/internal/awscall"
)

// The fleet table's layout, as fleet.CreateTable makes it and the package
// documentation describes it.
const (
	fleetKey = "pk"
	fleetTTL = "expiresAt"
)

// fleetTableIAM is what creating (or checking) the table takes; the
// workers' own needs are per control (docs/reference/iam.md).
const fleetTableIAM = `IAM: dynamodb:CreateTable, dynamodb:DescribeTable, dynamodb:DescribeTimeToLive and
dynamodb:UpdateTimeToLive on the table (arn:aws:dynamodb:REGION:ACCOUNT:table/NAME).
Only this deployment step needs them: the workers need dynamodb:DescribeTable,
plus per control dynamodb:GetItem and dynamodb:UpdateItem (rate limits, caps,
pause, shared breakers); sqsworker status --table and the console's Fleet page
add dynamodb:Scan.`

func fleetCreateTableCommand() *command {
	return &command{
		path:     "fleet create-table",
		args:     "TABLE",
		synopsis: "create the fleet table (pause, rate limits, caps, shared breakers), or check an existing one",
		help: `Creates the DynamoDB table that package fleet keeps a fleet's shared controls
in — pause switches (sqsworker pause), rate limits, concurrency caps and
shared circuit breakers — with fleet.CreateTable: partition key pk (S),
on-demand capacity, time-to-live on expiresAt. It waits until the table is
ACTIVE (at most --wait). On an existing table it checks the key schema and
turns time-to-live on if it is off; it changes nothing that is already right,
so running it twice is safe.

Then pass the table to the commands that use it (--table, or set
SQSWORKER_FLEET_TABLE) and to fleet.New in the workers.

DynamoDB is reached through the standard configuration (--region, --profile,
AWS_ENDPOINT_URL_DYNAMODB for DynamoDB Local or LocalStack).

` + fleetTableIAM,
		run: runFleetCreateTable,
	}
}

func fleetCheckCommand() *command {
	return &command{
		path:     "fleet check",
		args:     "TABLE",
		synopsis: "check that a fleet table exists with the right key and time-to-live",
		help: `Checks, without changing anything, that TABLE is a fleet table the workers can
use: it exists in this account and region, its key is pk (S) with no sort key,
and time-to-live is on for expiresAt (without it the items of keys no longer
used never expire). Each problem says what to run. Exit status 0 when the
table is right, 1 otherwise.

IAM: dynamodb:DescribeTable and dynamodb:DescribeTimeToLive on the table.`,
		run: runFleetCheck,
	}
}

// fleetTableReport is what fleet create-table and fleet check print with
// -o json.
type fleetTableReport struct {
	Table    string   `json:"table"`
	Created  bool     `json:"created"`
	OK       bool     `json:"ok"`
	Key      string   `json:"key,omitempty"`
	TTL      string   `json:"ttl,omitempty"`
	Problems []string `json:"problems"`
}

// keyTable is what the create-table and check commands of a package's
// DynamoDB table (fleet, unique) differ by.
type keyTable struct {
	spec  keyTableSpec
	label string // "fleet table"
	// create makes the table ready (the package's CreateTable).
	create func(ctx context.Context, db fleet.API, table string, wait time.Duration) error
	// next is the line printed once a created table is ok.
	next func(table string) string
}

var fleetKeyTable = keyTable{
	spec: keyTableSpec{kind: "fleet", cmd: "fleet", key: fleetKey, ttl: fleetTTL, stale: "(a tenant gone quiet)"}, label: "fleet table",
	create: func(ctx context.Context, db fleet.API, table string, wait time.Duration) error {
		return fleet.CreateTable(ctx, db, table, wait)
	},
	next: func(table string) string {
		return fmt.Sprintf("use it with --table %s (or SQSWORKER_FLEET_TABLE=%s) and fleet.New(client, %q) in the workers", table, table, table)
	},
}

func runFleetCreateTable(a *app, ctx context.Context, cmd *command, args []string) int {
	return runCreateKeyTable(a, ctx, cmd, args, fleetKeyTable)
}

func runFleetCheck(a *app, ctx context.Context, cmd *command, args []string) int {
	return runCheckKeyTable(a, ctx, cmd, args, fleetKeyTable)
}

// runCreateKeyTable creates (or completes) a package's table and reports
// what it then finds, like its check.
func runCreateKeyTable(a *app, ctx context.Context, cmd *command, args []string, kt keyTable) int {
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
	db, err := a.newDynamo(ctx, *conn)
	if err != nil {
		return a.fail(cmd, err)
	}
	_, err = awscall.DynamoDB(ctx, awscall.Rule{}, db.DescribeTable, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	var nf *types.ResourceNotFoundException
	existed := !errors.As(err, &nf)
	if err != nil && existed {
		return a.fail(cmd, err)
	}
	if err := kt.create(ctx, db, table, wait); err != nil {
		return a.fail(cmd, err)
	}
	r := a.describeKeyTable(ctx, db, table, kt.spec)
	r.Created = !existed
	if *out == "json" {
		a.writeJSON(r)
	} else {
		what := "created"
		if existed {
			what = "exists"
		}
		fmt.Fprintf(a.stdout, "%s %s %s: partition key %s, on-demand, time-to-live on %s\n", kt.label, table, what, kt.spec.key, kt.spec.ttl)
		a.printFleetProblems(r)
		if r.OK {
			fmt.Fprintln(a.stdout, kt.next(table))
		}
	}
	if !r.OK {
		return exitProblems
	}
	return exitOK
}

// runCheckKeyTable checks a package's table without changing it.
func runCheckKeyTable(a *app, ctx context.Context, cmd *command, args []string, kt keyTable) int {
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
	r := a.describeKeyTable(ctx, db, table, kt.spec)
	if ctx.Err() != nil {
		return a.fail(cmd, ctx.Err())
	}
	if *out == "json" {
		a.writeJSON(r)
	} else {
		if r.OK {
			fmt.Fprintf(a.stdout, "%s %s: ok (partition key %s, time-to-live on %s)\n", kt.label, table, kt.spec.key, kt.spec.ttl)
		} else {
			fmt.Fprintf(a.stdout, "%s %s: %s\n", kt.label, table, count(len(r.Problems), "problem"))
		}
		a.printFleetProblems(r)
	}
	if !r.OK {
		return exitProblems
	}
	return exitOK
}

func (a *app) printFleetProblems(r fleetTableReport) {
	for _, p := range r.Problems {
		fmt.Fprintf(a.stdout, "  %s\n", wrapText(p, 80, "  "))
	}
}

// keyTableSpec is the layout of a table a package creates (fleet,
// unique): partition key key (S), time-to-live on ttl.
type keyTableSpec struct {
	kind, cmd, key, ttl, stale string
}

// tableDescriber is what describeKeyTable reads a table with.
type tableDescriber interface {
	DescribeTable(ctx context.Context, params *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	DescribeTimeToLive(ctx context.Context, params *dynamodb.DescribeTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTimeToLiveOutput, error)
}

// describeKeyTable reads the table's key schema and time-to-live and
// says what is wrong with them against spec, each problem with the
// command that fixes it.
func (a *app) describeKeyTable(ctx context.Context, db tableDescriber, table string, spec keyTableSpec) fleetTableReport {
	r := fleetTableReport{Table: table, Problems: []string{}}
	create := fmt.Sprintf("`sqsworker %s create-table %s`", spec.cmd, table)
	d, err := awscall.DynamoDB(ctx, awscall.Rule{}, db.DescribeTable, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		var nf *types.ResourceNotFoundException
		if errors.As(err, &nf) {
			r.Problems = append(r.Problems, fmt.Sprintf("table %s does not exist in this account and region (--region, AWS_REGION); create it with %s, or fix the name or the region", table, create))
		} else {
			r.Problems = append(r.Problems, fmt.Sprintf("reading table %s: %v", table, err))
		}
		return r
	}
	var keys []string
	for _, k := range d.Table.KeySchema {
		keys = append(keys, aws.ToString(k.AttributeName)+" ("+string(k.KeyType)+")")
	}
	r.Key = strings.Join(keys, ", ")
	hashS := false
	for _, def := range d.Table.AttributeDefinitions {
		if aws.ToString(def.AttributeName) == spec.key && def.AttributeType == types.ScalarAttributeTypeS {
			hashS = true
		}
	}
	if len(d.Table.KeySchema) != 1 || aws.ToString(d.Table.KeySchema[0].AttributeName) != spec.key || d.Table.KeySchema[0].KeyType != types.KeyTypeHash || !hashS {
		r.Problems = append(r.Problems, fmt.Sprintf("table %s has the key %s; a %s table needs the partition key %s of type S and no sort key: create a new table with %s", table, r.Key, spec.kind, spec.key, "`sqsworker "+spec.cmd+" create-table NAME`"))
	}
	ttl, err := awscall.DynamoDB(ctx, awscall.Rule{}, db.DescribeTimeToLive, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(table)})
	switch {
	case err != nil:
		r.Problems = append(r.Problems, fmt.Sprintf("reading table %s's time-to-live: %v", table, err))
	case ttl.TimeToLiveDescription == nil:
		r.TTL = string(types.TimeToLiveStatusDisabled)
	default:
		r.TTL = string(ttl.TimeToLiveDescription.TimeToLiveStatus)
		if attr := aws.ToString(ttl.TimeToLiveDescription.AttributeName); attr != "" && attr != spec.ttl {
			r.TTL += " on " + attr
		}
	}
	if err == nil && r.TTL != string(types.TimeToLiveStatusEnabled) && r.TTL != string(types.TimeToLiveStatusEnabling) {
		r.Problems = append(r.Problems, fmt.Sprintf("table %s's time-to-live is %s, not on %s: the items of keys no longer used %s never expire; %s turns it on", table, r.TTL, spec.ttl, spec.stale, create))
	}
	r.OK = len(r.Problems) == 0
	return r
}

// failFleet reports an error opening the fleet table; a table that does
// not exist is reported with the command that creates it.
func (a *app) failFleet(cmd *command, table string, err error) int {
	var nf *types.ResourceNotFoundException
	if !errors.As(err, &nf) || errors.Is(err, context.Canceled) {
		return a.fail(cmd, err)
	}
	fmt.Fprintf(a.stderr, "sqsworker %s: fleet table %s does not exist in this account and region (--region, AWS_REGION); create it with `sqsworker fleet create-table %s`, or fix the name (--table, %s) or the region\n", cmd.path, table, table, tableEnv)
	return exitProblems
}
