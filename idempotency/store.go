package idempotency

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

	"github.com/sqsworker/sqsworker/internal/dynamo"
)

// The attribute names of an idempotency record.
const (
	// attrKey is the table's partition key (type S): the job's key,
	// with Options.KeyPrefix in front.
	attrKey = "key"
	// attrStatus is the record's Status (type S).
	attrStatus = "status"
	// attrToken identifies the run that holds or held the lock (type
	// S, random); every write after the first is conditional on it.
	attrToken = "token"
	// attrMessage is the SQS message ID of the run that holds the lock
	// or completed the job (type S).
	attrMessage = "messageId"
	// attrStarted is when that run took the lock (type N, epoch
	// milliseconds).
	attrStarted = "startedAt"
	// attrLock is when the lock of a record in progress expires (type
	// N, epoch milliseconds): the message's visibility deadline plus
	// Options.LockMargin, pushed forward as the heartbeat extends it.
	attrLock = "lockedUntil"
	// attrCompleted is when the job completed (type N, epoch
	// milliseconds).
	attrCompleted = "completedAt"
	// attrResult is the handler's result (type B), when it set one
	// (SetResult).
	attrResult = "result"
	// attrTTL is when the record stops counting and DynamoDB may delete
	// it (type N, epoch seconds); the table's time-to-live uses it.
	attrTTL = "expiresAt"
)

// abandonedTTL is how long after its lock expired a record in progress
// (left by a crashed run) is kept before DynamoDB's time-to-live may delete
// it. It only cleans up: an expired lock can be taken over at once.
const abandonedTTL = time.Hour

// Status is the state of an idempotency record.
type Status string

// The states a record can be in. A failed job has no record: its record is
// deleted so that the retry runs.
const (
	// InProgress: a run holds the lock until Record.LockedUntil.
	InProgress Status = "INPROGRESS"
	// Completed: the job succeeded; duplicates are acknowledged without
	// running until Record.ExpiresAt.
	Completed Status = "COMPLETED"
)

// Record is an idempotency record as DynamoDB holds it.
type Record struct {
	// Key is the stored key (prefix and hash applied).
	Key string
	// Status is InProgress or Completed.
	Status Status
	// MessageID is the SQS message whose run holds the lock (InProgress) or
	// completed the job (Completed).
	MessageID string
	// StartedAt is when that run took the lock.
	StartedAt time.Time
	// LockedUntil is when the lock expires (InProgress only).
	LockedUntil time.Time
	// CompletedAt is when the job completed (Completed only).
	CompletedAt time.Time
	// ExpiresAt is when the record stops counting: a completed job's
	// duplicates run again after it.
	ExpiresAt time.Time
	// Result is what the handler passed to SetResult, or nil.
	Result []byte
}

// lock is one run's hold on a key.
type lock struct {
	key, messageID, token string
	started               time.Time
	until                 time.Time // the expiry last written
}

// store makes the record's DynamoDB requests.
type store struct {
	client API
	table  string
	ttl    time.Duration
	calls  *countCalls
}

func (s *store) tableDesc() dynamo.Table { return recordTable(s.table) }

// conflict reports a conditional write that found the record not as the run
// expected it; rec is the record DynamoDB found (nil if there is none), and
// own says it carries this run's token: an earlier attempt of the same
// write took effect and its answer was lost (the SDK then retried).
type conflict struct {
	rec *Record
	own bool
}

func (c *conflict) Error() string { return "idempotency: the record is not in the expected state" }

// acquire takes the lock on l.key until l.until, unless a live record is
// there: then it returns that record (Completed, or InProgress under
// another run's lock). taken is the expired lock's record it replaced, if
// any.
func (s *store) acquire(ctx context.Context, l *lock) (existing, taken *Record, err error) {
	now := time.Now()
	item := map[string]types.AttributeValue{
		attrKey:     str(l.key),
		attrStatus:  str(string(InProgress)),
		attrToken:   str(l.token),
		attrMessage: str(l.messageID),
		attrStarted: millis(l.started),
		attrLock:    millis(l.until),
		attrTTL:     seconds(l.until.Add(abandonedTTL)),
	}
	s.calls[apiPutItem].Add(1)
	out, err := s.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:           aws.String(s.table),
		Item:                item,
		ConditionExpression: aws.String("attribute_not_exists(#key) OR #expires < :nowSeconds OR (#status = :inProgress AND #locked < :now)"),
		ExpressionAttributeNames: map[string]string{
			"#key": attrKey, "#expires": attrTTL, "#status": attrStatus, "#locked": attrLock,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":nowSeconds": seconds(now), ":now": millis(now), ":inProgress": str(string(InProgress)),
		},
		ReturnValues:                        types.ReturnValueAllOld,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var failed *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &failed):
		if len(failed.Item) == 0 { // gone since the check: try once more
			return nil, nil, &conflict{}
		}
		if getS(failed.Item, attrToken) == l.token {
			// This run's own lock: an earlier attempt of this PutItem took
			// it and its answer was lost (what it replaced is unknown).
			return nil, nil, nil
		}
		return recordOf(failed.Item), nil, nil
	case err != nil:
		return nil, nil, s.explain(err, "taking the lock", l)
	}
	if len(out.Attributes) > 0 {
		taken = recordOf(out.Attributes)
	}
	return nil, taken, nil
}

