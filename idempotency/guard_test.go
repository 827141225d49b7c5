package idempotency_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/sqsworker/sqsworker/idempotency"
	"github.com/sqsworker/sqsworker/internal/settle"
	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/worker"
)

// leaseCtx is a handler context whose visibility deadline is what deadline
// returns, as the worker's and the Lambda adapter's are.
func leaseCtx(deadline func() time.Time) context.Context {
	return settle.WithDeadline(context.Background(), deadlineFunc(deadline))
}

// deadlineFunc is a settle.Deadliner.
type deadlineFunc func() time.Time

func (f deadlineFunc) Deadline() time.Time { return f() }

// fixedLease is a lease that ends d from now and is never extended.
func fixedLease(d time.Duration) context.Context {
	end := time.Now().Add(d)
	return leaseCtx(func() time.Time { return end })
}

// movingLease is a lease kept by a heartbeat: its deadline starts ahead
// from now and moves to ahead from then every period, until stop. moves
// tells how often it moved.
type movingLease struct {
	deadline atomic.Int64 // UnixNano
	moves    atomic.Int64
	stop     chan struct{}
}

func newMovingLease(period, ahead time.Duration) *movingLease {
	l := &movingLease{stop: make(chan struct{})}
	l.deadline.Store(time.Now().Add(ahead).UnixNano())
	go func() {
		for {
			select {
			case <-l.stop:
				return
			case <-time.After(period):
				l.deadline.Store(time.Now().Add(ahead).UnixNano())
				l.moves.Add(1)
			}
		}
	}()
	return l
}

func (l *movingLease) Deadline() time.Time { return time.Unix(0, l.deadline.Load()) }

// ctx is a handler context on the lease.
func (l *movingLease) ctx() context.Context { return leaseCtx(l.Deadline) }

func (l *movingLease) end() { close(l.stop) }

func msg(id, body string) *worker.Message { return &worker.Message{ID: id, Body: body} }

func ok(context.Context, *worker.Message) error { return nil }

// TestRequestsPerOutcome pins the DynamoDB requests of each path: what
// BENCHMARKS.md and the package documentation count.
func TestRequestsPerOutcome(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db := newFakeDB()
		g := mustGuard(t, db, "t")
		calls := func() [3]int { return [3]int{db.count("PutItem"), db.count("UpdateItem"), db.count("DeleteItem")} }

		// A run that succeeds: PutItem + UpdateItem, record completed.
		if err := g.Wrap(worker.HandlerFunc(ok)).Handle(fixedLease(30*time.Second), msg("m1", "")); err != nil {
			t.Fatal(err)
		}
		if c := calls(); c != [3]int{1, 1, 0} {
			t.Errorf("success: PutItem, UpdateItem, DeleteItem = %v, want [1 1 0]", c)
		}
		it := db.item("m1")
		if s := it["status"].(*types.AttributeValueMemberS).Value; s != "COMPLETED" {
			t.Errorf("status %q after success", s)
		}
		if _, locked := it["lockedUntil"]; locked {
			t.Error("a completed record still carries a lock")
		}
		if exp := numberAttr(it, "expiresAt"); exp != time.Now().Add(15*24*time.Hour).Unix() {
			t.Errorf("expiresAt %d, want now + 15 days (the default TTL)", exp)
		}

		// Its duplicate: one PutItem whose condition fails; nil, not run.
		ran := false
		err := g.Wrap(worker.HandlerFunc(func(context.Context, *worker.Message) error { ran = true; return nil })).Handle(fixedLease(30*time.Second), msg("m1", ""))
		if err != nil || ran {
			t.Errorf("duplicate of a completed job: err %v, ran %v; want nil without running", err, ran)
		}
		if c := calls(); c != [3]int{2, 1, 0} {
			t.Errorf("duplicate: calls %v, want [2 1 0]", c)
		}

		// A run that fails: PutItem + DeleteItem, no record; the error as is.
		boom := errors.New("boom")
		if err := g.Wrap(worker.HandlerFunc(func(context.Context, *worker.Message) error { return boom })).Handle(fixedLease(30*time.Second), msg("m2", "")); err != boom {
			t.Errorf("failure returned %v, want the handler's error unchanged", err)
		}
		if c := calls(); c != [3]int{3, 1, 1} || db.item("m2") != nil {
			t.Errorf("failure: calls %v (want [3 1 1]), record %v (want none)", c, db.item("m2"))
		}
		s := g.Stats()
		if s.Ran != 2 || s.Completed != 1 || s.DuplicatesCompleted != 1 || s.Released != 1 || s.TotalRequests() != 5 {
			t.Errorf("stats %+v", s)
		}
		if s.Requests["PutItem"] != 3 || s.Requests["UpdateItem"] != 1 || s.Requests["DeleteItem"] != 1 {
			t.Errorf("Stats.Requests %v", s.Requests)
		}
	})
}

