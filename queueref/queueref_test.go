package queueref_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/harness/sqsfake"
	"github.com/sqsworker/sqsworker/queueref"
	"github.com/sqsworker/sqsworker/sqstest"
)

// recorder is an API that records each GetQueueUrl call and the options
// its option functions produce from a client configured for us-east-1.
type recorder struct {
	calls []call
	url   string
	err   error
}

type call struct {
	in   *sqs.GetQueueUrlInput
	opts sqs.Options
}

func (r *recorder) GetQueueUrl(_ context.Context, in *sqs.GetQueueUrlInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error) {
	o := sqs.Options{Region: "us-east-1"}
	for _, fn := range optFns {
		fn(&o)
	}
	r.calls = append(r.calls, call{in: in, opts: o})
	if r.err != nil {
		return nil, r.err
	}
	return &sqs.GetQueueUrlOutput{QueueUrl: aws.String(r.url)}, nil
}

// An ARN of another region is looked up in that region and the ARN's
// account, not in the client's region (issue 24, item 6).
func TestResolveARNUsesItsOwnRegionAndAccount(t *testing.T) {
	r := &recorder{url: "https://sqs.eu-west-1.amazonaws.com/111122223333/orders"}
	got, err := queueref.Resolve(context.Background(), r, "arn:aws:sqs:eu-west-1:111122223333:orders")
	if err != nil {
		t.Fatal(err)
	}
	if got != r.url {
		t.Errorf("Resolve = %q, want %q", got, r.url)
	}
	if len(r.calls) != 1 {
		t.Fatalf("%d GetQueueUrl calls, want 1", len(r.calls))
	}
	c := r.calls[0]
	if aws.ToString(c.in.QueueName) != "orders" || aws.ToString(c.in.QueueOwnerAWSAccountId) != "111122223333" {
		t.Errorf("GetQueueUrl input = name %q owner %q, want orders / 111122223333", aws.ToString(c.in.QueueName), aws.ToString(c.in.QueueOwnerAWSAccountId))
	}
	if c.opts.Region != "eu-west-1" {
		t.Errorf("GetQueueUrl went to region %q, want the ARN's eu-west-1", c.opts.Region)
	}
}

// A name is looked up in the client's own region and account.
func TestResolveNameUsesTheClientsRegion(t *testing.T) {
	r := &recorder{url: "https://sqs.us-east-1.amazonaws.com/000000000000/orders"}
	if _, err := queueref.Resolve(context.Background(), r, "orders"); err != nil {
		t.Fatal(err)
	}
	c := r.calls[0]
	if aws.ToString(c.in.QueueName) != "orders" || c.in.QueueOwnerAWSAccountId != nil || c.opts.Region != "us-east-1" {
		t.Errorf("GetQueueUrl = %+v in %q, want orders in the client's us-east-1 with no owner", c.in, c.opts.Region)
	}
}

// A URL is used as it is, without a call.
func TestResolveURLMakesNoCall(t *testing.T) {
	r := &recorder{err: errors.New("no call expected")}
	for _, u := range []string{
		"https://sqs.eu-west-1.amazonaws.com/111122223333/orders",
		"http://127.0.0.1:4566/000000000000/orders.fifo",
		"http://sqs.eu-west-1.localhost.localstack.cloud:4566/000000000000/orders",
		"http://localhost:4566/queue/us-east-1/000000000000/orders",
	} {
		got, err := queueref.Resolve(context.Background(), r, u)
		if err != nil || got != u {
			t.Errorf("Resolve(%q) = %q, %v; want it unchanged", u, got, err)
		}
	}
	if len(r.calls) != 0 {
		t.Errorf("%d calls for URLs, want none", len(r.calls))
	}
}

func TestResolveMissingQueueSaysWhere(t *testing.T) {
	r := &recorder{err: &types.QueueDoesNotExist{Message: aws.String("The specified queue does not exist.")}}
	_, err := queueref.Resolve(context.Background(), r, "arn:aws:sqs:eu-west-1:111122223333:orders")
	var missing *types.QueueDoesNotExist
	if !errors.As(err, &missing) || !strings.Contains(err.Error(), "account 111122223333, region eu-west-1") {
		t.Errorf("Resolve of a missing ARN = %v; want the SDK's error and where it looked", err)
	}
	_, err = queueref.Resolve(context.Background(), r, "orders")
	if !errors.As(err, &missing) || !strings.Contains(err.Error(), "queue orders does not exist in this account and region") {
		t.Errorf("Resolve of a missing name = %v", err)
	}
}

