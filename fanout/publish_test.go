package fanout_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	snstypes "github.com/aws/aws-sdk-go-v2/service/sns/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/sqsworker/sqsworker/fanout"
	"github.com/sqsworker/sqsworker/sqstest"
)

// receiveAll drains a queue of the fake: body → MessageGroupId.
func receiveAll(t *testing.T, queues *sqstest.Fake, url string) map[string]string {
	t.Helper()
	got := map[string]string{}
	for {
		out, err := queues.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10,
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll}})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			return got
		}
		for _, m := range out.Messages {
			got[aws.ToString(m.Body)] = m.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)]
		}
	}
}

// On a standard topic a message's GroupID is its tenant: SNS passes it to
// the subscribed standard queue as MessageGroupId (an SQS fair queue).
// 25 messages take 3 PublishBatch calls.
func TestPublisherSendsTenantAsMessageGroupID(t *testing.T) {
	queues, topics, res := chain(t, "billing", raw)
	p, err := fanout.NewPublisher(topics, res.TopicARN)
	if err != nil {
		t.Fatal(err)
	}
	var msgs []fanout.Message
	want := map[string]string{}
	for i := range 25 {
		m := fanout.Message{Body: fmt.Sprintf("job %d", i), GroupID: fmt.Sprintf("tenant-%d", i%3)}
		if i == 24 {
			m.GroupID = "" // no tenant: none arrives
		}
		want[m.Body] = m.GroupID
		msgs = append(msgs, m)
	}
	out, err := p.PublishBatch(context.Background(), msgs)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range out {
		if r.MessageID == "" || r.Attempts != 1 || r.Err != nil {
			t.Errorf("result %d = %+v", i, r)
		}
	}
	if st := p.Stats(); st != (fanout.PublisherStats{Requests: 3, Published: 25}) {
		t.Errorf("Stats = %+v, want 3 requests and 25 published", st)
	}
	if got := receiveAll(t, queues, res.Queue.QueueURL); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("queue got body → MessageGroupId %v\nwant %v", got, want)
	}
}

// A FIFO topic needs a group on every message: one without is refused
// before any call, the others arrive in order with their group.
func TestPublisherFIFOTopic(t *testing.T) {
	queues, topics, res := chain(t, "ledger.fifo", raw, func(o *fanout.SetupOptions) { o.Topic = "ledger-events.fifo" })
	p, err := fanout.NewPublisher(topics, res.TopicARN)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Publish(context.Background(), fanout.Message{Body: "no group", DeduplicationID: "d0"}); !errors.Is(err, fanout.ErrInvalid) || !strings.Contains(err.Error(), "needs a GroupID") {
		t.Errorf("a FIFO message without a group: %v; want ErrInvalid saying it needs a GroupID", err)
	}
	if st := p.Stats(); st.Requests != 0 || st.Failed != 1 {
		t.Errorf("after a refused message: %+v; want no request, 1 failed", st)
	}
	j := fanout.JSON[struct{ Step int }](p)
	for i := range 3 {
		r, err := j.Publish(context.Background(), struct{ Step int }{i}, fanout.WithGroup("account-7", fmt.Sprint("d", i)))
		if err != nil || r.SequenceNumber == "" {
			t.Fatalf("Publish step %d: %+v, %v", i, r, err)
		}
	}
	var got []string
	for {
		out, err := queues.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(res.Queue.QueueURL), MaxNumberOfMessages: 10,
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll}})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			break
		}
		for _, m := range out.Messages {
			got = append(got, aws.ToString(m.Body)+"@"+m.Attributes["MessageGroupId"])
			_, _ = queues.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(res.Queue.QueueURL), ReceiptHandle: m.ReceiptHandle})
		}
	}
	if strings.Join(got, " ") != `{"Step":0}@account-7 {"Step":1}@account-7 {"Step":2}@account-7` {
		t.Errorf("FIFO queue got %v", got)
	}
}

