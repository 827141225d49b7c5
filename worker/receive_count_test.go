package worker_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/harness/faultproxy"
	"github.com/sqsworker/sqsworker/worker"
)

// With every third receive answered HTTP 500 by a proxy, the worker counts
// every receive request the proxy saw, and every 500 as a transient
// result: no retry hides inside the SDK (a client with the SDK's default
// retryer, as users build it).
func TestReceiveRequestsCountedAsTheServerSawThem(t *testing.T) {
	const receives = 30
	var served atomic.Int64
	enough := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		switch r.Header.Get("X-Amz-Target") {
		case "AmazonSQS.GetQueueAttributes":
			io.WriteString(w, `{"Attributes":{"VisibilityTimeout":"30","QueueArn":"arn:aws:sqs:us-east-1:000000000000:counted","MessageRetentionPeriod":"345600"}}`)
		case "AmazonSQS.ReceiveMessage":
			if served.Add(1) == receives {
				close(enough)
			}
			io.WriteString(w, `{}`)
		default:
			io.WriteString(w, `{"Successful":[],"Failed":[]}`)
		}
	}))
	defer up.Close()
	p := startProxy(t, up.URL, "ReceiveMessage", 3)
	w, err := newCounted(p)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	<-enough
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	seen := p.Counts()["ReceiveMessage"]
	s := w.Stats()
	if got := s.Requests["ReceiveMessage"]; got != int64(seen.Requests) {
		t.Errorf("worker counted %d receive requests; the server saw %d (%s)", got, seen.Requests, p.Summary())
	}
	if got, want := s.RequestResults["ReceiveMessage"]["transient"], int64(seen.Faults[faultproxy.ServerError]); got != want || want == 0 {
		t.Errorf("worker counted %d transient receive results; the proxy answered %d with HTTP 500", got, want)
	}
}

// New's queue lookups (GetQueueAttributes, here every other one answered
// HTTP 500) are retried by the worker itself, each request counted: New
// succeeds, and Stats counts what the server saw.
func TestStartupLookupsCountedAsTheServerSawThem(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		io.WriteString(w, `{"Attributes":{"VisibilityTimeout":"30","QueueArn":"arn:aws:sqs:us-east-1:000000000000:counted","MessageRetentionPeriod":"345600"}}`)
	}))
	defer up.Close()
	p := startProxy(t, up.URL, "GetQueueAttributes", 2)
	w, err := newCounted(p)
	if err != nil {
		t.Fatalf("New with every other GetQueueAttributes answered 500: %v (%s)", err, p.Summary())
	}
	seen := p.Counts()["GetQueueAttributes"]
	s := w.Stats()
	if got := s.Requests["GetQueueAttributes"]; got != int64(seen.Requests) || seen.Requests < 2 {
		t.Errorf("worker counted %d GetQueueAttributes requests; the server saw %d (%s)", got, seen.Requests, p.Summary())
	}
	if got, want := s.RequestResults["GetQueueAttributes"]["transient"], int64(seen.Faults[faultproxy.ServerError]); got != want || want == 0 {
		t.Errorf("worker counted %d transient GetQueueAttributes results; the proxy answered %d with HTTP 500", got, want)
	}
}

// startProxy starts a fault proxy in front of upstream that answers every
// every-th call of api with HTTP 500; it is closed with the test.
func startProxy(t *testing.T, upstream, api string, every int) *faultproxy.Proxy {
	t.Helper()
	p, err := faultproxy.Start(faultproxy.Options{
		Upstream: upstream,
		Rules:    map[string]faultproxy.Rule{api: {Every: every, EveryKind: faultproxy.ServerError}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// newCounted makes a worker on queue "counted" behind p, with a client
// built as users build it (the SDK's default retryer).
func newCounted(p *faultproxy.Proxy) (*worker.Worker, error) {
	client := sqs.New(sqs.Options{
		BaseEndpoint: aws.String(p.URL), Region: "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""),
	})
	return worker.New(client, p.URL+"/000000000000/counted", noop, func(o *worker.Options) {
		o.Logger = quiet
		o.AllowNoDLQ = true
	})
}
