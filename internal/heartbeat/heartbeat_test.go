package heartbeat_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/sqsworker/sqsworker/internal/heartbeat"
	"github.com/sqsworker/sqsworker/sqstest"
)

const cmvb = "ChangeMessageVisibilityBatch"

func TestExtendsThresholdBeforeEachDeadline(t *testing.T) {
	for _, tc := range []struct {
		name       string
		vis        int // queue VisibilityTimeout, seconds
		opts       func(*heartbeat.Options)
		wantAt     []time.Duration // call times after the receive
		wantAsk    int32
		wantStopAt time.Duration // when the message becomes visible once untracked after the last call
	}{
		{"defaults 30s", 30, nil, []time.Duration{20 * time.Second, 40 * time.Second, 60 * time.Second}, 30, 90 * time.Second},
		{"threshold 5s", 30, func(o *heartbeat.Options) { o.Threshold = 5 * time.Second },
			[]time.Duration{25 * time.Second, 50 * time.Second}, 30, 80 * time.Second},
		{"extension 60s threshold 15s", 30, func(o *heartbeat.Options) { o.Extension, o.Threshold = time.Minute, 15*time.Second },
			[]time.Duration{15 * time.Second, 60 * time.Second}, 60, 120 * time.Second},
		{"short 2s", 2, nil, // threshold 1 s: every second
			[]time.Duration{1 * time.Second, 2 * time.Second, 3 * time.Second, 4 * time.Second, 5 * time.Second, 6 * time.Second}, 2, 8 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, tc.vis)
				var opts []func(*heartbeat.Options)
				if tc.opts != nil {
					opts = append(opts, tc.opts)
				}
				h := newHB(t, e.rec, e.url, time.Duration(tc.vis)*time.Second, opts...)
				msgs, receivedAt := e.receive(t, 1)
				lost := newLosses()
				lease := track(t, h, msgs[0].handle, receivedAt, lost.fn("a"))
				run(t, h)

				last := tc.wantAt[len(tc.wantAt)-1]
				time.Sleep(last + time.Second/2)
				calls := e.rec.Calls()
				if len(calls) != len(tc.wantAt) {
					t.Fatalf("%d calls by %v, want %d at %v", len(calls), last+time.Second/2, len(tc.wantAt), tc.wantAt)
				}
				for i, c := range calls {
					if got := c.at.Sub(receivedAt); got != tc.wantAt[i] || len(c.handles) != 1 || c.timeout[0] != tc.wantAsk {
						t.Errorf("call %d at %v asking %v for %d entries; want at %v asking %d for 1", i, got, c.timeout, len(c.handles), tc.wantAt[i], tc.wantAsk)
					}
				}
				m := e.state(t, msgs[0].id)
				if m.State != "inflight" || m.VisibleAt.Sub(receivedAt) != tc.wantStopAt {
					t.Errorf("message %s until %v, want inflight until %v", m.State, m.VisibleAt.Sub(receivedAt), tc.wantStopAt)
				}
				if want := receivedAt.Add(tc.wantStopAt); !lease.Deadline().Equal(want) {
					t.Errorf("Lease.Deadline = %v after receipt, want %v", lease.Deadline().Sub(receivedAt), tc.wantStopAt)
				}

				lease.Stop()
				time.Sleep(time.Hour)
				if n := len(e.rec.Calls()); n != len(tc.wantAt) {
					t.Errorf("%d calls after Stop, want none", n-len(tc.wantAt))
				}
				if m := e.state(t, msgs[0].id); m.State != "visible" {
					t.Errorf("message %s an hour after Stop, want visible", m.State)
				}
				if lost.total() != 0 {
					t.Errorf("onLost called: %v", lost.of("a"))
				}
				want := heartbeat.Stats{Calls: int64(len(tc.wantAt)), Extended: int64(len(tc.wantAt))}
				if got := h.Stats(); got != want {
					t.Errorf("Stats = %+v, want %+v", got, want)
				}
			})
		})
	}
}

func TestBatchesDueMessagesTenPerCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, 30)
		h := newHB(t, e.rec, e.url, 30*time.Second)
		msgs, receivedAt := e.receive(t, 25)
		for _, m := range msgs {
			track(t, h, m.handle, receivedAt, nil)
		}
		run(t, h)
		time.Sleep(45 * time.Second)
		calls := e.rec.Calls()
		var sizes []int
		for _, c := range calls {
			sizes = append(sizes, len(c.handles))
			if at := c.at.Sub(receivedAt); at != 20*time.Second && at != 40*time.Second {
				t.Errorf("call at %v, want at 20s or 40s", at)
			}
		}
		// The calls of one period run in parallel: compare sizes per period.
		sort.Ints(sizes[:3])
		sort.Ints(sizes[3:])
		if fmt.Sprint(sizes) != "[5 10 10 5 10 10]" {
			t.Errorf("batch sizes %v, want two periods of 10, 10 and 5 (3 calls per period)", sizes)
		}
		if got := e.f.Requests()[cmvb]; got != 6 {
			t.Errorf("fake counted %d calls, want 6", got)
		}
		if inflight := len(e.f.Messages(e.url, "inflight")); inflight != 25 {
			t.Errorf("%d messages in flight, want 25", inflight)
		}
		if s := h.Stats(); s.Calls != 6 || s.Extended != 50 || s.Tracked != 25 || s.Failures() != 0 {
			t.Errorf("Stats = %+v, want 6 calls, 50 extended, 25 tracked, no failures", s)
		}
	})
}

// Messages received one at a time share calls: one due message takes along
// those due within half the threshold, and they stay together afterwards.
func TestCoalescesMessagesDueSoon(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, 30)
		h := newHB(t, e.rec, e.url, 30*time.Second)
		run(t, h)
		t0 := time.Now()
		for range 100 {
			msgs, receivedAt := e.receive(t, 1)
			track(t, h, msgs[0].handle, receivedAt, nil)
			time.Sleep(100 * time.Millisecond)
		}
		time.Sleep(t0.Add(100 * time.Second).Sub(time.Now()))
		perPeriod := map[int]int{} // 20 s periods after t0 → calls
		for _, c := range e.rec.Calls() {
			perPeriod[int(c.at.Sub(t0)/(20*time.Second))]++
			if len(c.handles) != 10 {
				t.Errorf("call at %v with %d entries, want 10", c.at.Sub(t0), len(c.handles))
			}
		}
		for p := 1; p < 5; p++ {
			if perPeriod[p] != 10 {
				t.Errorf("period %d: %d calls, want 10 (100 messages, 10 per call)", p, perPeriod[p])
			}
		}
		if inflight := len(e.f.Messages(e.url, "inflight")); inflight != 100 {
			t.Errorf("%d in flight, want 100", inflight)
		}
	})
}

func TestStoppedMessageIsNeverExtended(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, 30)
		h := newHB(t, e.rec, e.url, 30*time.Second)
		msgs, receivedAt := e.receive(t, 2)
		done := track(t, h, msgs[0].handle, receivedAt, nil)
		track(t, h, msgs[1].handle, receivedAt, nil)
		run(t, h)
		time.Sleep(5 * time.Second)
		done.Stop()
		done.Stop() // idempotent
		time.Sleep(100 * time.Second)
		if got := e.rec.CallsWith(msgs[0].handle); len(got) != 0 {
			t.Errorf("stopped message extended %d times", len(got))
		}
		if got := e.rec.CallsWith(msgs[1].handle); len(got) != 5 {
			t.Errorf("tracked message extended %d times in 105 s, want 5", len(got))
		}
		if m := e.state(t, msgs[0].id); m.State != "visible" {
			t.Errorf("stopped message is %s, want visible after its 30 s", m.State)
		}
	})
}

// Stop called while a call including the message is in flight waits for
// the call, so the caller's own ChangeMessageVisibility comes after it and
// is not overwritten.
func TestStopWaitsForCallInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, 30)
		e.f.InjectFault(sqstest.Fault{API: cmvb, Latency: 2 * time.Second})
		h := newHB(t, e.rec, e.url, 30*time.Second)
		msgs, receivedAt := e.receive(t, 2)
		a := track(t, h, msgs[0].handle, receivedAt, nil)
		track(t, h, msgs[1].handle, receivedAt, nil)
		run(t, h)

		time.Sleep(21 * time.Second) // the call sent at 20 s lands at 22 s
		if got := e.rec.Calls(); len(got) != 0 {
			t.Fatalf("a call already returned at 21 s: %+v", got)
		}
		a.Stop()
		if at := time.Since(receivedAt); at != 22*time.Second {
			t.Errorf("Stop returned at %v, want 22s (when the call in flight returned)", at)
		}
		calls := e.rec.CallsWith(msgs[0].handle)
		if len(calls) != 1 || calls[0].at.Sub(receivedAt) != 20*time.Second {
			t.Fatalf("want exactly one call including the message, sent at 20 s; got %+v", calls)
		}
		// The handler failed: release the message for a retry now.
		if _, err := e.f.ChangeMessageVisibility(context.Background(), &sqs.ChangeMessageVisibilityInput{
			QueueUrl: aws.String(e.url), ReceiptHandle: aws.String(msgs[0].handle), VisibilityTimeout: 0,
		}); err != nil {
			t.Fatalf("ChangeMessageVisibility after Stop: %v", err)
		}
		time.Sleep(61 * time.Second) // past the call sent at 80 s, landing at 82 s
		if m := e.state(t, msgs[0].id); m.State != "visible" {
			t.Errorf("released message is %s, want visible (a late extension overwrote the release)", m.State)
		}
		if got := len(e.rec.CallsWith(msgs[0].handle)); got != 1 {
			t.Errorf("stopped message was in %d calls, want 1", got)
		}
		if got := len(e.rec.CallsWith(msgs[1].handle)); got != 4 {
			t.Errorf("other message was in %d calls by 83 s, want 4 (sent at 20, 40, 60, 80 s)", got)
		}
	})
}

