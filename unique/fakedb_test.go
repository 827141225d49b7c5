package unique_test

import (
	"github.com/sqsworker/sqsworker/harness/dynamofake"
	"github.com/sqsworker/sqsworker/unique"
)

// fakeDB is the shared in-memory DynamoDB table (harness/dynamofake) as a
// unique.API: it models the item calls and DescribeTable; the other table
// calls (CreateTable, TTL, Scan) are not modelled, the Store makes none in
// these tests, and calling one panics.
type fakeDB struct {
	*dynamofake.Table
	unmodelled
}

// unmodelled holds unique.API one level deeper than the Table, so that the
// Table's methods win and only the unmodelled calls reach the nil API.
type unmodelled struct{ unique.API }

var _ unique.API = (*fakeDB)(nil)

func newFakeDB() *fakeDB { return &fakeDB{Table: dynamofake.New("key")} }

// setFail makes calls fail with what fn returns (nil: succeed).
func (f *fakeDB) setFail(fn func(op string) error) { f.Fail(fn) }

// lose makes calls take effect and answer with what fn returns (nil: the
// real answer).
func (f *fakeDB) lose(fn func(op string) error) { f.Lose(fn) }

func (f *fakeDB) count(op string) int { return f.Count(op) }

// keys lists the fake's record keys.
func keys(f *fakeDB) []string { return f.Keys() }