// TestFailedRunsRemoveTheirRecord: every way a run can fail leaves no
// record, so that the retry (or a redrive from the DLQ) runs.
func TestFailedRunsRemoveTheirRecord(t *testing.T) {
	for name, h := range map[string]worker.HandlerFunc{
		"error":     func(context.Context, *worker.Message) error { return errors.New("flaky") },
		"permanent": func(context.Context, *worker.Message) error { return retry.Permanent(errors.New("poison")) },
		"after":     func(context.Context, *worker.Message) error { return retry.After(time.Minute, nil) },
		"snooze":    func(context.Context, *worker.Message) error { return retry.Snooze(time.Minute, "not yet") },
		"panic":     func(context.Context, *worker.Message) error { panic("bug") },
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				db := newFakeDB()
				g := mustGuard(t, db, "t")
				func() {
					defer func() { _ = recover() }()
					if err := g.Wrap(h).Handle(fixedLease(30*time.Second), msg("m", "")); err == nil {
						t.Error("the failure was turned into success")
					}
				}()
				if it := db.item("m"); it != nil {
					t.Errorf("record left after a failed run: %v", it)
				}
				// The retry runs.
				ran := false
				if err := g.Wrap(worker.HandlerFunc(func(context.Context, *worker.Message) error { ran = true; return nil })).Handle(fixedLease(30*time.Second), msg("m", "")); err != nil || !ran {
					t.Errorf("retry: err %v, ran %v", err, ran)
				}
			})
		})
	}
}

// TestDuplicateInProgressIsSnoozed: a duplicate of a job in progress does
// not run; it is snoozed until the holder's lock expires, or as long as
// the holder has run if that is longer; the reason names the holder.
func TestDuplicateInProgressIsSnoozed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db := newFakeDB()
		g := mustGuard(t, db, "t", func(o *idempotency.Options) { o.LockMargin = 2 * time.Second })
		release := make(chan struct{})
		go func() {
			_ = g.Wrap(worker.HandlerFunc(func(context.Context, *worker.Message) error { <-release; return nil })).Handle(fixedLease(8*time.Second), msg("holder-1", "job"))
		}()
		synctest.Wait()
		dup := func() error {
			return g.Wrap(worker.HandlerFunc(func(context.Context, *worker.Message) error {
				t.Error("a duplicate ran while the job was in progress")
				return nil
			})).Handle(fixedLease(30*time.Second), msg("holder-1", "job"))
		}
		// 1 s in: the lock (8 s lease + 2 s margin) has 9 s left.
		time.Sleep(time.Second)
		err := dup()
		d, snoozed := settle.SnoozeDelay(err)
		if !snoozed || d != 10*time.Second || !strings.Contains(err.Error(), "duplicate of message holder-1 in progress") {
			t.Errorf("duplicate at +1 s: %v (snooze %v, %v); want a 10 s snooze (lock left, rounded up) naming holder-1", err, d, snoozed)
		}
		if errors.Is(err, retry.ErrPermanent) {
			t.Error("a duplicate is permanent")
		}
		release <- struct{}{}
		synctest.Wait()
		if err := dup(); err != nil {
			t.Errorf("duplicate after completion: %v, want nil", err)
		}
		if s := g.Stats(); s.DuplicatesInProgress != 1 || s.DuplicatesCompleted != 1 {
			t.Errorf("stats %+v", s)
		}
	})
	// A long-running holder: the snooze is at least as long as it has run.
	synctest.Test(t, func(t *testing.T) {
		db := newFakeDB()
		g := mustGuard(t, db, "t", func(o *idempotency.Options) { o.LockMargin = time.Second })
		lease := newMovingLease(5*time.Second, 10*time.Second)
		go func() {
			_ = g.Wrap(worker.HandlerFunc(func(context.Context, *worker.Message) error { <-lease.stop; return nil })).Handle(lease.ctx(), msg("long", ""))
		}()
		time.Sleep(2 * time.Minute)
		err := g.Wrap(worker.HandlerFunc(ok)).Handle(fixedLease(30*time.Second), msg("long", ""))
		if d, snoozed := settle.SnoozeDelay(err); !snoozed || d < 2*time.Minute || d > 2*time.Minute+2*time.Second {
			t.Errorf("duplicate of a job running for 2 min: %v; want a snooze of about 2 min", err)
		}
		lease.end()
		synctest.Wait()
	})
}

