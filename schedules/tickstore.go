package schedules

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sqsworker/sqsworker/idempotency"
	"github.com/sqsworker/sqsworker/internal/awscall"
)

// The items Unwrap keeps in an idempotency table (UnwrapOptions.Table):
// one per tick (who claimed it) and one per running "skip" schedule (its
// lease). The attribute names are the idempotency table's: "key" is the
// partition key, "expiresAt" the TTL.
const (
	tickAttrKey     = "key"
	tickAttrTTL     = "expiresAt"
	tickAttrMessage = "messageId"
	tickAttrOwner   = "token"
	tickAttrUntil   = "lockedUntil"
	tickAttrTick    = "tick"
	tickKeyPrefix   = "sqsworker.schedule/tick/"
	runKeyPrefix    = "sqsworker.schedule/run/"
	// tickTTL keeps a tick's claim while a duplicate delivery may still be
	// waiting in the queue (SQS keeps a message up to 14 days).
	tickTTL = 15 * 24 * time.Hour
	// defaultLease is UnwrapOptions.Lease's zero value.
	defaultLease = time.Minute
)

// errLeaseLost is the cause of a handler context cancelled because its
// schedule's run lease was lost.
var errLeaseLost = errors.New("schedules: the schedule's run lease was lost (another process took it after it expired); the run stops so that two runs do not overlap")

type tickStore struct {
	db    idempotency.API
	table string
	lease time.Duration
}

func sAttr(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }

func nAttr(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

func getS(item map[string]types.AttributeValue, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func (s *tickStore) explain(err error, what string) error {
	var rnf *types.ResourceNotFoundException
	if errors.As(err, &rnf) {
		return fmt.Errorf("schedules: %s: table %s does not exist; create it with idempotency.CreateTable (or in your infrastructure code: partition key \"key\" of type S, time-to-live on \"expiresAt\"), or fix UnwrapOptions.Table or the region: %w", what, s.table, err)
	}
	return fmt.Errorf("schedules: %s in table %s: %w", what, s.table, err)
}

// claim records that message messageID runs tick key; it reports false
// when another message claimed the tick first. The same message may claim
// again (a retry after a failure).
func (s *tickStore) claim(ctx context.Context, key, messageID string) (bool, error) {
	now := time.Now()
	_, err := awscall.DynamoDB(ctx, awscall.Rule{}, s.db.PutItem, &dynamodb.PutItemInput{
		TableName: aws.String(s.table),
		Item: map[string]types.AttributeValue{
			tickAttrKey: sAttr(tickKeyPrefix + key), tickAttrMessage: sAttr(messageID),
			tickAttrTTL: nAttr(now.Add(tickTTL).Unix()),
		},
		ConditionExpression:       aws.String("attribute_not_exists(#k) OR #m = :m OR #e < :now"),
		ExpressionAttributeNames:  map[string]string{"#k": tickAttrKey, "#m": tickAttrMessage, "#e": tickAttrTTL},
		ExpressionAttributeValues: map[string]types.AttributeValue{":m": sAttr(messageID), ":now": nAttr(now.Unix())},
	})
	var failed *types.ConditionalCheckFailedException
	if errors.As(err, &failed) {
		return false, nil
	}
	if err != nil {
		return false, s.explain(err, "claiming tick "+key)
	}
	return true, nil
}

// run is one held lease of a schedule.
type run struct {
	s     *tickStore
	key   string
	token string
	until time.Time // the lease's end as acquired
}

// acquire takes the lease of schedule arn for message messageID running
// tick. It returns nil and the holder's message ID when another run holds
// a live lease.
func (s *tickStore) acquire(ctx context.Context, arn, tick, messageID string) (*run, string, error) {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	r := &run{s: s, key: runKeyPrefix + arn, token: hex.EncodeToString(b)}
	now := time.Now()
	until := now.Add(s.lease)
	r.until = until
	_, err := awscall.DynamoDB(ctx, awscall.Rule{}, s.db.PutItem, &dynamodb.PutItemInput{
		TableName: aws.String(s.table),
		Item: map[string]types.AttributeValue{
			tickAttrKey: sAttr(r.key), tickAttrOwner: sAttr(r.token), tickAttrMessage: sAttr(messageID), tickAttrTick: sAttr(tick),
			tickAttrUntil: nAttr(until.UnixMilli()), tickAttrTTL: nAttr(until.Add(24 * time.Hour).Unix()),
		},
		ConditionExpression:                 aws.String("attribute_not_exists(#k) OR #u < :now OR #o = :o"),
		ExpressionAttributeNames:            map[string]string{"#k": tickAttrKey, "#u": tickAttrUntil, "#o": tickAttrOwner},
		ExpressionAttributeValues:           map[string]types.AttributeValue{":now": nAttr(now.UnixMilli()), ":o": sAttr(r.token)},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var failed *types.ConditionalCheckFailedException
	if errors.As(err, &failed) {
		holder := getS(failed.Item, tickAttrMessage)
		if holder == "" {
			holder = "another run"
		}
		return nil, holder, nil
	}
	if err != nil {
		return nil, "", s.explain(err, "taking the run lease of "+arn)
	}
	return r, "", nil
}

// renew pushes the lease's end to now + lease while this run holds it,
// and returns the new end.
func (r *run) renew(ctx context.Context) (time.Time, error) {
	until := time.Now().Add(r.s.lease)
	_, err := awscall.DynamoDB(ctx, awscall.Rule{}, r.s.db.UpdateItem, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(r.s.table),
		Key:                       map[string]types.AttributeValue{tickAttrKey: sAttr(r.key)},
		UpdateExpression:          aws.String("SET #u = :u, #e = :e"),
		ConditionExpression:       aws.String("#o = :o"),
		ExpressionAttributeNames:  map[string]string{"#u": tickAttrUntil, "#e": tickAttrTTL, "#o": tickAttrOwner},
		ExpressionAttributeValues: map[string]types.AttributeValue{":u": nAttr(until.UnixMilli()), ":e": nAttr(until.Add(24 * time.Hour).Unix()), ":o": sAttr(r.token)},
	})
	return until, err
}

// end removes the lease if this run still holds it.
func (r *run) end(ctx context.Context) {
	_, _ = awscall.DynamoDB(ctx, awscall.Rule{}, r.s.db.DeleteItem, &dynamodb.DeleteItemInput{
		TableName:                 aws.String(r.s.table),
		Key:                       map[string]types.AttributeValue{tickAttrKey: sAttr(r.key)},
		ConditionExpression:       aws.String("#o = :o"),
		ExpressionAttributeNames:  map[string]string{"#o": tickAttrOwner},
		ExpressionAttributeValues: map[string]types.AttributeValue{":o": sAttr(r.token)},
	})
}

// keep renews the lease every third of it until stop is closed; when the
// lease is lost (taken over, or not renewed before it ended) it cancels
// the run with errLeaseLost.
func (r *run) keep(ctx context.Context, cancel context.CancelCauseFunc, stop <-chan struct{}, held time.Time) {
	every := r.s.lease / 3
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		case <-t.C:
		}
		// A renewal may take until the lease ends.
		cctx, done := context.WithDeadline(context.WithoutCancel(ctx), held)
		until, err := r.renew(cctx)
		done()
		var failed *types.ConditionalCheckFailedException
		switch {
		case err == nil:
			held = until
		case errors.As(err, &failed) || time.Now().After(held):
			cancel(errLeaseLost)
			return
		}
	}
}
