package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// awsServer is a local endpoint that answers the calls of the fleet
// commands (SQS's GetQueueUrl, DynamoDB's DescribeTable, UpdateItem and
// GetItem) and records every call it got, by X-Amz-Target.
type awsServer struct {
	*httptest.Server
	mu    sync.Mutex
	calls []string
}

func newAWSServer(t *testing.T) *awsServer {
	s := &awsServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		target := r.Header.Get("X-Amz-Target")
		s.mu.Lock()
		s.calls = append(s.calls, target)
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		var body any
		switch target {
		case "AmazonSQS.GetQueueUrl":
			body = map[string]any{"QueueUrl": s.URL + "/000000000000/orders"}
		case "DynamoDB_20120810.DescribeTable":
			body = map[string]any{"Table": map[string]any{
				"TableName":            "fleet",
				"TableStatus":          "ACTIVE",
				"KeySchema":            []any{map[string]any{"AttributeName": "pk", "KeyType": "HASH"}},
				"AttributeDefinitions": []any{map[string]any{"AttributeName": "pk", "AttributeType": "S"}},
			}}
		case "DynamoDB_20120810.UpdateItem":
			body = map[string]any{}
		case "DynamoDB_20120810.GetItem":
			body = map[string]any{"Item": map[string]any{
				"pk": map[string]any{"S": "pause|orders"}, "paused": map[string]any{"BOOL": true},
				"reason": map[string]any{"S": "test"}, "by": map[string]any{"S": "sqsworker-cli@test"},
			}}
		default:
			w.WriteHeader(http.StatusBadRequest)
			body = map[string]any{"__type": "UnknownOperationException", "message": "not served here: " + target}
		}
		_ = json.NewEncoder(w).Encode(body)
	}))
	t.Cleanup(s.Close)
	return s
}

// Calls returns the calls the endpoint got whose target starts with prefix.
func (s *awsServer) Calls(prefix string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, c := range s.calls {
		if strings.HasPrefix(c, prefix) {
			out = append(out, c)
		}
	}
	return out
}

// isolateAWS gives the test an AWS configuration of its own: static
// credentials, a region, no shared files, and no endpoint variables but
// the ones it sets.
func isolateAWS(t *testing.T) {
	dir := t.TempDir()
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_REGION": "us-east-1",
		"AWS_CONFIG_FILE": filepath.Join(dir, "config"), "AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "credentials"),
		"AWS_EC2_METADATA_DISABLED": "true",
	} {
		t.Setenv(k, v)
	}
	for _, k := range []string{"AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_SQS", "AWS_ENDPOINT_URL_SNS", "AWS_ENDPOINT_URL_DYNAMODB", tableEnv} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
}

// `sqsworker --endpoint-url URL pause Q` sends its DynamoDB calls to URL,
// not to the configuration's general endpoint (here a second local
// server standing for the real regional one).
func TestEndpointURLAppliesToDynamoDB(t *testing.T) {
	isolateAWS(t)
	given, elsewhere := newAWSServer(t), newAWSServer(t)
	t.Setenv("AWS_ENDPOINT_URL", elsewhere.URL)
	var out, errOut strings.Builder
	code := run(context.Background(), []string{"--endpoint-url", given.URL, "pause", "orders", "--table", "fleet", "--reason", "test"}, strings.NewReader(""), &out, &errOut)
	if code != exitOK {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out.String(), errOut.String())
	}
	want := []string{"DynamoDB_20120810.DescribeTable", "DynamoDB_20120810.UpdateItem", "DynamoDB_20120810.GetItem"}
	if got := given.Calls("DynamoDB"); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("DynamoDB calls at --endpoint-url: %v, want %v (one request each)", got, want)
	}
	if got := given.Calls("AmazonSQS"); len(got) != 1 {
		t.Errorf("SQS calls at --endpoint-url: %v, want the one GetQueueUrl", got)
	}
	if got := elsewhere.Calls(""); len(got) != 0 {
		t.Errorf("calls at the general endpoint (AWS_ENDPOINT_URL): %v, want none", got)
	}
	if !strings.Contains(out.String(), "orders: paused") {
		t.Errorf("stdout %q", out.String())
	}
}

// DynamoDB's own endpoint (AWS_ENDPOINT_URL_DYNAMODB) wins over
// --endpoint-url, which stays SQS's: DynamoDB Local listening apart from
// the SQS emulator.
func TestDynamoDBEndpointVariableWins(t *testing.T) {
	isolateAWS(t)
	sqsEndpoint, dynamoEndpoint := newAWSServer(t), newAWSServer(t)
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", dynamoEndpoint.URL)
	var out, errOut strings.Builder
	code := run(context.Background(), []string{"paused", "orders", "--endpoint-url", sqsEndpoint.URL, "--table", "fleet"}, strings.NewReader(""), &out, &errOut)
	if code != exitOK {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out.String(), errOut.String())
	}
	if got := dynamoEndpoint.Calls("DynamoDB"); len(got) != 2 {
		t.Errorf("DynamoDB calls at AWS_ENDPOINT_URL_DYNAMODB: %v, want DescribeTable and GetItem", got)
	}
	if got := sqsEndpoint.Calls("DynamoDB"); len(got) != 0 {
		t.Errorf("DynamoDB calls at --endpoint-url: %v, want none", got)
	}
	if got := dynamoEndpoint.Calls("AmazonSQS"); len(got) != 0 {
		t.Errorf("SQS calls at AWS_ENDPOINT_URL_DYNAMODB: %v, want none", got)
	}
}

// A DynamoDB endpoint where nothing listens is reported with DynamoDB's
// variable, not SQS's.
func TestDynamoDBUnreachableNamesItsVariable(t *testing.T) {
	isolateAWS(t)
	sqsEndpoint, closed := newAWSServer(t), newAWSServer(t)
	closed.Close()
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", closed.URL)
	var out, errOut strings.Builder
	code := run(context.Background(), []string{"--endpoint-url", sqsEndpoint.URL, "pause", "orders", "--table", "fleet"}, strings.NewReader(""), &out, &errOut)
	msg := errOut.String()
	if code != exitProblems || !strings.Contains(msg, "cannot reach "+closed.URL+" (connection refused)") ||
		!strings.Contains(msg, "AWS_ENDPOINT_URL_DYNAMODB") || strings.Contains(msg, "AWS_ENDPOINT_URL_SQS") {
		t.Errorf("exit %d, stderr %q; want DynamoDB's endpoint and variable named", code, msg)
	}
}
