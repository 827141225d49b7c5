package fleet_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sqsworker/sqsworker/fleet"
	"github.com/sqsworker/sqsworker/worker"
)

// refusingDoer is the HTTP layer of a real DynamoDB client: it answers
// DescribeTable (for fleet.New) until refuse is set, then refuses every
// connection as a DynamoDB that is down does; it counts every request the
// SDK sends.
type refusingDoer struct {
	refuse   atomic.Bool
	requests atomic.Int64
}

func (d *refusingDoer) Do(r *http.Request) (*http.Response, error) {
	d.requests.Add(1)
	if d.refuse.Load() {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}
	}
	body := `{"Table":{"TableName":"fleet","TableStatus":"ACTIVE","KeySchema":[{"AttributeName":"pk","KeyType":"HASH"}],"AttributeDefinitions":[{"AttributeName":"pk","AttributeType":"S"}]}}`
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/x-amz-json-1.0"}},
		Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)), Request: r}, nil
}

// A rate limit and a cap whose DynamoDB refuses connections fail within the
// one retry rule's short bound — one retry, 50-100 ms later — not after the
// SDK's retries up to the 5 s call timeout, so FailOpen runs the job at
// once; and every request the SDK sent is counted in Stats.Requests, once.
func TestRefusedControlCallsFailFast(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		doer := &refusingDoer{}
		client := dynamodb.New(dynamodb.Options{
			Region: "us-east-1", BaseEndpoint: aws.String("http://127.0.0.1:1"), HTTPClient: doer,
			Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""),
		})
		f := newFleet(t, client, "fleet", "p1")
		limit, err := f.RateLimit("api", 10, func(o *fleet.RateLimitOptions) { o.FailOpen = true })
		if err != nil {
			t.Fatal(err)
		}
		capped, err := f.Cap("tenant", 2, func(o *fleet.CapOptions) { o.FailOpen = true })
		if err != nil {
			t.Fatal(err)
		}
		doer.refuse.Store(true)
		sent, before := doer.requests.Load(), f.Stats()

		ran := 0
		h := worker.HandlerFunc(func(context.Context, *worker.Message) error { ran++; return nil })
		for _, mw := range []worker.Middleware{limit.Middleware(), capped.Middleware()} {
			start := time.Now()
			if err := mw(h).Handle(t.Context(), &worker.Message{ID: "m"}); err != nil {
				t.Fatalf("FailOpen: %v; want the job run", err)
			}
			if d := time.Since(start); d > 100*time.Millisecond {
				t.Errorf("a job waited %v on a refused DynamoDB; want at most 100 ms (one retry by the rule)", d)
			}
		}
		s := f.Stats()
		requests := doer.requests.Load() - sent
		if ran != 2 || s.FailedOpen != 2 {
			t.Errorf("ran %d, FailedOpen %d; want both jobs run open", ran, s.FailedOpen)
		}
		if requests != 4 {
			t.Errorf("the SDK sent %d requests for the two refused control calls; want 4 (two each: the SDK's retryer off)", requests)
		}
		if got := s.Requests - before.Requests; got != requests || s.RequestErrors-before.RequestErrors != requests {
			t.Errorf("Stats counted %d requests (%d errors); the SDK sent %d", got, s.RequestErrors-before.RequestErrors, requests)
		}
	})
}

// In an outage a control waits on DynamoDB once, not once per job: after
// a failed call its jobs are decided by FailOpen at once, without a
// request, while a background read checks every quarter second whether
// DynamoDB answers again; once it does, jobs ask DynamoDB again. So
// fail-open jobs run at their pace while DynamoDB refuses connections.
func TestOutageDecidesAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		doer := &refusingDoer{}
		client := dynamodb.New(dynamodb.Options{
			Region: "us-east-1", BaseEndpoint: aws.String("http://127.0.0.1:1"), HTTPClient: doer,
			Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""),
		})
		f := newFleet(t, client, "fleet", "p1")
		limit, err := f.RateLimit("api", 10, func(o *fleet.RateLimitOptions) { o.FailOpen = true })
		if err != nil {
			t.Fatal(err)
		}
		capped, err := f.Cap("tenant", 2, func(o *fleet.CapOptions) { o.FailOpen = true })
		if err != nil {
			t.Fatal(err)
		}
		ran := 0
		h := worker.HandlerFunc(func(context.Context, *worker.Message) error { ran++; return nil })
		for _, mw := range []worker.Middleware{limit.Middleware(), capped.Middleware()} {
			doer.refuse.Store(true)
			job := func() (requests int64, waited time.Duration) {
				before, start := doer.requests.Load(), time.Now()
				if err := mw(h).Handle(t.Context(), &worker.Message{ID: "m"}); err != nil {
					t.Fatalf("FailOpen: %v; want the job run", err)
				}
				waited = time.Since(start)
				synctest.Wait()
				return doer.requests.Load() - before, waited
			}
			if n, _ := job(); n != 2 {
				t.Fatalf("the first job in the outage: %d requests; want 2 (the call and its retry)", n)
			}
			for range 3 {
				if n, waited := job(); n != 0 || waited != 0 {
					t.Fatalf("a job within 250 ms of the failure: %d requests, waited %v; want none, decided at once", n, waited)
				}
			}
			// background checks: what the SDK sent after the check's
			// retry had its time (50-100 ms)
			checked := func(before int64) int64 {
				time.Sleep(100 * time.Millisecond)
				synctest.Wait()
				return doer.requests.Load() - before
			}
			time.Sleep(250 * time.Millisecond)
			before := doer.requests.Load()
			if _, waited := job(); waited != 0 {
				t.Fatalf("a job 250 ms after the failure waited %v; want it decided at once", waited)
			}
			if n := checked(before); n != 2 {
				t.Fatalf("250 ms after the failure: %d requests; want a background read, refused (2 requests)", n)
			}
			doer.refuse.Store(false) // DynamoDB is back
			if n, waited := job(); n != 0 || waited != 0 {
				t.Fatalf("a job before the next check: %d requests, waited %v; want none, decided at once", n, waited)
			}
			time.Sleep(250 * time.Millisecond)
			before = doer.requests.Load()
			if _, waited := job(); waited != 0 {
				t.Fatalf("the job that starts the next check waited %v; want it decided at once", waited)
			}
			if n := checked(before); n != 1 {
				t.Fatalf("the next check: %d requests; want the background read's 1, answered", n)
			}
			if n, _ := job(); n == 0 {
				t.Fatalf("a job once DynamoDB answered the check: no request; want it asked again")
			}
		}
		if s := f.Stats(); ran != 16 || s.FailedOpen != 14 {
			t.Errorf("ran %d, FailedOpen %d; want 16 run, 14 of them open", ran, s.FailedOpen)
		}
	})
}
