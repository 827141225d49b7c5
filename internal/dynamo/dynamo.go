// Package dynamo is what sqsworker's DynamoDB-backed packages
// (retry/dynamocounter, idempotency) share: the setup of a table keyed by
// one string attribute whose items expire by a time-to-live attribute, and
// the explanation of DynamoDB errors as errors that say what to do.
//
// Nothing here is public API: each package declares its own client
// interfaces, sentinels and CreateTable, and describes its table with a
// Table. Every call is made by the library's one retry rule
// (internal/awscall), with the SDK's retryer off.
package dynamo

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/sqsworker/sqsworker/internal/awscall"
)

// TableAPI is the part of the DynamoDB client Table.Create uses.
type TableAPI interface {
	CreateTable(ctx context.Context, params *dynamodb.CreateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	DescribeTable(ctx context.Context, params *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	DescribeTimeToLive(ctx context.Context, params *dynamodb.DescribeTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTimeToLiveOutput, error)
	UpdateTimeToLive(ctx context.Context, params *dynamodb.UpdateTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error)
}

var _ TableAPI = (*dynamodb.Client)(nil)

// DefaultMaxWait bounds the wait for a new table to become ACTIVE.
const DefaultMaxWait = 5 * time.Minute

// Table describes a table with a single partition key of type S whose items
// expire by a TTL attribute, and how its package names things in errors.
type Table struct {
	Name string // the table's name
	Key  string // the partition key attribute (type S)
	TTL  string // the time-to-live attribute (epoch seconds)

	Pkg   string // the package, as errors and hints name it: "dynamocounter"
	Items string // what the items are, in errors: "counter items"
	Use   string // what the table serves, in errors: "the counter"

	NotFound  error // the package's sentinel for a missing table
	Throttled error // the package's sentinel for throttling

	// Rule is how the table's calls are made and counted (internal/awscall;
	// zero value: the one rule's defaults, uncounted).
	Rule awscall.Rule
}

// Create makes the table ready: it creates it if it does not exist
// (on-demand capacity), waits up to maxWait (DefaultMaxWait when ≤ 0) until
// it is ACTIVE, and enables time-to-live on t.TTL. On an existing table it
// checks the key schema and the TTL setting and changes nothing that is
// already right.
func (t Table) Create(ctx context.Context, client TableAPI, maxWait time.Duration) error {
	if client == nil {
		return fmt.Errorf("%s: CreateTable: client is nil; pass a *dynamodb.Client", t.Pkg)
	}
	if t.Name == "" {
		return fmt.Errorf("%s: CreateTable: table name is empty; pass the name of the table for %s", t.Pkg, t.Use)
	}
	if maxWait <= 0 {
		maxWait = DefaultMaxWait
	}
	what := func(step string) string {
		return fmt.Sprintf("%s: setting up table %q: %s", t.Pkg, t.Name, step)
	}

	_, err := awscall.DynamoDB(ctx, t.Rule, client.CreateTable, &dynamodb.CreateTableInput{
		TableName: aws.String(t.Name),
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(t.Key), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(t.Key), KeyType: types.KeyTypeHash},
		},
		BillingMode: types.BillingModePayPerRequest,
	})
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) { // in use: it exists already
		return t.explainSetup(what("CreateTable"), "dynamodb:CreateTable", err)
	}

	// The waiter polls; each of its requests is made by the rule.
	describe := describeFunc(func(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
		return awscall.DynamoDB(ctx, t.Rule, client.DescribeTable, in, optFns...)
	})
	waiter := dynamodb.NewTableExistsWaiter(describe, func(w *dynamodb.TableExistsWaiterOptions) {
		w.MinDelay, w.MaxDelay = time.Second, 10*time.Second
	})
	desc, err := waiter.WaitForOutput(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(t.Name)}, maxWait)
	if err != nil {
		return t.explainSetup(what(fmt.Sprintf("waiting up to %v for the table to become ACTIVE", maxWait)), "dynamodb:DescribeTable", err)
	}
	if err := t.checkKeySchema(desc.Table); err != nil {
		return err
	}

	ttl, err := awscall.DynamoDB(ctx, t.Rule, client.DescribeTimeToLive, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(t.Name)})
	if err != nil {
		return t.explainSetup(what("DescribeTimeToLive"), "dynamodb:DescribeTimeToLive", err)
	}
	if d := ttl.TimeToLiveDescription; d != nil {
		attr := aws.ToString(d.AttributeName)
		switch d.TimeToLiveStatus {
		case types.TimeToLiveStatusEnabled, types.TimeToLiveStatusEnabling:
			if attr == t.TTL {
				return nil
			}
			return fmt.Errorf("%s: table %q expires items by attribute %q, but %s carry their expiry in %q, and DynamoDB allows one TTL attribute per table; use a separate table for %s", t.Pkg, t.Name, attr, t.Items, t.TTL, t.Use)
		case types.TimeToLiveStatusDisabling:
			return fmt.Errorf("%s: time-to-live is being disabled on table %q; wait until it is DISABLED (this can take up to an hour) and run CreateTable again", t.Pkg, t.Name)
		}
	}
	_, err = awscall.DynamoDB(ctx, t.Rule, client.UpdateTimeToLive, &dynamodb.UpdateTimeToLiveInput{
		TableName: aws.String(t.Name),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{
			AttributeName: aws.String(t.TTL),
			Enabled:       aws.Bool(true),
		},
	})
	if err != nil {
		return t.explainSetup(what("enabling time-to-live on "+t.TTL), "dynamodb:UpdateTimeToLive", err)
	}
	return nil
}

