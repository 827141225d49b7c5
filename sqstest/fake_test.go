package sqstest_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/sqsworker/sqsworker/harness/sqsfake"
	"github.com/sqsworker/sqsworker/sqstest"
)

func receive(t *testing.T, f *sqstest.Fake, url string, n int32, wait int32) []types.Message {
	t.Helper()
	out, err := f.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(url), MaxNumberOfMessages: n, WaitTimeSeconds: wait,
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
	})
	if err != nil {
		t.Fatalf("receive: %v", err)
	}
	return out.Messages
}

func TestAdvanceMakesHiddenMessagesVisible(t *testing.T) {
	f := sqstest.For(t)
	url := f.MustCreateQueue(t, "q", map[string]string{"VisibilityTimeout": "30"})
	f.MustSend(t, url, "a")
	if got := receive(t, f, url, 1, 0); len(got) != 1 {
		t.Fatalf("first receive got %d messages, want 1", len(got))
	}
	if got := receive(t, f, url, 1, 0); len(got) != 0 {
		t.Fatalf("message visible during its visibility timeout")
	}
	f.Advance(30 * time.Second)
	got := receive(t, f, url, 1, 0)
	if len(got) != 1 || got[0].Attributes["ApproximateReceiveCount"] != "2" {
		t.Fatalf("after Advance got %v, want the message with receive count 2", got)
	}
}

func TestLongPollWakesOnAdvance(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := sqstest.For(t)
		url := f.MustCreateQueue(t, "q", nil)
		f.MustSend(t, url, "a", func(in *sqs.SendMessageInput) { in.DelaySeconds = 600 })
		done := make(chan []types.Message)
		go func() { done <- receive(t, f, url, 1, 20) }()
		synctest.Wait() // the long poll is parked
		start := time.Now()
		f.Advance(10 * time.Minute)
		got := <-done
		if len(got) != 1 || time.Since(start) != 0 {
			t.Fatalf("got %d messages after %v; want 1 at once", len(got), time.Since(start))
		}
	})
}

func TestLongPollEndsWithContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := sqstest.For(t)
		url := f.MustCreateQueue(t, "q", nil)
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error)
		go func() {
			_, err := f.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), WaitTimeSeconds: 20})
			errc <- err
		}()
		time.Sleep(3 * time.Second)
		cancel()
		err := <-errc
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		var ce *smithy.CanceledError
		if !errors.As(err, &ce) {
			t.Fatalf("err = %T, want a *smithy.CanceledError inside, as the SDK returns", err)
		}
	})
}

func TestInjectFaultTimesAndRemove(t *testing.T) {
	f := sqstest.For(t)
	url := f.MustCreateQueue(t, "q", nil)
	f.InjectFault(sqstest.Fault{API: "SendMessage", Code: "RequestThrottled", Times: 2})
	in := &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("x")}
	for i := range 2 {
		_, err := f.SendMessage(context.Background(), in)
		var thr *types.RequestThrottled
		if !errors.As(err, &thr) {
			t.Fatalf("call %d: err = %v, want RequestThrottled", i+1, err)
		}
	}
	if _, err := f.SendMessage(context.Background(), in); err != nil {
		t.Fatalf("third call: %v, want success after Times failures", err)
	}

	remove := f.InjectFault(sqstest.Fault{API: "ReceiveMessage, DeleteMessage", Code: "InternalError"})
	_, err := f.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url)})
	var re *awshttp.ResponseError
	if !errors.As(err, &re) || re.HTTPStatusCode() != http.StatusInternalServerError {
		t.Fatalf("err = %v, want an HTTP 500 response error", err)
	}
	var api smithy.APIError
	if !errors.As(err, &api) || api.ErrorCode() != "InternalError" || api.ErrorFault() != smithy.FaultServer {
		t.Fatalf("err = %v, want InternalError server fault", err)
	}
	remove()
	if got := receive(t, f, url, 10, 0); len(got) != 1 {
		t.Fatalf("after removing the fault got %d messages, want 1 (failed sends stored nothing)", len(got))
	}
}

func TestLatencyUsesVirtualTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := sqstest.For(t, func(o *sqstest.Options) { o.Latency = 10 * time.Millisecond })
		url := f.MustCreateQueue(t, "q", nil)
		f.InjectFault(sqstest.Fault{API: "SendMessage", Latency: 5 * time.Millisecond})
		start := time.Now()
		f.MustSend(t, url, "x")
		if d := time.Since(start); d != 15*time.Millisecond {
			t.Fatalf("send took %v, want 15ms (10ms latency + 5ms fault)", d)
		}
	})
}

