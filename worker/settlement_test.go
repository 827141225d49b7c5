package worker_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/sqstest"
	"github.com/sqsworker/sqsworker/visibility"
	"github.com/sqsworker/sqsworker/worker"
)

// The settlement issue's first failure mode: with every 10th
// DeleteMessageBatch throttled, a succeeded job's delete is retried while
// the heartbeat keeps the message invisible, so no job runs twice and none
// reaches the DLQ.
func TestThrottledDeletesNeverRerunSucceededJobs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const jobs = 3000
		f, src, dlqURL := newQueue(t, 10, "5")
		sendMany(t, f, src, jobs)
		f.InjectFault(sqstest.Fault{API: "DeleteMessageBatch", Code: "RequestThrottled", Every: 10})
		var runs sync.Map
		var total atomic.Int64
		h := start(t, f, src, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			total.Add(1)
			n, _ := runs.LoadOrStore(m.Body, new(atomic.Int64))
			n.(*atomic.Int64).Add(1)
			time.Sleep(2 * time.Millisecond)
			return nil
		}), func(o *worker.Options) { o.Concurrency = 10 })
		waitFor(t, time.Hour, func() bool { return len(f.Messages(src, "visible", "inflight")) == 0 })
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		s := h.w.Stats()
		if total.Load() != jobs {
			t.Errorf("handlers ran %d times for %d jobs; every job must run once", total.Load(), jobs)
		}
		if n := len(f.Messages(dlqURL)); n != 0 {
			t.Errorf("%d succeeded jobs in the DLQ", n)
		}
		if s.Deleted != jobs || s.DeleteRetried == 0 || s.Lost != 0 || s.Abandoned != 0 || s.SettledLate != 0 {
			t.Errorf("Stats = %+v; want %d deletes confirmed, some retried, none lost, abandoned or late", s, jobs)
		}
	})
}

// A DeleteMessageBatch that never answers cannot hold up shutdown: Run
// returns within ShutdownTimeout + FlushTimeout, counts what it could not
// confirm, and says so once.
func TestHangingDeleteBoundedShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, _ := newQueue(t, 10, "30")
		sendMany(t, f, src, 25)
		f.InjectFault(sqstest.Fault{API: "DeleteMessageBatch", Hang: true})
		var logs syncBuffer
		h := start(t, f, src, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error { return nil }),
			func(o *worker.Options) {
				o.ShutdownTimeout = 4 * time.Second
				o.FlushTimeout = 3 * time.Second
				o.CallTimeout = time.Hour // the flush bound must hold even so
				o.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
			})
		time.Sleep(10 * time.Second)
		begin := time.Now()
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(begin); d > 7*time.Second {
			t.Fatalf("Run returned %v after cancel; want at most ShutdownTimeout + FlushTimeout (7s)", d)
		}
		s := h.w.Stats()
		if s.Received != 25 || s.Succeeded != 25 || s.Deleted != 0 || s.Abandoned != 25 || s.InFlight != 0 {
			t.Fatalf("Stats = %+v; want 25 received and succeeded, none deleted, 25 abandoned, nothing held", s)
		}
		if n := strings.Count(logs.String(), "25 settlements not confirmed at shutdown; those messages will be delivered again"); n != 1 {
			t.Fatalf("the shutdown summary was logged %d times, want once:\n%s", n, logs.String())
		}
		// While the deletes hung, the messages stayed owned: nobody else
		// could receive them.
		if inflight := len(f.Messages(src, "inflight")); inflight != 25 {
			t.Fatalf("%d messages in flight, want 25 (kept invisible by the heartbeat until Run returned)", inflight)
		}
	})
}

