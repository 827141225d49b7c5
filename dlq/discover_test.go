package dlq

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/sqsworker/sqsworker/harness/sqsfake"
	"github.com/sqsworker/sqsworker/internal/deadletter"
	"github.com/sqsworker/sqsworker/sqstest"
)

func TestDiscoverResolvesTheDLQ(t *testing.T) {
	f := sqstest.For(t)
	src, dlq := f.MustCreateQueueWithDLQ(t, "orders", 7, nil)
	got, err := Discover(context.Background(), f, src)
	if err != nil {
		t.Fatal(err)
	}
	want := Target{SourceURL: src, SourceARN: sqsfake.ARN(src), DLQURL: dlq, DLQARN: sqsfake.ARN(dlq), MaxReceiveCount: 7, MaxMessageSize: 1 << 20, SourceMaxMessageSize: 1 << 20}
	if got != want {
		t.Errorf("Discover = %+v\nwant       %+v", got, want)
	}
}

func TestDiscoverNoRedrivePolicySaysWhatToDo(t *testing.T) {
	f := sqstest.For(t)
	src := f.MustCreateQueue(t, "orders", nil)
	_, err := Discover(context.Background(), f, src)
	if !errors.Is(err, ErrNoRedrivePolicy) {
		t.Fatalf("Discover error = %v, want ErrNoRedrivePolicy", err)
	}
	want := "queue orders has no RedrivePolicy; failed jobs would be retried until retention expires (4 days) and then lost; set one"
	if !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "AllowNoDLQ") {
		t.Errorf("error = %q\nwant it to start %q and mention AllowNoDLQ", err, want)
	}
}

func TestDiscoverMissingDLQ(t *testing.T) {
	f := sqstest.For(t)
	src, dlq := f.MustCreateQueueWithDLQ(t, "orders", 5, nil)
	if _, err := f.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(dlq)}); err != nil {
		t.Fatal(err)
	}
	_, err := Discover(context.Background(), f, src)
	if !errors.Is(err, deadletter.ErrDLQNotFound) {
		t.Fatalf("Discover error = %v, want deadletter.ErrDLQNotFound", err)
	}
	if !strings.Contains(err.Error(), "orders-dlq") || !strings.Contains(err.Error(), "create it") {
		t.Errorf("error does not name the queue and the fix: %v", err)
	}
}

func TestDiscoverMissingQueue(t *testing.T) {
	f := sqstest.For(t)
	_, err := Discover(context.Background(), f, "https://sqs.us-east-1.amazonaws.com/000000000000/nope")
	if err == nil || !strings.Contains(err.Error(), "queue nope does not exist") {
		t.Fatalf("Discover error = %v", err)
	}
}
