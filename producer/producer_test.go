package producer_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/sqsworker/sqsworker/harness/sdkretry"
	"github.com/sqsworker/sqsworker/internal/schedule"
	"github.com/sqsworker/sqsworker/producer"
	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/sqstest"
)

func newProducer(t *testing.T, client producer.API, url string, optFns ...func(*producer.Options)) *producer.Producer {
	t.Helper()
	p, err := producer.New(client, url, optFns...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSendBatchSplitsByTenEntriesAndByBytes(t *testing.T) {
	f := sqstest.For(t)
	url := f.MustCreateQueue(t, "jobs", nil)
	p := newProducer(t, f, url)

	res, err := p.SendBatch(t.Context(), bodies(25, "job-"))
	if err != nil {
		t.Fatal(err)
	}
	if n := f.Requests()["SendMessageBatch"]; n != 3 {
		t.Errorf("25 messages took %d calls, want 3 (10 + 10 + 5)", n)
	}
	for i, r := range res {
		if r.MessageID == "" || r.Err != nil || r.Attempts != 1 {
			t.Errorf("result %d: %+v", i, r)
		}
	}

	// 300 KiB each: three fit in SQS's 1 MiB per call.
	before := f.Requests()
	big := strings.Repeat("x", 300<<10)
	msgs := make([]producer.Message, 10)
	for i := range msgs {
		msgs[i] = producer.Message{Body: big}
	}
	if _, err := p.SendBatch(t.Context(), msgs); err != nil {
		t.Fatal(err)
	}
	if n := f.Requests()["SendMessageBatch"] - before["SendMessageBatch"]; n != 4 {
		t.Errorf("ten 300 KiB messages took %d calls, want 4 (3 + 3 + 3 + 1)", n)
	}
	if got := len(f.Messages(url)); got != 35 {
		t.Errorf("queue holds %d messages, want 35", got)
	}
	st := p.Stats()
	if st.Sent != 35 || st.Requests != 7 || st.Failed != 0 {
		t.Errorf("Stats = %+v", st)
	}
}

func TestPerEntryFailuresAreRetriedAndReported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := sqstest.For(t)
		url := f.MustCreateQueue(t, "jobs", nil)
		client := &entryFaults{API: f, fail: func(body string, attempt int) *types.BatchResultErrorEntry {
			switch {
			case body == "flaky" && attempt <= 2:
				return serverFault("InternalError") // SQS's side: retried
			case body == "throttled" && attempt == 1:
				return senderFault("RequestThrottled")
			case body == "refused":
				return senderFault("InvalidParameterValue") // the entry's fault: not retried
			case body == "down":
				return serverFault("ServiceUnavailable") // fails every attempt
			}
			return nil
		}}
		p := newProducer(t, client, url, func(o *producer.Options) { o.MaxAttempts = 4 })
		msgs := []producer.Message{{Body: "ok-1"}, {Body: "flaky"}, {Body: "refused"}, {Body: "throttled"}, {Body: "down"}, {Body: "ok-2"}}
		start := time.Now()
		res, err := p.SendBatch(t.Context(), msgs)

		var be *producer.BatchError
		if !errors.As(err, &be) || be.Failed != 2 || be.Total != 6 {
			t.Fatalf("SendBatch error = %v, want a BatchError of 2 of 6", err)
		}
		want := map[string]struct {
			ok       bool
			attempts int
		}{"ok-1": {true, 1}, "flaky": {true, 3}, "refused": {false, 1}, "throttled": {true, 2}, "down": {false, 4}, "ok-2": {true, 1}}
		for i, r := range res {
			w := want[msgs[i].Body]
			if (r.Err == nil) != w.ok || r.Attempts != w.attempts {
				t.Errorf("%s: sent %v after %d attempts (err %v); want sent %v after %d", msgs[i].Body, r.Err == nil, r.Attempts, r.Err, w.ok, w.attempts)
			}
		}
		var ae smithy.APIError
		if !errors.As(res[2].Err, &ae) || ae.ErrorFault() != smithy.FaultClient || ae.ErrorCode() != "InvalidParameterValue" {
			t.Errorf("refused: error %v, want an API error with SQS's code", res[2].Err)
		}
		if !errors.As(res[4].Err, &ae) || ae.ErrorFault() != smithy.FaultServer || ae.ErrorCode() != "ServiceUnavailable" {
			t.Errorf("down: error %v, want SQS's last answer", res[4].Err)
		}
		// Only the failed entries are re-sent, with a backoff in between.
		if got := client.calls; len(got) != 4 || got[0] != 6 || got[1] != 3 || got[2] != 2 || got[3] != 1 {
			t.Errorf("entries per call = %v, want [6 3 2 1]", got)
		}
		if time.Since(start) == 0 {
			t.Error("no backoff between attempts")
		}
		if got := len(f.Messages(url)); got != 4 {
			t.Errorf("queue holds %d messages, want the 4 sent", got)
		}
		st := p.Stats()
		if st.Sent != 4 || st.Failed != 2 || st.Retried != 3+2+1 || st.Requests != 4 {
			t.Errorf("Stats = %+v", st)
		}
	})
}

func TestFailedCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := sqstest.For(t)
		url := f.MustCreateQueue(t, "jobs", nil)
		p := newProducer(t, f, url)
		remove := f.InjectFault(sqstest.Fault{API: "SendMessageBatch", Code: "RequestThrottled", Times: 2})
		res, err := p.SendBatch(t.Context(), bodies(3, "a"))
		remove()
		if err != nil || res[0].Attempts != 3 {
			t.Fatalf("throttled twice: err %v, attempts %d; want sent on the third call", err, res[0].Attempts)
		}

		gone := newProducer(t, f, strings.Replace(url, "jobs", "no-such-queue", 1))
		res, err = gone.SendBatch(t.Context(), bodies(2, "b"))
		if err == nil || res[0].Attempts != 1 || !strings.Contains(res[0].Err.Error(), "no-such-queue") {
			t.Errorf("missing queue: err %v, attempts %d; want a failure after one call that names the queue", res[0].Err, res[0].Attempts)
		}

		slow := newProducer(t, f, url, func(o *producer.Options) {
			o.CallTimeout = time.Second
			o.MaxAttempts = 2
			o.Retry = retry.PolicyFunc(func(int) (time.Duration, bool) { return 0, true })
		})
		remove = f.InjectFault(sqstest.Fault{API: "SendMessageBatch", Latency: 2 * time.Second})
		res, _ = slow.SendBatch(t.Context(), bodies(1, "c"))
		remove()
		if res[0].Err == nil || res[0].Attempts != 2 || !errors.Is(res[0].Err, context.DeadlineExceeded) {
			t.Errorf("timed-out calls: %+v; want a deadline error after 2 attempts", res[0])
		}
	})
}

func TestMessagesRefusedBeforeAnyCall(t *testing.T) {
	f := sqstest.For(t)
	url := f.MustCreateQueue(t, "jobs", nil)
	fifo := f.MustCreateQueue(t, "orders.fifo", map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true"})
	ten := map[string]types.MessageAttributeValue{}
	for i := range 10 {
		ten[string(rune('a'+i))] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String("v")}
	}
	for _, tc := range []struct {
		name string
		url  string
		m    producer.Message
		want string
	}{
		{"empty body", url, producer.Message{}, "body is empty"},
		{"negative delay", url, producer.Message{Body: "x", Delay: -time.Second}, "Delay"},
		{"too large", url, producer.Message{Body: strings.Repeat("x", 1<<20+1)}, "Offloader"},
		{"11 attributes", url, producer.Message{Body: "x", Attributes: func() map[string]types.MessageAttributeValue {
			m := map[string]types.MessageAttributeValue{"k": ten["a"]}
			for k, v := range ten {
				m[k] = v
			}
			return m
		}()}, "11 message attributes"},
		{"long delay with 10 attributes", url, producer.Message{Body: "x", Delay: time.Hour, Attributes: ten}, schedule.Attribute},
		{"FIFO without group", fifo, producer.Message{Body: "x"}, "GroupID"},
		{"FIFO with delay", fifo, producer.Message{Body: "x", GroupID: "g", Delay: time.Second}, "DelaySeconds"},
	} {
		before := f.Requests()
		res, err := newProducer(t, f, tc.url).SendBatch(t.Context(), []producer.Message{tc.m})
		if err == nil || !errors.Is(res[0].Err, producer.ErrInvalid) || !strings.Contains(res[0].Err.Error(), tc.want) {
			t.Errorf("%s: error %v, want ErrInvalid mentioning %q", tc.name, res[0].Err, tc.want)
		}
		if after := f.Requests(); !maps.Equal(after, before) {
			t.Errorf("%s: calls made: %v, then %v", tc.name, before, after)
		}
	}
}