// The same bound with a ChangeMessageVisibilityBatch that never answers:
// retry delays, releases and the heartbeat itself hang.
func TestHangingVisibilityChangeBoundedShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, _ := newQueue(t, 10, "30")
		sendMany(t, f, src, 5)
		f.InjectFault(sqstest.Fault{API: "ChangeMessageVisibilityBatch", Hang: true})
		h := start(t, f, src, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			return errors.New("transient")
		}), func(o *worker.Options) {
			o.ShutdownTimeout = 2 * time.Second
			o.FlushTimeout = 2 * time.Second
			o.RetryPolicy = fixedPolicy(5, time.Minute)
		})
		time.Sleep(25 * time.Second) // past the heartbeat's first extension
		begin := time.Now()
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(begin); d > 4*time.Second {
			t.Fatalf("Run returned %v after cancel; want at most 4s", d)
		}
	})
}

// A delete that outlives the lease is Late, even when a retry of it is
// then confirmed in time: meanwhile the message was visible, and here it
// is received and run a second time. The duplicate must be explained —
// the first delivery's settlement says Late and Stats counts it — never
// silent.
func TestDeleteOutlivingItsLeaseIsLate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, _ := newQueue(t, 10, "5")
		sendMany(t, f, src, 1)
		f.InjectFault(sqstest.Fault{API: "DeleteMessageBatch", Hang: true, Times: 1})
		var runs atomic.Int64
		var mu sync.Mutex
		var settled []worker.Settlement
		h := start(t, f, src, worker.HandlerFunc(func(context.Context, *worker.Message) error {
			runs.Add(1)
			return nil
		}), func(o *worker.Options) {
			o.CallTimeout = 20 * time.Second // the hung delete outlives the 5 s lease
			o.OnSettled = func(s worker.Settlement) { mu.Lock(); settled = append(settled, s); mu.Unlock() }
		})
		time.Sleep(40 * time.Second)
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		if runs.Load() != 2 || len(settled) != 2 {
			t.Fatalf("ran %d times, %d settlements; want the job run twice (its lease lapsed while its delete hung)", runs.Load(), len(settled))
		}
		late := 0
		for _, s := range settled {
			if s.Outcome != worker.Deleted {
				t.Errorf("settlement %+v; want Deleted", s)
			}
			if s.Late {
				late++
			}
		}
		if st := h.w.Stats(); late != 1 || st.SettledLate != 1 {
			t.Fatalf("%d settlements Late, Stats.SettledLate %d; want the first delivery's delete reported Late", late, st.SettledLate)
		}
	})
}

// An extension that hangs while its message settles at shutdown does not
// hold Run past ShutdownTimeout + FlushTimeout: the settling call waits
// for the extension only until the flush budget ends.
func TestHungExtensionDoesNotDelayShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, _ := newQueue(t, 10, "30")
		sendMany(t, f, src, 1)
		h := start(t, f, src, worker.HandlerFunc(func(ctx context.Context, _ *worker.Message) error {
			<-ctx.Done() // runs until the shutdown timeout cancels it
			return context.Cause(ctx)
		}), func(o *worker.Options) {
			o.ShutdownTimeout, o.FlushTimeout, o.CallTimeout = time.Second, time.Second, 20*time.Second
		})
		// The heartbeat extends the message at 20 s, 10 s before its
		// deadline; that call never answers (it would time out at 25 s).
		time.Sleep(19 * time.Second)
		f.InjectFault(sqstest.Fault{API: "ChangeMessageVisibilityBatch", Hang: true})
		time.Sleep(2 * time.Second)
		begin := time.Now()
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(begin); d > 2*time.Second {
			t.Fatalf("Run returned %v after cancel; want at most ShutdownTimeout + FlushTimeout = 2s", d)
		}
		if st := h.w.Stats(); st.Abandoned != 1 {
			t.Fatalf("Stats = %+v; want the unconfirmed release counted Abandoned", st)
		}
	})
}

