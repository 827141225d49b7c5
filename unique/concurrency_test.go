package unique_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sqsworker/sqsworker/producer"
	"github.com/sqsworker/sqsworker/unique"
	"github.com/sqsworker/sqsworker/worker"
)

// slowDB is the fake table with DeleteItem taking delay, counting the
// calls in flight.
type slowDB struct {
	*fakeDB
	delay     time.Duration
	now, most atomic.Int32
}

func (d *slowDB) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	n := d.now.Add(1)
	defer d.now.Add(-1)
	for m := d.most.Load(); n > m && !d.most.CompareAndSwap(m, n); m = d.most.Load() {
	}
	time.Sleep(d.delay)
	return d.fakeDB.DeleteItem(ctx, in, optFns...)
}

// With Options.ReleaseConcurrency, Settled returns once its release has
// started, at most that many run at once, and Close waits for them: every
// key is free after Close. Without it, each Settled call makes its release
// before returning.
func TestReleaseConcurrency(t *testing.T) {
	for _, n := range []int{0, 4} {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t)
			db := &slowDB{fakeDB: e.db, delay: 100 * time.Millisecond}
			store, err := unique.New(db, "keys", func(o *unique.Options) { o.Logger, o.ReleaseConcurrency = quiet, n })
			if err != nil {
				t.Fatal(err)
			}
			const jobs = 12
			var ids []string
			for i := range jobs {
				res, err := store.Send(t.Context(), e.p, unique.Key{Name: string(rune('a' + i))}, producer.Message{Body: string(rune('a' + i))})
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, res.MessageID)
			}
			start := time.Now()
			for _, id := range ids {
				store.Settled(e.settled(t, id, worker.Deleted))
			}
			hook := time.Since(start)
			if err := store.Close(t.Context()); err != nil {
				t.Fatal(err)
			}
			all := time.Since(start)
			switch {
			case n == 0 && (hook != jobs*db.delay || db.most.Load() != 1):
				t.Errorf("in turn: the hook took %v (want %v), %d releases at once (want 1)", hook, jobs*db.delay, db.most.Load())
			case n > 0 && (hook != (jobs/time.Duration(n)-1)*db.delay || all != jobs/time.Duration(n)*db.delay || db.most.Load() != int32(n)):
				t.Errorf("%d at once: the hook took %v, Close returned after %v, %d releases at once", n, hook, all, db.most.Load())
			}
			if left := keys(e.db); len(left) != 0 || store.Stats().Released != jobs {
				t.Errorf("ReleaseConcurrency %d: keys left after Close %v, %d released", n, left, store.Stats().Released)
			}
		})
	}
}
