package sqstest_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/sqsworker/sqsworker/sqstest"
)

func TestFaultEveryNthCall(t *testing.T) {
	f := sqstest.For(t)
	url := f.MustCreateQueue(t, "q", nil)
	f.InjectFault(sqstest.Fault{API: "SendMessage", Code: "RequestThrottled", Every: 3})
	var failed []int
	for i := 1; i <= 9; i++ {
		if _, err := f.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("x")}); err != nil {
			failed = append(failed, i)
		}
	}
	if fmt.Sprint(failed) != "[3 6 9]" {
		t.Fatalf("failed calls %v, want [3 6 9]", failed)
	}
	if v := len(f.Messages(url, "visible")); v != 6 {
		t.Fatalf("%d messages stored, want 6 (failed calls store nothing)", v)
	}
}

func TestFaultAfterEffectLosesTheResponse(t *testing.T) {
	f := sqstest.For(t)
	url := f.MustCreateQueue(t, "q", nil)
	f.MustSend(t, url, "a")
	f.MustSend(t, url, "b")
	f.InjectFault(sqstest.Fault{API: "ReceiveMessage", Code: "InternalError", AfterEffect: true, Times: 1})
	out, err := f.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10})
	if err == nil || out != nil {
		t.Fatalf("receive = %v, %v; want no output and the injected error", out, err)
	}
	if v, inflight := len(f.Messages(url, "visible")), len(f.Messages(url, "inflight")); v != 0 || inflight != 2 {
		t.Fatalf("visible %d, in flight %d; want 0 and 2: the receive took effect although its response was lost", v, inflight)
	}
}

func TestFaultHangUntilContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := sqstest.For(t)
		url := f.MustCreateQueue(t, "q", nil)
		f.MustSend(t, url, "a")
		m := receive(t, f, url, 1, 0)[0]
		f.InjectFault(sqstest.Fault{API: "DeleteMessageBatch", Hang: true})
		ctx, cancel := context.WithTimeout(context.Background(), 7*time.Second)
		defer cancel()
		start := time.Now()
		_, err := f.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url),
			Entries: []types.DeleteMessageBatchRequestEntry{{Id: aws.String("0"), ReceiptHandle: m.ReceiptHandle}}})
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != 7*time.Second {
			t.Fatalf("err = %v after %v; want the context's deadline after 7s", err, time.Since(start))
		}
		if inflight := len(f.Messages(url, "inflight")); inflight != 1 {
			t.Fatalf("in flight %d, want 1: a hanging call without AfterEffect takes no effect", inflight)
		}
	})
}

func TestFaultHangAfterEffect(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := sqstest.For(t)
		url := f.MustCreateQueue(t, "q", nil)
		f.MustSend(t, url, "a")
		m := receive(t, f, url, 1, 0)[0]
		f.InjectFault(sqstest.Fault{API: "DeleteMessage", Hang: true, AfterEffect: true})
		ctx, cancel := context.WithCancel(context.Background())
		go func() { time.Sleep(time.Second); cancel() }()
		_, err := f.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		if n := len(f.Messages(url, "visible", "inflight")); n != 0 {
			t.Fatalf("%d messages left, want 0: the delete took effect before the call hung", n)
		}
	})
}

func TestFaultResponseDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := sqstest.For(t)
		url := f.MustCreateQueue(t, "q", nil)
		for _, b := range []string{"a", "b", "c"} {
			f.MustSend(t, url, b)
		}
		f.InjectFault(sqstest.Fault{API: "ReceiveMessage", AfterEffect: true, ResponseDelay: 2 * time.Second})
		in := &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 1, VisibilityTimeout: 60}

		// A caller that waits gets the response, late.
		start := time.Now()
		out, err := f.ReceiveMessage(context.Background(), in)
		if err != nil || len(out.Messages) != 1 || time.Since(start) != 2*time.Second {
			t.Fatalf("receive = %v, %v after %v; want one message after 2s", out, err, time.Since(start))
		}

		// A caller that gives up first never sees it, but the receive took
		// effect: the message is hidden and was counted as received.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		start = time.Now()
		out, err = f.ReceiveMessage(ctx, in)
		if !errors.Is(err, context.DeadlineExceeded) || out != nil || time.Since(start) != time.Second {
			t.Fatalf("receive = %v, %v after %v; want the context's deadline after 1s and no output", out, err, time.Since(start))
		}
		if v, inflight := len(f.Messages(url, "visible")), len(f.Messages(url, "inflight")); v != 1 || inflight != 2 {
			t.Fatalf("visible %d, in flight %d; want 1 and 2: the interrupted receive took effect", v, inflight)
		}
		for _, m := range f.Messages(url) {
			if m.Body != "c" && m.ReceiveCount != 1 {
				t.Errorf("message %q received %d times, want 1", m.Body, m.ReceiveCount)
			}
		}

		// With Err, the late response is an error.
		f.InjectFault(sqstest.Fault{API: "DeleteQueue", AfterEffect: true, ResponseDelay: time.Second, Code: "InternalError"})
		start = time.Now()
		if _, err := f.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(url)}); err == nil || time.Since(start) != time.Second {
			t.Fatalf("DeleteQueue = %v after %v; want the injected error after 1s", err, time.Since(start))
		}
	})
}

