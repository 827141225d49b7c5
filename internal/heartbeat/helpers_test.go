package heartbeat_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/internal/heartbeat"
	"github.com/sqsworker/sqsworker/sqstest"
)

// call is one recorded ChangeMessageVisibilityBatch call.
type call struct {
	at      time.Time         // when it was sent
	handles []string          // its entries' receipt handles, in order
	timeout []int32           // its entries' VisibilityTimeout, in order
	err     error             // the call's error
	failed  map[string]string // receipt handle → code of a failed entry
}

// recorder is an sqstest.Fake that records every ChangeMessageVisibilityBatch.
type recorder struct {
	*sqstest.Fake
	mu    sync.Mutex
	calls []call
}

func (r *recorder) ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	c := call{at: time.Now(), failed: map[string]string{}}
	byID := map[string]string{}
	for _, e := range in.Entries {
		c.handles = append(c.handles, aws.ToString(e.ReceiptHandle))
		c.timeout = append(c.timeout, e.VisibilityTimeout)
		byID[aws.ToString(e.Id)] = aws.ToString(e.ReceiptHandle)
	}
	out, err := r.Fake.ChangeMessageVisibilityBatch(ctx, in, optFns...)
	c.err = err
	if out != nil {
		for _, f := range out.Failed {
			c.failed[byID[aws.ToString(f.Id)]] = aws.ToString(f.Code)
		}
	}
	r.mu.Lock()
	r.calls = append(r.calls, c)
	r.mu.Unlock()
	return out, err
}

// Calls returns the calls recorded so far.
func (r *recorder) Calls() []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]call(nil), r.calls...)
}

// CallsWith returns the recorded calls whose entries include handle.
func (r *recorder) CallsWith(handle string) []call {
	var out []call
	for _, c := range r.Calls() {
		for _, h := range c.handles {
			if h == handle {
				out = append(out, c)
				break
			}
		}
	}
	return out
}

// env is a fake SQS with one queue.
type env struct {
	f   *sqstest.Fake
	rec *recorder
	url string
	t0  time.Time // when the env was made
}

func newEnv(t testing.TB, visibilitySeconds int) *env {
	t.Helper()
	f := sqstest.For(t)
	url := f.MustCreateQueue(t, "jobs", map[string]string{"VisibilityTimeout": fmt.Sprint(visibilitySeconds)})
	return &env{f: f, rec: &recorder{Fake: f}, url: url, t0: time.Now()}
}

// msg is one received message.
type msg struct {
	id, handle string
}

// receive sends n messages and receives them, ten per receive, returning
// them and the time the receives returned.
func (e *env) receive(t testing.TB, n int) ([]msg, time.Time) {
	t.Helper()
	for i := range n {
		e.f.MustSend(t, e.url, fmt.Sprintf("job-%d", i))
	}
	var got []msg
	for len(got) < n {
		out, err := e.f.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(e.url), MaxNumberOfMessages: int32(min(10, n-len(got))),
		})
		if err != nil {
			t.Fatalf("receive: %v", err)
		}
		if len(out.Messages) == 0 {
			t.Fatalf("receive returned nothing after %d of %d messages", len(got), n)
		}
		for _, m := range out.Messages {
			got = append(got, msg{aws.ToString(m.MessageId), aws.ToString(m.ReceiptHandle)})
		}
	}
	return got, time.Now()
}

// state returns the fake's view of message id.
func (e *env) state(t testing.TB, id string) sqstest.MessageInfo {
	t.Helper()
	for _, m := range e.f.Messages(e.url) {
		if m.ID == id {
			return m
		}
	}
	t.Fatalf("message %s is not in the queue", id)
	return sqstest.MessageInfo{}
}

// run runs h until the test ends.
func run(t *testing.T, h *heartbeat.Heartbeat) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run returned %v, want nil", err)
		}
	})
}

// loss is one onLost call.
type loss struct {
	at    time.Time
	cause error
}

// losses records onLost calls by name.
type losses struct {
	mu  sync.Mutex
	got map[string][]loss
}

func newLosses() *losses { return &losses{got: map[string][]loss{}} }

func (l *losses) fn(name string) func(error) {
	return func(cause error) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.got[name] = append(l.got[name], loss{time.Now(), cause})
	}
}

func (l *losses) of(name string) []loss {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]loss(nil), l.got[name]...)
}

func (l *losses) total() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, v := range l.got {
		n += len(v)
	}
	return n
}

// newHB returns a heartbeat, failing tb on error.
func newHB(tb testing.TB, client heartbeat.API, url string, vis time.Duration, optFns ...func(*heartbeat.Options)) *heartbeat.Heartbeat {
	tb.Helper()
	h, err := heartbeat.New(client, url, vis, optFns...)
	if err != nil {
		tb.Fatalf("heartbeat.New: %v", err)
	}
	return h
}

// track tracks a message, failing tb on error.
func track(tb testing.TB, h *heartbeat.Heartbeat, handle string, receivedAt time.Time, onLost func(error)) *heartbeat.Lease {
	tb.Helper()
	l, err := h.Track(handle, receivedAt, onLost)
	if err != nil {
		tb.Fatalf("Track: %v", err)
	}
	return l
}

// trackUntil is track with a deadline.
func trackUntil(tb testing.TB, h *heartbeat.Heartbeat, handle string, receivedAt, deadline time.Time, onLost func(error)) *heartbeat.Lease {
	tb.Helper()
	l, err := h.TrackUntil(handle, receivedAt, deadline, onLost)
	if err != nil {
		tb.Fatalf("TrackUntil: %v", err)
	}
	return l
}
