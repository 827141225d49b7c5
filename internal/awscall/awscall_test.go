package awscall_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"

	"github.com/sqsworker/sqsworker/internal/awscall"
)

// Backoff doubles from 100 ms to 5 s, the upper half random.
func TestBackoff(t *testing.T) {
	for n, want := range map[int]time.Duration{1: 100 * time.Millisecond, 2: 200 * time.Millisecond, 6: 3200 * time.Millisecond, 7: 5 * time.Second, 60: 5 * time.Second} {
		for range 50 {
			if d := awscall.Backoff(n); d < want/2 || d > want {
				t.Fatalf("Backoff(%d) = %v, want %v to %v", n, d, want/2, want)
			}
		}
	}
}

func apiError(code string, fault smithy.ErrorFault) error {
	return &smithy.GenericAPIError{Code: code, Message: code, Fault: fault}
}

// The rule: what sqserr calls retryable is made again after Backoff, up
// to Attempts requests; what it does not ends the call at once; every
// request reaches OnRequest once, with its attempt.
func TestDoRetriesByTheRule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var seen []awscall.Request
		var at []time.Time
		rule := awscall.Rule{OnRequest: func(r awscall.Request) { seen = append(seen, r) }}
		errs := []error{apiError("ThrottlingException", smithy.FaultClient), apiError("InternalServerError", smithy.FaultServer),
			apiError("ProvisionedThroughputExceededException", smithy.FaultClient), apiError("SlowDown", smithy.FaultServer)}
		_, err := awscall.Do(t.Context(), rule, "DynamoDB", "UpdateItem", func(context.Context) (int, error) {
			at = append(at, time.Now())
			if len(at) <= len(errs) {
				return 0, errs[len(at)-1]
			}
			return 1, nil
		})
		if err != nil || len(at) != 5 || len(seen) != 5 {
			t.Fatalf("err %v after %d requests, %d reported; want success at the 5th", err, len(at), len(seen))
		}
		for i, r := range seen {
			if r.Attempt != i+1 || r.Service != "DynamoDB" || r.Op != "UpdateItem" || (i < 4) != (r.Err != nil) {
				t.Errorf("request %d reported as %+v", i+1, r)
			}
		}
		for n := 1; n < len(at); n++ {
			if w, ceil := at[n].Sub(at[n-1]), 100*time.Millisecond<<(n-1); w < ceil/2 || w > ceil {
				t.Errorf("retry %d after %v, want %v to %v", n, w, ceil/2, ceil)
			}
		}

		calls := 0
		_, err = awscall.Do(t.Context(), awscall.Rule{}, "SQS", "GetQueueUrl", func(context.Context) (int, error) {
			calls++
			return 0, apiError("InternalError", smithy.FaultServer)
		})
		if calls != awscall.DefaultAttempts || err == nil {
			t.Errorf("%d requests for a server fault that lasts, err %v; want DefaultAttempts (%d)", calls, err, awscall.DefaultAttempts)
		}
		for _, fatal := range []error{apiError("AccessDenied", smithy.FaultClient), apiError("ConditionalCheckFailedException", smithy.FaultClient),
			apiError("NoSuchKey", smithy.FaultClient), context.Canceled} {
			calls = 0
			_, err = awscall.Do(t.Context(), awscall.Rule{Attempts: 3}, "SQS", "X", func(context.Context) (int, error) { calls++; return 0, fatal })
			if calls != 1 || !errors.Is(err, fatal) {
				t.Errorf("%v: %d requests, err %v; want one", fatal, calls, err)
			}
		}
	})
}

