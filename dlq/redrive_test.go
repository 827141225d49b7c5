package dlq

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	"github.com/sqsworker/sqsworker/harness/sqsfake"
	"github.com/sqsworker/sqsworker/harness/sqsmsg"
	"github.com/sqsworker/sqsworker/internal/deadletter"
	"github.com/sqsworker/sqsworker/queueref"
	"github.com/sqsworker/sqsworker/sqstest"
)

// deadLetter sends n messages to the target's source and moves each to the
// DLQ with Mover, with the provenance prov(i) and the attributes attrs.
func deadLetter(t *testing.T, f *sqstest.Fake, target Target, n int, attrs map[string]types.MessageAttributeValue, prov func(i int) Provenance) {
	t.Helper()
	mover := mustMover(t, f, target)
	for i := range n {
		opts := []func(*sqs.SendMessageInput){sqsmsg.WithAttributes(attrs)}
		if target.FIFO {
			opts = append(opts, sqsfake.Group(fmt.Sprintf("g%d", i%3), fmt.Sprintf("d%d", i)))
		}
		f.MustSend(t, target.SourceURL, fmt.Sprintf("job-%d", i), opts...)
		msg := sqsmsg.ReceiveOne(t, f, target.SourceURL)
		if err := mover.Move(context.Background(), msg, prov(i)); err != nil {
			t.Fatalf("Move: %v", err)
		}
	}
}

func failedWith(err string) func(int) Provenance {
	return func(int) Provenance { return Provenance{Error: err, Handler: "h"} }
}

func bodies(ms []sqstest.MessageInfo) map[string]bool {
	out := map[string]bool{}
	for _, m := range ms {
		out[m.Body] = true
	}
	return out
}

func TestInspectListsWithoutConsuming(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, target := fakePair(t, "orders")
		deadLetter(t, f, target, 23, sqsmsg.UserAttributes(1), func(i int) Provenance { return Provenance{Error: fmt.Sprintf("error %d", i), Attempt: 4} })
		f.MustSend(t, target.DLQURL, "no provenance") // as SQS's own redrive would leave it

		msgs, err := Inspect(context.Background(), f, target.DLQURL, InspectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) != 24 {
			t.Fatalf("Inspect returned %d messages, want 24", len(msgs))
		}
		withProv := 0
		for _, m := range msgs {
			if !m.HasProvenance {
				if m.Body != "no provenance" {
					t.Errorf("message %q lost its provenance", m.Body)
				}
				continue
			}
			withProv++
			if !strings.HasPrefix(m.Provenance.Error, "error ") || m.Provenance.Attempt != 4 || queueref.Name(m.Origin()) != "orders" {
				t.Errorf("provenance = %+v", m.Provenance)
			}
			if len(m.Attributes) != 1 || m.Attributes["u0"].StringValue == nil {
				t.Errorf("attributes = %v, want the user's only", keys(m.Attributes))
			}
			if m.ReceiveCount != 1 || m.SentAt.IsZero() {
				t.Errorf("receive count %d, sent %v", m.ReceiveCount, m.SentAt)
			}
		}
		if withProv != 23 {
			t.Errorf("%d messages with provenance, want 23", withProv)
		}
		if visible, inflight := len(f.Messages(target.DLQURL, "visible")), len(f.Messages(target.DLQURL, "inflight")); visible != 24 || inflight != 0 {
			t.Errorf("after Inspect: %d visible, %d in flight; want all 24 released", visible, inflight)
		}

		few, err := Inspect(context.Background(), f, target.DLQURL, InspectOptions{Max: 5})
		if err != nil || len(few) != 5 {
			t.Fatalf("Inspect Max 5 = %d messages, %v", len(few), err)
		}
		if visible := len(f.Messages(target.DLQURL, "visible")); visible != 24 {
			t.Errorf("after Inspect Max 5: %d visible, want 24", visible)
		}
		c, err := Count(context.Background(), f, target.DLQURL)
		if err != nil || c != (Counts{Visible: 24}) {
			t.Errorf("Count = %+v, %v", c, err)
		}
	})
}

func TestRedriveMoveTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, target := fakePair(t, "orders")
		deadLetter(t, f, target, 30, nil, failedWith("boom"))
		var reports []Progress
		res, err := Redrive(context.Background(), f, target, RedriveOptions{Progress: func(p Progress) { reports = append(reports, p) }})
		if err != nil {
			t.Fatalf("Redrive: %v", err)
		}
		if res.Method != "move-task" || res.TaskHandle == "" || res.Moved != 30 || res.Total != 30 || !res.Done {
			t.Errorf("result = %+v", res)
		}
		if len(reports) == 0 || !reports[len(reports)-1].Done {
			t.Errorf("progress reports = %+v", reports)
		}
		if n := len(f.Messages(target.DLQURL)); n != 0 {
			t.Errorf("DLQ still holds %d", n)
		}
		if got := bodies(f.Messages(target.SourceURL)); len(got) != 30 || !got["job-0"] || !got["job-29"] {
			t.Errorf("source holds %d messages", len(got))
		}
	})
}

func TestRedriveMoveTaskHonoursRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, target := fakePair(t, "orders")
		deadLetter(t, f, target, 20, nil, failedWith("boom"))
		start := time.Now()
		var moved []int
		res, err := Redrive(context.Background(), f, target, RedriveOptions{Rate: 5, Progress: func(p Progress) { moved = append(moved, p.Moved) }})
		if err != nil || res.Moved != 20 {
			t.Fatalf("Redrive = %+v, %v", res, err)
		}
		if took := time.Since(start); took < 3*time.Second || took > 6*time.Second {
			t.Errorf("20 messages at 5/s took %v", took)
		}
		for i := 1; i < len(moved); i++ {
			if moved[i] < moved[i-1] {
				t.Errorf("progress went backwards: %v", moved)
			}
		}
	})
}

func TestRedriveMoveTaskCancelledWithContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, target := fakePair(t, "orders")
		deadLetter(t, f, target, 20, nil, failedWith("boom"))
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		res, err := Redrive(ctx, f, target, RedriveOptions{Rate: 1})
		if err == nil || !strings.Contains(err.Error(), "move task cancelled") {
			t.Fatalf("Redrive error = %v, want the task cancelled", err)
		}
		list, lerr := f.ListMessageMoveTasks(context.Background(), &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(target.DLQARN)})
		if lerr != nil || aws.ToString(list.Results[0].Status) != "CANCELLED" {
			t.Fatalf("task status = %v, %v", list, lerr)
		}
		left := len(f.Messages(target.DLQURL))
		if left == 0 || left+len(f.Messages(target.SourceURL)) != 20 || res.Moved != 20-left {
			t.Errorf("after cancel: %d in DLQ, %d in source, result %+v", left, len(f.Messages(target.SourceURL)), res)
		}
	})
}

// noMoveTasks answers like an emulator without message move tasks.
type noMoveTasks struct{ *sqstest.Fake }

var errInvalidAction = &smithy.GenericAPIError{Code: "InvalidAction", Message: "Unknown action", Fault: smithy.FaultClient}

func (noMoveTasks) ListDeadLetterSourceQueues(context.Context, *sqs.ListDeadLetterSourceQueuesInput, ...func(*sqs.Options)) (*sqs.ListDeadLetterSourceQueuesOutput, error) {
	return nil, &smithy.OperationError{ServiceID: "SQS", OperationName: "ListDeadLetterSourceQueues", Err: errInvalidAction}
}

func (noMoveTasks) StartMessageMoveTask(context.Context, *sqs.StartMessageMoveTaskInput, ...func(*sqs.Options)) (*sqs.StartMessageMoveTaskOutput, error) {
	return nil, &smithy.OperationError{ServiceID: "SQS", OperationName: "StartMessageMoveTask", Err: errInvalidAction}
}

func TestRedriveFallsBackToManualWithoutMoveTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, target := fakePair(t, "orders")
		deadLetter(t, f, target, 12, sqsmsg.UserAttributes(2), failedWith("boom"))
		res, err := Redrive(context.Background(), noMoveTasks{f}, target, RedriveOptions{})
		if err != nil {
			t.Fatalf("Redrive: %v", err)
		}
		if res.Method != "manual" || res.Moved != 12 || res.Scanned != 12 || !res.Done {
			t.Errorf("result = %+v", res)
		}
		src := f.Messages(target.SourceURL)
		if len(src) != 12 || len(f.Messages(target.DLQURL)) != 0 {
			t.Fatalf("source %d, DLQ %d", len(src), len(f.Messages(target.DLQURL)))
		}
		for _, m := range src {
			if len(m.Attributes) != 2 {
				t.Errorf("redriven message attributes = %v, want the 2 user attributes only", keys(m.Attributes))
			}
		}
		if _, err := Redrive(context.Background(), noMoveTasks{f}, target, RedriveOptions{Method: "move-task"}); err == nil {
			t.Error("move-task without move tasks succeeded")
		}
	})
}

