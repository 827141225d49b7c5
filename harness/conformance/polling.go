package conformance

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

func delayAndPollBehaviours() []behaviour {
	return []behaviour{
		{name: "MessageDelaySeconds", run: messageDelaySeconds},
		{name: "QueueDelaySeconds", run: queueDelaySeconds},
		{name: "LongPollReturnsWhenMessageArrives", run: longPollReturnsOnArrival},
		{name: "LongPollOnEmptyQueueWaitsFullTime", run: longPollEmptyWaits},
		{name: "LongPollOneMessageWakesOneWaiter", run: longPollOneMessageOneWaiter},
		{name: "AbortedLongPollTakesNoLaterMessage", run: abortedLongPoll},
	}
}

// wantDelayed checks that a message sent at sent with a 1 s delay is not
// receivable at once and that a long poll gets it once the delay is over.
func (e *env) wantDelayed(url string, sent time.Time, id string) {
	e.t.Helper()
	e.wantEmpty(url, 0, "receive right after sending with a 1 s delay")
	ms := e.recv(url, 1, 2)
	if len(ms) != 1 {
		e.t.Fatalf("long poll of 2 s on a message delayed 1 s: %d messages, want 1", len(ms))
	}
	if d := time.Since(sent); d < 800*time.Millisecond {
		e.t.Errorf("delayed message received %v after the send, before its 1 s delay", d)
	}
	if aws.ToString(ms[0].MessageId) != id {
		e.t.Errorf("received %s, want the delayed message %s", aws.ToString(ms[0].MessageId), id)
	}
}

// SendMessage's DelaySeconds hides the new message for that long; a long
// poll returns it when the delay ends.
func messageDelaySeconds(e *env) {
	url := e.createQueue("msgdelay", nil)
	sent := time.Now()
	out := e.sendInput(&sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("later"), DelaySeconds: 1})
	e.wantDelayed(url, sent, aws.ToString(out.MessageId))
}

// The queue's DelaySeconds delays every new message.
func queueDelaySeconds(e *env) {
	url := e.createQueue("qdelay", map[string]string{"DelaySeconds": "1"})
	sent := time.Now()
	out := e.send(url, "later")
	e.wantDelayed(url, sent, aws.ToString(out.MessageId))
}

type pollResult struct {
	messages []types.Message
	took     time.Duration // from before the call to its return
	returned time.Time
	err      error
}

// longPoll starts a ReceiveMessage long polling wait seconds and returns
// where its result will arrive.
func (e *env) longPoll(url string, wait int32) <-chan pollResult {
	done := make(chan pollResult, 1)
	start := time.Now()
	go func() {
		out, err := e.api.ReceiveMessage(e.ctx(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: wait, VisibilityTimeout: 30})
		r := pollResult{took: time.Since(start), returned: time.Now(), err: err}
		if out != nil {
			r.messages = out.Messages
		}
		done <- r
	}()
	return done
}

// A long poll returns as soon as a message arrives, well before
// WaitTimeSeconds: about when the SendMessage that brought it returns.
func longPollReturnsOnArrival(e *env) {
	url := e.createQueue("lparrive", nil)
	poll := e.longPoll(url, 2)
	e.sleep(300 * time.Millisecond)
	e.send(url, "arrives")
	sent := time.Now()
	r := <-poll
	if r.err != nil {
		e.t.Fatalf("ReceiveMessage: %v", r.err)
	}
	if len(r.messages) != 1 {
		e.t.Fatalf("long poll received %d messages, want the one that arrived", len(r.messages))
	}
	// Measured against the send's return rather than the poll's start, so
	// a slow machine (calls taking a second) does not fail it.
	if d := r.returned.Sub(sent); d > 750*time.Millisecond {
		e.t.Errorf("long poll returned %v after the message was sent (%v after it started), want at once", d, r.took)
	}
}

