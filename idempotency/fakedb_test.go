package idempotency_test

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sqsworker/sqsworker/harness/dynamofake"
	"github.com/sqsworker/sqsworker/idempotency"
)

// fakeDB is the shared in-memory DynamoDB table (harness/dynamofake) as a
// idempotency.API: it models the item calls and DescribeTable; the other table
// calls (CreateTable, TTL) are not modelled, the Guard makes none in
// these tests, and calling one panics.
type fakeDB struct {
	*dynamofake.Table
	unmodelled
}

// unmodelled holds idempotency.API one level deeper than the Table, so that the
// Table's methods win and only the unmodelled calls reach the nil API.
type unmodelled struct{ idempotency.API }

var _ idempotency.API = (*fakeDB)(nil)

func newFakeDB() *fakeDB { return &fakeDB{Table: dynamofake.New("key")} }

// setFail makes calls fail with what fn returns (nil: succeed).
func (f *fakeDB) setFail(fn func(op string) error) { f.Fail(fn) }

func (f *fakeDB) count(op string) int { return f.Count(op) }

// keys lists the fake's record keys.
func keys(f *fakeDB) []string { return f.Keys() }

// item returns a copy of the item under key, or nil.
func (f *fakeDB) item(key string) map[string]types.AttributeValue { return f.Item(key) }

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