// TestLockFollowsTheLease: while the heartbeat moves the deadline, the
// lock's expiry follows it (deadline + margin), one UpdateItem per move,
// and never lapses; a crashed holder's lock expires margin after its last
// deadline and is taken over.
func TestLockFollowsTheLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db := newFakeDB()
		g := mustGuard(t, db, "t", func(o *idempotency.Options) { o.LockMargin = time.Second })
		// A 30 s visibility timeout, extended 10 s before each deadline (as
		// the heartbeat does with its defaults).
		start := time.Now()
		lease := newMovingLease(20*time.Second, 30*time.Second)
		done := lease.stop
		var lapses []string
		go func() {
			for {
				select {
				case <-done:
					return
				case <-time.After(500 * time.Millisecond):
					it := db.item("slow")
					if it == nil || numberAttr(it, "lockedUntil") <= time.Now().UnixMilli() {
						lapses = append(lapses, lockState(time.Since(start), it))
					}
					if want := lease.Deadline().Add(time.Second).UnixMilli(); it != nil && numberAttr(it, "lockedUntil") > want {
						lapses = append(lapses, "lock beyond deadline + margin: "+lockState(time.Since(start), it))
					}
				}
			}
		}()
		err := g.Wrap(worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			time.Sleep(10*time.Minute - 4750*time.Millisecond) // not on a sampling tick
			lease.end()
			return ctx.Err()
		})).Handle(lease.ctx(), msg("slow", ""))
		synctest.Wait()
		if err != nil {
			t.Fatalf("a 10 min handler on a 30 s lease: %v", err)
		}
		if len(lapses) > 0 {
			t.Errorf("the lock lapsed or ran ahead: %v", lapses)
		}
		s := g.Stats()
		moves := int(lease.moves.Load())
		if s.Extensions != int64(moves) || db.count("UpdateItem") != moves+1 {
			t.Errorf("%d lock extensions and %d UpdateItem calls for %d lease moves; want one extension per move plus the completion", s.Extensions, db.count("UpdateItem"), moves)
		}
		t.Logf("10 min on a 30 s lease: %d moves, %d extensions, %d requests in all", moves, s.Extensions, s.TotalRequests())
	})
}

// TestCrashedLockIsTakenOver: a run that dies holding its lock (no release)
// blocks duplicates until its lease's deadline plus the margin, then the
// job runs again.
func TestCrashedLockIsTakenOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db := newFakeDB()
		var dark atomic.Bool
		crashed := mustGuard(t, darkDB{API: db, dark: &dark}, "t", func(o *idempotency.Options) { o.LockMargin = time.Second })
		g := mustGuard(t, db, "t", func(o *idempotency.Options) { o.LockMargin = time.Second })
		start := time.Now() // (the dark release's retries take time before Handle returns)
		_ = crashed.Wrap(worker.HandlerFunc(func(context.Context, *worker.Message) error {
			dark.Store(true) // the process dies: its release never arrives
			return errors.New("killed")
		})).Handle(fixedLease(5*time.Second), msg("m", ""))
		if db.item("m") == nil {
			t.Fatal("the crashed run left no lock")
		}
		time.Sleep(time.Until(start.Add(5 * time.Second))) // the lease is over; the lock has 1 s left
		if _, snoozed := settle.SnoozeDelay(g.Wrap(worker.HandlerFunc(ok)).Handle(fixedLease(5*time.Second), msg("m", ""))); !snoozed {
			t.Error("the lock was taken over before its margin passed")
		}
		time.Sleep(1001 * time.Millisecond)
		ran := false
		if err := g.Wrap(worker.HandlerFunc(func(context.Context, *worker.Message) error { ran = true; return nil })).Handle(fixedLease(5*time.Second), msg("m", "")); err != nil || !ran {
			t.Errorf("after the lock expired: err %v, ran %v; want the job to run", err, ran)
		}
		if s := g.Stats(); s.TakenOver != 1 || s.Completed != 1 {
			t.Errorf("stats %+v", s)
		}
	})
}