func TestDelaysFIFOAndAttributes(t *testing.T) {
	f := sqstest.For(t)
	url := f.MustCreateQueue(t, "jobs", nil)
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	p := newProducer(t, f, url, func(o *producer.Options) { o.Now = func() time.Time { return now } })
	res, err := p.SendBatch(t.Context(), []producer.Message{
		{Body: "soon", Delay: 10 * time.Minute},
		{Body: "in two days", Delay: 48 * time.Hour, TraceHeader: "Root=1-5759e988-bd862e3fe1be46a994272793"},
	})
	if err != nil {
		t.Fatal(err)
	}
	byBody := map[string]sqstest.MessageInfo{}
	for _, m := range f.Messages(url) {
		byBody[m.Body] = m
	}
	soon, later := byBody["soon"], byBody["in two days"]
	if _, ok := soon.Attributes[schedule.Attribute]; ok || soon.VisibleAt.Sub(soon.Sent) != 10*time.Minute {
		t.Errorf("10-minute delay: attributes %v, delayed %v; want SQS's own delay and no due time", soon.Attributes, soon.VisibleAt.Sub(soon.Sent))
	}
	due, ok, err := schedule.Parse(later.Attributes)
	if !ok || err != nil || !due.Equal(now.Add(48*time.Hour)) || !res[1].Due.Equal(due) {
		t.Errorf("2-day delay: due %v (%v, %v), result %v; want %v", due, ok, err, res[1].Due, now.Add(48*time.Hour))
	}
	if d := later.VisibleAt.Sub(later.Sent); d != 15*time.Minute {
		t.Errorf("2-day delay sent with a native delay of %v, want 15m", d)
	}
	if p.Stats().Delayed != 1 {
		t.Errorf("Stats.Delayed = %d, want 1", p.Stats().Delayed)
	}

	fifo := f.MustCreateQueue(t, "orders.fifo", map[string]string{"FifoQueue": "true"})
	pf := newProducer(t, f, fifo)
	var msgs []producer.Message
	for i, b := range []string{"a1", "b1", "a2", "a3", "b2"} {
		msgs = append(msgs, producer.Message{Body: b, GroupID: b[:1], DeduplicationID: "d" + b + string(rune('0'+i))})
	}
	msgs = append(msgs, producer.Message{Body: "a1-again", GroupID: "a", DeduplicationID: "da10"}) // same dedup ID as a1
	res, err = pf.SendBatch(t.Context(), msgs)
	if err != nil {
		t.Fatal(err)
	}
	if res[5].MessageID != res[0].MessageID || res[0].SequenceNumber == "" {
		t.Errorf("deduplicated send got ID %s, first %s (sequence %q)", res[5].MessageID, res[0].MessageID, res[0].SequenceNumber)
	}
	var got []string
	for _, m := range f.Messages(fifo) {
		got = append(got, m.GroupID+":"+m.Body)
	}
	if strings.Join(got, " ") != "a:a1 b:b1 a:a2 a:a3 b:b2" {
		t.Errorf("FIFO queue holds %v", got)
	}
}

