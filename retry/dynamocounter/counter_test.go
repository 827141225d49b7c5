package dynamocounter_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/retry/dynamocounter"
)

// fakeAPI is a scripted UpdateItem (the table calls are not used).
type fakeAPI struct {
	dynamocounter.API
	calls []*dynamodb.UpdateItemInput
	out   *dynamodb.UpdateItemOutput
	err   error
}

func (f *fakeAPI) UpdateItem(_ context.Context, in *dynamodb.UpdateItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	f.calls = append(f.calls, in)
	return f.out, f.err
}

func countOutput(n string) *dynamodb.UpdateItemOutput {
	return &dynamodb.UpdateItemOutput{Attributes: map[string]types.AttributeValue{
		dynamocounter.CountAttribute: &types.AttributeValueMemberN{Value: n},
		dynamocounter.TTLAttribute:   &types.AttributeValueMemberN{Value: "1"},
	}}
}

func TestAttemptRequest(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	api := &fakeAPI{out: countOutput("7")}
	c := mustCounter(t, api, "attempts", func(o *dynamocounter.Options) {
		o.Now = func() time.Time { return now }
		o.TTL = 48 * time.Hour
	})
	n, err := c.Attempt(context.Background(), "msg-1", 3)
	if err != nil || n != 7 {
		t.Fatalf("Attempt = %d, %v; want 7, nil", n, err)
	}
	if len(api.calls) != 1 {
		t.Fatalf("%d UpdateItem calls, want exactly 1", len(api.calls))
	}
	in := api.calls[0]
	if aws.ToString(in.TableName) != "attempts" {
		t.Errorf("TableName = %q", aws.ToString(in.TableName))
	}
	if key, ok := in.Key["messageId"].(*types.AttributeValueMemberS); !ok || key.Value != "msg-1" || len(in.Key) != 1 {
		t.Errorf("Key = %#v, want {messageId: S msg-1}", in.Key)
	}
	if got := aws.ToString(in.UpdateExpression); got != "ADD #attempts :one SET #expires = :expires" {
		t.Errorf("UpdateExpression = %q", got)
	}
	if in.ExpressionAttributeNames["#attempts"] != "attempts" || in.ExpressionAttributeNames["#expires"] != "expiresAt" {
		t.Errorf("ExpressionAttributeNames = %v", in.ExpressionAttributeNames)
	}
	if one, ok := in.ExpressionAttributeValues[":one"].(*types.AttributeValueMemberN); !ok || one.Value != "1" {
		t.Errorf(":one = %#v", in.ExpressionAttributeValues[":one"])
	}
	wantExpiry := strconv.FormatInt(now.Add(48*time.Hour).Unix(), 10) // 2030-01-04T03:04:05Z
	if exp, ok := in.ExpressionAttributeValues[":expires"].(*types.AttributeValueMemberN); !ok || exp.Value != wantExpiry || wantExpiry != "1893726245" {
		t.Errorf(":expires = %#v, want %s", in.ExpressionAttributeValues[":expires"], wantExpiry)
	}
	if in.ReturnValues != types.ReturnValueUpdatedNew {
		t.Errorf("ReturnValues = %q, want UPDATED_NEW", in.ReturnValues)
	}
}

func TestAttemptDefaultTTL(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	api := &fakeAPI{out: countOutput("1")}
	c := mustCounter(t, api, "t", func(o *dynamocounter.Options) { o.Now = func() time.Time { return now } })
	if _, err := c.Attempt(context.Background(), "m", 1); err != nil {
		t.Fatal(err)
	}
	exp := api.calls[0].ExpressionAttributeValues[":expires"].(*types.AttributeValueMemberN).Value
	if want := "2296000"; exp != want { // 1_000_000 + 15 days
		t.Errorf("expiresAt = %s, want %s (now + DefaultTTL)", exp, want)
	}
	if dynamocounter.DefaultTTL < 14*24*time.Hour {
		t.Errorf("DefaultTTL %v is shorter than SQS's longest retention", dynamocounter.DefaultTTL)
	}
}

