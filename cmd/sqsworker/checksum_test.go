package main

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/logging"
)

// The DynamoDB client the CLI builds logs no "failed to close HTTP response
// body ... did not match expected checksum" warning for an error response
// without an X-Amz-Crc32 header, as DynamoDB Local and LocalStack send
// (aws/aws-sdk-go-v2#3545): the user would read it as a fault of the CLI,
// printed before the command's own error.
func TestDynamoDBClientLogsNoChecksumWarning(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"__type":"com.amazonaws.dynamodb.v20120810#ResourceNotFoundException","message":"Cannot do operations on a non-existent table"}`)
	}))
	defer srv.Close()
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", srv.URL)
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	db, err := connectDynamo(t.Context(), awsFlags{})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var logged []string
	capture := logging.LoggerFunc(func(c logging.Classification, format string, v ...any) {
		mu.Lock()
		defer mu.Unlock()
		logged = append(logged, fmt.Sprintf(string(c)+" "+format, v...))
	})
	_, err = db.DescribeTable(t.Context(), &dynamodb.DescribeTableInput{TableName: aws.String("missing")},
		func(o *dynamodb.Options) { o.Logger = capture })
	var nf *types.ResourceNotFoundException
	if !errors.As(err, &nf) {
		t.Fatalf("DescribeTable: %v; want the ResourceNotFoundException the server sent", err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, l := range logged {
		if strings.Contains(l, "checksum") || strings.Contains(l, "failed to close") {
			t.Errorf("the SDK logged %q", l)
		}
	}
}