func TestPublisherRefusesBadInput(t *testing.T) {
	_, topics, res := chain(t, "billing")
	if _, err := fanout.NewPublisher(nil, res.TopicARN); err == nil {
		t.Error("NewPublisher(nil client) succeeded")
	}
	if _, err := fanout.NewPublisher(topics, "rental-orders"); err == nil || !strings.Contains(err.Error(), "SetupResult.TopicARN") {
		t.Errorf("NewPublisher with a topic name: %v; want an error asking for the ARN", err)
	}
	for _, fn := range []func(*fanout.PublisherOptions){
		func(o *fanout.PublisherOptions) { o.MaxBatch = 11 },
		func(o *fanout.PublisherOptions) { o.MaxAttempts = -1 },
		func(o *fanout.PublisherOptions) { o.Concurrency = -1 },
	} {
		if _, err := fanout.NewPublisher(topics, res.TopicARN, fn); err == nil {
			t.Error("NewPublisher accepted an option out of range")
		}
	}
	p, err := fanout.NewPublisher(topics, res.TopicARN)
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 256<<10+1)
	cases := []struct {
		m    fanout.Message
		want string
	}{
		{fanout.Message{}, "body is empty"},
		{fanout.Message{Body: big}, "over SNS's limit"},
		{fanout.Message{Body: "x", DeduplicationID: "d"}, "standard topic"},
		{fanout.Message{Body: "x", GroupID: strings.Repeat("t", 129)}, "at most 128"},
		{fanout.Message{Body: "x", GroupID: "tenant a"}, "ASCII punctuation"},
	}
	msgs := []fanout.Message{{Body: "fine", GroupID: "tenant-a"}}
	for _, c := range cases {
		msgs = append(msgs, c.m)
	}
	out, err := p.PublishBatch(context.Background(), msgs)
	var perr *fanout.PublishError
	if !errors.As(err, &perr) || perr.Failed != len(cases) || perr.Total != len(msgs) {
		t.Fatalf("PublishBatch error %v; want a PublishError with %d of %d failed", err, len(cases), len(msgs))
	}
	if out[0].Err != nil || out[0].MessageID == "" {
		t.Errorf("the valid message: %+v", out[0])
	}
	for i, c := range cases {
		r := out[i+1]
		if !errors.Is(r.Err, fanout.ErrInvalid) || !strings.Contains(r.Err.Error(), c.want) || r.Attempts != 0 {
			t.Errorf("%+v: %v (attempts %d); want ErrInvalid saying %q, no call", c.m.GroupID, r.Err, r.Attempts, c.want)
		}
	}
	if !errors.Is(out[2].Err, fanout.ErrTooLarge) {
		t.Errorf("oversize message: %v; want ErrTooLarge", out[2].Err)
	}
}

// scripted is a PublishBatch client whose answers a script decides, per
// call: for each entry's message, "ok", an error code (SenderFault when
// it starts with "!"), or the whole call's error.
type scripted struct {
	mu      sync.Mutex
	calls   [][]string // messages per call
	retries []int      // the SDK's RetryMaxAttempts per call
	script  func(n int, msg string) (string, error)
}

func (s *scripted) PublishBatch(ctx context.Context, in *sns.PublishBatchInput, optFns ...func(*sns.Options)) (*sns.PublishBatchOutput, error) {
	o := sns.Options{RetryMaxAttempts: 3}
	for _, fn := range optFns {
		fn(&o)
	}
	s.mu.Lock()
	n := len(s.calls)
	var msgs []string
	for _, e := range in.PublishBatchRequestEntries {
		msgs = append(msgs, aws.ToString(e.Message))
	}
	s.calls = append(s.calls, msgs)
	s.retries = append(s.retries, o.RetryMaxAttempts)
	s.mu.Unlock()
	out := &sns.PublishBatchOutput{}
	for _, e := range in.PublishBatchRequestEntries {
		ans, err := s.script(n, aws.ToString(e.Message))
		if err != nil {
			return nil, err
		}
		if ans == "ok" {
			out.Successful = append(out.Successful, snstypes.PublishBatchResultEntry{Id: e.Id, MessageId: aws.String(fmt.Sprint("id-", aws.ToString(e.Message)))})
			continue
		}
		out.Failed = append(out.Failed, snstypes.BatchResultErrorEntry{Id: e.Id, Code: aws.String(strings.TrimPrefix(ans, "!")), SenderFault: strings.HasPrefix(ans, "!")})
	}
	return out, nil
}