// Stop while the message waits for a retry after a failed call: it is
// dropped, and nothing is sent for it again.
func TestStopDuringRetryBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, 30)
		e.f.InjectFault(sqstest.Fault{API: cmvb, Code: "RequestThrottled", Times: 1})
		h := newHB(t, e.rec, e.url, 30*time.Second)
		msgs, receivedAt := e.receive(t, 1)
		lost := newLosses()
		l := track(t, h, msgs[0].handle, receivedAt, lost.fn("a"))
		run(t, h)
		time.Sleep(20*time.Second + 50*time.Millisecond) // the first retry waits 100-200 ms
		l.Stop()
		time.Sleep(time.Minute)
		if got := len(e.rec.Calls()); got != 1 || lost.total() != 0 {
			t.Errorf("%d calls and %d losses; want the failed call only and no loss", got, lost.total())
		}
	})
}

// Ownership lost — the message deleted by someone else, or received again
// by another consumer (its receipt handle replaced) — ends exactly those
// leases with ErrLost; the others keep being extended. A message released
// (visibility 0) but received by nobody since is still ours: SQS accepts
// its latest handle, so the heartbeat hides it again.
func TestLostOwnershipEndsOnlyThatLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, 30)
		h := newHB(t, e.rec, e.url, 30*time.Second)
		msgs, receivedAt := e.receive(t, 4)
		lost := newLosses()
		names := []string{"kept", "deleted", "stolen", "released"}
		for i, m := range msgs {
			track(t, h, m.handle, receivedAt, lost.fn(names[i]))
		}
		run(t, h)
		ctx := context.Background()
		url := aws.String(e.url)

		time.Sleep(5 * time.Second)
		if _, err := e.f.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: url, ReceiptHandle: &msgs[1].handle}); err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs[2:] {
			if _, err := e.f.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: url, ReceiptHandle: &m.handle}); err != nil {
				t.Fatal(err)
			}
		}
		// Another consumer receives "stolen" (the fake returns the oldest visible first).
		out, err := e.f.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url, VisibilityTimeout: 600})
		if err != nil || len(out.Messages) != 1 || aws.ToString(out.Messages[0].MessageId) != msgs[2].id {
			t.Fatalf("other consumer's receive: %v, %+v; want message %s", err, out, msgs[2].id)
		}

		time.Sleep(60 * time.Second)
		for i, name := range names[1:3] {
			got := lost.of(name)
			if len(got) != 1 {
				t.Errorf("%s: onLost called %d times, want once", name, len(got))
				continue
			}
			if !errors.Is(got[0].cause, heartbeat.ErrLost) || errors.Is(got[0].cause, heartbeat.ErrMaxVisibility) {
				t.Errorf("%s: cause %v, want one wrapping ErrLost only", name, got[0].cause)
			}
			var api smithy.APIError
			if !errors.As(got[0].cause, &api) || api.ErrorCode() != "InvalidParameterValue" {
				t.Errorf("%s: cause %v does not carry SQS's InvalidParameterValue", name, got[0].cause)
			}
			if at := got[0].at.Sub(receivedAt); at != 20*time.Second {
				t.Errorf("%s: lost at %v, want 20s (the first extension)", name, at)
			}
			if n := len(e.rec.CallsWith(msgs[i+1].handle)); n != 1 {
				t.Errorf("%s: in %d calls, want 1 (untracked after the failure)", name, n)
			}
		}
		for _, i := range []int{0, 3} {
			if got := lost.of(names[i]); len(got) != 0 {
				t.Errorf("%s lost: %v", names[i], got[0].cause)
			}
			if n := len(e.rec.CallsWith(msgs[i].handle)); n != 3 {
				t.Errorf("%s extended %d times by 65 s, want 3", names[i], n)
			}
			if m := e.state(t, msgs[i].id); m.State != "inflight" {
				t.Errorf("%s is %s, want inflight", names[i], m.State)
			}
		}
		if m := e.state(t, msgs[2].id); m.ReceiveCount != 2 || !m.VisibleAt.Equal(receivedAt.Add(605*time.Second)) {
			t.Errorf("stolen message %+v: the heartbeat touched the other consumer's receive", m)
		}
		want := heartbeat.Stats{Calls: 3, Extended: 6, FailedEntries: 2, Lost: 2, Tracked: 2}
		if got := h.Stats(); got != want {
			t.Errorf("Stats = %+v, want %+v", got, want)
		}
	})
}

