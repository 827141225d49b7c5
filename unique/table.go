package unique

// Every DynamoDB call of the Store is in this file, made through call: the
// library's one retry rule (internal/awscall), the SDK's retryer off, each
// request counted once.

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sqsworker/sqsworker/internal/awscall"
)

// The attributes of the keys table.
const (
	attrKey   = "key"       // partition key (S)
	attrTTL   = "expiresAt" // time-to-live, epoch seconds (N)
	attrUntil = "until"     // expiry, epoch milliseconds (N): what claims compare
	attrToken = "token"     // the claim's token (S)
	attrMode  = "mode"      // modeSettled or modePeriod (S)
	attrJob   = "job"       // the job's message ID (S)
	// Debounce mode:
	attrBody  = "body"  // the last send's body (S)
	attrDue   = "due"   // when the job may run, epoch milliseconds (N)
	attrCap   = "cap"   // the latest due time, epoch milliseconds (N)
	attrState = "state" // "run" once the job has started (S)
)

// call makes one DynamoDB call by the library's retry rule: each request
// bounded by the Store's CallTimeout, the SDK's retryer off (fn passes
// awscall.DynamoDBOff), every request counted once. A lost condition is an
// answer, not an error of the table.
func call[T any](s *Store, ctx context.Context, fn func(ctx context.Context) (T, error)) (T, error) {
	rule := awscall.Rule{Timeout: s.o.CallTimeout, OnRequest: func(r awscall.Request) {
		s.st.requests.Add(1)
		if r.Err != nil && !conditionFailed(r.Err) {
			s.st.requestErrors.Add(1)
		}
	}}
	return awscall.Do(ctx, rule, "DynamoDB", awscall.Op[T](), fn)
}

func conditionFailed(err error) bool {
	var cf *types.ConditionalCheckFailedException
	return errors.As(err, &cf)
}

func (s *Store) explain(err error, what string) error {
	return keysTable(s.table).Explain(err, "unique: "+what+" in table "+strconv.Quote(s.table), "dynamodb:PutItem, dynamodb:UpdateItem and dynamodb:DeleteItem")
}

func key(k string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrKey: &types.AttributeValueMemberS{Value: k}}
}