// TestLockExtensionOutage: when the lock cannot be extended, the handler
// is cancelled (ErrLockLost, ErrUnavailable) before the lock expires; with
// FailOpen it runs on.
func TestLockExtensionOutage(t *testing.T) {
	for _, failOpen := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			db := newFakeDB()
			g := mustGuard(t, db, "t", func(o *idempotency.Options) { o.LockMargin = 2 * time.Second; o.FailOpen = failOpen })
			lease := newMovingLease(5*time.Second, 10*time.Second) // the heartbeat keeps going
			defer lease.end()
			db.setFail(func(op string) error {
				if op == "UpdateItem" {
					return &smithy.GenericAPIError{Code: "InternalServerError", Message: "down"}
				}
				return nil
			})
			var cancelledAt time.Time
			var cause error
			err := g.Wrap(worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
				select {
				case <-ctx.Done():
					cancelledAt, cause = time.Now(), context.Cause(ctx)
					return ctx.Err()
				case <-time.After(time.Minute):
					return nil
				}
			})).Handle(lease.ctx(), msg("m", ""))
			if failOpen {
				if err != nil || !cancelledAt.IsZero() || g.Stats().FailedOpen == 0 {
					t.Errorf("FailOpen: err %v, cancelled at %v, stats %+v; want the handler to run on", err, cancelledAt, g.Stats())
				}
				return
			}
			if !errors.Is(cause, idempotency.ErrLockLost) || !errors.Is(cause, idempotency.ErrUnavailable) {
				t.Errorf("cause %v; want ErrLockLost and ErrUnavailable", cause)
			}
			if !errors.Is(err, idempotency.ErrLockLost) {
				t.Errorf("returned %v; want it to say the lock was lost", err)
			}
			if it := db.item("m"); it != nil && !cancelledAt.Before(time.UnixMilli(numberAttr(it, "lockedUntil"))) {
				t.Errorf("cancelled at %v, not before the lock expired (%v)", cancelledAt, time.UnixMilli(numberAttr(it, "lockedUntil")))
			}
			if g.Stats().LocksLost != 1 {
				t.Errorf("stats %+v", g.Stats())
			}
		})
	}
}

// TestLockTakenOverCancelsAndSnoozes: when another run took the lock over
// (this one stalled past its lock), the next extension finds out, cancels
// the handler, and the message becomes a duplicate: snoozed, not failed.
func TestLockTakenOverCancelsAndSnoozes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db := newFakeDB()
		g := mustGuard(t, db, "t", func(o *idempotency.Options) { o.LockMargin = time.Second })
		var lease atomic.Int64
		lease.Store(time.Now().Add(10 * time.Second).UnixNano())
		errc := make(chan error)
		go func() {
			errc <- g.Wrap(worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
				<-ctx.Done()
				return ctx.Err()
			})).Handle(leaseCtx(func() time.Time { return time.Unix(0, lease.Load()) }), msg("m", ""))
		}()
		synctest.Wait()
		// Another consumer takes the job over (as if this one's lock had expired).
		db.Edit("m", func(it map[string]types.AttributeValue) {
			it["token"] = &types.AttributeValueMemberS{Value: "someone else"}
			it["messageId"] = &types.AttributeValueMemberS{Value: "other-copy"}
		})
		time.Sleep(5 * time.Second)
		lease.Store(time.Now().Add(10 * time.Second).UnixNano()) // the heartbeat extends: the keeper tries to follow
		err := <-errc
		if d, snoozed := settle.SnoozeDelay(err); !snoozed || d < time.Second || !strings.Contains(err.Error(), "other-copy") {
			t.Errorf("returned %v; want a snooze naming the run that holds the job", err)
		}
		if db.item("m")["token"].(*types.AttributeValueMemberS).Value != "someone else" {
			t.Error("the run removed or changed a record it no longer holds")
		}
	})
}

