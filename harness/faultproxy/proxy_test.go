package faultproxy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/harness/faultproxy"
	"github.com/sqsworker/sqsworker/internal/sqserr"
)

// upstream answers DeleteMessageBatch and ReceiveMessage as SQS's JSON
// protocol does, counting the calls that reached it.
func upstream(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		switch r.Header.Get("X-Amz-Target") {
		case "AmazonSQS.ReceiveMessage":
			io.WriteString(w, `{"Messages":[{"MessageId":"m-1","ReceiptHandle":"h-1","Body":"x"}]}`)
		default:
			io.WriteString(w, `{"Successful":[{"Id":"0"}],"Failed":[]}`)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

func client(url string) *sqs.Client {
	return sqs.New(sqs.Options{
		BaseEndpoint: aws.String(url), Region: "us-east-1",
		Credentials:      credentials.NewStaticCredentialsProvider("test", "test", ""),
		RetryMaxAttempts: 1,
	})
}

func del(ctx context.Context, c *sqs.Client) error {
	_, err := c.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String("http://127.0.0.1/000000000000/q"),
		Entries: []types.DeleteMessageBatchRequestEntry{{Id: aws.String("0"), ReceiptHandle: aws.String("h-1")}}})
	return err
}

func start(t *testing.T, o faultproxy.Options) *faultproxy.Proxy {
	t.Helper()
	p, err := faultproxy.Start(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func TestFaultsAsTheSDKSeesThem(t *testing.T) {
	for _, tc := range []struct {
		kind      faultproxy.Kind
		class     sqserr.Class
		forwarded int64
	}{
		{faultproxy.Throttle, sqserr.Throttled, 0},
		{faultproxy.ServerError, sqserr.Transient, 0},
		{faultproxy.Reset, sqserr.Transient, 0},
		{faultproxy.DropResponse, sqserr.Transient, 1},
	} {
		t.Run(string(tc.kind), func(t *testing.T) {
			up, calls := upstream(t)
			p := start(t, faultproxy.Options{Upstream: up.URL, Rules: map[string]faultproxy.Rule{"DeleteMessageBatch": {Every: 1, EveryKind: tc.kind}}})
			err := del(context.Background(), client(p.URL))
			if err == nil {
				t.Fatal("the call succeeded")
			}
			if got := sqserr.Of(err); got != tc.class {
				t.Fatalf("%v classified %v, want %v", err, got, tc.class)
			}
			if tc.kind == faultproxy.Throttle {
				var thr *types.RequestThrottled
				if !errors.As(err, &thr) || sqserr.Code(err) != "RequestThrottled" {
					t.Fatalf("err = %v, want the SDK's RequestThrottled with its query code", err)
				}
			}
			if calls.Load() != tc.forwarded {
				t.Fatalf("%d calls reached the upstream, want %d", calls.Load(), tc.forwarded)
			}
			if c := p.Counts()["DeleteMessageBatch"]; c.Requests != 1 || c.Faults[tc.kind] != 1 {
				t.Fatalf("counts %+v", c)
			}
		})
	}
}

func TestHangEndsWithTheClient(t *testing.T) {
	up, calls := upstream(t)
	p := start(t, faultproxy.Options{Upstream: up.URL, Rules: map[string]faultproxy.Rule{"*": {Hang: 1}}})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	begin := time.Now()
	err := del(ctx, client(p.URL))
	if err == nil || time.Since(begin) > 5*time.Second || calls.Load() != 0 {
		t.Fatalf("err %v after %v, %d forwarded; want the client's timeout, nothing forwarded", err, time.Since(begin), calls.Load())
	}
}

// TestAnswerAfterTheClientGaveUp: the upstream carries out the call, its
// answer waits (AnswerLatency) past the client's timeout, and the entry
// says ClientGone: the call took effect, its answer was lost.
func TestAnswerAfterTheClientGaveUp(t *testing.T) {
	up, calls := upstream(t)
	var entries []faultproxy.Entry
	done := make(chan struct{})
	p := start(t, faultproxy.Options{Upstream: up.URL, Rules: map[string]faultproxy.Rule{"*": {AnswerLatency: 5 * time.Second}},
		OnRequest: func(e faultproxy.Entry) { entries = append(entries, e); close(done) }})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	begin := time.Now()
	if err := del(ctx, client(p.URL)); err == nil {
		t.Fatal("the call succeeded; want the client's timeout")
	}
	<-done
	if took := time.Since(begin); took > 4*time.Second {
		t.Errorf("the proxy held the request %v after its client gave up", took)
	}
	e := entries[0]
	if calls.Load() != 1 || e.Fault != faultproxy.ClientGone || e.Status != http.StatusOK {
		t.Fatalf("%d forwarded, entry %+v; want 1 forwarded, answered 200 and marked %s", calls.Load(), e, faultproxy.ClientGone)
	}
	if c := p.Counts()["DeleteMessageBatch"]; c.Forwarded != 1 || c.Faults[faultproxy.ClientGone] != 1 {
		t.Fatalf("counts %+v; want 1 forwarded, 1 %s", c, faultproxy.ClientGone)
	}
	if !strings.Contains(p.Summary(), "1 client-gone") {
		t.Errorf("summary %q does not report it", p.Summary())
	}
}

func TestEveryNthAndLatencyAndLog(t *testing.T) {
	up, calls := upstream(t)
	var log bytes.Buffer
	p := start(t, faultproxy.Options{Upstream: up.URL, Log: &log, Rules: map[string]faultproxy.Rule{
		"DeleteMessageBatch": {Every: 3, EveryKind: faultproxy.Throttle, Latency: 10 * time.Millisecond},
	}})
	c := client(p.URL)
	var failed []int
	begin := time.Now()
	for i := 1; i <= 6; i++ {
		if del(context.Background(), c) != nil {
			failed = append(failed, i)
		}
	}
	if len(failed) != 2 || failed[0] != 3 || failed[1] != 6 || calls.Load() != 4 {
		t.Fatalf("failed %v, %d forwarded; want [3 6], 4", failed, calls.Load())
	}
	if d := time.Since(begin); d < 60*time.Millisecond {
		t.Fatalf("6 calls took %v, want at least 6 × 10 ms latency", d)
	}
	if _, err := c.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String("http://127.0.0.1/000000000000/q")}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	if len(lines) != 7 {
		t.Fatalf("%d log lines, want 7", len(lines))
	}
	var first, last faultproxy.Entry
	json.Unmarshal([]byte(lines[2]), &first)
	json.Unmarshal([]byte(lines[6]), &last)
	if first.Action != "DeleteMessageBatch" || first.Fault != faultproxy.Throttle || len(first.Handles) != 1 || first.Handles[0] != "h-1" {
		t.Errorf("third line %+v", first)
	}
	if last.Action != "ReceiveMessage" || last.Status != 200 || len(last.MessageIDs) != 1 || last.MessageIDs[0] != "m-1" || last.Received[0] != "h-1" {
		t.Errorf("last line %+v", last)
	}
	p.SetRules(nil)
	if err := del(context.Background(), c); err != nil {
		t.Fatalf("after SetRules(nil): %v", err)
	}
	if !strings.Contains(p.Summary(), "DeleteMessageBatch: 7 requests, 5 forwarded, 2 throttle") {
		t.Errorf("summary %q", p.Summary())
	}
}

func TestLoopbackOnly(t *testing.T) {
	for _, o := range []faultproxy.Options{
		{Upstream: "http://10.0.0.1:9324"},
		{Upstream: "https://sqs.us-east-1.amazonaws.com"},
		{Upstream: "http://127.0.0.1:9324", Listen: "0.0.0.0:0"},
		{Upstream: "not a url"},
	} {
		if p, err := faultproxy.Start(o); err == nil {
			p.Close()
			t.Errorf("Start(%+v) succeeded; want it refused", o)
		}
	}
}

func TestOnRequestNamesQueueAndClient(t *testing.T) {
	up, _ := upstream(t)
	entries := make(chan faultproxy.Entry, 4)
	p := start(t, faultproxy.Options{Upstream: up.URL, OnRequest: func(e faultproxy.Entry) { entries <- e },
		Rules: map[string]faultproxy.Rule{"*": {Latency: 5 * time.Millisecond, LatencyJitter: 20 * time.Millisecond}}})
	c := sqs.New(sqs.Options{
		BaseEndpoint: aws.String(p.URL), Region: "us-east-1", AppID: "chaos-w7",
		Credentials:      credentials.NewStaticCredentialsProvider("test", "test", ""),
		RetryMaxAttempts: 1,
	})
	var slowest time.Duration
	for range 3 {
		begin := time.Now()
		if err := del(context.Background(), c); err != nil {
			t.Fatal(err)
		}
		slowest = max(slowest, time.Since(begin))
		e := <-entries
		if e.Client != "chaos-w7" || e.Queue != "q" || len(e.Handles) != 1 || e.Handles[0] != "h-1" || e.Status != 200 {
			t.Fatalf("entry %+v; want client chaos-w7, queue q, handle h-1, status 200", e)
		}
		if e.Millis < 5 || e.Millis > 25+1000 {
			t.Fatalf("entry took %v ms; want 5 ms latency plus up to 20 ms jitter", e.Millis)
		}
	}
	if slowest < 5*time.Millisecond {
		t.Fatalf("slowest call %v; want the added latency", slowest)
	}
	if _, err := c.SendMessageBatch(context.Background(), &sqs.SendMessageBatchInput{QueueUrl: aws.String("http://127.0.0.1/000000000000/dlq"),
		Entries: []types.SendMessageBatchRequestEntry{{Id: aws.String("0"), MessageBody: aws.String("job 7")}}}); err != nil {
		t.Fatal(err)
	}
	if e := <-entries; e.Queue != "dlq" || len(e.Bodies) != 1 || e.Bodies[0] != faultproxy.BodyDigest("job 7") {
		t.Fatalf("send entry %+v; want queue dlq and the digest of its one body", e)
	}
}

// Close waits for requests whose connection was reset (hijacked, so the
// server's Shutdown does not wait for them) to be logged.
func TestCloseWaitsForResetRequests(t *testing.T) {
	up, _ := upstream(t)
	var logged atomic.Bool
	p, err := faultproxy.Start(faultproxy.Options{Upstream: up.URL, Rules: map[string]faultproxy.Rule{"*": {Reset: 1}},
		OnRequest: func(faultproxy.Entry) { time.Sleep(100 * time.Millisecond); logged.Store(true) }})
	if err != nil {
		t.Fatal(err)
	}
	if err := del(context.Background(), client(p.URL)); err == nil {
		t.Fatal("a reset call succeeded")
	}
	p.Close()
	if !logged.Load() {
		t.Fatal("Close returned before the reset request was passed to OnRequest")
	}
}
