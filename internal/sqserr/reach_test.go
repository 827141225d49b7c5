package sqserr_test

import (
	"context"
	"errors"
	"net"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/internal/sqserr"
)

var knobs = sqserr.Knobs{Endpoint: func(string) string { return "ENDPOINT" }, Region: "REGION", Profile: "PROFILE"}

// closedEndpoint is a local address where nothing listens any more.
func closedEndpoint() string {
	srv := httptest.NewServer(nil)
	srv.Close()
	return srv.URL
}

func TestUnreachableExplainsWhatToDo(t *testing.T) {
	endpoint := closedEndpoint()
	refused := sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint), RetryMaxAttempts: 1,
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "test", SecretAccessKey: "test"}, nil
		})})
	_, callErr := refused.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(endpoint + "/000000000000/orders")})
	noCreds := sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint), RetryMaxAttempts: 1,
		Credentials: aws.NewCredentialsCache(aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{}, errors.New("no EC2 IMDS role found")
		}))})
	_, credErr := noCreds.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(endpoint + "/000000000000/orders")})

	for _, tc := range []struct {
		name string
		err  error
		want []string
	}{
		{"refused", callErr, []string{"cannot reach " + endpoint + " (connection refused): nothing listens there", "bash localstack/start.sh", "check ENDPOINT"}},
		{"no credentials", credErr, []string{"no AWS credentials found", "AWS_ACCESS_KEY_ID", "PROFILE"}},
		{"unknown host", &net.DNSError{Name: "sqs.nowhere.example", Err: "no such host", IsNotFound: true}, []string{"cannot resolve sqs.nowhere.example: check REGION and ENDPOINT"}},
	} {
		e, ok := sqserr.Unreachable(tc.err, knobs)
		if !ok {
			t.Errorf("%s: not recognised: %v", tc.name, tc.err)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(e.Error(), w) {
				t.Errorf("%s: %q lacks %q", tc.name, e, w)
			}
		}
		if strings.Contains(e.Error(), "operation error") || !errors.Is(e, tc.err) {
			t.Errorf("%s: %q repeats the SDK's text or does not wrap it", tc.name, e)
		}
	}
	if !errors.Is(mustUnreachable(t, callErr), syscall.ECONNREFUSED) {
		t.Error("the refused connection is not errors.Is ECONNREFUSED")
	}
	if _, ok := sqserr.Unreachable(errors.New("AccessDenied"), knobs); ok {
		t.Error("an ordinary error recognised")
	}
}

func mustUnreachable(t *testing.T, err error) error {
	e, ok := sqserr.Unreachable(err, knobs)
	if !ok {
		t.Fatalf("not recognised: %v", err)
	}
	return e
}

// A DynamoDB call that cannot reach its endpoint is explained with
// DynamoDB's endpoint variable, not SQS's.
func TestUnreachableNamesTheFailingService(t *testing.T) {
	endpoint := closedEndpoint()
	db := dynamodb.New(dynamodb.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint), RetryMaxAttempts: 1,
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "test", SecretAccessKey: "test"}, nil
		})})
	_, err := db.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String("t")})
	if got := sqserr.Service(err); got != "DynamoDB" {
		t.Fatalf("Service = %q, want DynamoDB", got)
	}
	e, ok := sqserr.Unreachable(err, sqserr.SDKKnobs())
	if !ok || !strings.Contains(e.Error(), "dynamodb.Options.BaseEndpoint, AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL") || strings.Contains(e.Error(), "SQS") {
		t.Errorf("%v, %v; want DynamoDB's endpoint knobs", e, ok)
	}
}
