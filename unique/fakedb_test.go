package unique_test

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

	"github.com/sqsworker/sqsworker/unique"
)

// fakeDB is an in-memory DynamoDB table for the Store's three item calls. It
// evaluates the condition and update expressions it is given (the small
// grammar the Store uses: comparisons, attribute_not_exists, AND, OR,
// parentheses; SET and REMOVE), so it checks what the requests say rather
// than mirroring the Store's logic. The integration tests run the same
// scenarios against DynamoDB Local.
type fakeDB struct {
	// API's table calls (CreateTable and the rest) are not modelled: the
	// Guard makes none, and calling one panics.
	unique.API

	mu    sync.Mutex
	items map[string]map[string]types.AttributeValue
	fail  func(op string) error // when set and non-nil for op, the call fails
	lose  func(op string) error // when set and non-nil for op, the call takes effect and its answer is this error
	calls map[string]int
}

var _ unique.API = (*fakeDB)(nil)

func newFakeDB() *fakeDB {
	return &fakeDB{items: map[string]map[string]types.AttributeValue{}, calls: map[string]int{}}
}

// setFail makes calls fail with what fn returns (nil: succeed).
func (f *fakeDB) setFail(fn func(op string) error) {
	f.mu.Lock()
	f.fail = fn
	f.mu.Unlock()
}

func (f *fakeDB) count(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[op]
}

func (f *fakeDB) begin(op string) error {
	f.calls[op]++
	if f.fail != nil {
		return f.fail(op)
	}
	return nil
}

func keyOf(k map[string]types.AttributeValue) string {
	return k["key"].(*types.AttributeValueMemberS).Value
}

func (f *fakeDB) PutItem(_ context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin("PutItem"); err != nil {
		return nil, err
	}
	key := keyOf(in.Item)
	old := f.items[key]
	if err := check(in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues, old, in.ReturnValuesOnConditionCheckFailure); err != nil {
		return nil, err
	}
	f.items[key] = maps.Clone(in.Item)
	if f.lose != nil {
		if err := f.lose("PutItem"); err != nil {
			return nil, err
		}
	}
	out := &dynamodb.PutItemOutput{}
	if in.ReturnValues == types.ReturnValueAllOld {
		out.Attributes = old
	}
	return out, nil
}

func (f *fakeDB) UpdateItem(_ context.Context, in *dynamodb.UpdateItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin("UpdateItem"); err != nil {
		return nil, err
	}
	key := keyOf(in.Key)
	old := f.items[key]
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
	f.items[key] = item
	out := &dynamodb.UpdateItemOutput{}
	if in.ReturnValues == types.ReturnValueAllNew {
		out.Attributes = maps.Clone(item)
	}
	return out, nil
}

func (f *fakeDB) DeleteItem(_ context.Context, in *dynamodb.DeleteItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin("DeleteItem"); err != nil {
		return nil, err
	}
	key := keyOf(in.Key)
	if err := check(in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues, f.items[key], in.ReturnValuesOnConditionCheckFailure); err != nil {
		return nil, err
	}
	old := f.items[key]
	delete(f.items, key)
	out := &dynamodb.DeleteItemOutput{}
	if in.ReturnValues == types.ReturnValueAllOld {
		out.Attributes = old
	}
	return out, nil
}

// DescribeTable answers New's check: the table has the key the Store needs.
func (f *fakeDB) DescribeTable(_ context.Context, in *dynamodb.DescribeTableInput, _ ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	return &dynamodb.DescribeTableOutput{Table: &types.TableDescription{
		TableName:            in.TableName,
		TableStatus:          types.TableStatusActive,
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("key"), KeyType: types.KeyTypeHash}},
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("key"), AttributeType: types.ScalarAttributeTypeS}},
	}}, nil
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

// keys lists the fake's record keys.
func keys(f *fakeDB) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Sorted(maps.Keys(f.items))
}