// refresh pushes l's expiry to until, if l still holds the lock.
func (s *store) refresh(ctx context.Context, l *lock, until time.Time) error {
	s.calls[apiUpdateItem].Add(1)
	_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(s.table),
		Key:                 map[string]types.AttributeValue{attrKey: str(l.key)},
		UpdateExpression:    aws.String("SET #locked = :locked, #expires = :expires"),
		ConditionExpression: aws.String("#status = :inProgress AND #token = :token"),
		ExpressionAttributeNames: map[string]string{
			"#locked": attrLock, "#expires": attrTTL, "#status": attrStatus, "#token": attrToken,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":locked": millis(until), ":expires": seconds(until.Add(abandonedTTL)),
			":inProgress": str(string(InProgress)), ":token": str(l.token),
		},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err := s.conflictOrExplain(err, "extending the lock", l); err != nil {
		return err
	}
	l.until = until
	return nil
}

// complete marks l's job completed, with result (nil: none), if l still
// holds the lock.
func (s *store) complete(ctx context.Context, l *lock, result []byte) error {
	now := time.Now()
	set := "SET #status = :completed, #completed = :now, #expires = :expires"
	values := map[string]types.AttributeValue{
		":completed": str(string(Completed)), ":now": millis(now), ":expires": seconds(now.Add(s.ttl)),
		":inProgress": str(string(InProgress)), ":token": str(l.token),
	}
	names := map[string]string{
		"#status": attrStatus, "#completed": attrCompleted, "#expires": attrTTL,
		"#locked": attrLock, "#token": attrToken,
	}
	if result != nil {
		set += ", #result = :result"
		values[":result"] = &types.AttributeValueMemberB{Value: result}
		names["#result"] = attrResult
	}
	s.calls[apiUpdateItem].Add(1)
	_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           aws.String(s.table),
		Key:                                 map[string]types.AttributeValue{attrKey: str(l.key)},
		UpdateExpression:                    aws.String(set + " REMOVE #locked"),
		ConditionExpression:                 aws.String("#status = :inProgress AND #token = :token"),
		ExpressionAttributeNames:            names,
		ExpressionAttributeValues:           values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	err = s.conflictOrExplain(err, "recording the job as completed", l)
	if c, ok := err.(*conflict); ok && c.own && c.rec.Status == Completed {
		return nil // an earlier attempt recorded it; its answer was lost
	}
	return err
}

// release deletes l's record, if l still holds the lock, so that a retry
// runs.
func (s *store) release(ctx context.Context, l *lock) error {
	s.calls[apiDeleteItem].Add(1)
	_, err := s.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                           aws.String(s.table),
		Key:                                 map[string]types.AttributeValue{attrKey: str(l.key)},
		ConditionExpression:                 aws.String("#status = :inProgress AND #token = :token"),
		ExpressionAttributeNames:            map[string]string{"#status": attrStatus, "#token": attrToken},
		ExpressionAttributeValues:           map[string]types.AttributeValue{":inProgress": str(string(InProgress)), ":token": str(l.token)},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	return s.conflictOrExplain(err, "removing the record of the failed run", l)
}

// conflictOrExplain turns a failed condition into a *conflict and any other
// error into one that says what to do.
func (s *store) conflictOrExplain(err error, what string, l *lock) error {
	var failed *types.ConditionalCheckFailedException
	switch {
	case err == nil:
		return nil
	case errors.As(err, &failed):
		c := &conflict{}
		if len(failed.Item) > 0 {
			c.rec, c.own = recordOf(failed.Item), getS(failed.Item, attrToken) == l.token
		}
		return c
	}
	return s.explain(err, what, l)
}

// explain wraps a DynamoDB error with what to do about it.
func (s *store) explain(err error, what string, l *lock) error {
	return s.tableDesc().Explain(err,
		fmt.Sprintf("idempotency: %s for message %s (key %q) in table %q", what, l.messageID, l.key, s.table),
		"dynamodb:PutItem, dynamodb:UpdateItem and dynamodb:DeleteItem")
}

// recordOf reads a record from its item.
func recordOf(item map[string]types.AttributeValue) *Record {
	r := &Record{
		Key:         getS(item, attrKey),
		Status:      Status(getS(item, attrStatus)),
		MessageID:   getS(item, attrMessage),
		StartedAt:   getMillis(item, attrStarted),
		LockedUntil: getMillis(item, attrLock),
		CompletedAt: getMillis(item, attrCompleted),
	}
	if n, err := strconv.ParseInt(getN(item, attrTTL), 10, 64); err == nil {
		r.ExpiresAt = time.Unix(n, 0)
	}
	if b, ok := item[attrResult].(*types.AttributeValueMemberB); ok {
		r.Result = b.Value
	}
	return r
}

func str(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }

func millis(t time.Time) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(t.UnixMilli(), 10)}
}

// seconds is t in epoch seconds, rounded up.
func seconds(t time.Time) types.AttributeValue {
	s := t.Unix()
	if t.After(time.Unix(s, 0)) {
		s++
	}
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(s, 10)}
}

func getS(item map[string]types.AttributeValue, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func getN(item map[string]types.AttributeValue, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberN); ok {
		return v.Value
	}
	return ""
}

func getMillis(item map[string]types.AttributeValue, name string) time.Time {
	n, err := strconv.ParseInt(getN(item, name), 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.UnixMilli(n)
}

// newToken returns a random token that names one run.
func newToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