// stub answers ChangeMessageVisibilityBatch with one failed entry per call
// for the handle "fail", carrying code, and success for the others.
type stub struct {
	code        string
	message     string
	senderFault bool
	mu          sync.Mutex
	calls       int
}

func (s *stub) ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	s.mu.Lock()
	s.calls++
	s.mu.Unlock()
	out := &sqs.ChangeMessageVisibilityBatchOutput{}
	for _, e := range in.Entries {
		if aws.ToString(e.ReceiptHandle) == "fail" {
			out.Failed = append(out.Failed, types.BatchResultErrorEntry{Id: e.Id, Code: aws.String(s.code), Message: aws.String(s.message), SenderFault: s.senderFault})
			continue
		}
		out.Successful = append(out.Successful, types.ChangeMessageVisibilityBatchResultEntry{Id: e.Id})
	}
	return out, nil
}

// Every way real SQS reports a failed entry maps to the right outcome.
func TestEntryFailureCodes(t *testing.T) {
	for _, tc := range []struct {
		code, message string
		senderFault   bool
		want          error // nil: retried
	}{
		{"ReceiptHandleIsInvalid", "The input receipt handle is invalid.", true, heartbeat.ErrLost},
		{"AWS.SimpleQueueService.MessageNotInflight", "The message referred to isn't in flight.", true, heartbeat.ErrLost},
		{"MessageNotInflight", "The message referred to isn't in flight.", true, heartbeat.ErrLost},
		{"InvalidParameterValue", "Value x for parameter ReceiptHandle is invalid. Reason: Message does not exist or is not available for visibility timeout change.", true, heartbeat.ErrLost},
		{"InvalidParameterValue", "Value 43200 for parameter VisibilityTimeout is invalid. Reason: Total VisibilityTimeout for the message is beyond the limit [43200 seconds]", true, heartbeat.ErrMaxVisibility},
		{"SomethingNew", "a sender fault we do not know", true, heartbeat.ErrLost},
		{"InternalError", "We encountered an internal error.", false, nil},
	} {
		t.Run(tc.code+" "+tc.message[:10], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := &stub{code: tc.code, message: tc.message, senderFault: tc.senderFault}
				h := newHB(t, s, "url", 30*time.Second)
				lost := newLosses()
				track(t, h, "fail", time.Now(), lost.fn("fail"))
				track(t, h, "ok", time.Now(), lost.fn("ok"))
				run(t, h)
				time.Sleep(21 * time.Second)
				got := lost.of("fail")
				if tc.want == nil {
					if len(got) != 0 || h.Stats().FailedEntries < 2 {
						t.Fatalf("losses %v, stats %+v; want the entry retried", got, h.Stats())
					}
					return
				}
				if len(got) != 1 || !errors.Is(got[0].cause, tc.want) || !strings.Contains(got[0].cause.Error(), tc.code) {
					t.Fatalf("losses %v, want one wrapping %v naming %s", got, tc.want, tc.code)
				}
				if len(lost.of("ok")) != 0 {
					t.Errorf("the other message was lost too")
				}
			})
		})
	}
}

func TestMalformedHandleIsLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, 30)
		h := newHB(t, e.rec, e.url, 30*time.Second)
		lost := newLosses()
		track(t, h, "not-a-receipt-handle", time.Now(), lost.fn("bad"))
		run(t, h)
		time.Sleep(time.Minute)
		got := lost.of("bad")
		if len(got) != 1 || !errors.Is(got[0].cause, heartbeat.ErrLost) || !strings.Contains(got[0].cause.Error(), "ReceiptHandleIsInvalid") {
			t.Fatalf("losses %v, want one ErrLost naming ReceiptHandleIsInvalid", got)
		}
	})
}