func TestAttemptErrors(t *testing.T) {
	apiErr := func(code string) error { return &smithy.GenericAPIError{Code: code, Message: "from the fake"} }
	tests := []struct {
		name     string
		err      error
		out      *dynamodb.UpdateItemOutput
		sentinel error
		says     string
	}{
		{"missing table", &types.ResourceNotFoundException{Message: aws.String("Requested resource not found")}, nil, dynamocounter.ErrTableNotFound, "dynamocounter.CreateTable"},
		{"provisioned throughput", &types.ProvisionedThroughputExceededException{Message: aws.String("slow down")}, nil, dynamocounter.ErrThrottled, "PAY_PER_REQUEST"},
		{"request limit", &types.RequestLimitExceeded{Message: aws.String("slow down")}, nil, dynamocounter.ErrThrottled, "lower the worker's concurrency"},
		{"throttling exception", &types.ThrottlingException{Message: aws.String("slow down")}, nil, dynamocounter.ErrThrottled, "capacity"},
		{"generic throttling code", apiErr("ThrottlingException"), nil, dynamocounter.ErrThrottled, "capacity"},
		{"access denied", apiErr("AccessDeniedException"), nil, nil, "grant dynamodb:UpdateItem"},
		{"wrong key schema", apiErr("ValidationException"), nil, nil, "partition key messageId of type S"},
		{"cancelled", context.Canceled, nil, nil, "context canceled"},
		{"no attribute returned", nil, &dynamodb.UpdateItemOutput{}, nil, "returned no positive attempts"},
		{"non-number returned", nil, &dynamodb.UpdateItemOutput{Attributes: map[string]types.AttributeValue{"attempts": &types.AttributeValueMemberS{Value: "x"}}}, nil, "returned no positive attempts"},
		{"zero returned", nil, countOutput("0"), nil, "returned no positive attempts"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustCounter(t, &fakeAPI{out: tt.out, err: tt.err}, "jobs-attempts")
			n, err := c.Attempt(context.Background(), "msg-9", 1)
			if err == nil || n != 0 {
				t.Fatalf("Attempt = %d, %v; want an error", n, err)
			}
			if !strings.Contains(err.Error(), tt.says) || !strings.Contains(err.Error(), `"jobs-attempts"`) || !strings.Contains(err.Error(), "msg-9") {
				t.Errorf("error %q does not say %q with the table and message", err, tt.says)
			}
			if tt.err != nil && !errors.Is(err, tt.err) {
				t.Errorf("error %v does not wrap the SDK error", err)
			}
			if tt.sentinel != nil && !errors.Is(err, tt.sentinel) {
				t.Errorf("error %v does not match %v", err, tt.sentinel)
			}
			for _, s := range []error{dynamocounter.ErrTableNotFound, dynamocounter.ErrThrottled} {
				if s != tt.sentinel && errors.Is(err, s) {
					t.Errorf("error %v wrongly matches %v", err, s)
				}
			}
		})
	}
	var rnf *types.ResourceNotFoundException
	_, err := mustCounter(t, &fakeAPI{err: &types.ResourceNotFoundException{}}, "t").Attempt(context.Background(), "m", 1)
	if !errors.As(err, &rnf) {
		t.Errorf("errors.As(*types.ResourceNotFoundException) failed on %v", err)
	}
}

func TestAttemptRejectsEmptyMessageID(t *testing.T) {
	api := &fakeAPI{out: countOutput("1")}
	if _, err := mustCounter(t, api, "t").Attempt(context.Background(), "", 1); err == nil || !strings.Contains(err.Error(), "MessageId") {
		t.Errorf("Attempt with an empty ID = %v", err)
	}
	if len(api.calls) != 0 {
		t.Error("UpdateItem was called for an empty message ID")
	}
}

func TestNewRefusesBadArguments(t *testing.T) {
	for name, f := range map[string]func() (retry.AttemptCounter, error){
		"nil client":  func() (retry.AttemptCounter, error) { return dynamocounter.New(nil, "t") },
		"empty table": func() (retry.AttemptCounter, error) { return dynamocounter.New(&fakeAPI{}, "") },
		"negative TTL": func() (retry.AttemptCounter, error) {
			return dynamocounter.New(&fakeAPI{}, "t", func(o *dynamocounter.Options) { o.TTL = -time.Hour })
		},
	} {
		if c, err := f(); err == nil || c != nil {
			t.Errorf("%s: New = %v, %v; want an error", name, c, err)
		}
	}
}

// mustCounter is New, failing t on error.
func mustCounter(t *testing.T, client dynamocounter.API, table string, optFns ...func(*dynamocounter.Options)) retry.AttemptCounter {
	t.Helper()
	c, err := dynamocounter.New(client, table, optFns...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestUncountRequest(t *testing.T) {
	api := &fakeAPI{out: &dynamodb.UpdateItemOutput{}}
	c := mustCounter(t, api, "jobs-attempts")
	if err := c.Uncount(context.Background(), "m-1"); err != nil {
		t.Fatal(err)
	}
	in := api.calls[0]
	if aws.ToString(in.UpdateExpression) != "ADD #attempts :minus" || aws.ToString(in.ConditionExpression) != "#attempts > :zero" {
		t.Errorf("request %q if %q", aws.ToString(in.UpdateExpression), aws.ToString(in.ConditionExpression))
	}
	api.err = &types.ConditionalCheckFailedException{}
	if err := c.Uncount(context.Background(), "m-1"); err != nil {
		t.Errorf("Uncount at zero = %v, want nil", err)
	}
	api.err = &types.ResourceNotFoundException{}
	if err := c.Uncount(context.Background(), "m-1"); !errors.Is(err, dynamocounter.ErrTableNotFound) {
		t.Errorf("Uncount on a missing table = %v, want ErrTableNotFound", err)
	}
	if err := c.Uncount(context.Background(), ""); err == nil {
		t.Error("Uncount of an empty ID succeeded")
	}
}