func TestRedriveFIFOFallsBackAndKeepsGroups(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, target := fakePair(t, "orders.fifo")
		deadLetter(t, f, target, 9, nil, failedWith("boom"))
		res, err := Redrive(context.Background(), f, target, RedriveOptions{})
		if err != nil {
			t.Fatalf("Redrive: %v", err)
		}
		if res.Method != "manual" || res.Moved != 9 {
			t.Errorf("result = %+v", res)
		}
		groups := map[string]int{}
		for _, m := range f.Messages(target.SourceURL) {
			groups[m.GroupID]++
		}
		if groups["g0"] != 3 || groups["g1"] != 3 || groups["g2"] != 3 {
			t.Errorf("groups = %v", groups)
		}
	})
}

func TestRedriveSharedDLQMovesOnlyThisSource(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, a := fakePair(t, "orders")
		bURL := f.MustCreateQueue(t, "invoices", map[string]string{
			"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":5}`, a.DLQARN),
		})
		b, err := Discover(context.Background(), f, bURL)
		if err != nil {
			t.Fatal(err)
		}
		deadLetter(t, f, a, 4, nil, failedWith("a"))
		deadLetter(t, f, b, 3, nil, failedWith("b"))
		var others int
		res, err := Redrive(context.Background(), f, a, RedriveOptions{OnMessage: func(_ Message, act string, _ error) {
			if act == "other-source" {
				others++
			}
		}})
		if err != nil {
			t.Fatal(err)
		}
		if res.Method != "manual" || res.Moved != 4 || res.Skipped != 3 || others != 3 {
			t.Errorf("result = %+v, other-source callbacks %d", res, others)
		}
		if n := len(f.Messages(a.SourceURL)); n != 4 {
			t.Errorf("orders got %d", n)
		}
		if visible, inflight := len(f.Messages(a.DLQURL, "visible")), len(f.Messages(a.DLQURL, "inflight")); visible != 3 || inflight != 0 {
			t.Errorf("DLQ: %d visible, %d in flight; want invoices' 3 released", visible, inflight)
		}
	})
}

// A destination does not widen a redrive to the other sources of a shared
// dead-letter queue: the manual move still leaves their messages, a move
// task (which would move them all) is refused, and only AllSources moves
// every message.
func TestRedriveSharedDLQWithDestinationMovesOnlyThisSource(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, a := fakePair(t, "orders")
		bURL := f.MustCreateQueue(t, "invoices", map[string]string{
			"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":5}`, a.DLQARN),
		})
		b, err := Discover(context.Background(), f, bURL)
		if err != nil {
			t.Fatal(err)
		}
		archive := f.MustCreateQueue(t, "archive", nil)
		deadLetter(t, f, a, 4, nil, failedWith("a"))
		deadLetter(t, f, b, 3, nil, failedWith("b"))
		ctx := context.Background()

		_, err = Redrive(ctx, f, a, RedriveOptions{Method: "move-task", Destination: archive})
		if !errors.Is(err, ErrNoMoveTask) || !strings.Contains(err.Error(), "also serves queue invoices") {
			t.Errorf("move task with a destination on a shared DLQ: %v; want ErrNoMoveTask", err)
		}
		if n := len(f.Messages(archive)); n != 0 {
			t.Fatalf("the refused move task moved %d messages", n)
		}

		res, err := Redrive(ctx, f, a, RedriveOptions{Destination: archive})
		if err != nil {
			t.Fatal(err)
		}
		if res.Method != "manual" || res.Moved != 4 || res.Skipped != 3 {
			t.Errorf("result = %+v; want orders' 4 moved, invoices' 3 skipped", res)
		}
		if n := len(f.Messages(archive)); n != 4 {
			t.Errorf("archive holds %d; want orders' 4", n)
		}
		if visible := len(f.Messages(a.DLQURL, "visible")); visible != 3 {
			t.Errorf("DLQ keeps %d; want invoices' 3", visible)
		}

		if _, err := Redrive(ctx, f, a, RedriveOptions{AllSources: true}); err == nil || !strings.Contains(err.Error(), "Destination") {
			t.Errorf("AllSources without a destination: %v; want a refusal naming Destination", err)
		}
		res, err = Redrive(ctx, f, a, RedriveOptions{Method: "manual", Destination: archive, AllSources: true})
		if err != nil || res.Moved != 3 {
			t.Fatalf("AllSources: %+v, %v", res, err)
		}
		if n := len(f.Messages(archive)); n != 7 {
			t.Errorf("archive holds %d; want all 7", n)
		}
	})
}

