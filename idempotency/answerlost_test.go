package idempotency_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sqsworker/sqsworker/idempotency"
	"github.com/sqsworker/sqsworker/worker"
)

// answerLostDB is a fakeDB whose every PutItem and UpdateItem takes effect
// and then loses its answer, so that the call is made again, as the SDK's
// retryer does after a dropped connection: the second attempt's condition
// meets the first attempt's write.
type answerLostDB struct{ *fakeDB }

func (d answerLostDB) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	d.fakeDB.PutItem(ctx, in, o...)
	return d.fakeDB.PutItem(ctx, in, o...)
}

func (d answerLostDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	d.fakeDB.UpdateItem(ctx, in, o...)
	return d.fakeDB.UpdateItem(ctx, in, o...)
}

// TestOwnWriteWithALostAnswer: when the answer to the Guard's own write is
// lost and the SDK retries it, the retry's condition fails on what the
// first attempt wrote, with the run's own token. Taking the lock must then
// count as taken (not as a duplicate of a job in progress under "another"
// lock, which snoozed the message behind its own lock until it expired,
// seen in the chaos suite's idempotency variant), and recording the
// completion as recorded (not as a completion lost to another run).
func TestOwnWriteWithALostAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db := answerLostDB{newFakeDB()}
		g := mustGuard(t, db, "t")
		ran := false
		err := g.Wrap(worker.HandlerFunc(func(context.Context, *worker.Message) error { ran = true; return nil })).Handle(fixedLease(30*time.Second), msg("m1", ""))
		if err != nil || !ran {
			t.Fatalf("first delivery: err %v, ran %v; want it run", err, ran)
		}
		s := g.Stats()
		if s.Ran != 1 || s.Completed != 1 || s.CompleteFailed != 0 || s.DuplicatesInProgress != 0 {
			t.Errorf("stats %+v; want ran and completed once, nothing failed or snoozed", s)
		}
		if st := db.item("m1")["status"].(*types.AttributeValueMemberS).Value; st != string(idempotency.Completed) {
			t.Errorf("record status %q, want COMPLETED", st)
		}
	})
}