func TestTransientFailureIsRetried(t *testing.T) {
	for _, tc := range []struct {
		name string
		code string
	}{{"throttled", "RequestThrottled"}, {"server error", "InternalError"}} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, 30)
				e.f.InjectFault(sqstest.Fault{API: cmvb, Code: tc.code, Times: 2})
				h := newHB(t, e.rec, e.url, 30*time.Second)
				msgs, receivedAt := e.receive(t, 3)
				lost := newLosses()
				for _, m := range msgs {
					track(t, h, m.handle, receivedAt, lost.fn(m.id))
				}
				run(t, h)
				time.Sleep(25 * time.Second)
				calls := e.rec.Calls()
				if len(calls) != 3 || calls[0].err == nil || calls[1].err == nil || calls[2].err != nil {
					t.Fatalf("calls %+v, want two failures then a success", calls)
				}
				// The one retry rule (sqsbatch.Backoff): 50-100 ms, then 100-200 ms.
				w1, w2 := calls[1].at.Sub(calls[0].at), calls[2].at.Sub(calls[1].at)
				if calls[0].at.Sub(receivedAt) != 20*time.Second || w1 < 50*time.Millisecond || w1 > 100*time.Millisecond || w2 < 100*time.Millisecond || w2 > 200*time.Millisecond {
					t.Errorf("calls at 20s, +%v, +%v; want 20s, +50-100ms, +100-200ms", w1, w2)
				}
				if len(calls[2].handles) != 3 {
					t.Errorf("retry carried %d entries, want 3", len(calls[2].handles))
				}
				if lost.total() != 0 {
					t.Errorf("%d losses, want none", lost.total())
				}
				want := heartbeat.Stats{Calls: 3, Extended: 3, FailedCalls: 2, Tracked: 3}
				if got := h.Stats(); got != want {
					t.Errorf("Stats = %+v, want %+v", got, want)
				}
				// The schedule continues from the successful call.
				time.Sleep(20 * time.Second)
				if calls := e.rec.Calls(); len(calls) != 4 || calls[3].at.Sub(calls[2].at) != 20*time.Second {
					t.Errorf("next extension not 20 s after the successful one: %d calls", len(calls))
				}
				for _, m := range msgs {
					if s := e.state(t, m.id); s.State != "inflight" {
						t.Errorf("message %s is %s, want inflight", m.id, s.State)
					}
				}
			})
		})
	}
}

// When every attempt fails, the owner learns before the deadline that the
// message may be delivered again.
func TestGivesUpBeforeDeadline(t *testing.T) {
	for _, tc := range []struct {
		name       string
		maxRetries int
		wantCalls  int           // 0: many
		lostBy     time.Duration // after receipt
		lostAfter  time.Duration
	}{
		{"until the deadline", 0, 0, 30 * time.Second, 29800 * time.Millisecond},
		{"MaxRetries 2", 2, 3, 20*time.Second + 300*time.Millisecond, 20*time.Second + 150*time.Millisecond},
		{"no retries", -1, 1, 20 * time.Second, 20 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, 30)
				e.f.InjectFault(sqstest.Fault{API: cmvb, Code: "InternalError"})
				h := newHB(t, e.rec, e.url, 30*time.Second, func(o *heartbeat.Options) { o.MaxRetries = tc.maxRetries })
				msgs, receivedAt := e.receive(t, 1)
				lost := newLosses()
				track(t, h, msgs[0].handle, receivedAt, lost.fn("a"))
				run(t, h)
				time.Sleep(time.Minute)
				got := lost.of("a")
				if len(got) != 1 {
					t.Fatalf("onLost called %d times, want once", len(got))
				}
				at := got[0].at.Sub(receivedAt)
				if at > tc.lostBy || at < tc.lostAfter {
					t.Errorf("told at %v, want between %v and %v", at, tc.lostAfter, tc.lostBy)
				}
				cause := got[0].cause
				var api smithy.APIError
				if !errors.Is(cause, heartbeat.ErrLost) || !errors.As(cause, &api) || api.ErrorCode() != "InternalError" {
					t.Errorf("cause %v, want ErrLost carrying the InternalError", cause)
				}
				calls := len(e.rec.Calls())
				if tc.wantCalls != 0 && calls != tc.wantCalls {
					t.Errorf("%d calls, want %d", calls, tc.wantCalls)
				}
				if calls > 20 {
					t.Errorf("%d calls in 10 s: backoff too aggressive", calls)
				}
				s := h.Stats()
				if s.Lost != 1 || s.FailedCalls != int64(calls) || s.Tracked != 0 {
					t.Errorf("Stats = %+v, want 1 lost, %d failed calls, none tracked", s, calls)
				}
			})
		})
	}
}

