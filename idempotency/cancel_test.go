package idempotency_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sqsworker/sqsworker/idempotency"
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
// removing a failed run's record) end within CancelledCallGrace, not after
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
				if took := time.Since(cancelled); took > idempotency.CancelledCallGrace {
					t.Errorf("the guarded handler returned %v after its context was cancelled; want at most CancelledCallGrace (%v)", took, idempotency.CancelledCallGrace)
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
