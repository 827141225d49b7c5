package sqslambda_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/sqstest"
	"github.com/sqsworker/sqsworker/worker"
	"github.com/sqsworker/sqsworker/worker/sqslambda"
)

// jobs is the handler of the backoff tests: "ok…" succeeds, "flaky…" fails,
// "poison…" is permanent, "later…" asks for 7 s.
var jobs = worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
	switch {
	case strings.HasPrefix(m.Body, "flaky"):
		return errors.New("downstream unavailable")
	case strings.HasPrefix(m.Body, "poison"):
		return retry.Permanent(errors.New("cannot decode " + m.Body))
	case strings.HasPrefix(m.Body, "later"):
		return retry.After(7*time.Second, errors.New("rate limited"))
	}
	return nil
})

func newFakeQueue(t *testing.T, name string) (*sqstest.Fake, string, string) {
	f := sqstest.For(t)
	src, dlqURL := f.MustCreateQueueWithDLQ(t, name, 10, map[string]string{"VisibilityTimeout": "30"})
	return f, src, dlqURL
}

func TestFailedRecordComesBackAfterThePolicyDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, _ := newFakeQueue(t, "orders")
		for _, b := range []string{"ok-1", "flaky-1", "later-1", "ok-2"} {
			f.MustSend(t, src, b)
		}
		h := mustNew(t, jobs, func(o *sqslambda.Options) {
			o.Logger = quiet
			o.Client = f
			o.RetryPolicy = fixedPolicy(3, 2*time.Second)
		})
		ev := receiveEvent(t, f, src, 10)
		resp, err := h.Handle(t.Context(), ev)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := bodiesOf(ev, failedIDs(resp)), []string{"flaky-1", "later-1"}; !slices.Equal(got, want) {
			t.Fatalf("failures %v, want %v", got, want)
		}
		if n := f.Requests()["ChangeMessageVisibilityBatch"]; n != 1 {
			t.Errorf("%d ChangeMessageVisibilityBatch calls, want 1 for both records", n)
		}
		if d := time.Until(messageByBody(t, f, src, "flaky-1").VisibleAt); d != 2*time.Second {
			t.Errorf("flaky-1 visible again in %v, want the policy's 2s (not the 30s visibility timeout)", d)
		}
		if d := time.Until(messageByBody(t, f, src, "later-1").VisibleAt); d != 7*time.Second {
			t.Errorf("later-1 visible again in %v, want exactly retry.After's 7s", d)
		}
		if v, inflight := len(f.Messages(src, "visible")), len(f.Messages(src, "inflight")); v != 0 || inflight != 4 {
			t.Fatalf("queue: %d visible, %d in flight; want all 4 in flight (Lambda deletes the successes)", v, inflight)
		}

		time.Sleep(2 * time.Second)
		again := receiveEvent(t, f, src, 10)
		if got := bodiesOf(again, idsOf(again)); !slices.Equal(got, []string{"flaky-1"}) {
			t.Fatalf("after 2s received %v, want flaky-1", got)
		}
		if again.Records[0].Attributes["ApproximateReceiveCount"] != "2" {
			t.Errorf("receive count = %s, want 2", again.Records[0].Attributes["ApproximateReceiveCount"])
		}
	})
}

func TestPermanentGoesToTheDLQAndIsNotReported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, dlqURL := newFakeQueue(t, "orders")
		f.MustSend(t, src, "ok-1")
		f.MustSend(t, src, "poison-1", func(in *sqs.SendMessageInput) {
			in.MessageAttributes = map[string]types.MessageAttributeValue{"tenant": {DataType: aws.String("String"), StringValue: aws.String("acme")}}
		})
		h := mustNew(t, jobs, func(o *sqslambda.Options) {
			o.Logger = quiet
			o.Client = f
			o.HandlerName = "orders-fn"
		})
		ev := receiveEvent(t, f, src, 10)
		resp, err := h.Handle(t.Context(), ev)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.BatchItemFailures) != 0 {
			t.Fatalf("failures %v; a record moved to the DLQ is not reported", bodiesOf(ev, failedIDs(resp)))
		}
		if got := sortedBodies(f, src); !slices.Equal(got, []string{"ok-1"}) {
			t.Errorf("source holds %v; the poison record must be deleted after its DLQ copy", got)
		}
		dead := f.Messages(dlqURL)
		if len(dead) != 1 || dead[0].Body != "poison-1" {
			t.Fatalf("DLQ = %+v", dead)
		}
		p, ok := dlq.ParseProvenance(dead[0].Attributes)
		if !ok {
			t.Fatalf("DLQ message has no provenance: %v", dead[0].Attributes)
		}
		if !strings.Contains(p.Error, "permanent failure") || !strings.Contains(p.Error, "cannot decode poison-1") ||
			p.Handler != "orders-fn" || p.SourceQueue != src || p.Attempt != 1 {
			t.Errorf("provenance = %+v", p)
		}
		if aws.ToString(dead[0].Attributes["tenant"].StringValue) != "acme" {
			t.Errorf("the message's own attribute was not kept: %v", dead[0].Attributes)
		}
		// A second dead-lettering reuses the discovered DLQ.
		calls := f.Requests()["GetQueueAttributes"]
		f.MustSend(t, src, "poison-2")
		f.Advance(time.Minute) // ok-1 back in view too, nobody deleted it
		if _, err := h.Handle(t.Context(), receiveEvent(t, f, src, 10)); err != nil {
			t.Fatal(err)
		}
		if n := f.Requests()["GetQueueAttributes"]; n != calls {
			t.Errorf("GetQueueAttributes called %d more times; the DLQ must be discovered once per queue", n-calls)
		}
		if n := len(f.Messages(dlqURL)); n != 2 {
			t.Errorf("DLQ holds %d messages, want 2", n)
		}
	})
}