// A call that hangs is cut off in time to retry before the deadline.
func TestHungCallTimesOutAndIsRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, 30)
		remove := e.f.InjectFault(sqstest.Fault{API: cmvb, Latency: time.Hour})
		h := newHB(t, e.rec, e.url, 30*time.Second)
		msgs, receivedAt := e.receive(t, 1)
		lost := newLosses()
		track(t, h, msgs[0].handle, receivedAt, lost.fn("a"))
		run(t, h)
		time.Sleep(20 * time.Second)
		synctest.Wait()
		remove()
		time.Sleep(10 * time.Second)
		calls := e.rec.Calls()
		if len(calls) != 2 || calls[0].err == nil || calls[1].err != nil {
			t.Fatalf("calls %+v; want a timed-out call then a successful retry", calls)
		}
		if at := calls[1].at.Sub(receivedAt); at < 25*time.Second || at > 26*time.Second {
			t.Errorf("retry at %v, want after the 5 s call timeout (half the 10 s left)", at)
		}
		if lost.total() != 0 || e.state(t, msgs[0].id).State != "inflight" {
			t.Errorf("message lost or visible after a successful retry")
		}
	})
}

// The 12-hour limit: no call asks past receivedAt+12h, the last one asks for
// exactly what is left (less the 1 s margin), and the owner gets
// ErrMaxVisibility Threshold before that last deadline.
func TestTwelveHourLimit(t *testing.T) {
	for _, tc := range []struct {
		name      string
		vis       time.Duration
		ext       time.Duration
		wantCalls int
		lastAsk   int32 // seconds; 0: no call at all
	}{
		// Every 40 min from 40 min; at 680 min only 40 min − 1 s is left.
		{"extension 1h", time.Hour, time.Hour, 17, 40*60 - 1},
		// Every 200 min from 0 (threshold 100 min ≥ the 30 s timeout); at 600 min 2 h − 1 s is left.
		{"extension 5h", 30 * time.Second, 5 * time.Hour, 4, 2*3600 - 1},
		// Received with 12 h: nothing to extend.
		{"received with 12h", 12 * time.Hour, 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, int(tc.vis/time.Second))
				h := newHB(t, e.rec, e.url, tc.vis, func(o *heartbeat.Options) { o.Extension = tc.ext })
				msgs, receivedAt := e.receive(t, 1)
				capAt := receivedAt.Add(heartbeat.MaxVisibility)
				lost := newLosses()
				var seen time.Time
				var state sqstest.MessageInfo
				track(t, h, msgs[0].handle, receivedAt, func(cause error) {
					seen, state = time.Now(), e.state(t, msgs[0].id)
					lost.fn("a")(cause)
				})
				run(t, h)
				time.Sleep(13 * time.Hour)

				calls := e.rec.Calls()
				for _, c := range calls {
					if c.err != nil || len(c.failed) != 0 {
						t.Errorf("call at %v failed: %v %v", c.at.Sub(receivedAt), c.err, c.failed)
					}
					if end := c.at.Add(time.Duration(c.timeout[0]) * time.Second); end.After(capAt) {
						t.Errorf("call at %v asks %d s, past the 12 h limit by %v", c.at.Sub(receivedAt), c.timeout[0], end.Sub(capAt))
					}
				}
				if len(calls) != tc.wantCalls {
					t.Fatalf("%d calls, want %d", len(calls), tc.wantCalls)
				}
				lastDeadline := receivedAt.Add(tc.vis)
				if tc.wantCalls > 0 {
					last := calls[len(calls)-1]
					if last.timeout[0] != tc.lastAsk {
						t.Errorf("last call asks %d s, want %d s (what is left)", last.timeout[0], tc.lastAsk)
					}
					lastDeadline = last.at.Add(time.Duration(last.timeout[0]) * time.Second)
				}
				got := lost.of("a")
				if len(got) != 1 || !errors.Is(got[0].cause, heartbeat.ErrMaxVisibility) || errors.Is(got[0].cause, heartbeat.ErrLost) {
					t.Fatalf("onLost calls %v, want one with ErrMaxVisibility", got)
				}
				if want := lastDeadline.Add(-h.Threshold()); !seen.Equal(want) {
					t.Errorf("told at %v after receipt, want %v (Threshold before the last deadline)", seen.Sub(receivedAt), want.Sub(receivedAt))
				}
				if state.State != "inflight" || !state.VisibleAt.Equal(lastDeadline) {
					t.Errorf("when told, message was %s until %v; want inflight until %v", state.State, state.VisibleAt.Sub(receivedAt), lastDeadline.Sub(receivedAt))
				}
				if !strings.Contains(got[0].cause.Error(), lastDeadline.Format(time.RFC3339Nano)) {
					t.Errorf("cause %q does not say until when the message stays invisible", got[0].cause)
				}
				if m := e.state(t, msgs[0].id); m.State != "visible" {
					t.Errorf("after 13 h the message is %s, want visible", m.State)
				}
				s := h.Stats()
				if s.MaxedOut != 1 || s.Lost != 0 || s.Tracked != 0 || s.Extended != int64(tc.wantCalls) {
					t.Errorf("Stats = %+v", s)
				}
			})
		})
	}
}

