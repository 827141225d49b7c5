package producer_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/harness/sqsfake"
	"github.com/sqsworker/sqsworker/producer"
	"github.com/sqsworker/sqsworker/queueref"
	"github.com/sqsworker/sqsworker/sqstest"
)

// Issue 24, item 7: producer.New(c, "orders") used to accept the name and
// then fail every send with NonExistentQueue. A name or an ARN is resolved
// once, at New, and the messages reach the queue.
func TestNewTakesANameOrARN(t *testing.T) {
	f := sqstest.For(t)
	url := f.MustCreateQueue(t, "orders", nil)
	for _, ref := range []string{"orders", sqsfake.ARN(url), url} {
		p, err := producer.New(f, ref)
		if err != nil {
			t.Fatalf("New(%s): %v", ref, err)
		}
		if producer.QueueURL(p) != url {
			t.Errorf("New(%s).QueueURL() = %q, want %q", ref, producer.QueueURL(p), url)
		}
		if _, err := p.Send(t.Context(), producer.Message{Body: "hello"}); err != nil {
			t.Errorf("Send through New(%s): %v", ref, err)
		}
		if err := p.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(f.Messages(url)); n != 3 {
		t.Errorf("queue holds %d messages, want 3", n)
	}
}

func TestNewRefusesAMissingOrMalformedQueue(t *testing.T) {
	f := sqstest.For(t)
	if _, err := producer.New(f, "orders"); err == nil || !strings.Contains(err.Error(), "queue orders does not exist") {
		t.Errorf("New of a missing queue = %v, want it to say so", err)
	}
	for _, ref := range []string{"", "my orders", "https://q"} {
		if _, err := producer.New(f, ref); !errors.Is(err, queueref.ErrInvalid) {
			t.Errorf("New(%q) = %v, want queueref.ErrInvalid", ref, err)
		}
	}
}

// sendOnly is a client with SendMessageBatch alone.
type sendOnly struct{ producer.API }

func (s sendOnly) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	return s.API.SendMessageBatch(ctx, in, optFns...)
}

// A client without GetQueueUrl takes a URL, and says what to do with a name.
func TestNewWithoutGetQueueUrl(t *testing.T) {
	f := sqstest.For(t)
	url := f.MustCreateQueue(t, "orders", nil)
	if _, err := producer.New(sendOnly{f}, url); err != nil {
		t.Errorf("New with a URL: %v", err)
	}
	if _, err := producer.New(sendOnly{f}, "orders"); err == nil || !strings.Contains(err.Error(), "pass the queue's URL") {
		t.Errorf("New with a name and no GetQueueUrl = %v", err)
	}
}
