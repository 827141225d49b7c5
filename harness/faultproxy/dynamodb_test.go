package faultproxy_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sqsworker/sqsworker/harness/faultproxy"
)

// TestDynamoDBFaultsAsTheSDKSeesThem: in front of DynamoDB, the proxy's
// throttling and server errors are DynamoDB's own
// (ProvisionedThroughputExceededException, InternalServerError), so the
// DynamoDB client and the code above it classify them as they would
// DynamoDB's; the action is the X-Amz-Target's operation.
func TestDynamoDBFaultsAsTheSDKSeesThem(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		io.WriteString(w, `{}`)
	}))
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		kind  faultproxy.Kind
		check func(error) bool
	}{
		{faultproxy.Throttle, func(err error) bool { var e *types.ProvisionedThroughputExceededException; return errors.As(err, &e) }},
		{faultproxy.ServerError, func(err error) bool { var e *types.InternalServerError; return errors.As(err, &e) }},
		{faultproxy.None, func(err error) bool { return err == nil }},
	} {
		t.Run(string(tc.kind)+"-", func(t *testing.T) {
			var seen []faultproxy.Entry
			rules := map[string]faultproxy.Rule{}
			if tc.kind != faultproxy.None {
				rules["PutItem"] = faultproxy.Rule{Every: 1, EveryKind: tc.kind}
			}
			p := start(t, faultproxy.Options{Upstream: srv.URL, Rules: rules, OnRequest: func(e faultproxy.Entry) { seen = append(seen, e) }})
			c := dynamodb.New(dynamodb.Options{
				BaseEndpoint: aws.String(p.URL), Region: "us-east-1",
				Credentials:      credentials.NewStaticCredentialsProvider("test", "test", ""),
				RetryMaxAttempts: 1,
			})
			_, err := c.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String("t"),
				Item: map[string]types.AttributeValue{"key": &types.AttributeValueMemberS{Value: "k"}}})
			if !tc.check(err) {
				t.Fatalf("PutItem through a %q fault: %T %v", tc.kind, err, err)
			}
			p.Close()
			if len(seen) != 1 || seen[0].Action != "PutItem" || seen[0].Fault != tc.kind {
				t.Fatalf("the proxy saw %+v; want one PutItem with fault %q", seen, tc.kind)
			}
		})
	}
}