func TestExhaustedRetriesGoToTheDLQ(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, dlqURL := newFakeQueue(t, "orders")
		f.MustSend(t, src, "flaky-doomed")
		h := mustNew(t, jobs, func(o *sqslambda.Options) {
			o.Logger = quiet
			o.Client = f
			o.RetryPolicy = fixedPolicy(2, time.Second)
		})
		for attempt := 1; attempt <= 3; attempt++ {
			ev := receiveEvent(t, f, src, 10)
			if len(ev.Records) != 1 {
				t.Fatalf("attempt %d: received %d records", attempt, len(ev.Records))
			}
			resp, err := h.Handle(t.Context(), ev)
			if err != nil {
				t.Fatal(err)
			}
			if reported := len(resp.BatchItemFailures) == 1; reported != (attempt < 3) {
				t.Fatalf("attempt %d: reported=%v", attempt, reported)
			}
			time.Sleep(time.Second)
		}
		dead := f.Messages(dlqURL)
		if len(dead) != 1 || !attrContains(dead[0], "retries exhausted after 3 attempts") {
			t.Fatalf("DLQ = %+v, want the message with its reason", dead)
		}
		if n := len(f.Messages(src)); n != 0 {
			t.Errorf("source still holds %d messages", n)
		}
	})
}

func TestFailedMoveIsReportedAndKept(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, dlqURL := newFakeQueue(t, "orders")
		f.MustSend(t, src, "poison-1")
		f.InjectFault(sqstest.Fault{API: "SendMessageBatch", Code: "InternalError"})
		h := mustNew(t, jobs, func(o *sqslambda.Options) { o.Logger = quiet; o.Client = f })
		ev := receiveEvent(t, f, src, 10)
		resp, err := h.Handle(t.Context(), ev)
		if err != nil {
			t.Fatal(err)
		}
		if got := bodiesOf(ev, failedIDs(resp)); !slices.Equal(got, []string{"poison-1"}) {
			t.Fatalf("failures %v; a record whose move failed must be reported", got)
		}
		if len(f.Messages(dlqURL)) != 0 || len(f.Messages(src)) != 1 {
			t.Fatal("the record must stay in the source and not reach the DLQ")
		}
	})
}

func TestNoRedrivePolicyReportsInsteadOfMoving(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := sqstest.For(t)
		src := f.MustCreateQueue(t, "orders", map[string]string{"VisibilityTimeout": "30"})
		f.MustSend(t, src, "poison-1")
		h := mustNew(t, jobs, func(o *sqslambda.Options) { o.Logger = quiet; o.Client = f })
		ev := receiveEvent(t, f, src, 10)
		resp, err := h.Handle(t.Context(), ev)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.BatchItemFailures) != 1 || len(f.Messages(src)) != 1 {
			t.Fatalf("failures %v; without a DLQ the record is reported and kept", failedIDs(resp))
		}
	})
}

func TestVisibilityChangesGoInBatchesOfTen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, _ := newFakeQueue(t, "orders")
		for i := range 25 {
			f.MustSend(t, src, fmt.Sprintf("flaky-%02d", i))
		}
		ev := receiveEvent(t, f, src, 10)
		ev.Records = append(ev.Records, receiveEvent(t, f, src, 10).Records...)
		ev.Records = append(ev.Records, receiveEvent(t, f, src, 10).Records...)
		h := mustNew(t, jobs, func(o *sqslambda.Options) {
			o.Logger = quiet
			o.Client = f
			o.RetryPolicy = fixedPolicy(3, 4*time.Second)
			o.Concurrency = 10
		})
		before := f.Requests()
		resp, err := h.Handle(t.Context(), ev)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.BatchItemFailures) != 25 {
			t.Fatalf("%d failures, want 25", len(resp.BatchItemFailures))
		}
		if n := f.Requests()["ChangeMessageVisibilityBatch"] - before["ChangeMessageVisibilityBatch"]; n != 3 {
			t.Errorf("%d ChangeMessageVisibilityBatch calls for 25 records, want 3", n)
		}
		for _, m := range f.Messages(src) {
			if d := time.Until(m.VisibleAt); d != 4*time.Second {
				t.Errorf("%s visible in %v, want 4s", m.Body, d)
			}
		}
	})
}

func TestQueueURLResolvedOnceWithGetQueueUrl(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, _ := newFakeQueue(t, "orders")
		var urls []string
		probe := mustNew(t, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			urls = append(urls, m.QueueURL)
			return nil
		}), func(o *sqslambda.Options) { o.Logger = quiet; o.Client = f })
		for range 2 {
			f.MustSend(t, src, "ok")
			ev := receiveEvent(t, f, src, 10)
			if _, err := probe.Handle(t.Context(), ev); err != nil {
				t.Fatal(err)
			}
		}
		if n := f.Requests()["GetQueueUrl"]; n != 1 {
			t.Errorf("GetQueueUrl called %d times over two invocations, want 1", n)
		}
		if len(urls) != 2 || urls[0] != src || urls[1] != src {
			t.Errorf("QueueURL = %v, want %s", urls, src)
		}
	})
}