// A received message the heartbeat lost while it waited for a handler does
// not run: another consumer may have it. It is reported Lost and runs
// once SQS delivers it again.
func TestMessageLostWhileWaitingDoesNotRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, _ := newQueue(t, 10, "2")
		sendMany(t, f, src, 3)
		remove := f.InjectFault(sqstest.Fault{API: "ChangeMessageVisibilityBatch", Code: "InternalError"})
		var mu sync.Mutex
		runs := map[string]int{}
		var ranLost []string
		h := start(t, f, src, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			mu.Lock()
			runs[m.Body]++
			if errors.Is(context.Cause(ctx), visibility.ErrLost) {
				ranLost = append(ranLost, m.Body)
			}
			mu.Unlock()
			if m.Body == "0" && m.ReceiveCount == 1 {
				<-ctx.Done() // holds the only handler until the lease is lost
				return context.Cause(ctx)
			}
			return nil
		}), func(o *worker.Options) { o.Concurrency = 1; o.MaxPrefetch = 10 })
		time.Sleep(5 * time.Second)
		remove()
		waitFor(t, time.Minute, func() bool { return len(f.Messages(src, "visible", "inflight")) == 0 })
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(ranLost) > 0 {
			t.Fatalf("handlers ran messages already lost: %v", ranLost)
		}
		// Concurrency 1 prefetches 1: the running message and the waiting
		// one are lost.
		if st := h.w.Stats(); st.Lost != 2 || st.Deleted != 3 || runs["1"] != 1 || runs["2"] != 1 {
			t.Fatalf("Stats: lost %d, deleted %d; runs %v; want 2 lost (the running one and the waiting one), then each run once and deleted", st.Lost, st.Deleted, runs)
		}
	})
}

// A handler stopped by the 12-hour limit still owns its message until the
// deadline: the error it returns is retried as usual, not reported Lost.
func TestHandlerErrorAtTheTwelveHourLimitIsRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, _ := newQueue(t, 10, "30")
		sendMany(t, f, src, 1)
		var mu sync.Mutex
		var got []worker.Settlement
		h := start(t, f, src, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			if m.ReceiveCount > 1 {
				return nil
			}
			<-ctx.Done()
			if !errors.Is(context.Cause(ctx), visibility.ErrMaxVisibility) {
				t.Errorf("handler cancelled with %v; want ErrMaxVisibility", context.Cause(ctx))
			}
			return errors.New("stopped before the limit")
		}), func(o *worker.Options) {
			o.Concurrency = 1
			o.RetryPolicy = fixedPolicy(5, time.Minute)
			o.OnSettled = func(s worker.Settlement) { mu.Lock(); got = append(got, s); mu.Unlock() }
		})
		time.Sleep(12*time.Hour + 5*time.Minute)
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		st := h.w.Stats()
		if st.Lost != 0 || st.Retried != 1 || st.Deleted != 1 || len(got) != 2 {
			t.Fatalf("Stats: lost %d, retried %d, deleted %d; %d settlements; want the failure retried, then the job deleted", st.Lost, st.Retried, st.Deleted, len(got))
		}
		// The retry delay is capped by what is left of the 12 hours.
		if got[0].Outcome != worker.Retrying || got[0].Delay <= 0 || got[0].Delay > time.Minute {
			t.Fatalf("first settlement %v after %v; want Retrying within 1m", got[0].Outcome, got[0].Delay)
		}
	})
}

// A ReceiveRetry that gives up ends Run with the receive error, rather
// than leaving a worker that neither receives nor returns.
func TestReceiveRetryGivingUpEndsRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, _ := newQueue(t, 10, "30")
		f.InjectFault(sqstest.Fault{API: "ReceiveMessage", Code: "InternalError"})
		h := start(t, f, src, worker.HandlerFunc(func(context.Context, *worker.Message) error { return nil }),
			func(o *worker.Options) {
				o.ReceiveRetry = retry.PolicyFunc(func(n int) (time.Duration, bool) { return time.Second, n <= 3 })
			})
		time.Sleep(time.Minute)
		select {
		case err := <-h.done:
			if err == nil || !strings.Contains(err.Error(), "ReceiveRetry gave up") {
				t.Fatalf("Run returned %v; want the receive error and what to do", err)
			}
		default:
			t.Fatal("Run still running a minute after its ReceiveRetry gave up")
		}
	})
}

