package producer_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	snstypes "github.com/aws/aws-sdk-go-v2/service/sns/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/sqsworker/sqsworker/producer"
	"github.com/sqsworker/sqsworker/sqstest"
	"github.com/sqsworker/sqsworker/sqstest/snstest"
)

// These are the tests of a Producer for an SNS topic (NewTopic) that need
// no subscribed queue; fanout's tests send through whole chains.

// scripted is a PublishBatch client whose answers a script decides, per
// call: for each entry's message, "ok", an error code (SenderFault when
// it starts with "!"), or the whole call's error.
type scripted struct {
	mu      sync.Mutex
	calls   [][]string // messages per call
	entries []snstypes.PublishBatchRequestEntry
	retries []int // the SDK's RetryMaxAttempts per call
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
	s.entries = append(s.entries, in.PublishBatchRequestEntries...)
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

func allOK(int, string) (string, error) { return "ok", nil }

const topicARN = "arn:aws:sns:us-east-1:000000000000:rental-orders"

func newTopicProducer(t *testing.T, client producer.TopicAPI, arn string, optFns ...func(*producer.Options)) *producer.Producer {
	t.Helper()
	p, err := producer.NewTopic(client, arn, optFns...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestTopicRefusesBadInput(t *testing.T) {
	topics := snstest.For(t, sqstest.For(t))
	out, err := topics.CreateTopic(t.Context(), &sns.CreateTopicInput{Name: aws.String("rental-orders")})
	if err != nil {
		t.Fatal(err)
	}
	arn := aws.ToString(out.TopicArn)
	if _, err := producer.NewTopic(nil, arn); err == nil {
		t.Error("NewTopic(nil client) succeeded")
	}
	if _, err := producer.NewTopic(topics, "rental-orders"); err == nil || !strings.Contains(err.Error(), "SetupResult.TopicARN") {
		t.Errorf("NewTopic with a topic name: %v; want an error asking for the ARN", err)
	}
	if _, err := producer.New(sqstest.For(t), arn); err == nil || !strings.Contains(err.Error(), "NewTopic") {
		t.Errorf("New with a topic's ARN: %v; want an error pointing to NewTopic", err)
	}
	for _, fn := range []func(*producer.Options){
		func(o *producer.Options) { o.MaxBatch = 11 },
		func(o *producer.Options) { o.MaxAttempts = -1 },
		func(o *producer.Options) { o.Concurrency = -1 },
		func(o *producer.Options) { o.MaxMessageSize = 256<<10 + 1 }, // over SNS's limit
	} {
		if _, err := producer.NewTopic(topics, arn, fn); err == nil {
			t.Error("NewTopic accepted an option out of range")
		}
	}
	p := newTopicProducer(t, topics, arn)
	big := strings.Repeat("x", 256<<10+1)
	cases := []struct {
		m    producer.Message
		want string
	}{
		{producer.Message{}, "body is empty"},
		{producer.Message{Body: big}, "over SNS's limit"},
		{producer.Message{Body: "x", DeduplicationID: "d"}, "standard topic"},
		{producer.Message{Body: "x", GroupID: strings.Repeat("t", 129)}, "at most 128"},
		{producer.Message{Body: "x", GroupID: "tenant a"}, "ASCII punctuation"},
		{producer.Message{Body: "x", Delay: time.Minute}, "no per-message delay"},
	}
	msgs := []producer.Message{{Body: "fine", GroupID: "tenant-a", Subject: "rental"}}
	for _, c := range cases {
		msgs = append(msgs, c.m)
	}
	res, err := p.SendBatch(t.Context(), msgs)
	var berr *producer.BatchError
	if !errors.As(err, &berr) || berr.Failed != len(cases) || berr.Total != len(msgs) {
		t.Fatalf("SendBatch error %v; want a BatchError with %d of %d failed", err, len(cases), len(msgs))
	}
	if res[0].Err != nil || res[0].MessageID == "" {
		t.Errorf("the valid message: %+v", res[0])
	}
	for i, c := range cases {
		r := res[i+1]
		if !errors.Is(r.Err, producer.ErrInvalid) || !strings.Contains(r.Err.Error(), c.want) || r.Attempts != 0 {
			t.Errorf("%+v: %v (attempts %d); want ErrInvalid saying %q, no call", c.m.GroupID, r.Err, r.Attempts, c.want)
		}
	}
	if !errors.Is(res[2].Err, producer.ErrTooLarge) {
		t.Errorf("oversize message: %v; want ErrTooLarge", res[2].Err)
	}
	if st := p.Stats(); st.Requests != 1 || st.Sent != 1 || st.Failed != int64(len(cases)) {
		t.Errorf("Stats = %+v; want 1 request, 1 sent, %d failed", st, len(cases))
	}

	// A queue takes no Subject.
	f := sqstest.For(t)
	q := newProducer(t, f, f.MustCreateQueue(t, "jobs", nil))
	if r, _ := q.SendBatch(t.Context(), []producer.Message{{Body: "x", Subject: "s"}}); !errors.Is(r[0].Err, producer.ErrInvalid) || !strings.Contains(r[0].Err.Error(), "SNS topics") {
		t.Errorf("a Subject on a queue: %v; want ErrInvalid saying it is for topics", r[0].Err)
	}
}

// Entries SNS failed on its side are sent again, alone, after the one
// retry rule's backoff; entries it refused are not; the SDK's own retries
// are off, so every request is counted.
func TestTopicRetriesOnlyWhatMaySucceed(t *testing.T) {
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
		p := newTopicProducer(t, c, topicARN)
		out, err := p.SendBatch(context.Background(), []producer.Message{{Body: "fine"}, {Body: "throttled"}, {Body: "refused"}})
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
		if st := p.Stats(); st != (producer.Stats{Requests: 2, Sent: 2, Failed: 1, Retried: 1}) {
			t.Errorf("Stats = %+v", st)
		}

		// A call refused as a whole for a reason retrying cannot fix is not
		// retried.
		denied := &scripted{script: func(int, string) (string, error) {
			return "", &smithy.GenericAPIError{Code: "AuthorizationError", Message: "not authorized to perform SNS:Publish", Fault: smithy.FaultClient}
		}}
		p = newTopicProducer(t, denied, topicARN)
		res, err := p.SendBatch(context.Background(), []producer.Message{{Body: "x", GroupID: "tenant-a"}})
		if err == nil || res[0].Attempts != 1 || len(denied.calls) != 1 || !strings.Contains(res[0].Err.Error(), "topic rental-orders") {
			t.Errorf("AuthorizationError: %+v, %v after %d calls; want one call and the error", res[0], err, len(denied.calls))
		}
	})
}

// PublishBatch calls carry at most 256 KiB: three messages of 100 KiB
// take two calls, through SendBatch and through the background batcher.
func TestTopicCutsCallsAtSNSPayloadLimit(t *testing.T) {
	body := strings.Repeat("b", 100<<10)
	sizes := func(c *scripted) string {
		var n []int
		for _, call := range c.calls {
			n = append(n, len(call))
		}
		sort.Ints(n)
		return fmt.Sprint(n)
	}
	c := &scripted{script: allOK}
	p := newTopicProducer(t, c, topicARN)
	if _, err := p.SendBatch(context.Background(), []producer.Message{{Body: body}, {Body: body}, {Body: body}}); err != nil {
		t.Fatal(err)
	}
	if got := sizes(c); got != "[1 2]" {
		t.Errorf("SendBatch's calls carried %v messages; want 2 and 1", got)
	}

	c = &scripted{script: allOK}
	p = newTopicProducer(t, c, topicARN, func(o *producer.Options) { o.Linger = time.Hour })
	var pending []*producer.Pending
	for range 3 {
		pd, err := p.Enqueue(t.Context(), producer.Message{Body: body})
		if err != nil {
			t.Fatal(err)
		}
		pending = append(pending, pd)
	}
	if err := p.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	for i, pd := range pending {
		if r, err := pd.Wait(t.Context()); err != nil || r.MessageID == "" {
			t.Errorf("enqueued message %d: %+v, %v", i, r, err)
		}
	}
	if got := sizes(c); got != "[1 2]" {
		t.Errorf("the batcher's calls carried %v messages; want 2 and 1", got)
	}
}

// offloader stores every body over limit bytes and sends a pointer with a
// size attribute, as s3payload's Store does.
type offloader struct{ limit int }

func (o offloader) Offload(_ context.Context, m *producer.Message) (bool, error) {
	if len(m.Body) <= o.limit {
		return false, nil
	}
	if m.Attributes == nil {
		m.Attributes = map[string]types.MessageAttributeValue{}
	}
	m.Attributes["ExtendedPayloadSize"] = types.MessageAttributeValue{DataType: aws.String("Number"), StringValue: aws.String(fmt.Sprint(len(m.Body)))}
	m.Body = "pointer"
	return true, nil
}

// What the producer has for queues works for a topic too: typed jobs,
// BeforeSend hooks (their attributes become SNS message attributes; the
// AWSTraceHeader, which a PublishBatch entry cannot carry, is left out),
// the Offloader, the Subject and the tenant.
func TestTopicHooksOffloadAndTypedJobs(t *testing.T) {
	c := &scripted{script: allOK}
	p := newTopicProducer(t, c, topicARN, func(o *producer.Options) {
		o.Offloader = offloader{limit: 1000}
		o.BeforeSend = append(o.BeforeSend, func(_ context.Context, m *producer.Message) error {
			m.SetAttribute("traceparent", types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String("00-abc-def-01")})
			m.TraceHeader = "Root=1-abc"
			m.Subject = "invoice"
			return nil
		})
	})
	type invoice struct {
		Tenant string `json:"tenant"`
		Lines  string `json:"lines"`
	}
	invoices := producer.JSON[invoice](p)
	small, err := invoices.Send(t.Context(), invoice{Tenant: "acme"}, producer.WithGroup("acme", ""))
	if err != nil {
		t.Fatal(err)
	}
	big, err := invoices.Enqueue(t.Context(), invoice{Tenant: "globex", Lines: strings.Repeat("l", 2000)}, producer.WithGroup("globex", ""))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	bigRes, err := big.Wait(t.Context())
	if err != nil || small.Offloaded || !bigRes.Offloaded {
		t.Fatalf("results %+v and %+v, %v; want the large one offloaded", small, bigRes, err)
	}
	if st := p.Stats(); st.Sent != 2 || st.Offloaded != 1 {
		t.Errorf("Stats = %+v; want 2 sent, 1 offloaded", st)
	}
	var got []string
	for _, e := range c.entries {
		var attrs []string
		for k, v := range e.MessageAttributes {
			attrs = append(attrs, k+"="+aws.ToString(v.StringValue))
		}
		sort.Strings(attrs)
		got = append(got, fmt.Sprintf("%s %s %s %v", aws.ToString(e.MessageGroupId), aws.ToString(e.Subject), aws.ToString(e.Message), attrs))
	}
	sort.Strings(got)
	want := []string{
		`acme invoice {"tenant":"acme","lines":""} [traceparent=00-abc-def-01]`,
		`globex invoice pointer [ExtendedPayloadSize=2030 traceparent=00-abc-def-01]`,
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("published %q\nwant %q", got, want)
	}
}
