package main

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sqsworker/sqsworker/fleet"
	"github.com/sqsworker/sqsworker/harness/testenv"
)

// fleet create-table makes the fleet table (fleet.CreateTable) from the
// command line, fleet check says what is wrong with one, and the commands
// that need a table point to create-table, not to Go code.
func TestFleetCreateTableAndCheck(t *testing.T) {
	db := testenv.DynamoDB(t)
	t.Setenv(tableEnv, "")
	h := newHarness(t)
	h.dynamo = db
	h.fake.MustCreateQueue(t, "orders", nil)
	table := testenv.UniqueName("fleet-cmd")
	t.Cleanup(func() {
		_, _ = db.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	})

	// Before: every command that needs the table says how to make it.
	create := "`sqsworker fleet create-table " + table + "`"
	for _, args := range [][]string{
		{"pause", "--table", table, "orders"},
		{"resume", "--table", table, "orders"},
		{"paused", "--table", table, "orders"},
		{"status", "--table", table, "orders"},
	} {
		code, _, errOut := h.run(t, args...)
		if code != exitProblems || !strings.Contains(errOut, create) || strings.Contains(errOut, "fleet.CreateTable") {
			t.Errorf("%v with a missing table: exit %d, stderr %q; want exit 1 and %s, no Go", args, code, errOut, create)
		}
	}
	if code, _, errOut := h.run(t, "pause", "orders"); code != exitUsage || !strings.Contains(errOut, "sqsworker fleet create-table NAME") || strings.Contains(errOut, "fleet.CreateTable") {
		t.Errorf("pause without a table: exit %d, stderr %q", code, errOut)
	}
	if code, out, _ := h.run(t, "fleet", "check", table); code != exitProblems || !strings.Contains(flat(out), "does not exist") || !strings.Contains(flat(out), create) {
		t.Errorf("fleet check of a missing table: exit %d, %q", code, out)
	}

	code, out, errOut := h.run(t, "fleet", "create-table", table)
	if code != exitOK || !strings.Contains(out, "fleet table "+table+" created") {
		t.Fatalf("fleet create-table: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := h.run(t, "fleet", "create-table", table); code != exitOK || !strings.Contains(out, "fleet table "+table+" exists") {
		t.Errorf("fleet create-table again: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := h.run(t, "fleet", "check", table); code != exitOK || !strings.Contains(out, "ok") {
		t.Errorf("fleet check: exit %d\n%s%s", code, out, errOut)
	}
	if _, err := fleet.New(db, table); err != nil {
		t.Errorf("fleet.New on the table the command made: %v", err)
	}
	if code, out, errOut := h.run(t, "pause", "--table", table, "orders"); code != exitOK || !strings.Contains(out, "paused") {
		t.Errorf("pause on the new table: exit %d\n%s%s", code, out, errOut)
	}

	// The help says what the command needs.
	_, help, _ := h.run(t, "fleet", "create-table", "--help")
	for _, want := range []string{"dynamodb:CreateTable", "dynamodb:DescribeTable", "dynamodb:DescribeTimeToLive", "dynamodb:UpdateTimeToLive", "fleet.CreateTable"} {
		if !strings.Contains(help, want) {
			t.Errorf("fleet create-table --help lacks %q:\n%s", want, help)
		}
	}
}

// fleet check reports a table of the wrong key and one without
// time-to-live; create-table turns time-to-live on.
func TestFleetCheckFindsProblems(t *testing.T) {
	db := testenv.DynamoDB(t)
	h := newHarness(t)
	h.dynamo = db
	mk := func(key string) string {
		name := testenv.UniqueName("fleet-check")
		_, err := db.CreateTable(t.Context(), &dynamodb.CreateTableInput{
			TableName:            aws.String(name),
			AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(key), AttributeType: types.ScalarAttributeTypeS}},
			KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(key), KeyType: types.KeyTypeHash}},
			BillingMode:          types.BillingModePayPerRequest,
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_, _ = db.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
		})
		return name
	}
	wrong := mk("id")
	if code, out, _ := h.run(t, "fleet", "check", wrong); code != exitProblems || !strings.Contains(flat(out), "partition key pk of type S") {
		t.Errorf("fleet check of a table keyed by id: exit %d\n%s", code, out)
	}
	noTTL := mk("pk")
	if code, out, _ := h.run(t, "fleet", "check", noTTL); code != exitProblems || !strings.Contains(flat(out), "time-to-live is DISABLED") || !strings.Contains(flat(out), "`sqsworker fleet create-table "+noTTL+"` turns it on") {
		t.Errorf("fleet check of a table without TTL: exit %d\n%s", code, out)
	}
	if code, out, errOut := h.run(t, "fleet", "create-table", noTTL); code != exitOK {
		t.Fatalf("fleet create-table on a table without TTL: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, _ := h.run(t, "fleet", "check", noTTL); code != exitOK {
		t.Errorf("fleet check after create-table: exit %d\n%s", code, out)
	}
}

// flat joins text wrapped for the terminal into one line.
func flat(s string) string { return strings.Join(strings.Fields(s), " ") }