func TestRequestCounting(t *testing.T) {
	f := sqstest.For(t)
	url := f.MustCreateQueue(t, "q", nil)
	f.MustSend(t, url, "x")
	receive(t, f, url, 1, 0)
	receive(t, f, url, 1, 0)
	want := map[string]int{"CreateQueue": 1, "SendMessage": 1, "ReceiveMessage": 2}
	got := f.Requests()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("Requests()[%s] = %d, want %d", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("Requests() = %v; want only the APIs called", got)
	}
	got["ReceiveMessage"] = 99 // a snapshot: the Fake's counts stay
	if n := f.Requests()["ReceiveMessage"]; n != 2 {
		t.Errorf("after changing a snapshot, Requests()[ReceiveMessage] = %d, want 2", n)
	}
	if s := fmt.Sprint(f.Requests()); s != "map[CreateQueue:1 ReceiveMessage:2 SendMessage:1]" {
		t.Errorf("printed: %q", s)
	}
}

func TestMessagesSnapshotAndDLQHelper(t *testing.T) {
	f := sqstest.For(t)
	src, dlq := f.MustCreateQueueWithDLQ(t, "jobs", 1, map[string]string{"VisibilityTimeout": "5"})
	f.MustSend(t, src, "poison")
	receive(t, f, src, 1, 0)
	if v, in, d := len(f.Messages(src, "visible")), len(f.Messages(src, "inflight")), len(f.Messages(src, "delayed")); v != 0 || in != 1 || d != 0 {
		t.Fatalf("Count = %d/%d/%d, want 0 visible, 1 in flight", v, in, d)
	}
	f.Advance(5 * time.Second)
	if got := receive(t, f, src, 1, 0); len(got) != 0 {
		t.Fatalf("message past maxReceiveCount was delivered again")
	}
	msgs := f.Messages(dlq)
	if len(msgs) != 1 || msgs[0].Body != "poison" || msgs[0].DeadLetterSourceARN != sqsfake.ARN(src) {
		t.Fatalf("DLQ snapshot = %+v, want the poison message from %s", msgs, sqsfake.ARN(src))
	}
	if f.Messages("https://nowhere") != nil {
		t.Fatal("Messages of an unknown queue should be nil")
	}
}

// Messages with states lists only the messages in those states, in arrival
// order.
func TestMessagesByState(t *testing.T) {
	f := sqstest.For(t)
	url := f.MustCreateQueue(t, "q", nil)
	f.MustSend(t, url, "taken")
	receive(t, f, url, 1, 0)
	f.MustSend(t, url, "later", func(in *sqs.SendMessageInput) { in.DelaySeconds = 60 })
	f.MustSend(t, url, "ready")
	bodies := func(ms []sqstest.MessageInfo) (out []string) {
		for _, m := range ms {
			out = append(out, m.Body+"/"+m.State)
		}
		return out
	}
	for _, tc := range []struct {
		states []string
		want   []string
	}{
		{nil, []string{"taken/inflight", "later/delayed", "ready/visible"}},
		{[]string{"visible"}, []string{"ready/visible"}},
		{[]string{"inflight"}, []string{"taken/inflight"}},
		{[]string{"delayed"}, []string{"later/delayed"}},
		{[]string{"visible", "delayed"}, []string{"later/delayed", "ready/visible"}},
		{[]string{"gone"}, nil},
	} {
		if got := bodies(f.Messages(url, tc.states...)); !slices.Equal(got, tc.want) {
			t.Errorf("Messages(%v) = %v, want %v", tc.states, got, tc.want)
		}
	}
	if got := f.Messages(url, "gone"); got == nil {
		t.Error("Messages of a known queue with no match is nil, want empty")
	}
}

func TestFIFOPairHelper(t *testing.T) {
	f := sqstest.For(t)
	src, dlq := f.MustCreateQueueWithDLQ(t, "orders.fifo", 3, nil)
	if src == dlq || sqsfake.ARN(dlq) == "" {
		t.Fatal("FIFO pair not created")
	}
	f.MustSend(t, src, "a", sqsfake.Group("g", "1"))
	got := receive(t, f, src, 10, 0)
	if len(got) != 1 || got[0].Attributes["MessageGroupId"] != "g" {
		t.Fatalf("got %+v", got)
	}
}