func TestFaultEntries(t *testing.T) {
	f := sqstest.For(t)
	url := f.MustCreateQueue(t, "q", nil)
	for i := range 10 {
		f.MustSend(t, url, fmt.Sprint(i))
	}
	msgs := receive(t, f, url, 10, 0)
	f.InjectFault(sqstest.Fault{API: "DeleteMessageBatch", Code: "RequestThrottled", Entries: true, Every: 4})
	in := &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url)}
	for i, m := range msgs {
		in.Entries = append(in.Entries, types.DeleteMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), ReceiptHandle: m.ReceiptHandle})
	}
	out, err := f.DeleteMessageBatch(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range out.Failed {
		ids = append(ids, aws.ToString(e.Id))
		if e.SenderFault || aws.ToString(e.Code) != "RequestThrottled" {
			t.Errorf("entry %s: code %s sender %v; want RequestThrottled, not the sender's fault", aws.ToString(e.Id), aws.ToString(e.Code), e.SenderFault)
		}
	}
	if fmt.Sprint(ids) != "[3 7]" || len(out.Successful) != 8 {
		t.Fatalf("failed entries %v, %d successful; want [3 7] and 8", ids, len(out.Successful))
	}
	if inflight := len(f.Messages(url, "inflight")); inflight != 2 {
		t.Fatalf("in flight %d, want 2: failed entries take no effect", inflight)
	}
}

// An omitted entry is in neither list of the response and takes no effect:
// a message not sent, a message not deleted.
func TestFaultEntriesOmitted(t *testing.T) {
	f := sqstest.For(t)
	url := f.MustCreateQueue(t, "q", nil)
	f.InjectFault(sqstest.Fault{API: "SendMessageBatch", Entries: true, Omit: true, Times: 1})
	send := &sqs.SendMessageBatchInput{QueueUrl: aws.String(url)}
	for i := range 3 {
		send.Entries = append(send.Entries, types.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), MessageBody: aws.String(fmt.Sprint("m", i))})
	}
	sent, err := f.SendMessageBatch(context.Background(), send)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range sent.Successful {
		ids = append(ids, aws.ToString(e.Id))
	}
	if fmt.Sprint(ids) != "[1 2]" || len(sent.Failed) != 0 {
		t.Fatalf("successful %v, failed %v; want [1 2] and none: entry 0 left out", ids, sent.Failed)
	}
	if visible := len(f.Messages(url, "visible")); visible != 2 {
		t.Fatalf("%d messages in the queue, want 2: the omitted entry was not sent", visible)
	}

	f.InjectFault(sqstest.Fault{API: "DeleteMessageBatch", Entries: true, Omit: true, Every: 2})
	msgs := receive(t, f, url, 10, 0)
	del := &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url)}
	for i, m := range msgs {
		del.Entries = append(del.Entries, types.DeleteMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), ReceiptHandle: m.ReceiptHandle})
	}
	deleted, err := f.DeleteMessageBatch(context.Background(), del)
	if err != nil {
		t.Fatal(err)
	}
	if len(deleted.Successful) != 1 || aws.ToString(deleted.Successful[0].Id) != "0" || len(deleted.Failed) != 0 {
		t.Fatalf("successful %v, failed %v; want entry 0 only, entry 1 left out", deleted.Successful, deleted.Failed)
	}
	if inflight := len(f.Messages(url, "inflight")); inflight != 1 {
		t.Fatalf("%d messages in flight, want 1: the omitted entry was not deleted", inflight)
	}
}

func TestFaultContradictionsPanic(t *testing.T) {
	for _, ft := range []sqstest.Fault{
		{Entries: true, Hang: true, Code: "RequestThrottled"},
		{Entries: true},
		{Omit: true, Code: "RequestThrottled"},
		{AfterEffect: true},
		{Every: -1},
		{ResponseDelay: time.Second, Code: "RequestThrottled"},
		{AfterEffect: true, ResponseDelay: -time.Second, Code: "RequestThrottled"},
		{Code: "RequestThrottled", Err: errors.New("and this")},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("InjectFault(%+v) did not panic", ft)
				}
			}()
			sqstest.For(t).InjectFault(ft)
		}()
	}
}

// Fault.Code fails a call with the error SQS answers with under that code,
// wrapped as the SDK wraps it, with SQS's HTTP status.
func TestFaultCode(t *testing.T) {
	for _, tc := range []struct {
		code   string
		status int
		fault  smithy.ErrorFault
	}{
		{"RequestThrottled", http.StatusBadRequest, smithy.FaultClient},
		{"InternalError", http.StatusInternalServerError, smithy.FaultServer},
		{"ServiceUnavailable", http.StatusServiceUnavailable, smithy.FaultServer},
		{"AccessDenied", http.StatusBadRequest, smithy.FaultClient},
	} {
		f := sqstest.For(t)
		url := f.MustCreateQueue(t, "q", nil)
		f.InjectFault(sqstest.Fault{API: "SendMessage", Code: tc.code, Times: 1})
		_, err := f.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("x")})
		var op *smithy.OperationError
		var api smithy.APIError
		var resp *awshttp.ResponseError
		if !errors.As(err, &op) || !errors.As(err, &api) || !errors.As(err, &resp) {
			t.Fatalf("%s: error %v (%T) is not wrapped as the SDK wraps it", tc.code, err, err)
		}
		if api.ErrorCode() != tc.code || api.ErrorFault() != tc.fault || resp.HTTPStatusCode() != tc.status {
			t.Errorf("%s: code %s, fault %v, status %d; want %s, %v, %d", tc.code, api.ErrorCode(), api.ErrorFault(), resp.HTTPStatusCode(), tc.code, tc.fault, tc.status)
		}
		var throttled *types.RequestThrottled
		if errors.As(err, &throttled) != (tc.code == "RequestThrottled") {
			t.Errorf("%s: errors.As *types.RequestThrottled = %v", tc.code, !(tc.code == "RequestThrottled"))
		}
		if _, err := f.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("x")}); err != nil {
			t.Errorf("%s: the second call failed too (Times: 1): %v", tc.code, err)
		}
	}
}
