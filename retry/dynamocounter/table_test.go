package dynamocounter_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/sqsworker/sqsworker/retry/dynamocounter"
)

// fakeTables is a scripted set of the table calls of API (UpdateItem is
// not used).
type fakeTables struct {
	dynamocounter.API

	createErr error
	status    types.TableStatus
	keys      []types.KeySchemaElement
	attrs     []types.AttributeDefinition
	ttl       *types.TimeToLiveDescription
	updateErr error

	calls   []string
	created *dynamodb.CreateTableInput
	updated *dynamodb.UpdateTimeToLiveInput
}

func newFakeTables() *fakeTables {
	return &fakeTables{
		status: types.TableStatusActive,
		keys:   []types.KeySchemaElement{{AttributeName: aws.String("messageId"), KeyType: types.KeyTypeHash}},
		attrs:  []types.AttributeDefinition{{AttributeName: aws.String("messageId"), AttributeType: types.ScalarAttributeTypeS}},
		ttl:    &types.TimeToLiveDescription{TimeToLiveStatus: types.TimeToLiveStatusDisabled},
	}
}

func (f *fakeTables) CreateTable(_ context.Context, in *dynamodb.CreateTableInput, _ ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error) {
	f.calls = append(f.calls, "CreateTable")
	f.created = in
	return &dynamodb.CreateTableOutput{}, f.createErr
}

func (f *fakeTables) DescribeTable(_ context.Context, in *dynamodb.DescribeTableInput, _ ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	f.calls = append(f.calls, "DescribeTable")
	return &dynamodb.DescribeTableOutput{Table: &types.TableDescription{
		TableName: in.TableName, TableStatus: f.status, KeySchema: f.keys, AttributeDefinitions: f.attrs,
	}}, nil
}

func (f *fakeTables) DescribeTimeToLive(_ context.Context, _ *dynamodb.DescribeTimeToLiveInput, _ ...func(*dynamodb.Options)) (*dynamodb.DescribeTimeToLiveOutput, error) {
	f.calls = append(f.calls, "DescribeTimeToLive")
	return &dynamodb.DescribeTimeToLiveOutput{TimeToLiveDescription: f.ttl}, nil
}

func (f *fakeTables) UpdateTimeToLive(_ context.Context, in *dynamodb.UpdateTimeToLiveInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error) {
	f.calls = append(f.calls, "UpdateTimeToLive")
	f.updated = in
	return &dynamodb.UpdateTimeToLiveOutput{}, f.updateErr
}

func TestCreateTableNew(t *testing.T) {
	f := newFakeTables()
	if err := dynamocounter.CreateTable(context.Background(), f, "jobs-attempts"); err != nil {
		t.Fatalf("CreateTable: %v", err)
	}
	want := []string{"CreateTable", "DescribeTable", "DescribeTimeToLive", "UpdateTimeToLive"}
	if !slices.Equal(f.calls, want) {
		t.Errorf("calls = %v, want %v", f.calls, want)
	}
	in := f.created
	if aws.ToString(in.TableName) != "jobs-attempts" || in.BillingMode != types.BillingModePayPerRequest {
		t.Errorf("CreateTable input: table %q, billing %q", aws.ToString(in.TableName), in.BillingMode)
	}
	if len(in.KeySchema) != 1 || aws.ToString(in.KeySchema[0].AttributeName) != "messageId" || in.KeySchema[0].KeyType != types.KeyTypeHash {
		t.Errorf("KeySchema = %+v", in.KeySchema)
	}
	if len(in.AttributeDefinitions) != 1 || in.AttributeDefinitions[0].AttributeType != types.ScalarAttributeTypeS {
		t.Errorf("AttributeDefinitions = %+v", in.AttributeDefinitions)
	}
	spec := f.updated.TimeToLiveSpecification
	if aws.ToString(spec.AttributeName) != "expiresAt" || !aws.ToBool(spec.Enabled) {
		t.Errorf("TTL spec = %+v, want expiresAt enabled", spec)
	}
}