// describeFunc is a DescribeTable call, for the table waiter.
type describeFunc func(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)

func (f describeFunc) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	return f(ctx, in, optFns...)
}

// checkKeySchema verifies that an existing table has the expected key.
func (t Table) checkKeySchema(d *types.TableDescription) error {
	if d == nil {
		return fmt.Errorf("%s: DescribeTable returned no description of table %q; check the endpoint", t.Pkg, t.Name)
	}
	keyType := ""
	for _, a := range d.AttributeDefinitions {
		if aws.ToString(a.AttributeName) == t.Key {
			keyType = string(a.AttributeType)
		}
	}
	if len(d.KeySchema) == 1 && aws.ToString(d.KeySchema[0].AttributeName) == t.Key &&
		d.KeySchema[0].KeyType == types.KeyTypeHash && keyType == string(types.ScalarAttributeTypeS) {
		return nil
	}
	var have []string
	for _, k := range d.KeySchema {
		name := aws.ToString(k.AttributeName)
		typ := "?"
		for _, a := range d.AttributeDefinitions {
			if aws.ToString(a.AttributeName) == name {
				typ = string(a.AttributeType)
			}
		}
		have = append(have, fmt.Sprintf("%s %s (%s)", k.KeyType, name, typ))
	}
	return fmt.Errorf("%s: table %q exists with key %s, but %s needs only a partition key %s of type S; use another table name, or delete this table", t.Pkg, t.Name, strings.Join(have, ", "), t.Use, t.Key)
}

// explainSetup wraps an error of Create's steps with what to do.
func (t Table) explainSetup(what, action string, err error) error {
	var notFound *types.ResourceNotFoundException
	switch {
	case errors.As(err, &notFound):
		return &Error{What: what, Hint: "the table disappeared while being set up; run CreateTable again", Sentinel: t.NotFound, Err: err}
	case IsThrottling(err):
		return &Error{What: what, Hint: "DynamoDB throttled the request beyond the library's retries; run CreateTable again later", Sentinel: t.Throttled, Err: err}
	case ErrorCode(err) == "AccessDeniedException":
		return &Error{What: what, Hint: "the caller lacks " + action + "; grant dynamodb:CreateTable, dynamodb:DescribeTable, dynamodb:DescribeTimeToLive and dynamodb:UpdateTimeToLive on the table (only this setup helper needs them), or create the table in your infrastructure code", Err: err}
	case ErrorCode(err) == "LimitExceededException":
		return &Error{What: what, Hint: "too many table operations are in progress in this account; run CreateTable again in a minute", Err: err}
	}
	return &Error{What: what, Err: err}
}