// On a standard queue a GroupID is sent as the MessageGroupId: the tenant
// of an SQS fair queue (fleet.ByGroup caps by it); no deduplication ID is
// needed and a delay is allowed.
func TestGroupIDOnStandardQueueMarksTheTenant(t *testing.T) {
	f := sqstest.For(t)
	url := f.MustCreateQueue(t, "jobs", nil)
	p := newProducer(t, f, url)
	res, err := p.SendBatch(t.Context(), []producer.Message{
		{Body: "a", GroupID: "tenant-a"},
		{Body: "b", GroupID: "tenant-b", Delay: time.Second},
		{Body: "none"},
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.Err != nil {
			t.Fatalf("message %d: %v", i, r.Err)
		}
	}
	var got []string
	for _, m := range f.Messages(url) {
		got = append(got, m.Body+":"+m.GroupID)
	}
	slices.Sort(got)
	if strings.Join(got, " ") != "a:tenant-a b:tenant-b none:" {
		t.Errorf("standard queue holds %v; want each message's GroupID as its MessageGroupId", got)
	}
}

// traceHook stands for an observability package's hook.
func traceHook(ctx context.Context, m *producer.Message) error {
	m.SetAttribute("traceparent", types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")})
	return nil
}

func TestBeforeSendHooks(t *testing.T) {
	f := sqstest.For(t)
	url := f.MustCreateQueue(t, "jobs", nil)
	p := newProducer(t, f, url, func(o *producer.Options) {
		o.BeforeSend = append(o.BeforeSend, traceHook, func(ctx context.Context, m *producer.Message) error {
			if m.Body == "forbidden" {
				return errors.New("no")
			}
			return nil
		})
	})
	nine := map[string]types.MessageAttributeValue{}
	for i := range 9 {
		nine[string(rune('a'+i))] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String("v")}
	}
	res, err := p.SendBatch(t.Context(), []producer.Message{
		{Body: "plain"},
		{Body: "nine attributes", Attributes: nine},
		{Body: "nine and a long delay", Attributes: nine, Delay: time.Hour}, // the due time takes the tenth slot
		{Body: "forbidden"},
	})
	if err == nil || res[3].Err == nil || res[0].Err != nil || res[1].Err != nil || res[2].Err != nil {
		t.Fatalf("results %+v, err %v; want only the hook's refusal to fail", res, err)
	}
	has := map[string]bool{}
	for _, m := range f.Messages(url) {
		_, has[m.Body] = m.Attributes["traceparent"]
	}
	if !has["plain"] || !has["nine attributes"] || has["nine and a long delay"] {
		t.Errorf("traceparent attached: %v; want it where there is room, and the full message sent without it", has)
	}
	if len(nine) != 9 {
		t.Error("the hook changed the caller's attribute map")
	}
}

// Trace context is dropped before a message is: a message that fits SQS's
// size limit only without the attributes a hook added with SetAttribute is
// sent without them, not refused as too large.
func TestTraceContextDroppedBeforeTheMessageForSize(t *testing.T) {
	f := sqstest.For(t)
	url := f.MustCreateQueue(t, "jobs", nil)
	p := newProducer(t, f, url, func(o *producer.Options) { o.BeforeSend = append(o.BeforeSend, traceHook) })
	big := strings.Repeat("x", 1<<20-30) // fits, but not with a traceparent
	res, err := p.SendBatch(t.Context(), []producer.Message{{Body: big}, {Body: "small"}})
	if err != nil {
		t.Fatalf("SendBatch: %v (%+v); want the big message sent without its trace context", err, res[0])
	}
	has := map[int]bool{}
	for _, m := range f.Messages(url) {
		_, has[len(m.Body)] = m.Attributes["traceparent"]
	}
	if len(has) != 2 || has[len(big)] || !has[len("small")] {
		t.Errorf("traceparent by body size: %v; want it on the small message only", has)
	}
	// An attribute the caller set is never dropped: that message is too
	// large.
	withOwn := producer.Message{Body: big, Attributes: map[string]types.MessageAttributeValue{"tenant": {DataType: aws.String("String"), StringValue: aws.String("acme-corporation-of-the-world")}}}
	if res, _ := p.SendBatch(t.Context(), []producer.Message{withOwn}); !errors.Is(res[0].Err, producer.ErrTooLarge) {
		t.Errorf("too large with the caller's own attribute: %v; want ErrTooLarge", res[0].Err)
	}
}

// neverOffload is an Offloader whose threshold no message reaches.
type neverOffload struct{}

func (neverOffload) Offload(context.Context, *producer.Message) (bool, error) { return false, nil }

// A message too large for MaxMessageSize that the configured Offloader did
// not take names both settings, not "configure Options.Offloader".
func TestTooLargeHintWithAnOffloaderThatDidNotTakeIt(t *testing.T) {
	f := sqstest.For(t)
	url := f.MustCreateQueue(t, "jobs", nil)
	p := newProducer(t, f, url, func(o *producer.Options) {
		o.MaxMessageSize = 256 << 10
		o.Offloader = neverOffload{}
	})
	res, _ := p.SendBatch(t.Context(), []producer.Message{{Body: strings.Repeat("x", 300<<10)}})
	err := res[0].Err
	if !errors.Is(err, producer.ErrTooLarge) || strings.Contains(err.Error(), "configure Options.Offloader") ||
		!strings.Contains(err.Error(), "Threshold") || !strings.Contains(err.Error(), "MaxMessageSize (262144)") {
		t.Errorf("error %v; want ErrTooLarge naming the offloader's threshold and MaxMessageSize", err)
	}
}

// sdkRetrier repeats failed calls as the SDK's retryer does, counting
// every request that reaches the queue.
type sdkRetrier struct {
	producer.API
	requests int
}

func (c *sdkRetrier) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	return sdkretry.Do(ctx, optFns, &c.requests, func() (*sqs.SendMessageBatchOutput, error) { return c.API.SendMessageBatch(ctx, in, optFns...) })
}

// Stats.Requests counts every request the queue saw: the producer's calls
// run with the SDK's retries off and are retried by the producer itself,
// so none is made unseen.
func TestRequestsCountEveryRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := sqstest.For(t)
		url := f.MustCreateQueue(t, "jobs", nil)
		c := &sdkRetrier{API: f}
		p := newProducer(t, c, url)
		f.InjectFault(sqstest.Fault{API: "SendMessageBatch", Code: "InternalError", Times: 2})
		res, err := p.SendBatch(t.Context(), bodies(3, "a"))
		if err != nil {
			t.Fatal(err)
		}
		if st := p.Stats(); st.Requests != int64(c.requests) || c.requests != 3 || res[0].Attempts != 3 || st.Retried != 6 {
			t.Errorf("Stats = %+v, %d attempts; the queue saw %d requests; want 3 counted, 3 attempts, 6 entries retried", st, res[0].Attempts, c.requests)
		}
	})
}
