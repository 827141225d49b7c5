package settle_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/sqsworker/sqsworker/internal/settle"
	"github.com/sqsworker/sqsworker/internal/sqserr"
	"github.com/sqsworker/sqsworker/sqstest"
)

// fakeLease records what a Batcher does with a lease.
type fakeLease struct {
	mu       sync.Mutex
	deadline time.Time
	cause    error
	log      []string
}

func (l *fakeLease) Hold() (time.Time, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.log = append(l.log, "hold")
	return l.deadline, l.cause
}

func (l *fakeLease) Lapsed() bool { return false }

func (l *fakeLease) Release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.log = append(l.log, "release")
}

func (l *fakeLease) Stop() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.log = append(l.log, "stop")
	return l.cause
}

func (l *fakeLease) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.log, ",")
}

// outcomes collects Done results by entry index.
type outcomes struct {
	mu  sync.Mutex
	got map[int]settle.Outcome
}

func (o *outcomes) done(i int) settle.DoneFunc {
	return func(out settle.Outcome) {
		o.mu.Lock()
		defer o.mu.Unlock()
		if _, dup := o.got[i]; dup {
			panic(fmt.Sprintf("entry %d finished twice", i))
		}
		o.got[i] = out
	}
}

func newOutcomes() *outcomes { return &outcomes{got: map[int]settle.Outcome{}} }

// received sends n messages to a new queue and receives them all.
func received(t *testing.T, f *sqstest.Fake, n int) (string, []types.Message) {
	t.Helper()
	url := f.MustCreateQueue(t, "q", map[string]string{"VisibilityTimeout": "300"})
	for i := range n {
		f.MustSend(t, url, fmt.Sprint(i))
	}
	var msgs []types.Message
	for len(msgs) < n {
		out, err := f.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10})
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, out.Messages...)
	}
	return url, msgs
}

func TestEveryTenthCallThrottledAllConfirmed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := sqstest.For(t)
		url, msgs := received(t, f, 300)
		f.InjectFault(sqstest.Fault{API: "DeleteMessageBatch", Code: "RequestThrottled", Every: 10})
		var retried atomic.Int64 // two senders report retries
		b := mustBatcher(t)(settle.NewDeleter(f, url, settle.BatcherOptions{Senders: 2, OnRetry: func(n int) { retried.Add(int64(n)) }}))
		o := newOutcomes()
		leases := make([]*fakeLease, len(msgs))
		for i, m := range msgs {
			leases[i] = &fakeLease{deadline: time.Now().Add(time.Hour)}
			b.Add(&settle.Entry{Handle: *m.ReceiptHandle, Lease: leases[i], Owner: o.done(i)})
		}
		b.Close(context.Background())
		for i := range msgs {
			if out := o.got[i]; !out.OK || out.Late {
				t.Fatalf("entry %d: %+v, want confirmed, not late", i, out)
			}
		}
		if n := len(f.Messages(url, "visible", "inflight")); n != 0 {
			t.Fatalf("%d messages left, want 0", n)
		}
		if calls := f.Requests()["DeleteMessageBatch"]; calls < 33 || calls > 40 || retried.Load() == 0 {
			t.Fatalf("%d calls with %d entries retried; want 30 full calls plus a few retries", calls, retried.Load())
		}
		// A throttled entry's lease went back to the heartbeat between tries.
		var sawRetry bool
		for _, l := range leases {
			switch l.String() {
			case "hold,stop":
			case "hold,release,hold,stop":
				sawRetry = true
			default:
				t.Fatalf("lease history %q", l)
			}
		}
		if !sawRetry {
			t.Fatal("no lease went through a retry")
		}
	})
}

func TestEntryFailuresRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := sqstest.For(t)
		url, msgs := received(t, f, 20)
		f.InjectFault(sqstest.Fault{API: "ChangeMessageVisibilityBatch", Code: "InternalError", Entries: true, Every: 3})
		b := mustBatcher(t)(settle.NewChanger(f, url, settle.BatcherOptions{}))
		o := newOutcomes()
		for i, m := range msgs {
			b.Add(&settle.Entry{Handle: *m.ReceiptHandle, Timeout: 0, Owner: o.done(i)})
		}
		b.Close(context.Background())
		for i := range msgs {
			if !o.got[i].OK {
				t.Fatalf("entry %d: %+v", i, o.got[i])
			}
		}
		if v := len(f.Messages(url, "visible")); v != 20 {
			t.Fatalf("%d visible, want 20 released", v)
		}
	})
}

func TestHangingCallEndsWithTheBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := sqstest.For(t)
		url, msgs := received(t, f, 5)
		f.InjectFault(sqstest.Fault{API: "DeleteMessageBatch", Hang: true})
		b := mustBatcher(t)(settle.NewDeleter(f, url, settle.BatcherOptions{CallTimeout: time.Hour}))
		o := newOutcomes()
		for i, m := range msgs {
			b.Add(&settle.Entry{Handle: *m.ReceiptHandle, Lease: &fakeLease{deadline: time.Now().Add(time.Hour)}, Owner: o.done(i)})
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		start := time.Now()
		b.Close(ctx)
		if d := time.Since(start); d != 3*time.Second {
			t.Fatalf("Close took %v, want the 3s budget", d)
		}
		for i := range msgs {
			if out := o.got[i]; out.OK || !errors.Is(out.Err, settle.ErrClosed) {
				t.Fatalf("entry %d: %+v, want ErrClosed", i, out)
			}
		}
		// Added after Close: ends at once.
		var late settle.Outcome
		b.Add(&settle.Entry{Handle: "x", Owner: settle.DoneFunc(func(out settle.Outcome) { late = out })})
		if !errors.Is(late.Err, settle.ErrClosed) {
			t.Fatalf("entry added after Close: %+v", late)
		}
	})
}

func TestPerCallTimeoutThenRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := sqstest.For(t)
		url, msgs := received(t, f, 1)
		f.InjectFault(sqstest.Fault{API: "DeleteMessageBatch", Hang: true, Times: 1})
		b := mustBatcher(t)(settle.NewDeleter(f, url, settle.BatcherOptions{CallTimeout: 2 * time.Second}))
		var out settle.Outcome
		start := time.Now()
		b.Add(&settle.Entry{Handle: *msgs[0].ReceiptHandle, Urgent: true, Owner: settle.DoneFunc(func(o settle.Outcome) { out = o })})
		b.Close(context.Background())
		if !out.OK || out.Attempts != 2 {
			t.Fatalf("outcome %+v, want confirmed on the second attempt", out)
		}
		if d := time.Since(start); d < 2*time.Second || d > 3*time.Second {
			t.Fatalf("took %v, want the 2s call timeout plus a short backoff", d)
		}
	})
}

func TestFatalEndsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := sqstest.For(t)
		url, msgs := received(t, f, 3)
		f.InjectFault(sqstest.Fault{API: "DeleteMessageBatch", Err: &smithy.GenericAPIError{Code: "AccessDenied", Message: "no", Fault: smithy.FaultClient}})
		b := mustBatcher(t)(settle.NewDeleter(f, url, settle.BatcherOptions{}))
		o := newOutcomes()
		for i, m := range msgs {
			b.Add(&settle.Entry{Handle: *m.ReceiptHandle, Owner: o.done(i)})
		}
		b.Close(context.Background())
		for i := range msgs {
			if out := o.got[i]; out.OK || out.Class != sqserr.Fatal || out.Attempts != 1 {
				t.Fatalf("entry %d: %+v, want Fatal after one attempt", i, out)
			}
		}
	})
}