func TestCreateTableExisting(t *testing.T) {
	for _, status := range []types.TimeToLiveStatus{types.TimeToLiveStatusEnabled, types.TimeToLiveStatusEnabling} {
		f := newFakeTables()
		f.createErr = &types.ResourceInUseException{Message: aws.String("Table already exists")}
		f.ttl = &types.TimeToLiveDescription{TimeToLiveStatus: status, AttributeName: aws.String("expiresAt")}
		if err := dynamocounter.CreateTable(context.Background(), f, "t"); err != nil {
			t.Fatalf("TTL %s: CreateTable on an existing table: %v", status, err)
		}
		if slices.Contains(f.calls, "UpdateTimeToLive") {
			t.Errorf("TTL %s: UpdateTimeToLive called although TTL is already on expiresAt", status)
		}
	}
}

func TestCreateTableErrors(t *testing.T) {
	tests := []struct {
		name  string
		setup func(*fakeTables)
		says  string
	}{
		{"wrong key", func(f *fakeTables) {
			f.createErr = &types.ResourceInUseException{}
			f.keys = []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}}
			f.attrs = []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}}
		}, "exists with key HASH id (S), but the counter needs only a partition key messageId"},
		{"numeric key", func(f *fakeTables) {
			f.createErr = &types.ResourceInUseException{}
			f.attrs = []types.AttributeDefinition{{AttributeName: aws.String("messageId"), AttributeType: types.ScalarAttributeTypeN}}
		}, "HASH messageId (N)"},
		{"sort key", func(f *fakeTables) {
			f.createErr = &types.ResourceInUseException{}
			f.keys = append(f.keys, types.KeySchemaElement{AttributeName: aws.String("at"), KeyType: types.KeyTypeRange})
		}, "use another table name"},
		{"TTL on another attribute", func(f *fakeTables) {
			f.ttl = &types.TimeToLiveDescription{TimeToLiveStatus: types.TimeToLiveStatusEnabled, AttributeName: aws.String("ttl")}
		}, `expires items by attribute "ttl"`},
		{"TTL being disabled", func(f *fakeTables) {
			f.ttl = &types.TimeToLiveDescription{TimeToLiveStatus: types.TimeToLiveStatusDisabling}
		}, "run CreateTable again"},
		{"access denied", func(f *fakeTables) {
			f.createErr = &smithy.GenericAPIError{Code: "AccessDeniedException", Message: "no"}
		}, "lacks dynamodb:CreateTable"},
		{"TTL update denied", func(f *fakeTables) {
			f.updateErr = &smithy.GenericAPIError{Code: "AccessDeniedException", Message: "no"}
		}, "lacks dynamodb:UpdateTimeToLive"},
		{"too many table operations", func(f *fakeTables) {
			f.createErr = &smithy.GenericAPIError{Code: "LimitExceededException", Message: "busy"}
		}, "again in a minute"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeTables()
			tt.setup(f)
			err := dynamocounter.CreateTable(context.Background(), f, "jobs-attempts")
			if err == nil || !strings.Contains(err.Error(), tt.says) || !strings.Contains(err.Error(), `"jobs-attempts"`) {
				t.Errorf("CreateTable = %v, want an error about the table saying %q", err, tt.says)
			}
		})
	}
}

func TestCreateTableStopsWaitingWithTheContext(t *testing.T) {
	f := newFakeTables()
	f.status = types.TableStatusCreating
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := dynamocounter.CreateTable(ctx, f, "t")
	if err == nil || !strings.Contains(err.Error(), "to become ACTIVE") || !errors.Is(err, context.Canceled) {
		t.Errorf("CreateTable with a cancelled context on a CREATING table = %v", err)
	}
}

func TestCreateTableArguments(t *testing.T) {
	if err := dynamocounter.CreateTable(context.Background(), nil, "t"); err == nil {
		t.Error("nil client accepted")
	}
	if err := dynamocounter.CreateTable(context.Background(), newFakeTables(), ""); err == nil {
		t.Error("empty table name accepted")
	}
}