// Settling messages count against a budget: when deletes cannot be
// confirmed, the worker stops receiving instead of piling up messages.
func TestUnconfirmedSettlementsSlowReceiving(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, _ := newQueue(t, 10, "30")
		sendMany(t, f, src, 200)
		remove := f.InjectFault(sqstest.Fault{API: "DeleteMessageBatch", Hang: true})
		h := start(t, f, src, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error { return nil }),
			func(o *worker.Options) { o.Concurrency = 10; o.MaxUnsettled = 20 })
		time.Sleep(20 * time.Second)
		// At most MaxUnsettled awaiting settlement before receiving stops,
		// plus what the receives then in flight brought.
		if s := h.w.Stats(); s.Received > int64(20+s.PrefetchTarget+10) || s.Settling < 20 || s.Received == 200 {
			t.Fatalf("Stats = %+v; want receiving stopped once 20 settlements were unconfirmed", s)
		}
		remove()
		waitFor(t, time.Hour, func() bool { return len(f.Messages(src, "visible", "inflight")) == 0 })
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		if s := h.w.Stats(); s.Received != 200 || s.Deleted != 200 {
			t.Fatalf("Stats = %+v; want all 200 received once and deleted", s)
		}
	})
}

// The handler may change its Message as it likes: settlement reads the
// runtime's own copy.
func TestHandlerEditsDoNotChangeSettlement(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, dlqURL := newQueue(t, 10, "30")
		f.MustSend(t, src, "fails")
		f.MustSend(t, src, "succeeds")
		var runs atomic.Int64
		h := start(t, f, src, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			body := m.Body
			// Everything a careless handler could touch.
			m.Attempt = 1
			m.ReceiveCount = 0
			m.ReceiptHandle = "forged"
			m.ID = "forged"
			m.Body = "forged"
			m.QueueURL = "forged"
			m.Raw.ReceiptHandle = aws.String("forged")
			*m.Raw.Body = "forged"
			m.Raw.MessageId = aws.String("forged")
			m.Attributes["ApproximateReceiveCount"] = "1"
			m.MessageAttributes = nil
			if body == "fails" {
				runs.Add(1)
				return errors.New("always")
			}
			return nil
		}), func(o *worker.Options) { o.RetryPolicy = fixedPolicy(2, time.Second) })
		time.Sleep(time.Minute)
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		if runs.Load() != 3 {
			t.Errorf("the failing job ran %d times under a 2-retry policy, want 3", runs.Load())
		}
		dead := f.Messages(dlqURL)
		if len(dead) != 1 || dead[0].Body != "fails" || !attrContains(dead[0], "retries exhausted after 3 attempts") {
			t.Fatalf("DLQ = %+v; want the original message with its reason", dead)
		}
		if n := len(f.Messages(src)); n != 0 {
			t.Fatalf("%d messages left in the source; the success must be deleted with its real receipt handle", n)
		}
	})
}