// TestUnavailable: a lock that cannot be taken fails the message with an
// error that says what to do, and never runs it — unless FailOpen.
func TestUnavailable(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		sentinel error
		says     string
	}{
		{"unreachable", errors.New("dial tcp: connection refused"), idempotency.ErrUnavailable, "Options.FailOpen"},
		{"missing table", &types.ResourceNotFoundException{Message: aws.String("no table")}, idempotency.ErrTableNotFound, "idempotency.CreateTable"},
		{"throttled", &types.ProvisionedThroughputExceededException{Message: aws.String("slow down")}, idempotency.ErrThrottled, "PAY_PER_REQUEST"},
		{"denied", &smithy.GenericAPIError{Code: "AccessDeniedException", Message: "no"}, idempotency.ErrUnavailable, "grant dynamodb:PutItem, dynamodb:UpdateItem and dynamodb:DeleteItem"},
		{"wrong table", &smithy.GenericAPIError{Code: "ValidationException", Message: "key"}, idempotency.ErrUnavailable, `partition key key of type S`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := newFakeDB()
			db.setFail(func(string) error { return tt.err })
			ran := false
			h := worker.HandlerFunc(func(context.Context, *worker.Message) error { ran = true; return nil })
			err := mustGuard(t, db, "orders-idem").Wrap(h).Handle(fixedLease(time.Minute), msg("m-7", ""))
			if ran || err == nil {
				t.Fatalf("ran %v, err %v; want the message failed without running", ran, err)
			}
			for _, want := range []string{tt.says, `"orders-idem"`, "m-7", "never run without its lock"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
			if !errors.Is(err, idempotency.ErrUnavailable) || !errors.Is(err, tt.sentinel) || !errors.Is(err, tt.err) {
				t.Errorf("error %v does not match ErrUnavailable, %v and the SDK error", err, tt.sentinel)
			}
			if errors.Is(err, retry.ErrPermanent) {
				t.Error("an outage is permanent; it should be retried")
			}
			ran = false
			g := mustGuard(t, db, "orders-idem", func(o *idempotency.Options) { o.FailOpen = true })
			if err := g.Wrap(h).Handle(fixedLease(time.Minute), msg("m-7", "")); err != nil || !ran || g.Stats().FailedOpen != 1 {
				t.Errorf("FailOpen: err %v, ran %v, stats %+v; want the handler run unprotected", err, ran, g.Stats())
			}
		})
	}
}

// TestCompletionNotRecorded: a success whose record cannot be written is
// still a success (the message is deleted), counted and logged.
func TestCompletionNotRecorded(t *testing.T) {
	db := newFakeDB()
	g := mustGuard(t, db, "t")
	h := worker.HandlerFunc(func(context.Context, *worker.Message) error {
		db.setFail(func(string) error { return errors.New("down") })
		return nil
	})
	if err := g.Wrap(h).Handle(fixedLease(time.Minute), msg("m", "")); err != nil {
		t.Errorf("returned %v; the job succeeded", err)
	}
	if s := g.Stats(); s.CompleteFailed != 1 || s.Completed != 0 {
		t.Errorf("stats %+v", s)
	}
}

// TestResultAndOnDuplicate: the handler's result is kept with the completed
// record and handed to OnDuplicate with each duplicate.
func TestResultAndOnDuplicate(t *testing.T) {
	db := newFakeDB()
	var got []idempotency.Record
	g := mustGuard(t, db, "t", func(o *idempotency.Options) {
		o.OnDuplicate = func(ctx context.Context, m *worker.Message, r idempotency.Record) error {
			got = append(got, r)
			return nil
		}
	})
	h := worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
		if k, ok := idempotency.Key(ctx); !ok || k != "m" {
			t.Errorf("Key(ctx) = %q, %v; want the job's key", k, ok)
		}
		if err := idempotency.SetResult(ctx, make([]byte, 256<<10+1)); err == nil {
			t.Error("SetResult took a result larger than 256 KiB")
		}
		return idempotency.SetResult(ctx, []byte("invoice 42"))
	})
	for range 2 {
		if err := g.Wrap(h).Handle(fixedLease(time.Minute), msg("m", "")); err != nil {
			t.Fatal(err)
		}
	}
	if len(got) != 1 || string(got[0].Result) != "invoice 42" || got[0].Status != idempotency.Completed || got[0].MessageID != "m" || got[0].CompletedAt.IsZero() {
		t.Errorf("OnDuplicate saw %+v; want the completed record with its result", got)
	}
	if err := idempotency.SetResult(context.Background(), nil); err == nil {
		t.Error("SetResult outside a guarded handler succeeded")
	}
	if _, ok := idempotency.Key(context.Background()); ok {
		t.Error("Key outside a guarded handler reported a key")
	}
}