// If SQS counts more elapsed time than the caller said (receivedAt given
// too late), SQS refuses the extension past its limit; the owner gets
// ErrMaxVisibility, not ErrLost.
func TestLimitRefusedBySQSIsMaxVisibility(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, 30)
		h := newHB(t, e.rec, e.url, 30*time.Second, func(o *heartbeat.Options) { o.Extension = 12 * time.Hour })
		msgs, receivedAt := e.receive(t, 1)
		time.Sleep(10 * time.Second)
		lost := newLosses()
		trackUntil(t, h, msgs[0].handle, receivedAt.Add(time.Minute), receivedAt.Add(30*time.Second), lost.fn("a"))
		run(t, h)
		time.Sleep(time.Minute)
		got := lost.of("a")
		if len(got) != 1 || !errors.Is(got[0].cause, heartbeat.ErrMaxVisibility) || !strings.Contains(got[0].cause.Error(), "beyond the limit") {
			t.Fatalf("losses %v, want ErrMaxVisibility carrying SQS's refusal", got)
		}
		if s := h.Stats(); s.MaxedOut != 1 || s.FailedEntries != 1 || s.Tracked != 0 {
			t.Errorf("Stats = %+v", s)
		}
	})
}

func TestTrackUntilUsesGivenDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, 30)
		h := newHB(t, e.rec, e.url, 30*time.Second)
		msgs, receivedAt := e.receive(t, 1)
		run(t, h)
		// The receive asked for 30 s, but the caller already changed it to 15 s.
		if _, err := e.f.ChangeMessageVisibility(context.Background(), &sqs.ChangeMessageVisibilityInput{
			QueueUrl: aws.String(e.url), ReceiptHandle: &msgs[0].handle, VisibilityTimeout: 15,
		}); err != nil {
			t.Fatal(err)
		}
		trackUntil(t, h, msgs[0].handle, receivedAt, receivedAt.Add(15*time.Second), nil)
		time.Sleep(20 * time.Second)
		calls := e.rec.Calls()
		if len(calls) != 1 || calls[0].at.Sub(receivedAt) != 5*time.Second {
			t.Fatalf("calls %+v, want one at 5 s", calls)
		}
	})
}

// onLost may call Stop (and cancel contexts) without deadlock.
func TestOnLostMayStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, 30)
		h := newHB(t, e.rec, e.url, 30*time.Second)
		ctx, cancel := context.WithCancelCause(context.Background())
		var l *heartbeat.Lease
		l = track(t, h, "bogus", time.Now(), func(cause error) {
			l.Stop()
			cancel(cause)
		})
		run(t, h) // starts after l is set
		time.Sleep(time.Minute)
		if !errors.Is(context.Cause(ctx), heartbeat.ErrLost) {
			t.Fatalf("context cause %v, want ErrLost", context.Cause(ctx))
		}
		l.Stop()
	})
}

func TestRunTwiceFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, 30)
		h := newHB(t, e.rec, e.url, 30*time.Second)
		run(t, h)
		synctest.Wait()
		if err := h.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "already running") {
			t.Fatalf("second Run: %v, want an already-running error", err)
		}
	})
}

// After Run ends, tracked messages are kept and a new Run resumes them.
func TestRunResumes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, 30)
		h := newHB(t, e.rec, e.url, 30*time.Second)
		msgs, receivedAt := e.receive(t, 1)
		track(t, h, msgs[0].handle, receivedAt, nil)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- h.Run(ctx) }()
		time.Sleep(10 * time.Second)
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("Run: %v", err)
		}
		time.Sleep(5 * time.Second)
		run(t, h)
		time.Sleep(10 * time.Second)
		if calls := e.rec.Calls(); len(calls) != 1 || calls[0].at.Sub(receivedAt) != 20*time.Second {
			t.Fatalf("calls %+v, want one at 20 s", calls)
		}
	})
}

// Shutting down while a call is in flight cancels it; the message stays
// tracked and unharmed.
func TestRunEndsDuringCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, 30)
		e.f.InjectFault(sqstest.Fault{API: cmvb, Latency: 2 * time.Second})
		h := newHB(t, e.rec, e.url, 30*time.Second)
		msgs, receivedAt := e.receive(t, 1)
		lost := newLosses()
		l := track(t, h, msgs[0].handle, receivedAt, lost.fn("a"))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- h.Run(ctx) }()
		time.Sleep(21 * time.Second)
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("Run: %v", err)
		}
		l.Stop()
		if s := h.Stats(); s.FailedCalls != 0 || s.Lost != 0 || lost.total() != 0 {
			t.Errorf("shutdown counted as a failure: %+v", s)
		}
	})
}