// Each request has its own timeout, and one that timed out is made again;
// the caller's end stops the call, and Detach keeps a request in flight
// from being abandoned with it.
func TestDoTimeoutsAndTheCallersEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls := 0
		start := time.Now()
		_, err := awscall.Do(t.Context(), awscall.Rule{Attempts: 2, Timeout: time.Second}, "SQS", "X", func(ctx context.Context) (int, error) {
			calls++
			<-ctx.Done()
			return 0, ctx.Err()
		})
		if calls != 2 || !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 2100*time.Millisecond {
			t.Errorf("%d requests in %v, err %v; want two of 1 s each", calls, time.Since(start), err)
		}

		ctx, cancel := context.WithTimeout(t.Context(), 1500*time.Millisecond)
		defer cancel()
		calls = 0
		start = time.Now()
		_, err = awscall.Do(ctx, awscall.Rule{Timeout: time.Second}, "SQS", "X", func(ctx context.Context) (int, error) {
			calls++
			<-ctx.Done()
			return 0, ctx.Err()
		})
		if calls != 2 || err == nil || time.Since(start) != 1500*time.Millisecond {
			t.Errorf("%d requests in %v, err %v; want the second ended with the caller at 1.5 s, no third", calls, time.Since(start), err)
		}

		ctx, cancel = context.WithCancel(t.Context())
		calls = 0
		out, err := awscall.Do(ctx, awscall.Rule{Detach: true, Timeout: time.Minute}, "SQS", "ReceiveMessage", func(ctx context.Context) (string, error) {
			calls++
			cancel()
			time.Sleep(time.Second) // the request goes on
			if ctx.Err() != nil {
				return "", ctx.Err()
			}
			return "messages", apiError("InternalError", smithy.FaultServer)
		})
		if calls != 1 || out != "messages" || err == nil {
			t.Errorf("detached: %d requests, %q, %v; want one, run to its end, not retried after the caller's end", calls, out, err)
		}
	})
}

func TestOp(t *testing.T) {
	for got, want := range map[string]string{
		awscall.Op[*dynamodb.UpdateItemInput]():          "UpdateItem",
		awscall.Op[*dynamodb.ScanOutput]():               "Scan",
		awscall.Op[*sqs.GetQueueUrlInput]():              "GetQueueUrl",
		awscall.Op[*s3.PutObjectOutput]():                "PutObject",
		awscall.Op[*sns.ListSubscriptionsByTopicInput](): "ListSubscriptionsByTopic",
	} {
		if got != want {
			t.Errorf("Op = %q, want %q", got, want)
		}
	}
}

// server is the HTTP layer of real SDK clients: it fails the first fail
// requests with a 500 and answers the others with an empty 200, and
// records every request's body.
type server struct {
	mu     sync.Mutex
	fail   int
	bodies []string
}

func (s *server) Do(r *http.Request) (*http.Response, error) {
	var b []byte
	if r.Body != nil {
		b, _ = io.ReadAll(r.Body)
	}
	s.mu.Lock()
	s.bodies = append(s.bodies, string(b))
	n := len(s.bodies)
	s.mu.Unlock()
	status, body := http.StatusOK, "{}"
	if strings.Contains(r.URL.RawQuery, "x-id=PutObject") || r.Method == http.MethodPut {
		body = ""
	}
	if n <= s.fail {
		status, body = http.StatusInternalServerError, `{"__type":"InternalFailure","message":"try again"}`
	}
	return &http.Response{StatusCode: status, Header: http.Header{"Content-Type": {"application/x-amz-json-1.0"}},
		Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)), Request: r}, nil
}

func (s *server) requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.bodies)
}

var creds = credentials.NewStaticCredentialsProvider("test", "test", "")

