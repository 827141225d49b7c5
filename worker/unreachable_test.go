package worker_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/worker"
)

// worker.New against an endpoint where nothing listens, or without
// credentials, says what to do (as the CLI does), not the SDK's text.
func TestNewExplainsUnreachableAWS(t *testing.T) {
	srv := httptest.NewServer(nil)
	endpoint := srv.URL
	srv.Close()
	h := worker.HandlerFunc(func(context.Context, *worker.Message) error { return nil })
	queue := endpoint + "/000000000000/orders"
	creds := aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		return aws.Credentials{AccessKeyID: "test", SecretAccessKey: "test"}, nil
	})
	noCreds := aws.NewCredentialsCache(aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		return aws.Credentials{}, errors.New("no EC2 IMDS role found")
	}))
	for _, tc := range []struct {
		name  string
		creds aws.CredentialsProvider
		want  []string
	}{
		{"refused", creds, []string{"sqsworker: reading queue " + queue + ": cannot reach " + endpoint + " (connection refused): nothing listens there", "sqs.Options.BaseEndpoint"}},
		{"no credentials", noCreds, []string{"no AWS credentials found: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY", "AWS_PROFILE"}},
	} {
		c := sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint), Credentials: tc.creds, RetryMaxAttempts: 1})
		_, err := worker.New(c, queue, h)
		if err == nil {
			t.Fatalf("%s: New succeeded", tc.name)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q lacks %q", tc.name, err, w)
			}
		}
		if strings.Contains(err.Error(), "operation error") {
			t.Errorf("%s: %q is the SDK's text", tc.name, err)
		}
	}
	c := sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint), Credentials: creds, RetryMaxAttempts: 1})
	if _, err := worker.New(c, queue, h); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("the cause is not kept: %v", err)
	}
}