// Many goroutines tracking and stopping while calls are slow: for -race,
// and to check the accounting holds.
func TestConcurrentTrackAndStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, 30)
		e.f.InjectFault(sqstest.Fault{API: cmvb, Latency: 300 * time.Millisecond})
		h := newHB(t, e.rec, e.url, 30*time.Second)
		run(t, h)
		msgs, receivedAt := e.receive(t, 200)
		var wg sync.WaitGroup
		for i, m := range msgs {
			wg.Go(func() {
				l := track(t, h, m.handle, receivedAt, func(err error) { t.Errorf("lost %s: %v", m.id, err) })
				time.Sleep(time.Duration(i%50) * time.Second)
				l.Stop()
				// Release it; no extension may land afterwards.
				if _, err := e.f.ChangeMessageVisibility(context.Background(), &sqs.ChangeMessageVisibilityInput{
					QueueUrl: aws.String(e.url), ReceiptHandle: &m.handle, VisibilityTimeout: 0,
				}); err != nil {
					t.Errorf("release %s: %v", m.id, err)
				}
			})
		}
		wg.Wait()
		time.Sleep(time.Minute)
		if visible, inflight := len(e.f.Messages(e.url, "visible")), len(e.f.Messages(e.url, "inflight")); visible != 200 || inflight != 0 {
			t.Errorf("%d visible, %d in flight; want all 200 visible", visible, inflight)
		}
		if s := h.Stats(); s.Tracked != 0 || s.Failures() != 0 || s.Calls == 0 {
			t.Errorf("Stats = %+v", s)
		}
	})
}

func TestOptionsValidation(t *testing.T) {
	for _, tc := range []struct {
		name    string
		vis     time.Duration
		opts    func(*heartbeat.Options)
		wantErr string
	}{
		{"zero visibility", 0, nil, "between 1s and 12h"},
		{"sub-second", 500 * time.Millisecond, nil, "between 1s and 12h"},
		{"too long", 13 * time.Hour, nil, "between 1s and 12h"},
		{"threshold too long", 30 * time.Second, func(o *heartbeat.Options) { o.Threshold = 30 * time.Second }, "shorter than the extension"},
		{"negative threshold", 30 * time.Second, func(o *heartbeat.Options) { o.Threshold = -time.Second }, "must be positive"},
		{"zero visibility with extension", 0, func(o *heartbeat.Options) { o.Extension = time.Minute }, ""},
		{"12h", 12 * time.Hour, nil, ""},
		{"negative MaxCalls", 30 * time.Second, func(o *heartbeat.Options) { o.MaxCalls = -1 }, "must not be negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var opts []func(*heartbeat.Options)
			if tc.opts != nil {
				opts = append(opts, tc.opts)
			}
			h, err := heartbeat.New(sqstest.For(t), "url", tc.vis, opts...)
			if (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("New = %v, want %q", err, tc.wantErr)
			}
			if (h == nil) != (err != nil) {
				t.Fatalf("New returned %v and %v; want exactly one of them", h, err)
			}
		})
	}
	if _, err := heartbeat.New(nil, "url", time.Second); err == nil || !strings.Contains(err.Error(), "SQS client") {
		t.Errorf("New(nil client) = %v, want an error naming the client", err)
	}
	h := newHB(t, sqstest.For(t), "url", time.Second)
	if _, err := h.Track("", time.Now(), nil); err == nil {
		t.Error("Track with an empty receipt handle succeeded; want an error")
	}
}

func TestDefaults(t *testing.T) {
	for _, tc := range []struct {
		vis, ext, threshold time.Duration
	}{
		{30 * time.Second, 30 * time.Second, 10 * time.Second},
		{2 * time.Second, 2 * time.Second, time.Second},
		{time.Second, time.Second, 500 * time.Millisecond},
		{1500 * time.Millisecond, time.Second, 500 * time.Millisecond},
		{12 * time.Hour, 12 * time.Hour, 4 * time.Hour},
	} {
		h := newHB(t, sqstest.For(t), "url", tc.vis)
		if h.Extension() != tc.ext || h.Threshold() != tc.threshold {
			t.Errorf("New(%v): extension %v threshold %v, want %v and %v", tc.vis, h.Extension(), h.Threshold(), tc.ext, tc.threshold)
		}
	}
}