func num(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

func str(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }

// claim takes c's key at now with one conditional PutItem: the key is
// free, or its expiry has passed (took reports that case). A key held
// returns ErrDuplicate with what the item says of its holder.
func (s *Store) claim(ctx context.Context, c claim, now time.Time) (h holder, took bool, err error) {
	item := map[string]types.AttributeValue{
		attrKey: str(c.key), attrToken: str(c.token), attrMode: str(c.mode),
		attrUntil: num(c.until.UnixMilli()), attrTTL: num(c.until.Add(time.Second).Unix()),
	}
	if c.body != nil {
		item[attrBody] = str(*c.body)
		item[attrDue] = num(c.due.UnixMilli())
		if !c.cap.IsZero() {
			item[attrCap] = num(c.cap.UnixMilli())
		}
	}
	out, err := call(s, ctx, func(ctx context.Context) (*dynamodb.PutItemOutput, error) {
		return s.client.PutItem(ctx, &dynamodb.PutItemInput{
			TableName:                           aws.String(s.table),
			Item:                                item,
			ConditionExpression:                 aws.String("attribute_not_exists(#k) OR #u < :now"),
			ExpressionAttributeNames:            map[string]string{"#k": attrKey, "#u": attrUntil},
			ExpressionAttributeValues:           map[string]types.AttributeValue{":now": num(now.UnixMilli())},
			ReturnValues:                        types.ReturnValueAllOld,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}, awscall.DynamoDBOff)
	})
	if err != nil {
		var cf *types.ConditionalCheckFailedException
		if errors.As(err, &cf) {
			h = holder{job: strAttr(cf.Item, attrJob), token: strAttr(cf.Item, attrToken), mode: strAttr(cf.Item, attrMode), running: strAttr(cf.Item, attrState) != ""}
			if ms, ok := numAttr(cf.Item, attrCap); ok {
				h.cap = time.UnixMilli(ms)
			}
			if h.token == c.token {
				// This claim's own item: an earlier request of this call
				// took the key and its answer was lost (the rule retried).
				return holder{}, false, nil
			}
			return h, false, ErrDuplicate
		}
		return holder{}, false, s.explain(err, "claiming key "+strconv.Quote(c.key))
	}
	return holder{}, len(out.Attributes) > 0, nil
}

func strAttr(item map[string]types.AttributeValue, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func numAttr(item map[string]types.AttributeValue, name string) (int64, bool) {
	v, ok := item[name].(*types.AttributeValueMemberN)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(v.Value, 10, 64)
	return n, err == nil
}

// fold folds a debounced send into the waiting job of token: the key's
// body becomes body and its due time due, with one conditional
// UpdateItem. It reports false when token no longer holds the key or its
// job has started.
func (s *Store) fold(ctx context.Context, k, token, body string, due, until time.Time) (bool, error) {
	_, err := call(s, ctx, func(ctx context.Context) (*dynamodb.UpdateItemOutput, error) {
		return s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                aws.String(s.table),
			Key:                      key(k),
			UpdateExpression:         aws.String("SET #b = :b, #d = :d, #u = :u, #e = :e"),
			ConditionExpression:      aws.String("#t = :t AND attribute_not_exists(#s)"),
			ExpressionAttributeNames: map[string]string{"#b": attrBody, "#d": attrDue, "#u": attrUntil, "#e": attrTTL, "#t": attrToken, "#s": attrState},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":b": str(body), ":d": num(due.UnixMilli()), ":u": num(until.UnixMilli()), ":e": num(until.Add(time.Second).Unix()), ":t": str(token),
			},
		}, awscall.DynamoDBOff)
	})
	if conditionFailed(err) {
		return false, nil
	}
	if err != nil {
		return false, s.explain(err, "debouncing key "+strconv.Quote(k))
	}
	return true, nil
}

// start marks the debounced job of token as running if it is due at now,
// with one conditional UpdateItem, and returns its last body. When it is
// not due yet, wait is how long until it is; found is false when token no
// longer holds the key.
func (s *Store) start(ctx context.Context, k, token string, now time.Time) (body string, wait time.Duration, found bool, err error) {
	out, err := call(s, ctx, func(ctx context.Context) (*dynamodb.UpdateItemOutput, error) {
		return s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                           aws.String(s.table),
			Key:                                 key(k),
			UpdateExpression:                    aws.String("SET #s = :run"),
			ConditionExpression:                 aws.String("#t = :t AND #d <= :now"),
			ExpressionAttributeNames:            map[string]string{"#s": attrState, "#t": attrToken, "#d": attrDue},
			ExpressionAttributeValues:           map[string]types.AttributeValue{":run": str("run"), ":t": str(token), ":now": num(now.UnixMilli())},
			ReturnValues:                        types.ReturnValueAllNew,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}, awscall.DynamoDBOff)
	})
	var cf *types.ConditionalCheckFailedException
	if errors.As(err, &cf) {
		if strAttr(cf.Item, attrToken) != token {
			return "", 0, false, nil
		}
		due, _ := numAttr(cf.Item, attrDue)
		return "", max(time.UnixMilli(due).Sub(now), time.Millisecond), true, nil
	}
	if err != nil {
		return "", 0, false, s.explain(err, "starting the debounced job of key "+strconv.Quote(k))
	}
	return strAttr(out.Attributes, attrBody), 0, true, nil
}