const topicARN = "arn:aws:sns:us-east-1:000000000000:rental-orders"

// Entries SNS failed on its side are sent again, alone, after the one
// retry rule's backoff; entries it refused are not; the SDK's own retries
// are off, so every request is counted.
func TestPublisherRetriesOnlyWhatMaySucceed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &scripted{script: func(n int, msg string) (string, error) {
			switch {
			case msg == "throttled" && n == 0:
				return "Throttled", nil
			case msg == "refused":
				return "!InvalidParameter", nil
			}
			return "ok", nil
		}}
		p, err := fanout.NewPublisher(c, topicARN)
		if err != nil {
			t.Fatal(err)
		}
		out, err := p.PublishBatch(context.Background(), []fanout.Message{{Body: "fine"}, {Body: "throttled"}, {Body: "refused"}})
		if err == nil {
			t.Fatal("no error for the refused message")
		}
		if out[0].Attempts != 1 || out[0].Err != nil || out[1].Attempts != 2 || out[1].Err != nil || out[1].MessageID != "id-throttled" {
			t.Errorf("results %+v", out)
		}
		var api smithy.APIError
		if out[2].Attempts != 1 || !errors.As(out[2].Err, &api) || api.ErrorCode() != "InvalidParameter" {
			t.Errorf("refused entry: %+v; want 1 attempt and SNS's InvalidParameter", out[2])
		}
		if fmt.Sprint(c.calls) != "[[fine throttled refused] [throttled]]" || fmt.Sprint(c.retries) != "[1 1]" {
			t.Errorf("calls %v with SDK retries %v; want the throttled entry alone again, SDK retries off", c.calls, c.retries)
		}
		if st := p.Stats(); st != (fanout.PublisherStats{Requests: 2, Published: 2, Failed: 1, Retried: 1}) {
			t.Errorf("Stats = %+v", st)
		}

		// A call refused as a whole for a reason retrying cannot fix is not
		// retried.
		denied := &scripted{script: func(int, string) (string, error) {
			return "", &smithy.GenericAPIError{Code: "AuthorizationError", Message: "not authorized to perform SNS:Publish", Fault: smithy.FaultClient}
		}}
		p, _ = fanout.NewPublisher(denied, topicARN)
		r, err := p.Publish(context.Background(), fanout.Message{Body: "x", GroupID: "tenant-a"})
		if err == nil || r.Attempts != 1 || len(denied.calls) != 1 || !strings.Contains(err.Error(), "topic rental-orders") {
			t.Errorf("AuthorizationError: %+v, %v after %d calls; want one call and the error", r, err, len(denied.calls))
		}
	})
}

// PublishBatch calls carry at most 256 KiB: three messages of 100 KiB
// take two calls.
func TestPublisherCutsCallsAtSNSPayloadLimit(t *testing.T) {
	c := &scripted{script: func(int, string) (string, error) { return "ok", nil }}
	p, err := fanout.NewPublisher(c, topicARN)
	if err != nil {
		t.Fatal(err)
	}
	body := strings.Repeat("b", 100<<10)
	if _, err := p.PublishBatch(context.Background(), []fanout.Message{{Body: body}, {Body: body}, {Body: body}}); err != nil {
		t.Fatal(err)
	}
	var sizes []int
	for _, call := range c.calls {
		sizes = append(sizes, len(call))
	}
	sort.Ints(sizes)
	if fmt.Sprint(sizes) != "[1 2]" {
		t.Errorf("calls carried %v messages; want 2 and 1", sizes)
	}
}
