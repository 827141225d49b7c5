package dynamofake

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

// The operation names the hooks and [Table.Count] are given.
const (
	OpPutItem       = "PutItem"
	OpUpdateItem    = "UpdateItem"
	OpDeleteItem    = "DeleteItem"
	OpDescribeTable = "DescribeTable"
)

// Table is an in-memory DynamoDB table. Its methods are safe for concurrent
// use; the zero value is not usable: make one with [New].
type Table struct {
	key string

	mu    sync.Mutex
	items map[string]map[string]types.AttributeValue
	fail  func(op string) error
	lose  func(op string) error
	calls map[string]int
}

// New returns an empty table whose partition key, a string, is the
// attribute named partitionKey ("key" when empty).
func New(partitionKey string) *Table {
	if partitionKey == "" {
		partitionKey = "key"
	}
	return &Table{key: partitionKey, items: map[string]map[string]types.AttributeValue{}, calls: map[string]int{}}
}

// Fail makes each later call fail, before it takes effect, with what fn
// returns for the call's operation name (nil: the call goes on). A nil fn
// removes the hook.
func (t *Table) Fail(fn func(op string) error) {
	t.mu.Lock()
	t.fail = fn
	t.mu.Unlock()
}

// Lose makes each later call that takes effect answer with what fn returns
// for the call's operation name instead of its output (nil: the call
// answers normally): the answer is lost, not the effect. A nil fn removes
// the hook.
func (t *Table) Lose(fn func(op string) error) {
	t.mu.Lock()
	t.lose = fn
	t.mu.Unlock()
}

// Count returns how many calls of the operation op the table has had,
// failed ones included.
func (t *Table) Count(op string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.calls[op]
}

// Item returns a copy of the item under key, or nil when there is none.
func (t *Table) Item(key string) map[string]types.AttributeValue {
	t.mu.Lock()
	defer t.mu.Unlock()
	return maps.Clone(t.items[key])
}

// Keys returns the keys of the table's items, sorted.
func (t *Table) Keys() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Sorted(maps.Keys(t.items))
}

// Edit calls fn with the stored item under key (nil when there is none),
// holding the table's lock: fn may change the item's attributes in place,
// as another writer would, without a call being counted.
func (t *Table) Edit(key string, fn func(item map[string]types.AttributeValue)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fn(t.items[key])
}

// begin counts a call and applies the Fail hook; t.mu is held.
func (t *Table) begin(op string) error {
	t.calls[op]++
	if t.fail != nil {
		return t.fail(op)
	}
	return nil
}

// lost applies the Lose hook to a call that took effect; t.mu is held.
func (t *Table) lost(op string) error {
	if t.lose != nil {
		return t.lose(op)
	}
	return nil
}

func (t *Table) keyOf(k map[string]types.AttributeValue) (string, error) {
	if s, ok := k[t.key].(*types.AttributeValueMemberS); ok {
		return s.Value, nil
	}
	return "", &smithy.GenericAPIError{Code: "ValidationException", Message: "fake: the key must have the string attribute " + t.key}
}

// PutItem writes in.Item, replacing the item with its key, if the
// condition holds.
func (t *Table) PutItem(_ context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.begin(OpPutItem); err != nil {
		return nil, err
	}
	key, err := t.keyOf(in.Item)
	if err != nil {
		return nil, err
	}
	old := t.items[key]
	if err := check(in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues, old, in.ReturnValuesOnConditionCheckFailure); err != nil {
		return nil, err
	}
	t.items[key] = maps.Clone(in.Item)
	if err := t.lost(OpPutItem); err != nil {
		return nil, err
	}
	out := &dynamodb.PutItemOutput{}
	if in.ReturnValues == types.ReturnValueAllOld {
		out.Attributes = old
	}
	return out, nil
}

// UpdateItem applies the update expression to the item under in.Key (made
// from the key when absent), if the condition holds.
func (t *Table) UpdateItem(_ context.Context, in *dynamodb.UpdateItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.begin(OpUpdateItem); err != nil {
		return nil, err
	}
	key, err := t.keyOf(in.Key)
	if err != nil {
		return nil, err
	}
	old := t.items[key]
	if err := check(in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues, old, in.ReturnValuesOnConditionCheckFailure); err != nil {
		return nil, err
	}
	item := maps.Clone(old)
	if item == nil {
		item = maps.Clone(in.Key)
	}
	if err := update(aws.ToString(in.UpdateExpression), in.ExpressionAttributeNames, in.ExpressionAttributeValues, item); err != nil {
		return nil, err
	}
	t.items[key] = item
	if err := t.lost(OpUpdateItem); err != nil {
		return nil, err
	}
	out := &dynamodb.UpdateItemOutput{}
	if in.ReturnValues == types.ReturnValueAllNew {
		out.Attributes = maps.Clone(item)
	}
	return out, nil
}

// DeleteItem removes the item under in.Key, if the condition holds.
func (t *Table) DeleteItem(_ context.Context, in *dynamodb.DeleteItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.begin(OpDeleteItem); err != nil {
		return nil, err
	}
	key, err := t.keyOf(in.Key)
	if err != nil {
		return nil, err
	}
	old := t.items[key]
	if err := check(in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues, old, in.ReturnValuesOnConditionCheckFailure); err != nil {
		return nil, err
	}
	delete(t.items, key)
	if err := t.lost(OpDeleteItem); err != nil {
		return nil, err
	}
	out := &dynamodb.DeleteItemOutput{}
	if in.ReturnValues == types.ReturnValueAllOld {
		out.Attributes = old
	}
	return out, nil
}

