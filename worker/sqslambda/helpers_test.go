package sqslambda_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/harness/sqsfake"
	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/sqstest"
	"github.com/sqsworker/sqsworker/worker"
	"github.com/sqsworker/sqsworker/worker/sqslambda"
)

var quiet = slog.New(slog.DiscardHandler)

// fixedPolicy retries n times after d each.
func fixedPolicy(n int, d time.Duration) retry.Policy {
	return retry.PolicyFunc(func(attempt int) (time.Duration, bool) { return d, attempt <= n })
}

// fixture reads an SQS event from testdata.
func fixture(t *testing.T, name string) events.SQSEvent {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var ev events.SQSEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return ev
}

// failedIDs returns the itemIdentifiers of a response.
func failedIDs(resp events.SQSEventResponse) []string {
	ids := []string{}
	for _, f := range resp.BatchItemFailures {
		ids = append(ids, f.ItemIdentifier)
	}
	return ids
}

// bodies maps messageIds to bodies for readable assertions.
func bodiesOf(ev events.SQSEvent, ids []string) []string {
	byID := map[string]string{}
	for _, r := range ev.Records {
		byID[r.MessageId] = r.Body
	}
	out := []string{}
	for _, id := range ids {
		out = append(out, byID[id])
	}
	return out
}

// receiveEvent receives up to n messages from a Fake queue (all
// attributes, as Lambda's poller asks) and builds the event Lambda would
// send for them.
func receiveEvent(t *testing.T, f *sqstest.Fake, url string, n int32) events.SQSEvent {
	t.Helper()
	out, err := f.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(url),
		MaxNumberOfMessages:         n,
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		MessageAttributeNames:       []string{"All"},
	})
	if err != nil {
		t.Fatalf("receive: %v", err)
	}
	ev, err := sqslambda.NewEvent(sqsfake.ARN(url), out.Messages...)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

// messageByBody finds a stored message by body.
func messageByBody(t *testing.T, f *sqstest.Fake, url, body string) sqstest.MessageInfo {
	t.Helper()
	for _, m := range f.Messages(url) {
		if m.Body == body {
			return m
		}
	}
	t.Fatalf("no message %q in %s", body, url)
	return sqstest.MessageInfo{}
}

// sortedBodies returns the bodies of a queue's messages, sorted.
func sortedBodies(f *sqstest.Fake, url string) []string {
	var out []string
	for _, m := range f.Messages(url) {
		out = append(out, m.Body)
	}
	slices.Sort(out)
	return out
}

func attrContains(m sqstest.MessageInfo, s string) bool {
	for _, v := range m.Attributes {
		if strings.Contains(aws.ToString(v.StringValue), s) {
			return true
		}
	}
	return false
}

// idsOf returns the messageIds of an event, in order.
func idsOf(ev events.SQSEvent) []string {
	ids := []string{}
	for _, r := range ev.Records {
		ids = append(ids, r.MessageId)
	}
	return ids
}

// mustNew returns a Handler, failing t on error.
func mustNew(t testing.TB, h worker.Handler, optFns ...func(*sqslambda.Options)) *sqslambda.Handler {
	t.Helper()
	l, err := sqslambda.New(h, optFns...)
	if err != nil {
		t.Fatalf("sqslambda.New: %v", err)
	}
	return l
}