func TestCloseSkipsInvalidHandles(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := sqstest.For(t)
		url, msgs := received(t, f, 2)
		b := mustBatcher(t)(settle.NewDeleter(f, url, settle.BatcherOptions{Linger: time.Minute}))
		o := newOutcomes()
		expired := &fakeLease{deadline: time.Now().Add(-time.Second)}
		lost := &fakeLease{deadline: time.Now().Add(time.Hour), cause: errors.New("lost")}
		b.Add(&settle.Entry{Handle: *msgs[0].ReceiptHandle, Lease: expired, Owner: o.done(0)})
		b.Add(&settle.Entry{Handle: *msgs[1].ReceiptHandle, Lease: lost, Owner: o.done(1)})
		b.Close(context.Background())
		if n := f.Requests()["DeleteMessageBatch"]; n != 0 {
			t.Fatalf("%d calls; handles no longer valid must not be flushed", n)
		}
		for i := range 2 {
			if out := o.got[i]; out.OK || out.Class != sqserr.Stale {
				t.Fatalf("entry %d: %+v, want not sent (stale)", i, out)
			}
		}
		if expired.String() != "hold,stop" || lost.String() != "hold,stop" {
			t.Fatalf("leases %q %q", expired, lost)
		}
	})
}

func TestChangeLeavesLostMessageAlone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := sqstest.For(t)
		url, msgs := received(t, f, 1)
		b := mustBatcher(t)(settle.NewChanger(f, url, settle.BatcherOptions{}))
		var out settle.Outcome
		b.Add(&settle.Entry{Handle: *msgs[0].ReceiptHandle, Timeout: 60, Lease: &fakeLease{cause: errors.New("lost")}, Urgent: true, Owner: settle.DoneFunc(func(o settle.Outcome) { out = o })})
		b.Close(context.Background())
		if out.OK || out.Class != sqserr.Stale || f.Requests()["ChangeMessageVisibilityBatch"] != 0 {
			t.Fatalf("outcome %+v after %d calls; want the change not sent", out, f.Requests()["ChangeMessageVisibilityBatch"])
		}
	})
}

func TestLateConfirmation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := sqstest.For(t)
		url, msgs := received(t, f, 1)
		f.InjectFault(sqstest.Fault{API: "DeleteMessageBatch", Latency: 2 * time.Second})
		b := mustBatcher(t)(settle.NewDeleter(f, url, settle.BatcherOptions{}))
		var out settle.Outcome
		b.Add(&settle.Entry{Handle: *msgs[0].ReceiptHandle, Lease: &fakeLease{deadline: time.Now().Add(time.Second)}, Urgent: true, Owner: settle.DoneFunc(func(o settle.Outcome) { out = o })})
		b.Close(context.Background())
		if !out.OK || !out.Late {
			t.Fatalf("outcome %+v, want confirmed late", out)
		}
	})
}

// lingerDeleter receives n messages on a new in-memory queue and returns
// a deleter for them that lingers 50 ms over a partial batch, with the
// outcomes to record theirs in.
func lingerDeleter(t *testing.T, n int) (*sqstest.Fake, []types.Message, *settle.Batcher, *outcomes) {
	t.Helper()
	f := sqstest.For(t)
	url, msgs := received(t, f, n)
	return f, msgs, mustBatcher(t)(settle.NewDeleter(f, url, settle.BatcherOptions{Linger: 50 * time.Millisecond})), newOutcomes()
}

func TestLingerAndFullBatches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, msgs, b, o := lingerDeleter(t, 25)
		start := time.Now()
		for i, m := range msgs[:3] {
			b.Add(&settle.Entry{Handle: *m.ReceiptHandle, Owner: o.done(i)})
		}
		synctest.Wait()
		if f.Requests()["DeleteMessageBatch"] != 0 {
			t.Fatal("a partial batch went out before its linger")
		}
		time.Sleep(50 * time.Millisecond)
		synctest.Wait()
		if f.Requests()["DeleteMessageBatch"] != 1 || time.Since(start) != 50*time.Millisecond {
			t.Fatalf("%d calls after the linger", f.Requests()["DeleteMessageBatch"])
		}
		for i, m := range msgs[3:] {
			b.Add(&settle.Entry{Handle: *m.ReceiptHandle, Owner: o.done(3 + i)})
		}
		synctest.Wait()
		if n := f.Requests()["DeleteMessageBatch"]; n != 3 {
			t.Fatalf("%d calls, want 1 + 2 full batches before any linger", n)
		}
		b.Close(context.Background())
		if n := f.Requests()["DeleteMessageBatch"]; n != 4 || len(o.got) != 25 {
			t.Fatalf("%d calls, %d outcomes; want 4 and 25", n, len(o.got))
		}
	})
}

