package schedulerhttp_test

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"

	"github.com/sqsworker/sqsworker/harness/conformance"
	"github.com/sqsworker/sqsworker/harness/schedulerhttp"
	"github.com/sqsworker/sqsworker/schedules/schedulestest"
	"github.com/sqsworker/sqsworker/sqstest"
)

// wire carries each request of the SDK's client to the Server as HTTP/1.1
// bytes and the answer back the same way: the whole REST-JSON protocol
// (paths, query strings, headers, bodies, status codes, X-Amzn-ErrorType)
// is exercised, in process, so the suite stays in its synctest bubble (a
// socket would stop virtual time).
type wire struct{ h http.Handler }

func (w wire) RoundTrip(r *http.Request) (*http.Response, error) {
	var req bytes.Buffer
	if err := r.Write(&req); err != nil {
		return nil, err
	}
	in, err := http.ReadRequest(bufio.NewReader(&req))
	if err != nil {
		return nil, err
	}
	rec := httptest.NewRecorder()
	w.h.ServeHTTP(rec, in.WithContext(r.Context()))
	var res bytes.Buffer
	if err := rec.Result().Write(&res); err != nil {
		return nil, err
	}
	return http.ReadResponse(bufio.NewReader(&res), r)
}

// TestConformanceSchedulerHTTP runs the Scheduler conformance suite through
// the SDK's own *scheduler.Client against the in-memory Scheduler served by
// this package: the same behaviours as the direct run, so the HTTP
// protocol layer changes nothing.
func TestConformanceSchedulerHTTP(t *testing.T) {
	conformance.RunScheduler(t, conformance.SchedulerBackend{
		Name: "schedulerhttp+sdk",
		NewClients: func(t *testing.T) (conformance.SchedulerAPI, conformance.API) {
			q := sqstest.For(t)
			s, err := schedulestest.New(q)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { _ = s.Run(ctx); close(done) }()
			t.Cleanup(func() { cancel(); <-done })
			client := scheduler.New(scheduler.Options{Region: "us-east-1", BaseEndpoint: aws.String("http://scheduler.test"),
				Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""),
				HTTPClient:  &http.Client{Transport: wire{schedulerhttp.New(s)}}})
			return client, q
		},
		NotModelled: conformance.SchedulestestNotModelled(),
		Wrap:        func(t *testing.T, f func(*testing.T)) { synctest.Test(t, f) },
		Fast:        true,
	})
}
