package dlq

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/harness/testenv"
)

// The scenarios of reads_test.go against the emulator, on 500 messages:
// an HTTP transport between the SDK and the emulator spoils the response of
// one ReceiveMessage after the emulator answered it (so the receive took
// effect there).

// spoilReceive is an http.RoundTripper that passes every request on and,
// when armed, hands the next ReceiveMessage's answer to its spoil function.
type spoilReceive struct {
	base  http.RoundTripper
	mu    sync.Mutex
	spoil func(req *http.Request, resp *http.Response) (*http.Response, error)
}

func (s *spoilReceive) arm(spoil func(req *http.Request, resp *http.Response) (*http.Response, error)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.spoil = spoil
}

func (s *spoilReceive) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := s.base.RoundTrip(req)
	if err != nil || req.Header.Get("X-Amz-Target") != "AmazonSQS.ReceiveMessage" {
		return resp, err
	}
	s.mu.Lock()
	spoil := s.spoil
	s.spoil = nil
	s.mu.Unlock()
	if spoil == nil {
		return resp, nil
	}
	return spoil(req, resp)
}

// spoiledClient returns a client for the emulator whose receives spoil can
// spoil. Its retryer retries at once, so the tests wait for no backoff.
func spoiledClient(t *testing.T) (*sqs.Client, *spoilReceive) {
	spoil := &spoilReceive{base: http.DefaultTransport}
	c := sqs.New(testenv.SQS(t).Options(), func(o *sqs.Options) {
		o.HTTPClient = &http.Client{Transport: spoil}
		o.Retryer = retry.NewStandard(func(o *retry.StandardOptions) {
			o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
		})
	})
	return c, spoil
}

// readsQueue sets up a queue pair with n messages in its DLQ, and a client
// whose receives can be spoiled.
func readsQueue(t *testing.T, n int) (*sqs.Client, *spoilReceive, Target) {
	t.Helper()
	c, spoil := spoiledClient(t)
	setup, err := Setup(integrationContext(t), c, SetupOptions{Name: testenv.UniqueName("dlq-reads")})
	if err != nil {
		t.Fatal(err)
	}
	target := setup.Target()
	fillDLQDirect(t, c, target.DLQURL, n)
	return c, spoil, target
}

// fillDLQDirect sends n messages straight to the DLQ, without provenance
// (as SQS's own redrive leaves them), in batches.
func fillDLQDirect(t *testing.T, c *sqs.Client, dlqURL string, n int) {
	t.Helper()
	ctx := integrationContext(t)
	for i := 0; i < n; i += maxBatch {
		in := &sqs.SendMessageBatchInput{QueueUrl: aws.String(dlqURL)}
		for j := i; j < min(n, i+maxBatch); j++ {
			in.Entries = append(in.Entries, types.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(j - i)), MessageBody: aws.String(fmt.Sprintf("job-%d", j))})
		}
		out, err := c.SendMessageBatch(ctx, in)
		if err != nil || len(out.Failed) > 0 {
			t.Fatalf("filling the DLQ: %v (%d failed)", err, len(out.Failed))
		}
	}
}

// wantQueues checks the emulator's counts of the DLQ and the source.
func wantQueues(t *testing.T, c *sqs.Client, target Target, dlqVisible, dlqInFlight, source int) {
	t.Helper()
	ctx := integrationContext(t)
	d, err := Count(ctx, c, target.DLQURL)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Count(ctx, c, target.SourceURL)
	if err != nil {
		t.Fatal(err)
	}
	if d.Visible != dlqVisible || d.InFlight != dlqInFlight || s.Visible != source {
		t.Errorf("DLQ %+v, source %+v; want DLQ %d visible and %d in flight, source %d", d, s, dlqVisible, dlqInFlight, source)
	}
}