// The settlement hook learns each message's confirmed fate, with timings;
// a slow hook does not delay deletes.
func TestSettlementHook(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, _ := newQueue(t, 10, "30")
		f.MustSend(t, src, "ok")
		f.MustSend(t, src, "retry")
		f.MustSend(t, src, "poison")
		var mu sync.Mutex
		got := map[string]worker.Settlement{}
		var order []string
		h := start(t, f, src, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			switch m.Body {
			case "retry":
				if m.Attempt == 1 {
					return errors.New("later")
				}
			case "poison":
				return retry.Permanent(errors.New("bad input"))
			}
			return nil
		}), func(o *worker.Options) {
			o.RetryPolicy = fixedPolicy(3, 5*time.Second)
			o.OnSettled = func(s worker.Settlement) {
				time.Sleep(time.Hour) // a hopelessly slow hook
				mu.Lock()
				defer mu.Unlock()
				key := fmt.Sprintf("%s/%d", s.Message.Body, s.Attempt)
				got[key] = s
				order = append(order, key)
			}
			o.FlushTimeout = 5 * time.Hour
		})
		time.Sleep(10 * time.Second)
		// The deletes went out although the hook has not returned once.
		if n := len(f.Messages(src, "visible", "inflight")); n != 0 {
			t.Fatalf("%d messages left; a slow hook must not delay settlement", n)
		}
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		want := map[string]worker.Outcome{"ok/1": worker.Deleted, "retry/1": worker.Retrying, "retry/2": worker.Deleted, "poison/1": worker.DeadLettered}
		if len(got) != len(want) {
			t.Fatalf("hook saw %v, want %v", order, want)
		}
		for k, o := range want {
			s := got[k]
			if s.Outcome != o || s.Message == nil {
				t.Errorf("%s: outcome %v, want %v", k, s.Outcome, o)
			}
			if s.ReceivedAt.IsZero() || s.HandlerStart.Before(s.ReceivedAt) || s.HandlerEnd.Before(s.HandlerStart) || s.SettledAt.Before(s.HandlerEnd) {
				t.Errorf("%s: timings out of order: %v %v %v %v", k, s.ReceivedAt, s.HandlerStart, s.HandlerEnd, s.SettledAt)
			}
		}
		if s := got["retry/1"]; s.Delay != 5*time.Second || s.Err == nil {
			t.Errorf("retry: delay %v err %v, want 5s and the handler's error", s.Delay, s.Err)
		}
		if s := got["poison/1"]; s.Reason != "permanent failure" || !strings.Contains(fmt.Sprint(s.Err), "bad input") {
			t.Errorf("poison: reason %q err %v", s.Reason, s.Err)
		}
	})
}

// A panicking hook is recovered; the worker goes on.
func TestPanickingHookDoesNotStopTheWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, _ := newQueue(t, 10, "30")
		sendMany(t, f, src, 20)
		h := start(t, f, src, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error { return nil }),
			func(o *worker.Options) { o.OnSettled = func(worker.Settlement) { panic("hook bug") } })
		time.Sleep(5 * time.Second)
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		if s := h.w.Stats(); s.Deleted != 20 {
			t.Fatalf("Stats = %+v, want 20 deleted", s)
		}
	})
}

// New takes a queue name too, and looks its URL up.
func TestNewAcceptsAQueueName(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, _ := newQueue(t, 10, "30")
		w, err := worker.New(f, "jobs", worker.HandlerFunc(func(context.Context, *worker.Message) error { return nil }), func(o *worker.Options) { o.Logger = quiet })
		if err != nil {
			t.Fatal(err)
		}
		if w.QueueURL() != src {
			t.Fatalf("QueueURL = %s, want %s", w.QueueURL(), src)
		}
		if _, err := worker.New(f, "nope", worker.HandlerFunc(func(context.Context, *worker.Message) error { return nil })); err == nil || !strings.Contains(err.Error(), "does not exist") {
			t.Fatalf("New with an unknown name = %v, want an error saying it does not exist", err)
		}
	})
}

func sendMany(t *testing.T, f *sqstest.Fake, url string, n int) {
	t.Helper()
	for i := range n {
		f.MustSend(t, url, fmt.Sprint(i))
	}
}

