package dlq

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/harness/sdkretry"
	"github.com/sqsworker/sqsworker/internal/deadletter"
	"github.com/sqsworker/sqsworker/sqstest"
)

// These tests cover the two ways a read of a dead-letter queue could hide
// messages silently: a receive interrupted while its response is on its
// way, and a receive whose response is lost. Each runs on 500 messages,
// as the emulator scenario in integration_reads_test.go does.

const readsTotal = 500

// sdkRetry retries a failed ReceiveMessage once, as the SDK's retryer does
// after a server error or a connection reset: when the failed receive took
// effect, its messages are hidden and the caller sees no error at all.
type sdkRetry struct{ *sqstest.Fake }

func (c sdkRetry) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, o ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	out, err := c.Fake.ReceiveMessage(ctx, in, o...)
	if err != nil && ctx.Err() == nil {
		return c.Fake.ReceiveMessage(ctx, in, o...)
	}
	return out, err
}

// interruptedRedrive fills a DLQ with readsTotal messages and redrives
// them (with no rate limit, so the next receive starts at once); once 250
// are moved, it injects fault for the next receive and interrupts the
// redrive half a second later, while that receive is in flight. It returns
// how long after the interrupt Redrive returned.
func interruptedRedrive(t *testing.T, fault sqstest.Fault) (f *sqstest.Fake, target Target, after time.Duration) {
	t.Helper()
	f, target = fakePair(t, "orders")
	deadLetter(t, f, target, readsTotal, nil, failedWith("boom"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var cancelledAt time.Time
	injected := false
	res, err := Redrive(ctx, f, target, RedriveOptions{Method: "manual", Rate: -1, Progress: func(p Progress) {
		if injected || p.Moved < 250 {
			return
		}
		injected = true
		f.InjectFault(fault)
		time.AfterFunc(500*time.Millisecond, func() {
			cancelledAt = time.Now()
			cancel()
		})
	}})
	if !errors.Is(err, context.Canceled) || res.Done || res.Moved != 250 {
		t.Fatalf("interrupted redrive = %+v, %v; want 250 moved, context.Canceled, not done", res, err)
	}
	return f, target, time.Since(cancelledAt)
}

// wantCounts checks the DLQ's and the source's messages.
func wantCounts(t *testing.T, f *sqstest.Fake, target Target, visible, inFlight, moved int) {
	t.Helper()
	v, inflight := len(f.Messages(target.DLQURL, "visible")), len(f.Messages(target.DLQURL, "inflight"))
	if v != visible || inflight != inFlight {
		t.Errorf("DLQ: %d visible, %d in flight; want %d and %d", v, inflight, visible, inFlight)
	}
	if n := len(f.Messages(target.SourceURL)); n != moved {
		t.Errorf("source holds %d messages, want %d moved back", n, moved)
	}
}

// finishAfterHold waits out the hold of the messages a lost response hid
// and checks that a run then moves the last n, leaving the DLQ empty.
func finishAfterHold(t *testing.T, f *sqstest.Fake, target Target, n int) {
	t.Helper()
	time.Sleep(deadletter.DefaultHold)
	res, err := Redrive(context.Background(), f, target, RedriveOptions{Method: "manual"})
	if err != nil || !res.Done || res.Moved != n {
		t.Fatalf("run after the hold = %+v, %v; want the last %d moved", res, err, n)
	}
	wantCounts(t, f, target, 0, 0, readsTotal)
}

// A redrive interrupted while a receive's response is on its way (the
// receive took effect at SQS) still gets that response, releases its
// messages at once, and so hides nothing: a re-run straight away moves
// everything.
func TestRedriveInterruptedReceiveHidesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, target, d := interruptedRedrive(t, sqstest.Fault{API: "ReceiveMessage", AfterEffect: true, ResponseDelay: time.Second, Times: 1})
		if d != 500*time.Millisecond {
			t.Errorf("Redrive returned %v after the interrupt; want 500ms, when the receive in flight answered", d)
		}
		wantCounts(t, f, target, readsTotal-250, 0, 250)

		again, err := Redrive(context.Background(), f, target, RedriveOptions{Method: "manual"})
		if err != nil || !again.Done || again.NotSeen != 0 || again.Moved != readsTotal-250 {
			t.Fatalf("re-run straight after the interrupt = %+v, %v; want the other %d moved, done", again, err, readsTotal-250)
		}
		wantCounts(t, f, target, 0, 0, readsTotal)
	})
}