func TestRedriveFilterDryRunAndMax(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, target := fakePair(t, "orders")
		now := time.Now()
		deadLetter(t, f, target, 10, sqsmsg.UserAttributes(1), func(i int) Provenance {
			p := Provenance{Error: "timeout calling bank", Handler: "charge", FailedAt: now.Add(-time.Duration(i) * time.Hour)}
			if i%2 == 1 {
				p.Error, p.Handler = "invalid input", "validate"
			}
			return p
		})
		ctx := context.Background()
		for _, tc := range []struct {
			name   string
			filter Filter
			want   int
		}{
			{"error text", Filter{ErrorContains: "timeout"}, 5},
			{"provenance attribute", Filter{Attributes: map[string]string{deadletter.AttrHandler: "validate"}}, 5},
			{"user attribute", Filter{Attributes: map[string]string{"u0": "value-0"}}, 10},
			{"user attribute mismatch", Filter{Attributes: map[string]string{"u0": "other"}}, 0},
			{"older than", Filter{OlderThan: 150 * time.Minute}, 7},
			{"newer than", Filter{NewerThan: 150 * time.Minute}, 3},
			{"combined", Filter{ErrorContains: "timeout", NewerThan: 150 * time.Minute}, 2},
			{"custom", Filter{Match: func(m Message) bool { return m.Body == "job-3" }}, 1},
		} {
			var would []string
			res, err := Redrive(ctx, f, target, RedriveOptions{Filter: tc.filter, DryRun: true, OnMessage: func(m Message, a string, _ error) {
				if a == "would-move" {
					would = append(would, m.Body)
				}
			}})
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if res.Matched != tc.want || len(would) != tc.want || res.Moved != 0 || !res.DryRun || res.Scanned != 10 {
				t.Errorf("%s: result %+v, would move %v; want %d", tc.name, res, would, tc.want)
			}
		}
		if visible := len(f.Messages(target.DLQURL, "visible")); visible != 10 || len(f.Messages(target.SourceURL)) != 0 {
			t.Fatalf("dry runs moved something: DLQ %d visible, source %d", visible, len(f.Messages(target.SourceURL)))
		}

		res, err := Redrive(ctx, f, target, RedriveOptions{Filter: Filter{ErrorContains: "timeout"}, Max: 3})
		if err != nil || res.Moved != 3 {
			t.Fatalf("Redrive Max 3 = %+v, %v", res, err)
		}
		for _, m := range f.Messages(target.SourceURL) {
			var n int
			fmt.Sscanf(m.Body, "job-%d", &n)
			if n%2 != 0 {
				t.Errorf("moved %s, which did not match", m.Body)
			}
		}
		if visible, inflight := len(f.Messages(target.DLQURL, "visible")), len(f.Messages(target.DLQURL, "inflight")); visible != 7 || inflight != 0 {
			t.Errorf("DLQ after Max 3: %d visible, %d in flight", visible, inflight)
		}
	})
}

func TestRedriveManualRateLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, target := fakePair(t, "orders")
		deadLetter(t, f, target, 30, nil, failedWith("boom"))
		start := time.Now()
		res, err := Redrive(context.Background(), f, target, RedriveOptions{Method: "manual", Rate: 10})
		if err != nil || res.Moved != 30 {
			t.Fatalf("Redrive = %+v, %v", res, err)
		}
		// 30 messages at 10/s: the last batch of 10 may start 2 s in.
		if took := time.Since(start); took < 2*time.Second || took > 4*time.Second {
			t.Errorf("30 messages at 10/s took %v", took)
		}
	})
}