// TestKeys: the key functions, the prefix, hashing, and the limits.
func TestKeys(t *testing.T) {
	withAttr := msg("id-1", `{"order": {"id": 42, "lines": [{"b": 1, "a": 2}]}, "ref": "R-9"}`)
	withAttr.MessageAttributes = map[string]sqstypes.MessageAttributeValue{
		"OrderId": {DataType: aws.String("String"), StringValue: aws.String("o-77")},
	}
	tests := []struct {
		name    string
		opts    func(*idempotency.Options)
		want    string
		problem string // the error says this and is permanent
	}{
		{"message ID", nil, "id-1", ""},
		{"prefix", func(o *idempotency.Options) { o.KeyPrefix = "charge" }, "charge#id-1", ""},
		{"JSON string", func(o *idempotency.Options) { o.Key = idempotency.JSONKey("ref") }, "R-9", ""},
		{"JSON number", func(o *idempotency.Options) { o.Key = idempotency.JSONKey("order", "id") }, "42", ""},
		{"JSON object, keys sorted", func(o *idempotency.Options) { o.Key = idempotency.JSONKey("order", "lines") }, `[{"a":2,"b":1}]`, ""},
		{"attribute", func(o *idempotency.Options) { o.Key = idempotency.AttributeKey("OrderId") }, "o-77", ""},
		{"hashed", func(o *idempotency.Options) {
			o.KeyPrefix = "p"
			o.HashKey = true
			o.Key = idempotency.AttributeKey("OrderId")
		}, "p#" + sha256Hex("o-77"), ""},
		{"missing JSON field", func(o *idempotency.Options) { o.Key = idempotency.JSONKey("order", "nope") }, "", "no key at $.order.nope"},
		{"missing attribute", func(o *idempotency.Options) { o.Key = idempotency.AttributeKey("Nope") }, "", `no message attribute "Nope"`},
		{"empty key", func(o *idempotency.Options) {
			o.Key = func(*worker.Message) (string, error) { return "", nil }
		}, "", "empty key"},
		{"too long", func(o *idempotency.Options) { o.KeyPrefix = strings.Repeat("p", 2048) }, "", "set Options.HashKey"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := newFakeDB()
			var opts []func(*idempotency.Options)
			if tt.opts != nil {
				opts = append(opts, tt.opts)
			}
			err := mustGuard(t, db, "t", opts...).Wrap(worker.HandlerFunc(ok)).Handle(fixedLease(time.Minute), withAttr)
			if tt.problem != "" {
				if err == nil || !strings.Contains(err.Error(), tt.problem) || !errors.Is(err, retry.ErrPermanent) {
					t.Errorf("err %v; want a permanent error saying %q", err, tt.problem)
				}
				if db.count("PutItem") != 0 {
					t.Error("a message without a key reached DynamoDB")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if db.item(tt.want) == nil {
				t.Errorf("no record under %q; records: %v", tt.want, keys(db))
			}
		})
	}
}

// TestNoDeadline: a Guard outside the runtime says what is wrong.
func TestNoDeadline(t *testing.T) {
	err := mustGuard(t, newFakeDB(), "t").Wrap(worker.HandlerFunc(ok)).Handle(context.Background(), msg("m", ""))
	if err == nil || !strings.Contains(err.Error(), "sqslambda.Handler") {
		t.Errorf("err %v", err)
	}
}

func TestNewRefusesBadArguments(t *testing.T) {
	for name, f := range map[string]func() (*idempotency.Guard, error){
		"nil client":  func() (*idempotency.Guard, error) { return idempotency.New(nil, "t") },
		"empty table": func() (*idempotency.Guard, error) { return idempotency.New(newFakeDB(), "") },
		"negative TTL": func() (*idempotency.Guard, error) {
			return idempotency.New(newFakeDB(), "t", func(o *idempotency.Options) { o.TTL = -time.Hour })
		},
		"negative margin": func() (*idempotency.Guard, error) {
			return idempotency.New(newFakeDB(), "t", func(o *idempotency.Options) { o.LockMargin = -time.Second })
		},
	} {
		if g, err := f(); err == nil || g != nil {
			t.Errorf("%s: New = %v, %v; want an error", name, g, err)
		}
	}
}