// When the response of the receive in flight never comes, an interrupted
// redrive still returns within the receive's own bound; the messages that
// receive took stay hidden (nobody knows their receipt handles), and the
// next run says so instead of reporting done. A run after the hold moves
// them.
func TestRedriveReceiveWithoutResponseIsBoundedAndReported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, target, d := interruptedRedrive(t, sqstest.Fault{API: "ReceiveMessage", AfterEffect: true, Hang: true, Times: 1})
		// The receive began 500ms before the interrupt; it is given its
		// wait (1s) and receiveGrace.
		if bound := time.Second + receiveGrace - 500*time.Millisecond; d != bound {
			t.Errorf("Redrive returned %v after the interrupt, want %v (the receive's own bound)", d, bound)
		}
		wantCounts(t, f, target, readsTotal-260, 10, 250)

		again, err := Redrive(context.Background(), f, target, RedriveOptions{Method: "manual"})
		var ns *NotSeenError
		if !errors.Is(err, ErrNotAllSeen) || !errors.As(err, &ns) || again.Done || again.NotSeen != 10 || again.Moved != readsTotal-260 {
			t.Fatalf("re-run = %+v, %v; want %d moved, 10 not seen, not done", again, err, readsTotal-260)
		}
		if ns.Expected != 250 || ns.InFlight != 10 || ns.Seen != 240 {
			t.Errorf("NotSeenError = %+v; want 250 expected, 10 in flight, 240 seen", ns)
		}
		for _, want := range []string{"10 messages of queue orders-dlq were not seen (it held about 250 at the start, 10 of them in flight)", "lost", "1m hold", "run again after"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
		}
		wantCounts(t, f, target, 0, 10, readsTotal-10)
		finishAfterHold(t, f, target, 10)
	})
}

// A receive whose response is lost after it took effect, retried by the
// SDK so the caller sees no error, hides its messages: Redrive reports
// them as not seen instead of returning done, and a run after the hold
// moves them.
func TestRedriveLostReceiveResponseIsReported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, target := fakePair(t, "orders")
		deadLetter(t, f, target, readsTotal, nil, failedWith("boom"))
		f.InjectFault(sqstest.Fault{API: "ReceiveMessage", AfterEffect: true, Code: "InternalError", Every: 10, Times: 2})
		var last Progress
		res, err := Redrive(context.Background(), sdkRetry{f}, target, RedriveOptions{Method: "manual", Progress: func(p Progress) { last = p }})
		if !errors.Is(err, ErrNotAllSeen) || res.Done || last.Done || res.NotSeen != 20 || res.Moved != readsTotal-20 || res.Total != readsTotal {
			t.Fatalf("redrive = %+v (last report %+v), %v; want %d moved, 20 not seen, not done", res, last, err, readsTotal-20)
		}
		if !strings.Contains(err.Error(), "20 messages of queue orders-dlq were not seen (it held about 500 at the start)") {
			t.Errorf("error %q does not give the count", err)
		}
		wantCounts(t, f, target, 0, 20, readsTotal-20)
		finishAfterHold(t, f, target, 20)
	})
}

// A receive whose response is lost is retried by the walk itself (the
// SDK's retries are off), which then knows that up to the messages it
// asked for are hidden: the redrive moves the rest and reports those as
// not seen.
func TestRedriveFailedReceiveIsRetriedAndReported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, target := fakePair(t, "orders")
		deadLetter(t, f, target, 30, nil, failedWith("boom"))
		f.InjectFault(sqstest.Fault{API: "ReceiveMessage", AfterEffect: true, Code: "InternalError", Every: 2, Times: 1})
		res, err := Redrive(context.Background(), f, target, RedriveOptions{Method: "manual"})
		if !errors.Is(err, ErrNotAllSeen) || res.Done || res.Moved != 20 || res.NotSeen != 10 {
			t.Fatalf("redrive = %+v, %v; want 20 moved, 10 not seen, not done", res, err)
		}
		if !strings.Contains(err.Error(), "up to 10 by this run's own receives") {
			t.Errorf("error %q does not say what may be hidden", err)
		}
	})
}

func TestInspectReportsWhatItDidNotSee(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, target := fakePair(t, "orders")
		deadLetter(t, f, target, 30, nil, failedWith("boom"))

		// A lost response, hidden by the SDK's retry.
		remove := f.InjectFault(sqstest.Fault{API: "ReceiveMessage", AfterEffect: true, Code: "InternalError", Every: 2, Times: 1})
		msgs, err := Inspect(context.Background(), sdkRetry{f}, target.DLQURL, InspectOptions{})
		remove()
		var ns *NotSeenError
		if len(msgs) != 20 || !errors.As(err, &ns) || ns.NotSeen() != 10 || ns.Expected != 30 || ns.InFlight != 0 {
			t.Fatalf("Inspect = %d messages, %v (%+v); want 20 and 10 not seen", len(msgs), err, ns)
		}
		if v, inflight := len(f.Messages(target.DLQURL, "visible")), len(f.Messages(target.DLQURL, "inflight")); v != 20 || inflight != 10 {
			t.Errorf("after Inspect: %d visible, %d in flight; want the 20 seen released", v, inflight)
		}

		// Now hidden at the start (by the lost response; as by any reader):
		// still reported.
		msgs, err = Inspect(context.Background(), f, target.DLQURL, InspectOptions{})
		if len(msgs) != 20 || !errors.As(err, &ns) || ns.NotSeen() != 10 || ns.InFlight != 10 {
			t.Fatalf("second Inspect = %d messages, %v; want 20 and the 10 in flight reported", len(msgs), err)
		}
		// A listing limited by Max does not go through the queue: no report.
		if msgs, err := Inspect(context.Background(), f, target.DLQURL, InspectOptions{Max: 5}); len(msgs) != 5 || err != nil {
			t.Errorf("Inspect Max 5 = %d messages, %v", len(msgs), err)
		}

		time.Sleep(deadletter.DefaultHold)
		msgs, err = Inspect(context.Background(), f, target.DLQURL, InspectOptions{})
		if len(msgs) != 30 || err != nil {
			t.Fatalf("Inspect after the hold = %d messages, %v; want all 30", len(msgs), err)
		}
	})
}