// recordJob records the message ID of c's job on its key, if c still
// holds it.
func (s *Store) recordJob(ctx context.Context, c claim, id string) error {
	_, err := call(s, ctx, func(ctx context.Context) (*dynamodb.UpdateItemOutput, error) {
		return s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                 aws.String(s.table),
			Key:                       key(c.key),
			UpdateExpression:          aws.String("SET #j = :j"),
			ConditionExpression:       aws.String("#t = :t"),
			ExpressionAttributeNames:  map[string]string{"#j": attrJob, "#t": attrToken},
			ExpressionAttributeValues: map[string]types.AttributeValue{":j": str(id), ":t": str(c.token)},
		}, awscall.DynamoDBOff)
	})
	if err != nil && !conditionFailed(err) { // released already: the job is done
		return s.explain(err, "recording the job of key "+strconv.Quote(c.key))
	}
	return nil
}

// release deletes key if token still holds it (otherwise it was released,
// or taken over after its expiry: nothing to do).
func (s *Store) release(ctx context.Context, k, token string) error {
	_, err := call(s, ctx, func(ctx context.Context) (*dynamodb.DeleteItemOutput, error) {
		return s.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
			TableName:                 aws.String(s.table),
			Key:                       key(k),
			ConditionExpression:       aws.String("#t = :t"),
			ExpressionAttributeNames:  map[string]string{"#t": attrToken},
			ExpressionAttributeValues: map[string]types.AttributeValue{":t": str(token)},
		}, awscall.DynamoDBOff)
	})
	if err != nil && !conditionFailed(err) {
		return s.explain(err, "releasing key "+strconv.Quote(k))
	}
	return nil
}

// refresh pushes key's expiry to until, if token still holds it and it
// expires earlier.
func (s *Store) refresh(ctx context.Context, k, token string, until time.Time) error {
	_, err := call(s, ctx, func(ctx context.Context) (*dynamodb.UpdateItemOutput, error) {
		return s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                 aws.String(s.table),
			Key:                       key(k),
			UpdateExpression:          aws.String("SET #u = :u, #e = :e"),
			ConditionExpression:       aws.String("#t = :t AND #u < :u"),
			ExpressionAttributeNames:  map[string]string{"#u": attrUntil, "#e": attrTTL, "#t": attrToken},
			ExpressionAttributeValues: map[string]types.AttributeValue{":u": num(until.UnixMilli()), ":e": num(until.Add(time.Second).Unix()), ":t": str(token)},
		}, awscall.DynamoDBOff)
	})
	if err != nil && !conditionFailed(err) {
		return s.explain(err, "refreshing key "+strconv.Quote(k))
	}
	return nil
}

// forget deletes key unconditionally, reporting whether it was there.
func (s *Store) forget(ctx context.Context, k string) (bool, error) {
	out, err := call(s, ctx, func(ctx context.Context) (*dynamodb.DeleteItemOutput, error) {
		return s.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
			TableName: aws.String(s.table), Key: key(k), ReturnValues: types.ReturnValueAllOld,
		}, awscall.DynamoDBOff)
	})
	if err != nil {
		return false, s.explain(err, "releasing key "+strconv.Quote(k))
	}
	return len(out.Attributes) > 0, nil
}

// countHeld counts the items whose expiry is after now, page by page.
func (s *Store) countHeld(ctx context.Context, now time.Time) (int, error) {
	n := 0
	var start map[string]types.AttributeValue
	for {
		out, err := call(s, ctx, func(ctx context.Context) (*dynamodb.ScanOutput, error) {
			return s.client.Scan(ctx, &dynamodb.ScanInput{
				TableName:                 aws.String(s.table),
				Select:                    types.SelectCount,
				FilterExpression:          aws.String("#u > :now"),
				ExpressionAttributeNames:  map[string]string{"#u": attrUntil},
				ExpressionAttributeValues: map[string]types.AttributeValue{":now": num(now.UnixMilli())},
				ExclusiveStartKey:         start,
				ConsistentRead:            aws.Bool(true),
			}, awscall.DynamoDBOff)
		})
		if err != nil {
			return n, s.explain(err, "counting held keys")
		}
		n += int(out.Count)
		if len(out.LastEvaluatedKey) == 0 {
			return n, nil
		}
		start = out.LastEvaluatedKey
	}
}