func TestLongPollSeesShortenedVisibility(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := sqstest.For(t)
		url := f.MustCreateQueue(t, "q", map[string]string{"VisibilityTimeout": "300"})
		f.MustSend(t, url, "a")
		first := receive(t, f, url, 1, 0)
		done := make(chan []types.Message)
		go func() { done <- receive(t, f, url, 1, 20) }()
		synctest.Wait() // parked: the message is hidden for 300s
		if _, err := f.ChangeMessageVisibility(context.Background(), &sqs.ChangeMessageVisibilityInput{
			QueueUrl: aws.String(url), ReceiptHandle: first[0].ReceiptHandle, VisibilityTimeout: 2,
		}); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		got := <-done
		if len(got) != 1 || time.Since(start) != 2*time.Second {
			t.Fatalf("got %d messages after %v; want the message after 2s", len(got), time.Since(start))
		}
	})
}

func TestNewRefusesBadOptions(t *testing.T) {
	for name, fn := range map[string]func(*sqstest.Options){
		"region":  func(o *sqstest.Options) { o.Region = "Mars" },
		"account": func(o *sqstest.Options) { o.AccountID = "acme" },
		"latency": func(o *sqstest.Options) { o.Latency = -time.Second },
	} {
		if f, err := sqstest.New(fn); err == nil || f != nil {
			t.Errorf("%s: New = %v, %v; want an error", name, f, err)
		}
	}
	if _, err := sqstest.New(func(o *sqstest.Options) { o.Region = "eu-west-3"; o.AccountID = "123456789012" }); err != nil {
		t.Errorf("valid options refused: %v", err)
	}
}

// TestReceiptHandles checks what a receipt handle names: one receive of one
// message in one queue. A handle from another queue or a damaged one is
// ReceiptHandleIsInvalid; a handle from an earlier receive deletes nothing;
// each message's strings are its own, so changing one changes no other.
func TestReceiptHandles(t *testing.T) {
	f := sqstest.For(t)
	ctx := context.Background()
	url := f.MustCreateQueue(t, "q", map[string]string{"VisibilityTimeout": "30"})
	other := f.MustCreateQueue(t, "other", nil)
	f.MustSend(t, url, "a")
	f.MustSend(t, url, "b")
	f.MustSend(t, other, "c")
	first := receive(t, f, url, 10, 0)
	if len(first) != 2 {
		t.Fatalf("received %d messages, want 2", len(first))
	}
	*first[0].Body, *first[0].ReceiptHandle = "changed", "changed"
	if *first[1].Body != "b" && *first[1].Body != "a" || *first[1].ReceiptHandle == "changed" {
		t.Fatalf("changing one received message's strings changed another's: %+v", first[1])
	}
	fromOther := receive(t, f, other, 1, 0)[0].ReceiptHandle
	h := aws.ToString(first[1].ReceiptHandle)
	for name, bad := range map[string]string{
		"another queue's": aws.ToString(fromOther), "truncated": h[:len(h)-4], "cut short by 5": h[:len(h)-5], "not base64": h[:10] + "!" + h[11:], "arbitrary": "abc",
	} {
		_, err := f.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: aws.String(bad)})
		var api smithy.APIError
		if !errors.As(err, &api) || api.ErrorCode() != "ReceiptHandleIsInvalid" {
			t.Errorf("delete with %s handle: %v, want ReceiptHandleIsInvalid", name, err)
		}
	}
	f.Advance(30 * time.Second)
	if again := receive(t, f, url, 10, 0); len(again) != 2 {
		t.Fatalf("received %d messages again, want 2", len(again))
	}
	if _, err := f.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: aws.String(h)}); err != nil {
		t.Fatalf("delete with an earlier receive's handle: %v, want success", err)
	}
	if n := len(f.Messages(url)); n != 2 {
		t.Fatalf("an earlier receive's handle deleted a message: %d left, want 2", n)
	}
}

// TestTimestampAttributes checks the two times a receive reports: when the
// message was sent, and its first receive, which later receives keep.
func TestTimestampAttributes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := sqstest.For(t)
		url := f.MustCreateQueue(t, "q", map[string]string{"VisibilityTimeout": "30"})
		sent := time.Now().UnixMilli()
		f.MustSend(t, url, "a")
		time.Sleep(time.Second)
		first := receive(t, f, url, 1, 0)[0].Attributes
		f.Advance(time.Minute)
		again := receive(t, f, url, 1, 0)[0].Attributes
		want := map[string]string{"SentTimestamp": strconv.FormatInt(sent, 10), "ApproximateFirstReceiveTimestamp": strconv.FormatInt(sent+1000, 10)}
		for k, v := range want {
			if first[k] != v || again[k] != v {
				t.Errorf("%s: first receive %q, second %q; want %q both times", k, first[k], again[k], v)
			}
		}
		if first["ApproximateReceiveCount"] != "1" || again["ApproximateReceiveCount"] != "2" {
			t.Errorf("receive counts %q, %q; want 1, 2", first["ApproximateReceiveCount"], again["ApproximateReceiveCount"])
		}
	})
}