// Against sqstest's fake, a name, its URL and its ARN resolve to one URL.
func TestResolveEveryFormToOneURL(t *testing.T) {
	f, err := sqstest.New()
	if err != nil {
		t.Fatal(err)
	}
	url := f.MustCreateQueue(t, "orders", nil)
	arn := sqsfake.ARN(url)
	for _, ref := range []string{"orders", url, arn} {
		got, err := queueref.Resolve(context.Background(), f, ref)
		if err != nil || got != url {
			t.Errorf("Resolve(%q) = %q, %v; want %q", ref, got, err, url)
		}
	}
	// The same name in another account is another queue.
	if _, err := queueref.Resolve(context.Background(), f, "arn:aws:sqs:us-east-1:999999999999:orders"); err == nil {
		t.Error("an ARN of another account resolved to this account's queue")
	}
}

func TestCheckRefusesMalformedReferences(t *testing.T) {
	for _, tc := range []struct{ ref, want string }{
		{"", "no queue given"},
		{"orders queue", `has ' '`},
		{"orders!", `has '!'`},
		{strings.Repeat("q", 81), "at most 80"},
		{".fifo", "is empty"},
		{"arn:aws:sqs:us-east-1:orders", "is not an SQS queue ARN"},
		{"arn:aws:sns:us-east-1:123456789012:orders", "is not an SQS queue ARN"},
		{"arn:aws:sqs:useast1:123456789012:orders", "region"},
		{"arn:aws:sqs:us-east-1:1234:orders", "12-digit"},
		{"arn:aws:sqs:us-east-1:123456789012:", `queue name "" is empty`},
		{"arn:AWS:sqs:us-east-1:123456789012:orders", "partition"},
		{"https://sqs.us-east-1.amazonaws.com", "no queue name"},
		{"https://sqs.us-east-1.amazonaws.com/123456789012/orders?x=1", "is not a queue URL"},
		{"https://sqs.us-east-1.amazonaws.com/123456789012/or ders", "is not a queue URL"},
		{"sqs.us-east-1.amazonaws.com/123456789012/orders", "is not a queue name, URL or ARN"},
	} {
		err := queueref.Check(tc.ref)
		if !errors.Is(err, queueref.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Check(%q) = %v; want ErrInvalid saying %q", tc.ref, err, tc.want)
		}
		r := &recorder{}
		if _, err := queueref.Resolve(context.Background(), r, tc.ref); !errors.Is(err, queueref.ErrInvalid) || len(r.calls) != 0 {
			t.Errorf("Resolve(%q) = %v after %d calls; want ErrInvalid without a call", tc.ref, err, len(r.calls))
		}
	}
	for _, ok := range []string{"orders", "Orders_2-b", "orders.fifo", strings.Repeat("q", 75) + ".fifo",
		"arn:aws-us-gov:sqs:us-gov-west-1:123456789012:orders", "arn:aws-cn:sqs:cn-north-1:123456789012:o.fifo"} {
		if err := queueref.Check(ok); err != nil {
			t.Errorf("Check(%q) = %v, want nil", ok, err)
		}
	}
}

func TestNameAndFIFO(t *testing.T) {
	for ref, want := range map[string]string{
		"orders": "orders",
		"https://sqs.us-east-1.amazonaws.com/123456789012/orders.fifo": "orders.fifo",
		"https://sqs.us-east-1.amazonaws.com/123456789012/orders/":     "orders",
		"arn:aws:sqs:eu-west-1:123456789012:orders":                    "orders",
	} {
		if got := queueref.Name(ref); got != want {
			t.Errorf("Name(%q) = %q, want %q", ref, got, want)
		}
		if got := queueref.FIFO(ref); got != strings.HasSuffix(want, ".fifo") {
			t.Errorf("FIFO(%q) = %v", ref, got)
		}
	}
}

// With a custom endpoint (an emulator, LocalStack), an ARN's lookup goes to
// that endpoint, signed for the ARN's region, with the ARN's account.
func TestResolveARNAtCustomEndpoint(t *testing.T) {
	var auth, body string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		auth, body = r.Header.Get("Authorization"), string(b)
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		_, _ = io.WriteString(w, `{"QueueUrl":"http://sqs.eu-west-1.localhost.localstack.cloud:4566/111122223333/orders"}`)
	}))
	defer srv.Close()
	c := sqs.New(sqs.Options{
		Region:           "us-east-1",
		BaseEndpoint:     aws.String(srv.URL),
		Credentials:      credentials.NewStaticCredentialsProvider("test", "test", ""),
		RetryMaxAttempts: 1,
	})
	got, err := queueref.Resolve(context.Background(), c, "arn:aws:sqs:eu-west-1:111122223333:orders")
	if err != nil {
		t.Fatal(err)
	}
	if got != "http://sqs.eu-west-1.localhost.localstack.cloud:4566/111122223333/orders" {
		t.Errorf("Resolve = %q", got)
	}
	if !strings.Contains(auth, "/eu-west-1/sqs/aws4_request") {
		t.Errorf("the lookup was signed as %q; want the ARN's region eu-west-1", auth)
	}
	if !strings.Contains(body, `"QueueOwnerAWSAccountId":"111122223333"`) || !strings.Contains(body, `"QueueName":"orders"`) {
		t.Errorf("GetQueueUrl body = %s; want the ARN's name and account", body)
	}
}