// Through each service's helper a call makes exactly the rule's requests:
// the SDK's retryer is off (a client whose options ask for ten attempts
// included), and each request is reported once.
func TestServiceHelpersTurnTheSDKRetryerOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, tc := range []struct {
			name string
			call func(ctx context.Context, s *server, r awscall.Rule) error
		}{
			{"SQS", func(ctx context.Context, s *server, r awscall.Rule) error {
				c := sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: aws.String("http://sqs.local"), HTTPClient: s, Credentials: creds, RetryMaxAttempts: 10})
				_, err := awscall.SQS(ctx, r, c.GetQueueUrl, &sqs.GetQueueUrlInput{QueueName: aws.String("q")})
				return err
			}},
			{"SNS", func(ctx context.Context, s *server, r awscall.Rule) error {
				c := sns.New(sns.Options{Region: "us-east-1", BaseEndpoint: aws.String("http://sns.local"), HTTPClient: s, Credentials: creds, RetryMaxAttempts: 10})
				_, err := awscall.SNS(ctx, r, c.GetTopicAttributes, &sns.GetTopicAttributesInput{TopicArn: aws.String("arn:aws:sns:us-east-1:000000000000:t")})
				return err
			}},
			{"DynamoDB", func(ctx context.Context, s *server, r awscall.Rule) error {
				c := dynamodb.New(dynamodb.Options{Region: "us-east-1", BaseEndpoint: aws.String("http://dynamodb.local"), HTTPClient: s, Credentials: creds, RetryMaxAttempts: 10})
				_, err := awscall.DynamoDB(ctx, r, c.DescribeTable, &dynamodb.DescribeTableInput{TableName: aws.String("t")})
				return err
			}},
			{"S3", func(ctx context.Context, s *server, r awscall.Rule) error {
				c := s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String("http://s3.local"), UsePathStyle: true, HTTPClient: s, Credentials: creds, RetryMaxAttempts: 10})
				_, err := awscall.S3(ctx, r, c.DeleteObject, &s3.DeleteObjectInput{Bucket: aws.String("b"), Key: aws.String("k")})
				return err
			}},
		} {
			s := &server{fail: 100}
			reported := 0
			err := tc.call(t.Context(), s, awscall.Rule{Attempts: 3, OnRequest: func(r awscall.Request) {
				reported++
				if r.Service != tc.name {
					t.Errorf("%s: request reported as %+v", tc.name, r)
				}
			}})
			if err == nil || s.requests() != 3 || reported != 3 {
				t.Errorf("%s: %d requests sent, %d reported, err %v; want 3 of each, failed", tc.name, s.requests(), reported, err)
			}
		}
	})
}

// A PutObject retried sends its whole body again: the helper rewinds a
// seekable body to where it started.
func TestS3PutObjectRetrySendsTheBodyAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &server{fail: 1}
		c := s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String("http://s3.local"), UsePathStyle: true, HTTPClient: s, Credentials: creds})
		body := strings.Repeat("payload ", 100)
		_, err := awscall.S3(t.Context(), awscall.Rule{}, c.PutObject, &s3.PutObjectInput{
			Bucket: aws.String("b"), Key: aws.String("k"), Body: strings.NewReader(body), ContentLength: aws.Int64(int64(len(body))),
		})
		if err != nil || len(s.bodies) != 2 || s.bodies[0] != body || s.bodies[1] != body {
			t.Fatalf("err %v, %d requests; want two, each with the whole body", err, len(s.bodies))
		}
	})
}

// statusServer answers every request with status and an error code the
// error table does not know.
type statusServer struct {
	status   int
	requests int
}

func (s *statusServer) Do(r *http.Request) (*http.Response, error) {
	s.requests++
	body := `{"__type":"SomeNewException","message":"new"}`
	return &http.Response{StatusCode: s.status, Header: http.Header{"Content-Type": {"application/x-amz-json-1.0"}},
		Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)), Request: r}, nil
}

// An error code nobody listed is judged by its HTTP status, as the SDK's
// retryer judges it: a 4xx is the request's own fault (one request), a 5xx
// may pass.
func TestUnknownCodesByStatus(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for status, want := range map[int]int{400: 1, 403: 1, 429: 3, 500: 3, 503: 3} {
			s := &statusServer{status: status}
			c := dynamodb.New(dynamodb.Options{Region: "us-east-1", BaseEndpoint: aws.String("http://dynamodb.local"), HTTPClient: s, Credentials: creds})
			_, err := awscall.DynamoDB(t.Context(), awscall.Rule{Attempts: 3}, c.DescribeTable, &dynamodb.DescribeTableInput{TableName: aws.String("t")})
			if err == nil || s.requests != want {
				t.Errorf("status %d: %d requests, err %v; want %d", status, s.requests, err, want)
			}
		}
	})
}