// An interrupted Inspect releases what the receive in flight returned.
func TestInspectInterruptedReleasesEverything(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, target := fakePair(t, "orders")
		deadLetter(t, f, target, 30, nil, failedWith("boom"))
		f.InjectFault(sqstest.Fault{API: "ReceiveMessage", AfterEffect: true, ResponseDelay: time.Second, Every: 2, Times: 1})
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(500*time.Millisecond, cancel)
		msgs, err := Inspect(ctx, f, target.DLQURL, InspectOptions{})
		if !errors.Is(err, context.Canceled) || len(msgs) != 10 {
			t.Fatalf("Inspect = %d messages, %v; want the first 10 and context.Canceled", len(msgs), err)
		}
		if v, inflight := len(f.Messages(target.DLQURL, "visible")), len(f.Messages(target.DLQURL, "inflight")); v != 30 || inflight != 0 {
			t.Errorf("after the interrupted Inspect: %d visible, %d in flight; want all 30 released", v, inflight)
		}
	})
}

// sdkClient repeats a failed ReceiveMessage as the SDK's retryer does,
// unless the call turned the SDK's retries off: then the caller sees the
// failure. After its arriveAt-th receive it sends arrivals new messages to
// the queue, as dead-lettering goes on during a walk.
type sdkClient struct {
	*sqstest.Fake
	t        *testing.T
	url      string
	receives int
	arriveAt int
	arrivals int
}

func (c *sdkClient) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	c.receives++
	if c.receives == c.arriveAt {
		for i := range c.arrivals {
			c.MustSend(c.t, c.url, fmt.Sprintf("arrival-%d", i))
		}
	}
	return sdkretry.Do(ctx, optFns, nil, func() (*sqs.ReceiveMessageOutput, error) { return c.Fake.ReceiveMessage(ctx, in, optFns...) })
}

// Issue 24, item 9: a lost receive response hides 10 messages, and 10 new
// ones arrive during the walk. Comparing the distinct messages seen with
// the count at the start, the arrivals made up for the hidden ones: Moved
// 100, Done, NotSeen 0, no error, with 10 still in flight. The walk must
// not report complete while messages it hid are still hidden.
func TestWalkArrivalsDoNotHideLostReceive(t *testing.T) {
	for _, walk := range []string{"redrive", "inspect"} {
		t.Run(walk, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f, target := fakePair(t, "orders")
				deadLetter(t, f, target, 100, nil, failedWith("boom"))
				f.InjectFault(sqstest.Fault{API: "ReceiveMessage", AfterEffect: true, Code: "InternalError", Every: 3, Times: 1})
				c := &sdkClient{Fake: f, t: t, url: target.DLQURL, arriveAt: 5, arrivals: 10}
				var notSeen int
				var err error
				switch walk {
				case "redrive":
					var res RedriveResult
					res, err = Redrive(context.Background(), c, target, RedriveOptions{Method: "manual", Rate: -1})
					notSeen = res.NotSeen
					if res.Done {
						t.Errorf("redrive = %+v; reported done with messages it hid still hidden", res)
					}
				case "inspect":
					_, err = Inspect(context.Background(), c, target.DLQURL, InspectOptions{})
					var ns *NotSeenError
					if errors.As(err, &ns) {
						notSeen = ns.NotSeen()
					}
				}
				inFlight := len(f.Messages(target.DLQURL, "inflight"))
				if inFlight != 10 {
					t.Fatalf("%d messages in flight after the walk; the scenario wants the lost receive's 10", inFlight)
				}
				if notSeen < inFlight || !errors.Is(err, ErrNotAllSeen) {
					t.Errorf("%s: NotSeen %d, err %v; want at least the %d hidden messages reported (ErrNotAllSeen)", walk, notSeen, err, inFlight)
				}
			})
		})
	}
}

// A receive that never left the client (its connection could not be
// made) hid nothing: the walk retries it and still reports a complete read.
func TestWalkReceiveNotSentHidesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, target := fakePair(t, "orders")
		deadLetter(t, f, target, 30, nil, failedWith("boom"))
		refused := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
		f.InjectFault(sqstest.Fault{API: "ReceiveMessage", Err: refused, Every: 2, Times: 1})
		msgs, err := Inspect(context.Background(), f, target.DLQURL, InspectOptions{})
		if err != nil || len(msgs) != 30 {
			t.Fatalf("Inspect = %d messages, %v; want all 30 and no error (the refused receive took nothing)", len(msgs), err)
		}
	})
}