// A long poll on an empty queue returns empty after WaitTimeSeconds, not
// before.
func longPollEmptyWaits(e *env) {
	url := e.createQueue("lpempty", nil)
	r := <-e.longPoll(url, 1)
	if r.err != nil {
		e.t.Fatalf("ReceiveMessage: %v", r.err)
	}
	if len(r.messages) != 0 {
		e.t.Fatalf("empty queue returned %d messages", len(r.messages))
	}
	if r.took < 900*time.Millisecond || r.took > 5*time.Second {
		e.t.Errorf("long poll with WaitTimeSeconds 1 on an empty queue returned after %v, want about 1 s", r.took)
	}
}

// With two long polls waiting, one arriving message goes to one of them;
// the other keeps waiting until its WaitTimeSeconds ends.
func longPollOneMessageOneWaiter(e *env) {
	url := e.createQueue("lptwo", nil)
	if e.quirk(QuirkLongPollWakesAllWaiters) {
		// The quirk shows only when both polls are already waiting at the
		// server when the message arrives; on a loaded machine one may come
		// late and rightly wait its full time, so give it a few rounds.
		var waited []time.Duration
		for range 3 {
			d := e.twoPollsOneMessage(url)
			if d < 1900*time.Millisecond {
				return
			}
			waited = append(waited, d)
		}
		e.t.Errorf("quirk no longer holds: in every round the long poll without the message waited its full WaitTimeSeconds (%v)", waited)
		return
	}
	if d := e.twoPollsOneMessage(url); d < 1800*time.Millisecond {
		e.t.Errorf("the long poll without the message returned after %v, want it to wait its full 2 s", d)
	}
}

// twoPollsOneMessage starts two long polls of 2 s, sends one message once
// they wait, checks that exactly one of them gets it (deleting it) and
// returns how long the other took.
func (e *env) twoPollsOneMessage(url string) time.Duration {
	e.t.Helper()
	var polls [2]<-chan pollResult
	for i := range polls {
		polls[i] = e.longPoll(url, 2)
	}
	e.sleep(500 * time.Millisecond)
	e.send(url, "just one")
	var results [2]pollResult
	var wg sync.WaitGroup
	for i := range polls {
		wg.Go(func() { results[i] = <-polls[i] })
	}
	wg.Wait()
	got, empty := -1, -1
	for i, r := range results {
		if r.err != nil {
			e.t.Fatalf("ReceiveMessage %d: %v", i, r.err)
		}
		switch len(r.messages) {
		case 0:
			empty = i
		case 1:
			got = i
		default:
			e.t.Fatalf("ReceiveMessage %d got %d messages of 1", i, len(r.messages))
		}
	}
	if got < 0 || empty < 0 {
		e.t.Fatalf("want one long poll to get the message and the other none; got %d and %d messages", len(results[0].messages), len(results[1].messages))
	}
	e.deleteMessage(url, aws.ToString(results[got].messages[0].ReceiptHandle))
	return results[empty].took
}

// A long poll whose caller gave up (its context was cancelled, closing the
// connection) does not take a message sent afterwards: the next receive gets
// it at once. A worker aborts its long polls when it shuts down, so a
// backend that kept delivering to the dead poll would hide new messages for
// a whole visibility timeout.
func abortedLongPoll(e *env) {
	url := e.createQueue("abort", nil)
	ctx, cancel := context.WithCancel(e.ctx())
	done := make(chan error, 1)
	go func() {
		_, err := e.api.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), WaitTimeSeconds: 2})
		done <- err
	}()
	e.sleep(200 * time.Millisecond)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		e.t.Fatalf("cancelled long poll returned %v, want context.Canceled", err)
	}
	// The SDK returns from a cancelled call before its connection's close
	// reaches the server; a program that stopped is a moment behind its
	// successor. (A server that keeps the dead poll takes the message for
	// the poll's whole wait, 2 s, so this still tells them apart.)
	e.sleep(500 * time.Millisecond)
	e.send(url, "after the abort")
	got := e.recv(url, 1, 1)
	if len(got) != 1 {
		e.t.Fatalf("receive after an aborted long poll got %d messages, want the message sent after the abort", len(got))
	}
}