// A redrive interrupted while a receive's answer is on its way moves on
// nothing and hides nothing: a re-run straight away moves every message.
func TestIntegrationRedriveInterruptedReceiveHidesNothing(t *testing.T) {
	c, spoil, target := readsQueue(t, readsTotal)

	ctx, cancel := context.WithCancel(integrationContext(t))
	defer cancel()
	armed := false
	first, err := Redrive(ctx, c, target, RedriveOptions{Method: "manual", Rate: -1, Progress: func(p Progress) {
		if armed || p.Moved < 250 {
			return
		}
		armed = true
		// Ctrl-C once the emulator has answered the next receive, while
		// the answer is still on its way.
		spoil.arm(func(req *http.Request, resp *http.Response) (*http.Response, error) {
			cancel()
			select {
			case <-req.Context().Done():
				resp.Body.Close()
				return nil, req.Context().Err()
			case <-time.After(100 * time.Millisecond):
				return resp, nil
			}
		})
	}})
	if !errors.Is(err, context.Canceled) || first.Done || first.Moved != 250 {
		t.Fatalf("interrupted redrive = %+v, %v; want 250 moved, context.Canceled, not done", first, err)
	}
	wantQueues(t, c, target, readsTotal-250, 0, 250)

	again, err := Redrive(integrationContext(t), c, target, RedriveOptions{Method: "manual", Rate: -1})
	if err != nil || !again.Done || again.NotSeen != 0 || again.Moved != readsTotal-250 {
		t.Fatalf("re-run straight after the interrupt = %+v, %v; want the other %d moved, done", again, err, readsTotal-250)
	}
	wantQueues(t, c, target, 0, 0, readsTotal)
}

// A receive whose response is lost after the emulator answered it, and
// which the SDK retries, is reported by Redrive as messages not seen (not
// done); a run after the hold moves them.
func TestIntegrationRedriveLostReceiveResponseIsReported(t *testing.T) {
	c, spoil, target := readsQueue(t, readsTotal)

	// Lose the response of the last receive with messages, so that they
	// cannot reappear (after the hold) before the redrive ends.
	const hold = 5 * time.Second
	armed := false
	res, err := Redrive(integrationContext(t), c, target, RedriveOptions{Method: "manual", Rate: -1, Hold: hold, Progress: func(p Progress) {
		if !armed && p.Moved >= readsTotal-maxBatch {
			armed = true
			spoil.arm(loseResponse)
		}
	}})
	if !errors.Is(err, ErrNotAllSeen) || res.Done || res.NotSeen < 1 || res.Moved != readsTotal-res.NotSeen {
		t.Fatalf("redrive = %+v, %v; want the lost receive's messages not seen, the rest moved, not done", res, err)
	}
	t.Logf("redrive with a lost receive response: %v", err)
	heldUntil := time.Now().Add(hold)
	wantQueues(t, c, target, 0, res.NotSeen, res.Moved)

	// Wait out the hold. (Not by watching the counts: fauxqs counts the
	// messages as in flight until a receive, see
	// conformance.QuirkCountsIgnoreVisibilityExpiry.)
	time.Sleep(time.Until(heldUntil))
	again, err := Redrive(integrationContext(t), c, target, RedriveOptions{Method: "manual", Rate: -1})
	if err != nil || !again.Done || again.Moved != res.NotSeen {
		t.Fatalf("run after the hold = %+v, %v; want the last %d moved", again, err, res.NotSeen)
	}
	wantQueues(t, c, target, 0, 0, readsTotal)
}

// Inspect reports the messages a lost receive response hid, and releases
// the rest.
func TestIntegrationInspectLostReceiveResponseIsReported(t *testing.T) {
	c, spoil, target := readsQueue(t, 50)
	spoil.arm(loseResponse)
	msgs, err := Inspect(integrationContext(t), c, target.DLQURL, InspectOptions{})
	var ns *NotSeenError
	if !errors.As(err, &ns) || ns.NotSeen() < 1 || ns.NotSeen() > maxBatch || len(msgs) != 50-ns.NotSeen() {
		t.Fatalf("Inspect = %d messages, %v; want all but the lost receive's (1 to 10) and a NotSeenError", len(msgs), err)
	}
	wantQueues(t, c, target, len(msgs), ns.NotSeen(), 0)
}

// loseResponse drops a response the emulator sent, as a connection reset
// while reading it would; the SDK retries the call.
func loseResponse(_ *http.Request, resp *http.Response) (*http.Response, error) {
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return nil, errors.New("read tcp 127.0.0.1: connection reset by peer (the test dropped the response)")
}