// At a slow rate a batch waits longer than the default hold before it is
// sent: the hold must cover that wait, or the messages become visible,
// another reader takes them, and the delete with the old receipt handle
// "succeeds" without deleting — counted moved while in both queues.
func TestRedriveSlowRateKeepsItsHold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, target := fakePair(t, "orders")
		deadLetter(t, f, target, 12, nil, failedWith("boom"))
		// Another reader of the dead-letter queue looks every 7 s and lets
		// what it gets go after a second.
		done := make(chan struct{})
		var other sync.WaitGroup
		other.Go(func() {
			time.Sleep(3 * time.Second)
			for {
				select {
				case <-done:
					return
				default:
				}
				_, _ = f.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(target.DLQURL), MaxNumberOfMessages: 10, VisibilityTimeout: 1})
				time.Sleep(7 * time.Second)
			}
		})
		res, err := Redrive(context.Background(), f, target, RedriveOptions{Method: "manual", Rate: 0.1})
		close(done)
		other.Wait()
		if err != nil || res.Moved != 12 || res.Duplicated != 0 {
			t.Fatalf("Redrive at 0.1/s = %+v, %v", res, err)
		}
		if n := len(f.Messages(target.DLQURL, "visible", "inflight")); n != 0 {
			t.Errorf("the DLQ still holds %d messages counted as moved", n)
		}
		if n := len(f.Messages(target.SourceURL)); n != 12 {
			t.Errorf("source got %d", n)
		}
	})
}

// A rate so slow that one batch would take longer than SQS's 12-hour
// visibility limit is refused before anything is received.
func TestRedriveRefusesARateTooSlowForAnyHold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, target := fakePair(t, "orders")
		deadLetter(t, f, target, 2, nil, failedWith("boom"))
		_, err := Redrive(context.Background(), f, target, RedriveOptions{Method: "manual", Rate: 0.0001})
		if err == nil || !strings.Contains(err.Error(), "Rate") {
			t.Fatalf("Redrive at 0.0001/s: %v; want a refusal naming Rate", err)
		}
		if visible := len(f.Messages(target.DLQURL, "visible")); visible != 2 {
			t.Errorf("the DLQ has %d visible; want both untouched", visible)
		}
	})
}

func TestRedriveToAnotherQueueKeepingProvenance(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, target := fakePair(t, "orders")
		archive := f.MustCreateQueue(t, "archive", nil)
		deadLetter(t, f, target, 3, nil, failedWith("boom"))
		res, err := Redrive(context.Background(), f, target, RedriveOptions{Method: "manual", Destination: archive, KeepProvenance: true})
		if err != nil || res.Moved != 3 {
			t.Fatalf("Redrive = %+v, %v", res, err)
		}
		for _, m := range f.Messages(archive) {
			if p, ok := ParseProvenance(m.Attributes); !ok || p.Error != "boom" {
				t.Errorf("provenance not kept: %+v", p)
			}
		}
		if n := len(f.Messages(target.SourceURL)); n != 0 {
			t.Errorf("source got %d", n)
		}
	})
}

func TestRedriveSendFailureLeavesMessagesInDLQ(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, target := fakePair(t, "orders")
		deadLetter(t, f, target, 5, nil, failedWith("boom"))
		f.InjectFault(sqstest.Fault{API: "SendMessageBatch", Code: "InternalError"})
		res, err := Redrive(context.Background(), f, target, RedriveOptions{Method: "manual"})
		if err == nil || !strings.Contains(err.Error(), "stay in dead-letter queue") {
			t.Fatalf("Redrive error = %v", err)
		}
		if res.Moved != 0 || f.Requests()["DeleteMessageBatch"] != 0 {
			t.Errorf("result %+v, %d deletes", res, f.Requests()["DeleteMessageBatch"])
		}
		if visible := len(f.Messages(target.DLQURL, "visible")); visible != 5 {
			t.Errorf("DLQ has %d visible, want all 5 released", visible)
		}
	})
}

