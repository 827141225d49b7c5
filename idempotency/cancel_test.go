package idempotency_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sqsworker/sqsworker/worker"
)

// stuckDB is a fakeDB whose UpdateItem and DeleteItem (the calls after the
// handler returned) answer only when their context ends: DynamoDB slow or
// unreachable.
type stuckDB struct{ *fakeDB }

func (d stuckDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func (d stuckDB) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestCallsAfterACancelledHandlerEndSoon: when the runtime cancels a
// handler (the worker's shutdown deadline, the Lambda adapter's cutoff) and
// the handler then returns, the Guard's own calls (the completion record,
// removing a failed run's record) end within 500 ms, not after
// CallTimeout: the worker waits for a cancelled handler only half of its
// FlushTimeout and reports the handler as not stopped otherwise (the chaos
// suite's idempotency variant saw "handlers did not stop" under a slow
// DynamoDB Local with the default 5 s CallTimeout). A call made while the
// handler's context is live still gets the whole CallTimeout.
func TestCallsAfterACancelledHandlerEndSoon(t *testing.T) {
	for name, result := range map[string]error{"succeeded": nil, "failed": errors.New("stopped")} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := mustGuard(t, stuckDB{newFakeDB()}, "t")
				ctx, cancel := context.WithCancel(fixedLease(time.Minute))
				var cancelled time.Time
				h := worker.HandlerFunc(func(hctx context.Context, m *worker.Message) error {
					time.Sleep(time.Second)
					cancel() // the runtime's deadline
					cancelled = time.Now()
					<-hctx.Done()
					return result
				})
				g.Wrap(h).Handle(ctx, msg("m1", ""))
				if took := time.Since(cancelled); took > 500*time.Millisecond {
					t.Errorf("the guarded handler returned %v after its context was cancelled; want at most 500 ms", took)
				}

				// Live context: the call gets CallTimeout (5 s by default).
				start := time.Now()
				g.Wrap(worker.HandlerFunc(func(context.Context, *worker.Message) error { return result })).Handle(fixedLease(time.Minute), msg("m2", ""))
				if took := time.Since(start); took != 5*time.Second {
					t.Errorf("with a live context the call after the handler took %v; want CallTimeout (5s)", took)
				}
			})
		})
	}
}

// slowExtendDB is a fakeDB whose lock extensions (an UpdateItem while the
// handler runs) answer only when their context ends.
type slowExtendDB struct {
	*fakeDB
	handlerDone *atomic.Bool
}

func (d slowExtendDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if !d.handlerDone.Load() {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return d.fakeDB.UpdateItem(ctx, in, o...)
}

// TestExtensionInFlightDoesNotHoldTheHandler: a lock extension still in
// flight when the handler returns is cancelled: the completion (conditional
// on the run's token) follows at once, instead of after the extension's
// timeout (up to CallTimeout), which would keep a handler the runtime had
// cancelled past the time the runtime waits for it.
func TestExtensionInFlightDoesNotHoldTheHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var done atomic.Bool
		db := slowExtendDB{newFakeDB(), &done}
		g := mustGuard(t, db, "t")
		lease := newMovingLease(time.Second, 2*time.Second)
		defer lease.end()
		var returned time.Time
		h := worker.HandlerFunc(func(context.Context, *worker.Message) error {
			time.Sleep(3 * time.Second) // the heartbeat moved the deadline: an extension is in flight
			done.Store(true)
			returned = time.Now()
			return nil
		})
		if err := g.Wrap(h).Handle(lease.ctx(), msg("m1", "")); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(returned); took > 0 {
			t.Errorf("the guarded handler returned %v after the handler; want at once (the extension in flight cancelled)", took)
		}
		if s := g.Stats(); s.Completed != 1 {
			t.Errorf("stats %+v; want the job completed", s)
		}
	})
}