// DescribeTable describes an ACTIVE table named in.TableName whose
// partition key is the string attribute given to [New].
func (t *Table) DescribeTable(_ context.Context, in *dynamodb.DescribeTableInput, _ ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.begin(OpDescribeTable); err != nil {
		return nil, err
	}
	out := &dynamodb.DescribeTableOutput{Table: &types.TableDescription{
		TableName:            in.TableName,
		TableStatus:          types.TableStatusActive,
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(t.key), KeyType: types.KeyTypeHash}},
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(t.key), AttributeType: types.ScalarAttributeTypeS}},
	}}
	if err := t.lost(OpDescribeTable); err != nil {
		return nil, err
	}
	return out, nil
}

// check evaluates a condition expression against item (nil: no item).
func check(cond *string, names map[string]string, values map[string]types.AttributeValue, item map[string]types.AttributeValue, ret types.ReturnValuesOnConditionCheckFailure) error {
	if cond == nil {
		return nil
	}
	p := &condParser{toks: tokens(*cond), names: names, values: values, item: item}
	ok, err := p.or()
	if err == nil && p.pos != len(p.toks) {
		err = fmt.Errorf("unexpected %q", p.toks[p.pos])
	}
	if err != nil {
		return &smithy.GenericAPIError{Code: "ValidationException", Message: "fake: condition " + *cond + ": " + err.Error()}
	}
	if ok {
		return nil
	}
	failed := &types.ConditionalCheckFailedException{Message: aws.String("The conditional request failed")}
	if ret == types.ReturnValuesOnConditionCheckFailureAllOld {
		failed.Item = maps.Clone(item)
	}
	return failed
}

func tokens(s string) []string {
	for _, p := range []string{"(", ")", ","} {
		s = strings.ReplaceAll(s, p, " "+p+" ")
	}
	return strings.Fields(s)
}

type condParser struct {
	toks   []string
	pos    int
	names  map[string]string
	values map[string]types.AttributeValue
	item   map[string]types.AttributeValue
}

func (p *condParser) peek() string {
	if p.pos < len(p.toks) {
		return p.toks[p.pos]
	}
	return ""
}

func (p *condParser) next() string { t := p.peek(); p.pos++; return t }

func (p *condParser) or() (bool, error) {
	v, err := p.and()
	for err == nil && p.peek() == "OR" {
		p.next()
		var w bool
		w, err = p.and()
		v = v || w
	}
	return v, err
}

func (p *condParser) and() (bool, error) {
	v, err := p.primary()
	for err == nil && p.peek() == "AND" {
		p.next()
		var w bool
		w, err = p.primary()
		v = v && w
	}
	return v, err
}

func (p *condParser) primary() (bool, error) {
	switch t := p.next(); {
	case t == "(":
		v, err := p.or()
		if p.next() != ")" {
			return false, errors.New("missing )")
		}
		return v, err
	case t == "attribute_not_exists":
		if p.next() != "(" {
			return false, errors.New("missing (")
		}
		name, ok := p.names[p.next()]
		if !ok || p.next() != ")" {
			return false, errors.New("bad attribute_not_exists")
		}
		_, exists := p.item[name]
		return !exists, nil
	case strings.HasPrefix(t, "#"):
		name, ok := p.names[t]
		if !ok {
			return false, fmt.Errorf("no name %s", t)
		}
		op := p.next()
		val, ok := p.values[p.next()]
		if !ok {
			return false, errors.New("no value")
		}
		have, exists := p.item[name]
		if !exists {
			return false, nil
		}
		c, err := compare(have, val)
		if err != nil {
			return false, err
		}
		switch op {
		case "=":
			return c == 0, nil
		case "<>":
			return c != 0, nil
		case "<":
			return c < 0, nil
		case "<=":
			return c <= 0, nil
		case ">":
			return c > 0, nil
		}
		return false, fmt.Errorf("operator %q", op)
	default:
		return false, fmt.Errorf("unexpected %q", t)
	}
}

func compare(a, b types.AttributeValue) (int, error) {
	switch a := a.(type) {
	case *types.AttributeValueMemberS:
		if b, ok := b.(*types.AttributeValueMemberS); ok {
			return strings.Compare(a.Value, b.Value), nil
		}
	case *types.AttributeValueMemberN:
		if b, ok := b.(*types.AttributeValueMemberN); ok {
			x, err1 := strconv.ParseInt(a.Value, 10, 64)
			y, err2 := strconv.ParseInt(b.Value, 10, 64)
			if err1 != nil || err2 != nil {
				return 0, errors.New("fake: integers only")
			}
			return cmp.Compare(x, y), nil
		}
	}
	return 0, fmt.Errorf("fake: cannot compare %T with %T", a, b)
}

// update applies "SET #a = :v, … REMOVE #b, …" to item.
func update(expr string, names map[string]string, values map[string]types.AttributeValue, item map[string]types.AttributeValue) error {
	toks := tokens(expr)
	mode := ""
	for i := 0; i < len(toks); i++ {
		switch t := toks[i]; {
		case t == "SET" || t == "REMOVE":
			mode = t
		case t == ",":
		case mode == "SET" && i+2 < len(toks) && toks[i+1] == "=":
			v, ok := values[toks[i+2]]
			if !ok {
				return fmt.Errorf("fake: no value %s", toks[i+2])
			}
			item[names[t]] = v
			i += 2
		case mode == "REMOVE":
			delete(item, names[t])
		default:
			return &smithy.GenericAPIError{Code: "ValidationException", Message: "fake: update " + expr}
		}
	}
	return nil
}