func TestRedriveDeleteFailureDuplicatesNeverLoses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, target := fakePair(t, "orders")
		deadLetter(t, f, target, 5, nil, failedWith("boom"))
		f.InjectFault(sqstest.Fault{API: "DeleteMessageBatch", Code: "InternalError"})
		var dups int
		res, err := Redrive(context.Background(), f, target, RedriveOptions{Method: "manual", OnMessage: func(_ Message, a string, _ error) {
			if a == "duplicated" {
				dups++
			}
		}})
		if err == nil || !strings.Contains(err.Error(), "both queues hold them") {
			t.Fatalf("Redrive error = %v", err)
		}
		if res.Duplicated != 5 || dups != 5 {
			t.Errorf("result %+v, duplicated callbacks %d", res, dups)
		}
		if len(f.Messages(target.SourceURL)) != 5 || len(f.Messages(target.DLQURL)) != 5 {
			t.Errorf("source %d, DLQ %d; want 5 in each", len(f.Messages(target.SourceURL)), len(f.Messages(target.DLQURL)))
		}
	})
}

func TestRedriveRejectsFilterWithMoveTask(t *testing.T) {
	f, target := fakePair(t, "orders")
	_, err := Redrive(context.Background(), f, target, RedriveOptions{Method: "move-task", Filter: Filter{ErrorContains: "x"}})
	if err == nil || !strings.Contains(err.Error(), `"manual"`) {
		t.Fatalf("Redrive error = %v", err)
	}
	if _, err := Redrive(context.Background(), f, Target{}, RedriveOptions{}); err == nil {
		t.Error("Redrive with an empty Target succeeded")
	}
}

func TestLimiterSpacesWork(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(4) // 250 ms per unit
		start := time.Now()
		for range 3 {
			if err := l.wait(context.Background(), 2); err != nil {
				t.Fatal(err)
			}
		}
		if took := time.Since(start); took != time.Second {
			t.Errorf("three waits of 2 units at 4/s took %v, want 1s (the first goes at once)", took)
		}
		if err := newLimiter(0).wait(context.Background(), 100); err != nil {
			t.Errorf("unlimited wait: %v", err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := l.wait(ctx, 1); !errors.Is(err, context.Canceled) {
			t.Errorf("wait on a cancelled context = %v", err)
		}
	})
}

// Redrive never deletes a dead-letter message whose send back to the
// source failed: a failure retrying cannot fix, or a retryable one that
// outlasted every attempt, per entry or for the whole call. The messages
// stay in the dead-letter queue (released at once), the source gets none,
// and the redrive says so.
func TestRedriveKeepsMessagesWhoseSendFailed(t *testing.T) {
	denied := &smithy.GenericAPIError{Code: "KmsAccessDenied", Message: "the key is not usable", Fault: smithy.FaultClient}
	for _, tc := range []struct {
		name  string
		fault sqstest.Fault
	}{
		{"entries permanent", sqstest.Fault{API: "SendMessageBatch", Err: denied, Entries: true}},
		{"entries retried until exhausted", sqstest.Fault{API: "SendMessageBatch", Code: "InternalError", Entries: true}},
		{"call permanent", sqstest.Fault{API: "SendMessageBatch", Err: denied}},
		{"call retried until exhausted", sqstest.Fault{API: "SendMessageBatch", Code: "RequestThrottled"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f, target := fakePair(t, "orders")
				deadLetter(t, f, target, 15, nil, failedWith("boom"))
				sends := 0
				f.InjectFault(tc.fault)
				res, err := Redrive(context.Background(), countSends{f, &sends}, target, RedriveOptions{Method: "manual", Rate: -1})
				if err == nil || res.Moved != 0 || res.Failed == 0 {
					t.Errorf("redrive = %+v, %v; want failures, nothing moved, an error", res, err)
				}
				if v, inFlight := len(f.Messages(target.DLQURL, "visible")), len(f.Messages(target.DLQURL, "inflight")); v != 15 || inFlight != 0 {
					t.Errorf("DLQ: %d visible, %d in flight; want all 15 back, visible", v, inFlight)
				}
				if n := len(f.Messages(target.SourceURL)); n != 0 {
					t.Errorf("source holds %d messages; want none", n)
				}
				retryable := tc.fault.Err != error(denied)
				if retryable && sends < 2 {
					t.Errorf("%d SendMessageBatch calls; want the retryable failure retried", sends)
				}
			})
		})
	}
}

// countSends counts SendMessageBatch calls.
type countSends struct {
	*sqstest.Fake
	n *int
}

func (c countSends) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	*c.n++
	return c.Fake.SendMessageBatch(ctx, in, optFns...)
}
