package fleet_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sqsworker/sqsworker/fleet"
	"github.com/sqsworker/sqsworker/harness/testenv"
)

// New refuses what cannot work, saying what to do: no client, no table
// name, a table that does not exist, a table with another key; the
// controls refuse a limit of 0 and a breaker without a classification.
func TestNewRefusesBadInput(t *testing.T) {
	client, table := newTable(t)
	if _, err := fleet.New(nil, table); err == nil || !strings.Contains(err.Error(), "client is nil") {
		t.Errorf("New(nil) = %v", err)
	}
	if _, err := fleet.New(client, ""); err == nil || !strings.Contains(err.Error(), "table name is empty") {
		t.Errorf("New(\"\") = %v", err)
	}
	_, err := fleet.New(client, testenv.UniqueName("no-such-table"))
	if !errors.Is(err, fleet.ErrTableNotFound) || !strings.Contains(err.Error(), "fleet.CreateTable") {
		t.Errorf("New(missing table) = %v; want ErrTableNotFound saying to create it with fleet.CreateTable", err)
	}

	wrong := testenv.UniqueName("fleet-wrong-key")
	if _, err := client.CreateTable(t.Context(), &dynamodb.CreateTableInput{
		TableName:            aws.String(wrong),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeN}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = client.DeleteTable(t.Context(), &dynamodb.DeleteTableInput{TableName: aws.String(wrong)})
	})
	if _, err := fleet.New(client, wrong); err == nil || !strings.Contains(err.Error(), "partition key pk of type S") {
		t.Errorf("New(table keyed by id N) = %v; want an error naming the key it needs", err)
	}

	f := newFleet(t, client, table, "p1")
	if _, err := f.RateLimit("api", 0); err == nil || !strings.Contains(err.Error(), "positive rate") {
		t.Errorf("RateLimit(0) = %v", err)
	}
	if _, err := f.Cap("tenant", 0); err == nil || !strings.Contains(err.Error(), "1 or more") {
		t.Errorf("Cap(0) = %v", err)
	}
	if _, err := f.RateLimit("a|b", 1); err == nil {
		t.Error("RateLimit with '|' in its name accepted")
	}
	if _, err := f.Breaker("api"); err == nil || !strings.Contains(err.Error(), "Counts") {
		t.Errorf("Breaker without Counts = %v", err)
	}
	if _, err := f.Pauser("orders", func(o *fleet.PauserOptions) { o.Interval = 10e9 }); err == nil || !strings.Contains(err.Error(), "5 s") {
		t.Errorf("Pauser with a 10 s interval = %v", err)
	}
}
