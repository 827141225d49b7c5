package dynamocounter

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sqsworker/sqsworker/retry"
)

// The attribute names of a counter item (the package documentation lists
// them for infrastructure code).
const (
	keyAttribute   = "messageId" // the partition key (type S): the SQS message ID
	countAttribute = "attempts"  // the number of handler starts (type N)
	ttlAttribute   = "expiresAt" // the expiry in epoch seconds (type N), for the table's TTL
)

// defaultTTL is how long a counter item lives after its last update unless
// Options.TTL says otherwise: SQS's longest retention period (14 days) plus
// one day.
const defaultTTL = 15 * 24 * time.Hour

// API is the part of the DynamoDB client the counter (UpdateItem) and
// CreateTable (the others) use. *dynamodb.Client satisfies it.
type API interface {
	UpdateItem(ctx context.Context, params *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	CreateTable(ctx context.Context, params *dynamodb.CreateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	DescribeTable(ctx context.Context, params *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	DescribeTimeToLive(ctx context.Context, params *dynamodb.DescribeTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTimeToLiveOutput, error)
	UpdateTimeToLive(ctx context.Context, params *dynamodb.UpdateTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error)
}

var (
	_ API                  = (*dynamodb.Client)(nil)
	_ retry.AttemptCounter = (*counter)(nil)
)

// ErrTableNotFound matches, with errors.Is, the errors of a counter or of
// CreateTable caused by a table that does not exist.
var ErrTableNotFound = errors.New("dynamocounter: table not found")

// ErrThrottled matches, with errors.Is, the errors caused by DynamoDB
// throttling that outlasted the SDK's retries.
var ErrThrottled = errors.New("dynamocounter: throttled")

// Options configures the counter New returns and CreateTable.
type Options struct {
	// TTL is how long an item lives after its last update before DynamoDB may
	// delete it. Zero means 15 days (SQS's longest retention period plus a
	// day); New refuses a negative TTL. Keep it longer than the queue's
	// retention period, or a count may restart at 1.
	TTL time.Duration
	// Now returns the current time, used only to compute the expiry. Nil
	// means time.Now.
	Now func() time.Time
	// MaxWait bounds CreateTable's wait for a new table to become ACTIVE.
	// Zero means 5 minutes. ctx's deadline, if sooner, applies too.
	MaxWait time.Duration
}

// counter counts handler starts per message in a DynamoDB table.
type counter struct {
	client API
	table  string
	ttl    time.Duration
	now    func() time.Time
}

// New returns an attempt counter that counts handler starts per message in
// table through client, for worker.Options.AttemptCounter; it is safe for
// concurrent use. The table must exist (see CreateTable). New returns an
// error if client is nil, table is empty or Options.TTL is negative.
//
// Its Attempt records one more handler start of the message and returns
// the new count, 1 for the first start, with exactly one UpdateItem call;
// it ignores receiveCount (the count is of handler starts, not of
// receives). Its Uncount takes back one attempt of a message a handler
// snoozed (retry.Snooze), never below zero, with one conditional
// UpdateItem.
func New(client API, table string, optFns ...func(*Options)) (retry.AttemptCounter, error) {
	if client == nil {
		return nil, errors.New("dynamocounter.New: client is nil; pass a *dynamodb.Client")
	}
	if table == "" {
		return nil, errors.New("dynamocounter.New: table name is empty; pass the name of the counter table")
	}
	var o Options
	for _, fn := range optFns {
		fn(&o)
	}
	if o.TTL == 0 {
		o.TTL = defaultTTL
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.TTL < 0 {
		return nil, fmt.Errorf("dynamocounter.New: Options.TTL is %v; use a positive duration (or 0 for the default)", o.TTL)
	}
	return &counter{client: client, table: table, ttl: o.TTL, now: o.Now}, nil
}

// Attempt records one more handler start of the message and returns the new
// count: 1 for the first start (see New).
func (c *counter) Attempt(ctx context.Context, messageID string, _ int) (int, error) {
	if messageID == "" {
		return 0, errors.New("dynamocounter: empty message ID; pass the SQS message's MessageId")
	}
	expires := c.now().Add(c.ttl).Unix()
	out, err := c.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(c.table),
		Key: map[string]types.AttributeValue{
			keyAttribute: &types.AttributeValueMemberS{Value: messageID},
		},
		UpdateExpression: aws.String("ADD #attempts :one SET #expires = :expires"),
		ExpressionAttributeNames: map[string]string{
			"#attempts": countAttribute,
			"#expires":  ttlAttribute,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":one":     &types.AttributeValueMemberN{Value: "1"},
			":expires": &types.AttributeValueMemberN{Value: strconv.FormatInt(expires, 10)},
		},
		ReturnValues: types.ReturnValueUpdatedNew,
	})
	if err != nil {
		return 0, c.explain(err, messageID)
	}
	var n int
	if av, ok := out.Attributes[countAttribute].(*types.AttributeValueMemberN); ok {
		n, err = strconv.Atoi(av.Value)
	}
	if n < 1 || err != nil {
		return 0, fmt.Errorf("dynamocounter: UpdateItem on table %q returned no positive %s number for message %s (got %v); check that nothing else writes that attribute", c.table, countAttribute, messageID, out.Attributes[countAttribute])
	}
	return n, nil
}

// Uncount takes back one attempt of the message (after a handler snoozed
// it, retry.Snooze), never below zero: one conditional UpdateItem.
func (c *counter) Uncount(ctx context.Context, messageID string) error {
	if messageID == "" {
		return errors.New("dynamocounter: empty message ID; pass the SQS message's MessageId")
	}
	_, err := c.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(c.table),
		Key: map[string]types.AttributeValue{
			keyAttribute: &types.AttributeValueMemberS{Value: messageID},
		},
		UpdateExpression:         aws.String("ADD #attempts :minus"),
		ConditionExpression:      aws.String("#attempts > :zero"),
		ExpressionAttributeNames: map[string]string{"#attempts": countAttribute},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":minus": &types.AttributeValueMemberN{Value: "-1"},
			":zero":  &types.AttributeValueMemberN{Value: "0"},
		},
	})
	var failed *types.ConditionalCheckFailedException
	if errors.As(err, &failed) {
		return nil // nothing to take back
	}
	if err != nil {
		return c.explain(err, messageID)
	}
	return nil
}

// explain wraps an UpdateItem error with what to do about it.
func (c *counter) explain(err error, messageID string) error {
	what := fmt.Sprintf("dynamocounter: counting attempt of message %s in table %q", messageID, c.table)
	return counterTable(c.table).Explain(err, what, "dynamodb:UpdateItem")
}