// Explain wraps err, returned by an item call on the table (what says
// which, for which item), with what to do about it. actions names the IAM
// actions the package's item calls need ("dynamodb:UpdateItem").
func (t Table) Explain(err error, what, actions string) error {
	var notFound *types.ResourceNotFoundException
	switch {
	case errors.As(err, &notFound):
		return &Error{What: what, Hint: fmt.Sprintf("the table does not exist in this client's account and region; create it with %s.CreateTable, or fix the table name or region", t.Pkg), Sentinel: t.NotFound, Err: err}
	case IsThrottling(err):
		return &Error{What: what, Hint: "DynamoDB throttled the request beyond the library's retries; switch the table to on-demand capacity (PAY_PER_REQUEST, as CreateTable does), raise its provisioned write capacity, or lower the worker's concurrency", Sentinel: t.Throttled, Err: err}
	case ErrorCode(err) == "AccessDeniedException":
		return &Error{What: what, Hint: fmt.Sprintf("the caller may not write to the table; grant %s on it to the worker's role", actions), Err: err}
	case ErrorCode(err) == "ValidationException":
		return &Error{What: what, Hint: fmt.Sprintf("the table does not fit %s; it needs a partition key %s of type S and no sort key (%s.CreateTable makes one)", t.Use, t.Key, t.Pkg), Err: err}
	}
	return &Error{What: what, Err: err}
}

// IsThrottling reports whether err is DynamoDB throttling.
func IsThrottling(err error) bool {
	var (
		pte *types.ProvisionedThroughputExceededException
		rle *types.RequestLimitExceeded
		te  *types.ThrottlingException
	)
	if errors.As(err, &pte) || errors.As(err, &rle) || errors.As(err, &te) {
		return true
	}
	switch ErrorCode(err) {
	case "ThrottlingException", "ProvisionedThroughputExceededException", "RequestLimitExceeded", "Throttling":
		return true
	}
	return false
}

// ErrorCode returns the API error code of err, or "".
func ErrorCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// Error is "<What>: <Hint>: <Err>", matching Sentinel (if any) and Err
// with errors.Is and errors.As.
type Error struct {
	What, Hint string
	Sentinel   error
	Err        error
}

// Error returns the message.
func (e *Error) Error() string {
	if e.Hint == "" {
		return e.What + ": " + e.Err.Error()
	}
	return e.What + ": " + e.Hint + ": " + e.Err.Error()
}

// Unwrap returns the sentinel (if any) and the wrapped error.
func (e *Error) Unwrap() []error {
	if e.Sentinel == nil {
		return []error{e.Err}
	}
	return []error{e.Sentinel, e.Err}
}

// DescribeAPI is the part of the DynamoDB client Table.Check uses.
type DescribeAPI interface {
	DescribeTable(ctx context.Context, params *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
}

// Check verifies, with one DescribeTable call, that the table exists and
// has the expected key, for a constructor that should refuse a missing or
// wrong table at once rather than at the first item call.
func (t Table) Check(ctx context.Context, client DescribeAPI) error {
	out, err := awscall.DynamoDB(ctx, t.Rule, client.DescribeTable, &dynamodb.DescribeTableInput{TableName: aws.String(t.Name)})
	if err != nil {
		var notFound *types.ResourceNotFoundException
		if errors.As(err, &notFound) {
			return &Error{What: fmt.Sprintf("%s: table %q", t.Pkg, t.Name), Hint: fmt.Sprintf("it does not exist in this client's account and region; create it with %s.CreateTable (or in your infrastructure code: partition key %s of type S, time-to-live on %s), or fix the table name or region", t.Pkg, t.Key, t.TTL), Sentinel: t.NotFound, Err: err}
		}
		return t.Explain(err, fmt.Sprintf("%s: checking table %q", t.Pkg, t.Name), "dynamodb:DescribeTable")
	}
	return t.checkKeySchema(out.Table)
}