// waitFor sleeps, in virtual time, until cond holds or limit passes.
func waitFor(t *testing.T, limit time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %v", limit)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A snoozed message comes back after the delay and never reaches the DLQ
// for being snoozed, however often; an exact counter takes the attempt back.
func TestSnoozeNeverDeadLetters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, dlqURL := newQueue(t, 1000, "30")
		f.MustSend(t, src, "job")
		var mu sync.Mutex
		var uncounted int
		attempts := map[string]int{}
		counter := countFunc{
			attempt: func(id string) int { mu.Lock(); defer mu.Unlock(); attempts[id]++; return attempts[id] },
			uncount: func(id string) { mu.Lock(); defer mu.Unlock(); attempts[id]--; uncounted++ },
		}
		var runs atomic.Int64
		var seen []int
		h := start(t, f, src, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			n := runs.Add(1)
			mu.Lock()
			seen = append(seen, m.Attempt)
			mu.Unlock()
			if n <= 5 {
				return retry.Snooze(10*time.Second, "not ready")
			}
			return nil
		}), func(o *worker.Options) { o.RetryPolicy = fixedPolicy(1, time.Second); o.AttemptCounter = counter })
		time.Sleep(2 * time.Minute)
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		s := h.w.Stats()
		if runs.Load() != 6 || s.Snoozed != 5 || s.Deleted != 1 || len(f.Messages(dlqURL)) != 0 {
			t.Fatalf("ran %d times, Stats %+v, DLQ %d; want 5 snoozes then done, never dead-lettered", runs.Load(), s, len(f.Messages(dlqURL)))
		}
		mu.Lock()
		defer mu.Unlock()
		if uncounted != 5 || fmt.Sprint(seen) != "[1 1 1 1 1 1]" {
			t.Fatalf("uncounted %d, attempts seen %v; want every snoozed attempt taken back", uncounted, seen)
		}
	})
}

// countFunc is an exact counter that can take attempts back.
type countFunc struct {
	attempt func(id string) int
	uncount func(id string)
}

func (c countFunc) Attempt(_ context.Context, id string, _ int) (int, error) {
	return c.attempt(id), nil
}
func (c countFunc) Uncount(_ context.Context, id string) error { c.uncount(id); return nil }

// A handler sees its message's visibility deadline move with the
// heartbeat; the hook learns when the extensions went out.
func TestVisibilityDeadlineAndExtensions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, _ := newQueue(t, 10, "30")
		f.MustSend(t, src, "long")
		var deadlines []time.Duration
		var got worker.Settlement
		done := make(chan struct{})
		h := start(t, f, src, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			for range 3 {
				d, ok := worker.VisibilityDeadline(ctx)
				if !ok {
					t.Error("no visibility deadline in the handler's context")
				}
				deadlines = append(deadlines, d.Sub(m.ReceivedAt))
				time.Sleep(25 * time.Second)
			}
			return nil
		}), func(o *worker.Options) {
			o.OnSettled = func(s worker.Settlement) { got = s; close(done) }
		})
		<-done
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(deadlines) != "[30s 50s 1m10s]" {
			t.Errorf("deadlines seen %v, want [30s 50s 1m10s] (extended at 20s and 40s, 30s each)", deadlines)
		}
		var at []time.Duration
		for _, e := range got.Extensions {
			at = append(at, e.Sub(got.ReceivedAt))
		}
		if fmt.Sprint(at) != "[20s 40s 1m0s]" {
			t.Errorf("extensions at %v, want [20s 40s 1m0s]", at)
		}
		if _, ok := worker.VisibilityDeadline(context.Background()); ok {
			t.Error("VisibilityDeadline outside a handler reported one")
		}
		if s := h.w.Stats(); s.Extensions != 3 || s.LateExtensions != 0 {
			t.Errorf("Stats = %+v, want 3 extensions, none late", s)
		}
	})
}

// Stats counts receives by the number of messages they brought.
func TestReceiveSizes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, _ := newQueue(t, 10, "30")
		sendMany(t, f, src, 25)
		h := start(t, f, src, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error { return nil }),
			func(o *worker.Options) { o.Concurrency = 10; o.Pollers = 1 })
		time.Sleep(time.Second)
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		s := h.w.Stats()
		if s.ReceiveSizes[10] != 2 || s.ReceiveSizes[5] != 1 {
			t.Fatalf("ReceiveSizes = %v, want two full receives and one of 5", s.ReceiveSizes)
		}
	})
}