// TestDeletesKeepArrivalOrder deletes scattered messages, in batches and
// one by one, and checks that the rest keep their arrival order.
func TestDeletesKeepArrivalOrder(t *testing.T) {
	f := sqstest.For(t)
	ctx := context.Background()
	url := f.MustCreateQueue(t, "q", nil)
	for i := range 30 {
		f.MustSend(t, url, strconv.Itoa(i))
	}
	got := receive(t, f, url, 10, 0)
	got = append(got, receive(t, f, url, 10, 0)...)
	byBody := map[string]*string{}
	for _, m := range got {
		byBody[*m.Body] = m.ReceiptHandle
	}
	del := func(bodies ...string) {
		in := &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url)}
		for i, b := range bodies {
			in.Entries = append(in.Entries, types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: byBody[b]})
		}
		if out, err := f.DeleteMessageBatch(ctx, in); err != nil || len(out.Failed) > 0 {
			t.Fatalf("delete %v: %v %+v", bodies, err, out)
		}
	}
	del("1", "4", "5", "9", "17")
	del("0", "2")
	if _, err := f.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: byBody["12"]}); err != nil {
		t.Fatal(err)
	}
	del("3", "19", "6")
	var left []string
	for _, m := range f.Messages(url) {
		left = append(left, m.Body)
	}
	var want []string
	for i := range 30 {
		switch i {
		case 0, 1, 2, 3, 4, 5, 6, 9, 12, 17, 19:
			continue
		}
		want = append(want, strconv.Itoa(i))
	}
	if fmt.Sprint(left) != fmt.Sprint(want) {
		t.Fatalf("left %v, want %v", left, want)
	}
}

// TestReceiveReturnsTheSystemAttributesNamed checks that a receive gets
// the system attributes it names, by either field, and no others.
func TestReceiveReturnsTheSystemAttributesNamed(t *testing.T) {
	f := sqstest.For(t)
	url := f.MustCreateQueue(t, "q", map[string]string{"VisibilityTimeout": "0"})
	f.MustSend(t, url, "a")
	for _, tc := range []struct {
		name      string
		in        sqs.ReceiveMessageInput
		want      []string
		wantCount string
	}{
		{"none", sqs.ReceiveMessageInput{}, nil, ""},
		{"two by name", sqs.ReceiveMessageInput{MessageSystemAttributeNames: []types.MessageSystemAttributeName{
			types.MessageSystemAttributeNameApproximateReceiveCount, types.MessageSystemAttributeNameSentTimestamp,
		}}, []string{"ApproximateReceiveCount", "SentTimestamp"}, "2"},
		{"the deprecated field", sqs.ReceiveMessageInput{AttributeNames: []types.QueueAttributeName{"ApproximateReceiveCount"}},
			[]string{"ApproximateReceiveCount"}, "3"},
		{"All", sqs.ReceiveMessageInput{MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll}},
			[]string{"ApproximateFirstReceiveTimestamp", "ApproximateReceiveCount", "SenderId", "SentTimestamp"}, "4"},
		{"a name SQS does not know", sqs.ReceiveMessageInput{AttributeNames: []types.QueueAttributeName{"NoSuchAttribute"}}, nil, ""},
	} {
		in := tc.in
		in.QueueUrl = aws.String(url)
		out, err := f.ReceiveMessage(context.Background(), &in)
		if err != nil || len(out.Messages) != 1 {
			t.Fatalf("%s: receive: %d messages, %v", tc.name, len(out.Messages), err)
		}
		got := out.Messages[0].Attributes
		var names []string
		for k := range got {
			names = append(names, k)
		}
		slices.Sort(names)
		if !slices.Equal(names, tc.want) {
			t.Errorf("%s: attributes %v, want %v", tc.name, names, tc.want)
		}
		if tc.wantCount != "" && got["ApproximateReceiveCount"] != tc.wantCount {
			t.Errorf("%s: ApproximateReceiveCount %q, want %q", tc.name, got["ApproximateReceiveCount"], tc.wantCount)
		}
	}
}
