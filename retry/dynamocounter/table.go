package dynamocounter

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
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
	// MaxWait bounds the wait for a new table to become ACTIVE. Zero means 5
	// minutes. ctx's deadline, if sooner, applies too.
	MaxWait time.Duration
}

// CreateTable makes table ready for a Counter: it creates it if it does not
// exist (partition key messageId of type S, on-demand capacity), waits until
// it is ACTIVE, and enables time-to-live on expiresAt. It is idempotent: on an
// existing table it checks the key schema and the TTL setting and changes
// nothing that is already right. It needs dynamodb:CreateTable,
// dynamodb:DescribeTable, dynamodb:DescribeTimeToLive and
// dynamodb:UpdateTimeToLive.
func CreateTable(ctx context.Context, client TableAPI, table string, optFns ...func(*TableOptions)) error {
	if client == nil {
		return errors.New("dynamocounter: CreateTable: client is nil; pass a *dynamodb.Client")
	}
	if table == "" {
		return errors.New("dynamocounter: CreateTable: table name is empty; pass the name of the counter table")
	}
	o := TableOptions{MaxWait: 5 * time.Minute}
	for _, fn := range optFns {
		fn(&o)
	}
	if o.MaxWait <= 0 {
		o.MaxWait = 5 * time.Minute
	}
	what := func(step string) string {
		return fmt.Sprintf("dynamocounter: setting up table %q: %s", table, step)
	}

	_, err := client.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName: aws.String(table),
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(KeyAttribute), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(KeyAttribute), KeyType: types.KeyTypeHash},
		},
		BillingMode: types.BillingModePayPerRequest,
	})
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) { // in use: it exists already
		return explainSetup(what("CreateTable"), "dynamodb:CreateTable", err)
	}

	waiter := dynamodb.NewTableExistsWaiter(client, func(w *dynamodb.TableExistsWaiterOptions) {
		w.MinDelay, w.MaxDelay = time.Second, 10*time.Second
	})
	desc, err := waiter.WaitForOutput(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)}, o.MaxWait)
	if err != nil {
		return explainSetup(what(fmt.Sprintf("waiting up to %v for the table to become ACTIVE", o.MaxWait)), "dynamodb:DescribeTable", err)
	}
	if err := checkKeySchema(table, desc.Table); err != nil {
		return err
	}

	ttl, err := client.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(table)})
	if err != nil {
		return explainSetup(what("DescribeTimeToLive"), "dynamodb:DescribeTimeToLive", err)
	}
	if d := ttl.TimeToLiveDescription; d != nil {
		attr := aws.ToString(d.AttributeName)
		switch d.TimeToLiveStatus {
		case types.TimeToLiveStatusEnabled, types.TimeToLiveStatusEnabling:
			if attr == TTLAttribute {
				return nil
			}
			return fmt.Errorf("dynamocounter: table %q expires items by attribute %q, but counter items carry their expiry in %q, and DynamoDB allows one TTL attribute per table; use a separate table for the counter", table, attr, TTLAttribute)
		case types.TimeToLiveStatusDisabling:
			return fmt.Errorf("dynamocounter: time-to-live is being disabled on table %q; wait until it is DISABLED (this can take up to an hour) and run CreateTable again", table)
		}
	}
	_, err = client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName: aws.String(table),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{
			AttributeName: aws.String(TTLAttribute),
			Enabled:       aws.Bool(true),
		},
	})
	if err != nil {
		return explainSetup(what("enabling time-to-live on "+TTLAttribute), "dynamodb:UpdateTimeToLive", err)
	}
	return nil
}

// checkKeySchema verifies that an existing table has the counter's key.
func checkKeySchema(table string, t *types.TableDescription) error {
	if t == nil {
		return fmt.Errorf("dynamocounter: DescribeTable returned no description of table %q; check the endpoint", table)
	}
	keyType := ""
	for _, a := range t.AttributeDefinitions {
		if aws.ToString(a.AttributeName) == KeyAttribute {
			keyType = string(a.AttributeType)
		}
	}
	if len(t.KeySchema) == 1 && aws.ToString(t.KeySchema[0].AttributeName) == KeyAttribute &&
		t.KeySchema[0].KeyType == types.KeyTypeHash && keyType == string(types.ScalarAttributeTypeS) {
		return nil
	}
	var have []string
	for _, k := range t.KeySchema {
		name := aws.ToString(k.AttributeName)
		typ := "?"
		for _, a := range t.AttributeDefinitions {
			if aws.ToString(a.AttributeName) == name {
				typ = string(a.AttributeType)
			}
		}
		have = append(have, fmt.Sprintf("%s %s (%s)", k.KeyType, name, typ))
	}
	return fmt.Errorf("dynamocounter: table %q exists with key %s, but the counter needs only a partition key %s of type S; use another table name, or delete this table", table, strings.Join(have, ", "), KeyAttribute)
}

// explainSetup wraps an error of CreateTable's steps with what to do.
func explainSetup(what, action string, err error) error {
	var notFound *types.ResourceNotFoundException
	switch {
	case errors.As(err, &notFound):
		return &hintError{what: what, hint: "the table disappeared while being set up; run CreateTable again", sentinel: ErrTableNotFound, err: err}
	case isThrottling(err):
		return &hintError{what: what, hint: "DynamoDB throttled the request beyond the SDK's retries; run CreateTable again later", sentinel: ErrThrottled, err: err}
	case apiErrorCode(err) == "AccessDeniedException":
		return &hintError{what: what, hint: "the caller lacks " + action + "; grant dynamodb:CreateTable, dynamodb:DescribeTable, dynamodb:DescribeTimeToLive and dynamodb:UpdateTimeToLive on the table (only this setup helper needs them), or create the table in your infrastructure code", err: err}
	case apiErrorCode(err) == "LimitExceededException":
		return &hintError{what: what, hint: "too many table operations are in progress in this account; run CreateTable again in a minute", err: err}
	}
	return &hintError{what: what, err: err}
}
