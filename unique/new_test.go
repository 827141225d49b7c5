package unique_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sqsworker/sqsworker/unique"
)

// hangFirstDescribe is the fake table whose first DescribeTable request
// hangs until its context ends, as a dropped connection does.
type hangFirstDescribe struct {
	*fakeDB
	calls atomic.Int32
}

func (h *hangFirstDescribe) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	if h.calls.Add(1) == 1 {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return h.fakeDB.DescribeTable(ctx, in, optFns...)
}

// One hung request does not fail New: each request of its table check is
// bounded by CallTimeout, and the check (2 × CallTimeout) has room for a
// second.
func TestNewSurvivesOneHungRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db := &hangFirstDescribe{fakeDB: newFakeDB()}
		start := time.Now()
		s, err := unique.New(db, "keys", func(o *unique.Options) { o.CallTimeout = 2 * time.Second; o.Logger = quiet })
		if err != nil {
			t.Fatalf("New failed after one hung request: %v", err)
		}
		if took := time.Since(start); took < 2*time.Second || took > 4*time.Second {
			t.Errorf("New took %v; want the hung request's 2 s and a retry", took)
		}
		if st := s.Stats(); st.Requests != 2 || st.RequestErrors != 1 {
			t.Errorf("Stats: %d requests, %d errors; want 2 and 1", st.Requests, st.RequestErrors)
		}
	})
}
