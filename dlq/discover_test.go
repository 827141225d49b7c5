package dlq

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/sqsworker/sqsworker/harness/sqsfake"
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
	if !errors.Is(err, ErrDLQNotFound) {
		t.Fatalf("Discover error = %v, want ErrDLQNotFound", err)
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

func TestParseRedrivePolicyAcceptsStringCount(t *testing.T) {
	p, err := parseRedrivePolicy(`{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:1:q","maxReceiveCount":"4"}`)
	if err != nil || p.MaxReceiveCount != 4 || p.TargetARN != "arn:aws:sqs:us-east-1:1:q" {
		t.Errorf("parseRedrivePolicy = %+v, %v", p, err)
	}
	if _, err := parseRedrivePolicy(`{"maxReceiveCount":4}`); err == nil {
		t.Error("a policy without deadLetterTargetArn parsed")
	}
}

func TestHumanDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", 4 * 24 * time.Hour: "4 days", 24 * time.Hour: "1 day", time.Hour: "1 hour", 6 * time.Hour: "6 hours",
		10 * time.Minute: "10m", 90 * time.Second: "1m30s", 150 * time.Minute: "2h30m", 3 * time.Second: "3s",
		500 * time.Millisecond: "500ms", time.Hour + 19*time.Minute + 45670*time.Millisecond: "1h19m46s",
	} {
		if got := humanDuration(d); got != want {
			t.Errorf("humanDuration(%v) = %q, want %q", d, got, want)
		}
	}
}
