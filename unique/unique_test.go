package unique_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/aws/smithy-go"

	"github.com/sqsworker/sqsworker/producer"
	"github.com/sqsworker/sqsworker/sqstest"
	"github.com/sqsworker/sqsworker/unique"
	"github.com/sqsworker/sqsworker/worker"
)

var quiet = slog.New(slog.DiscardHandler)

// clock is an injected clock the test moves by hand.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

type env struct {
	db    *fakeDB
	sqs   *sqstest.Fake
	url   string
	dlq   string
	p     *producer.Producer
	store *unique.Store
	clock *clock
}

func newEnv(t *testing.T, optFns ...func(*unique.Options)) *env {
	t.Helper()
	e := &env{db: newFakeDB(), sqs: sqstest.For(t), clock: &clock{now: time.Unix(1_700_000_000, 0)}}
	e.url, e.dlq = e.sqs.MustCreateQueueWithDLQ(t, "jobs", 5, nil)
	p, err := producer.New(e.sqs, e.url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	e.p = p
	opts := append([]func(*unique.Options){func(o *unique.Options) { o.Logger, o.Now = quiet, e.clock.Now }}, optFns...)
	e.store, err = unique.New(e.db, "keys", opts...)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) send(t *testing.T, k unique.Key, body string) (producer.Result, error) {
	t.Helper()
	return e.store.Send(t.Context(), e.p, k, producer.Message{Body: body})
}

// settled is the settlement a runtime reports for the queued message id.
func (e *env) settled(t *testing.T, id string, o worker.Outcome) worker.Settlement {
	t.Helper()
	for _, m := range e.sqs.Messages(e.url) {
		if m.ID == id {
			return worker.Settlement{Message: &worker.Message{ID: m.ID, Body: m.Body, MessageAttributes: m.Attributes}, Outcome: o}
		}
	}
	t.Fatalf("message %s is not in the queue", id)
	return worker.Settlement{}
}

func TestUntilSettledRefusesUntilDeleted(t *testing.T) {
	e := newEnv(t, func(o *unique.Options) { o.RecordJobID = true })
	k := unique.Key{Name: "report/42"}
	first, err := e.send(t, k, "a")
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.send(t, k, "b")
	if !errors.Is(err, unique.ErrDuplicate) {
		t.Fatalf("second send: err = %v, want ErrDuplicate", err)
	}
	if res.MessageID != first.MessageID {
		t.Errorf("refused send's MessageID = %q, want the holding job's %q", res.MessageID, first.MessageID)
	}
	if n := len(e.sqs.Messages(e.url)); n != 1 {
		t.Fatalf("%d messages in the queue, want 1: a refused send never reaches it", n)
	}
	// Retries, releases, losses and delays keep the key.
	for _, o := range []worker.Outcome{worker.Retrying, worker.Released, worker.Lost, worker.Abandoned, worker.Delayed} {
		e.store.Settled(e.settled(t, first.MessageID, o))
		if _, err := e.send(t, k, "c"); !errors.Is(err, unique.ErrDuplicate) {
			t.Fatalf("after %v: err = %v, want ErrDuplicate", o, err)
		}
	}
	e.store.Settled(e.settled(t, first.MessageID, worker.Deleted))
	if _, err := e.send(t, k, "d"); err != nil {
		t.Fatalf("after Deleted: %v", err)
	}
	st := e.store.Stats()
	if st.Claimed != 2 || st.Refused != 6 || st.Released != 1 {
		t.Errorf("Stats = %+v, want 2 claimed, 6 refused, 1 released", st)
	}
}

func TestDeadLetteredFreesKey(t *testing.T) {
	e := newEnv(t)
	k := unique.Key{Name: "sync/repo"}
	first, err := e.send(t, k, "a")
	if err != nil {
		t.Fatal(err)
	}
	e.store.Settled(e.settled(t, first.MessageID, worker.DeadLettered))
	if _, err := e.send(t, k, "b"); err != nil {
		t.Fatalf("after DeadLettered: %v", err)
	}
}

// The happy path costs 2 writes by default (the target), 3 with
// RecordJobID; a refused send learns the holding job's ID only with it.
func TestDynamoWritesPerJob(t *testing.T) {
	for _, record := range []bool{false, true} {
		e := newEnv(t, func(o *unique.Options) { o.RecordJobID = record })
		res, err := e.send(t, unique.Key{Name: "k"}, "a")
		if err != nil {
			t.Fatal(err)
		}
		refused, err := e.send(t, unique.Key{Name: "k"}, "b")
		if !errors.Is(err, unique.ErrDuplicate) {
			t.Fatalf("RecordJobID %v: second send: %v", record, err)
		}
		if want := map[bool]string{false: "", true: res.MessageID}[record]; refused.MessageID != want {
			t.Errorf("RecordJobID %v: refused send's MessageID %q, want %q", record, refused.MessageID, want)
		}
		e.store.Settled(e.settled(t, res.MessageID, worker.Deleted))
		writes := e.db.count("PutItem") + e.db.count("UpdateItem") + e.db.count("DeleteItem") - 1 // the refused PutItem
		want := 2
		if record {
			want = 3
		}
		if writes != want {
			t.Errorf("RecordJobID %v: %d writes per job, want %d", record, writes, want)
		}
		if len(keys(e.db)) != 0 {
			t.Errorf("RecordJobID %v: keys left: %v", record, keys(e.db))
		}
	}
}

func TestPeriodHoldsForWindow(t *testing.T) {
	e := newEnv(t)
	k := unique.Key{Name: "index", For: time.Minute}
	first, err := e.send(t, k, "a")
	if err != nil {
		t.Fatal(err)
	}
	e.store.Settled(e.settled(t, first.MessageID, worker.Deleted)) // does not free a period key
	e.clock.Add(59 * time.Second)
	if _, err := e.send(t, k, "b"); !errors.Is(err, unique.ErrDuplicate) {
		t.Fatalf("within the window: err = %v, want ErrDuplicate", err)
	}
	e.clock.Add(2 * time.Second)
	if _, err := e.send(t, k, "c"); err != nil {
		t.Fatalf("after the window: %v", err)
	}
}

func TestLostJobKeyRecoveredAfterBound(t *testing.T) {
	e := newEnv(t, func(o *unique.Options) { o.Retention = 4 * 24 * time.Hour })
	k := unique.Key{Name: "lost"}
	if _, err := e.send(t, k, "a"); err != nil {
		t.Fatal(err)
	}
	// The queue is purged: nothing will ever settle the job.
	e.clock.Add(4*24*time.Hour + 59*time.Minute)
	if _, err := e.send(t, k, "b"); !errors.Is(err, unique.ErrDuplicate) {
		t.Fatalf("before retention + 1 h: err = %v, want ErrDuplicate", err)
	}
	e.clock.Add(2 * time.Minute)
	if _, err := e.send(t, k, "c"); err != nil {
		t.Fatalf("after retention + 1 h: %v", err)
	}
	if st := e.store.Stats(); st.Recovered != 1 {
		t.Errorf("Recovered = %d, want 1", st.Recovered)
	}
}

func TestStaleReleaseKeepsNewerClaim(t *testing.T) {
	e := newEnv(t, func(o *unique.Options) { o.Retention = time.Hour })
	k := unique.Key{Name: "k"}
	old, err := e.send(t, k, "a")
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Add(3 * time.Hour)
	if _, err := e.send(t, k, "b"); err != nil {
		t.Fatal(err)
	}
	// The old job (or its dead-letter copy, redriven) settles late.
	e.store.Settled(e.settled(t, old.MessageID, worker.Deleted))
	if _, err := e.send(t, k, "c"); !errors.Is(err, unique.ErrDuplicate) {
		t.Fatalf("the old job's release freed the newer claim: err = %v", err)
	}
}

func TestSnoozeRefreshesExpiry(t *testing.T) {
	e := newEnv(t, func(o *unique.Options) { o.Retention = time.Hour })
	k := unique.Key{Name: "k"}
	first, err := e.send(t, k, "a")
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Add(90 * time.Minute)
	s := e.settled(t, first.MessageID, worker.Snoozed)
	s.Delay = time.Hour
	e.store.Settled(s) // relayed: a fresh copy, its retention counted from now
	e.clock.Add(2 * time.Hour)
	if _, err := e.send(t, k, "b"); !errors.Is(err, unique.ErrDuplicate) {
		t.Fatalf("snoozed job's key expired early: err = %v", err)
	}
	e.clock.Add(61 * time.Minute) // 90 min + the snooze, retention and margin (1 h each)
	if _, err := e.send(t, k, "c"); err != nil {
		t.Fatalf("after the refreshed bound: %v", err)
	}
}

func TestFailedSendFreesClaim(t *testing.T) {
	e := newEnv(t)
	remove := e.sqs.InjectFault(sqstest.Fault{API: "SendMessageBatch,SendMessage", Code: "AccessDenied"})
	if _, err := e.send(t, unique.Key{Name: "k"}, "a"); err == nil {
		t.Fatal("send succeeded through the fault")
	}
	remove()
	if _, err := e.send(t, unique.Key{Name: "k"}, "b"); err != nil {
		t.Fatalf("the failed send kept its key: %v", err)
	}
}

// A claim whose answer was lost (the PutItem took the key, then the
// connection failed) is retried by the library's rule; the retry finds the
// claim's own token and goes on: the job is sent, not refused as a
// duplicate of itself.
func TestClaimWithLostAnswerIsOwn(t *testing.T) {
	e := newEnv(t)
	lost := 0
	e.db.lose(func(op string) error {
		if op == "PutItem" && lost == 0 {
			lost++
			return &smithy.GenericAPIError{Code: "InternalServerError", Message: "connection reset"}
		}
		return nil
	})
	if _, err := e.send(t, unique.Key{Name: "k"}, "a"); err != nil {
		t.Fatalf("send after a lost claim answer: %v (want the job sent)", err)
	}
	if n := len(e.sqs.Messages(e.url)); n != 1 || lost != 1 {
		t.Fatalf("%d messages sent, %d answers lost; want 1 and 1", n, lost)
	}
	if _, err := e.send(t, unique.Key{Name: "k"}, "b"); !errors.Is(err, unique.ErrDuplicate) {
		t.Fatalf("second send: %v, want ErrDuplicate", err)
	}
}

func TestFailClosedAndOpen(t *testing.T) {
	down := errors.New("dynamodb down")
	e := newEnv(t)
	e.db.setFail(func(op string) error { return down })
	if _, err := e.send(t, unique.Key{Name: "k"}, "a"); !errors.Is(err, down) {
		t.Fatalf("fail closed: err = %v, want the DynamoDB error", err)
	}
	if n := len(e.sqs.Messages(e.url)); n != 0 {
		t.Fatalf("fail closed sent %d messages", n)
	}
	e = newEnv(t, func(o *unique.Options) { o.FailOpen = true })
	e.db.setFail(func(op string) error { return down })
	if _, err := e.send(t, unique.Key{Name: "k"}, "a"); err != nil {
		t.Fatalf("fail open: %v", err)
	}
	if n := len(e.sqs.Messages(e.url)); n != 1 {
		t.Fatalf("fail open sent %d messages, want 1", n)
	}
	if st := e.store.Stats(); st.FailedOpen != 1 {
		t.Errorf("FailedOpen = %d", st.FailedOpen)
	}
}

func TestReleaseByOperator(t *testing.T) {
	e := newEnv(t)
	k := unique.Key{Name: "k"}
	if _, err := e.send(t, k, "a"); err != nil {
		t.Fatal(err)
	}
	held, err := e.store.Release(t.Context(), "k")
	if err != nil || !held {
		t.Fatalf("Release = %v, %v", held, err)
	}
	if _, err := e.send(t, k, "b"); err != nil {
		t.Fatal(err)
	}
}