// The linger timer is made once and armed again for each partial batch:
// a batch cut full stops it, and the next partial batch waits its own
// whole linger, not what was left of the previous one's.
func TestLingerTimerArmedForEachBatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, msgs, b, o := lingerDeleter(t, 13)
		calls := func() int { synctest.Wait(); return f.Requests()["DeleteMessageBatch"] }
		b.Add(&settle.Entry{Handle: *msgs[0].ReceiptHandle, Owner: o.done(0)})
		time.Sleep(30 * time.Millisecond)
		for i, m := range msgs[1:10] { // fills the batch: cut at 30 ms
			b.Add(&settle.Entry{Handle: *m.ReceiptHandle, Owner: o.done(1 + i)})
		}
		if n := calls(); n != 1 {
			t.Fatalf("%d calls after a full batch, want 1", n)
		}
		b.Add(&settle.Entry{Handle: *msgs[10].ReceiptHandle, Owner: o.done(10)}) // due at 80 ms
		time.Sleep(25 * time.Millisecond)                                        // past the first batch's 50 ms
		if n := calls(); n != 1 {
			t.Fatalf("%d calls at 55 ms: the partial batch went out on the previous batch's linger", n)
		}
		time.Sleep(25 * time.Millisecond)
		if n := calls(); n != 2 {
			t.Fatalf("%d calls at 80 ms, want 2 (the partial batch after its own linger)", n)
		}
		for i, m := range msgs[11:] { // and again, with the timer made before
			b.Add(&settle.Entry{Handle: *m.ReceiptHandle, Owner: o.done(11 + i)})
		}
		time.Sleep(49 * time.Millisecond)
		if n := calls(); n != 2 {
			t.Fatalf("%d calls before the third batch's linger, want 2", n)
		}
		time.Sleep(time.Millisecond)
		if n := calls(); n != 3 {
			t.Fatalf("%d calls after the third batch's linger, want 3", n)
		}
		b.Close(context.Background())
		if len(o.got) != 13 {
			t.Fatalf("%d outcomes, want 13", len(o.got))
		}
	})
}

func TestSendsCutBySize(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := sqstest.For(t)
		url := f.MustCreateQueue(t, "dlq", nil)
		b := mustBatcher(t)(settle.NewSender(f, url, settle.BatcherOptions{Linger: time.Second}))
		o := newOutcomes()
		body := strings.Repeat("x", 300<<10)
		for i := range 10 {
			b.Add(&settle.Entry{Send: &types.SendMessageBatchRequestEntry{MessageBody: aws.String(body)}, Owner: o.done(i)})
		}
		b.Close(context.Background())
		for i := range 10 {
			if out := o.got[i]; !out.OK || out.MessageID == "" {
				t.Fatalf("send %d: %+v", i, out)
			}
		}
		if n := f.Requests()["SendMessageBatch"]; n != 4 {
			t.Fatalf("%d calls for 10 × 300 KiB, want 4 (3 per 1 MiB batch)", n)
		}
	})
}

// mustBatcher fails t when a Batcher constructor fails.
func mustBatcher(t *testing.T) func(*settle.Batcher, error) *settle.Batcher {
	return func(b *settle.Batcher, err error) *settle.Batcher {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
}

func TestBatcherNeedsClientAndQueue(t *testing.T) {
	if b, err := settle.NewDeleter(nil, "url", settle.BatcherOptions{}); err == nil || b != nil {
		t.Error("NewDeleter(nil client) succeeded")
	}
	if b, err := settle.NewSender(sqstest.For(t), "", settle.BatcherOptions{}); err == nil || b != nil {
		t.Error("NewSender(no queue URL) succeeded")
	}
}
