package sqslambda_test

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/harness/sdkretry"
	"github.com/sqsworker/sqsworker/harness/sqsfake"
	"github.com/sqsworker/sqsworker/sqstest"
	"github.com/sqsworker/sqsworker/worker"
	"github.com/sqsworker/sqsworker/worker/sqslambda"
)

// startLocal runs RunLocal in the background; stop cancels it and returns
// its error.
func startLocal(t *testing.T, f *sqstest.Fake, url string, fn sqslambda.Function, optFns ...func(*sqslambda.LocalOptions)) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	opts := append([]func(*sqslambda.LocalOptions){func(o *sqslambda.LocalOptions) { o.Logger = quiet }}, optFns...)
	go func() { done <- sqslambda.RunLocal(ctx, f, url, fn, opts...) }()
	return func() error {
		cancel()
		return <-done
	}
}

func reportFailures(o *sqslambda.LocalOptions) { o.ReportBatchItemFailures = true }

func TestRunLocalSettlesLikeLambda(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, dlqURL := newFakeQueue(t, "orders")
		for _, b := range []string{"ok-1", "ok-2", "flaky-1", "poison-1"} {
			f.MustSend(t, src, b)
		}
		var mu sync.Mutex
		attempts := map[string][]time.Duration{}
		start := time.Now()
		h := mustNew(t, worker.Chain(jobs, func(next worker.Handler) worker.Handler {
			return worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
				mu.Lock()
				attempts[m.Body] = append(attempts[m.Body], time.Since(start))
				mu.Unlock()
				return next.Handle(ctx, m)
			})
		}), func(o *sqslambda.Options) {
			o.Logger = quiet
			o.Client = f
			o.RetryPolicy = fixedPolicy(3, 2*time.Second)
		})
		stop := startLocal(t, f, src, h.Handle, reportFailures)
		time.Sleep(time.Minute)
		if err := stop(); err != nil {
			t.Fatalf("RunLocal: %v", err)
		}
		// flaky-1: attempts 1-3 retried 2 s apart, attempt 4 exhausts the
		// policy and goes to the DLQ (not 30 s apart: the visibility timeout).
		if got, want := attempts["flaky-1"], []time.Duration{0, 2 * time.Second, 4 * time.Second, 6 * time.Second}; !slices.Equal(got, want) {
			t.Errorf("flaky-1 attempts at %v, want %v", got, want)
		}
		if n := len(attempts["ok-1"]) + len(attempts["ok-2"]) + len(attempts["poison-1"]); n != 3 {
			t.Errorf("ok-1, ok-2, poison-1 ran %d times in all, want once each", n)
		}
		if n := len(f.Messages(src)); n != 0 {
			t.Errorf("source holds %d messages; successes must be deleted", n)
		}
		if got := sortedBodies(f, dlqURL); !slices.Equal(got, []string{"flaky-1", "poison-1"}) {
			t.Errorf("DLQ = %v", got)
		}
		for _, m := range f.Messages(dlqURL) {
			if p, ok := dlq.ParseProvenance(m.Attributes); !ok || p.Error == "" {
				t.Errorf("%s in the DLQ without provenance: %+v", m.Body, m.Attributes)
			}
		}
	})
}

func TestRunLocalFunctionErrorDeletesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, _ := newFakeQueue(t, "orders")
		f.MustSend(t, src, "a")
		f.MustSend(t, src, "b")
		var calls []time.Duration
		start := time.Now()
		stop := startLocal(t, f, src, func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
			calls = append(calls, time.Since(start))
			return events.SQSEventResponse{}, errors.New("database down")
		}, reportFailures)
		time.Sleep(45 * time.Second)
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if want := []time.Duration{0, 30 * time.Second}; !slices.Equal(calls, want) {
			t.Errorf("invoked at %v, want %v (the batch comes back after the visibility timeout)", calls, want)
		}
		if n := len(f.Messages(src)); n != 2 {
			t.Errorf("%d messages left, want 2: a function error deletes nothing", n)
		}
	})
}

func TestRunLocalPartialResponse(t *testing.T) {
	for _, tc := range []struct {
		name   string
		report bool
		ids    func(ev events.SQSEvent) []string
		left   []string
	}{
		{"reported failure stays", true, func(ev events.SQSEvent) []string { return idsWithBody(ev, "b") }, []string{"b"}},
		{"empty list deletes all", true, func(events.SQSEvent) []string { return nil }, nil},
		{"unknown itemIdentifier fails the batch", true, func(events.SQSEvent) []string { return []string{"not-in-batch"} }, []string{"a", "b", "c"}},
		{"empty itemIdentifier fails the batch", true, func(events.SQSEvent) []string { return []string{""} }, []string{"a", "b", "c"}},
		{"without ReportBatchItemFailures all are deleted", false, func(ev events.SQSEvent) []string { return idsWithBody(ev, "b") }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f, src, _ := newFakeQueue(t, "orders")
				for _, b := range []string{"a", "b", "c"} {
					f.MustSend(t, src, b)
				}
				invoked := 0
				stop := startLocal(t, f, src, func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
					invoked++
					resp := events.SQSEventResponse{}
					for _, id := range tc.ids(ev) {
						resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: id})
					}
					return resp, nil
				}, func(o *sqslambda.LocalOptions) { o.ReportBatchItemFailures = tc.report })
				time.Sleep(5 * time.Second)
				if err := stop(); err != nil {
					t.Fatal(err)
				}
				if invoked != 1 {
					t.Errorf("invoked %d times, want 1", invoked)
				}
				if got := sortedBodies(f, src); !slices.Equal(got, tc.left) {
					t.Errorf("left in the queue: %v, want %v", got, tc.left)
				}
			})
		})
	}
}

func idsWithBody(ev events.SQSEvent, body string) []string {
	var ids []string
	for _, r := range ev.Records {
		if r.Body == body {
			ids = append(ids, r.MessageId)
		}
	}
	return ids
}

func TestRunLocalFunctionTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, _ := newFakeQueue(t, "orders")
		f.MustSend(t, src, "a")
		var deadlines []time.Duration
		stop := startLocal(t, f, src, func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
			d, _ := ctx.Deadline()
			deadlines = append(deadlines, time.Until(d))
			time.Sleep(5 * time.Second) // ignores its context
			return events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}, nil
		}, reportFailures, func(o *sqslambda.LocalOptions) { o.FunctionTimeout = 3 * time.Second })
		time.Sleep(10 * time.Second)
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if len(deadlines) != 1 || deadlines[0] != 3*time.Second {
			t.Errorf("deadlines %v, want one invocation with 3s", deadlines)
		}
		if n := len(f.Messages(src)); n != 1 {
			t.Errorf("%d messages left; a timed-out invocation deletes nothing", n)
		}
	})
}

func TestRunLocalEventIsLambdas(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, _ := newFakeQueue(t, "orders")
		f.MustSend(t, src, `{"order":"A-1"}`, func(in *sqs.SendMessageInput) {
			in.MessageAttributes = map[string]types.MessageAttributeValue{
				"tenant":    {DataType: aws.String("String"), StringValue: aws.String("acme")},
				"priority":  {DataType: aws.String("Number"), StringValue: aws.String("7")},
				"signature": {DataType: aws.String("Binary"), BinaryValue: []byte("sqslambda")},
			}
		})
		f.MustSend(t, src, "plain")
		var got events.SQSEvent
		var lc *lambdacontext.LambdaContext
		stop := startLocal(t, f, src, func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
			got = ev
			lc, _ = lambdacontext.FromContext(ctx)
			return events.SQSEventResponse{}, nil
		}, reportFailures, func(o *sqslambda.LocalOptions) { o.FunctionName = "orders-fn" })
		time.Sleep(time.Second)
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if len(got.Records) != 2 {
			t.Fatalf("event has %d records, want 2", len(got.Records))
		}
		// Same fields, same names, as the documented event in testdata.
		fixtureKeys := recordKeys(t, mustJSON(t, fixture(t, "standard.json")))
		if keys := recordKeys(t, mustJSON(t, got)); !slices.Equal(keys, fixtureKeys) {
			t.Errorf("record fields %v, want %v", keys, fixtureKeys)
		}
		r := got.Records[0]
		sum := md5.Sum([]byte(r.Body))
		if r.EventSource != "aws:sqs" || r.EventSourceARN != sqsfake.ARN(src) || r.AWSRegion != "us-east-1" || r.Md5OfBody != hex.EncodeToString(sum[:]) {
			t.Errorf("record = %+v", r)
		}
		for _, a := range []string{"ApproximateReceiveCount", "SentTimestamp", "SenderId", "ApproximateFirstReceiveTimestamp"} {
			if r.Attributes[a] == "" {
				t.Errorf("attribute %s missing: %v", a, r.Attributes)
			}
		}
		if r.Attributes["ApproximateReceiveCount"] != "1" {
			t.Errorf("ApproximateReceiveCount = %q", r.Attributes["ApproximateReceiveCount"])
		}
		if a := r.MessageAttributes["signature"]; a.DataType != "Binary" || string(a.BinaryValue) != "sqslambda" || a.StringListValues == nil {
			t.Errorf("binary attribute = %+v", a)
		}
		if a := r.MessageAttributes["priority"]; a.DataType != "Number" || aws.ToString(a.StringValue) != "7" {
			t.Errorf("number attribute = %+v", a)
		}
		if r.Md5OfMessageAttributes == "" || got.Records[1].Md5OfMessageAttributes != "" || got.Records[1].MessageAttributes == nil {
			t.Errorf("md5OfMessageAttributes = %q / %q", r.Md5OfMessageAttributes, got.Records[1].Md5OfMessageAttributes)
		}
		if lc == nil || lc.AwsRequestID == "" || lc.InvokedFunctionArn != "arn:aws:lambda:us-east-1:000000000000:function:orders-fn" {
			t.Errorf("lambda context = %+v", lc)
		}
	})
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// recordKeys returns the sorted field names of an event's first record.
func recordKeys(t *testing.T, event []byte) []string {
	t.Helper()
	var ev struct{ Records []map[string]json.RawMessage }
	if err := json.Unmarshal(event, &ev); err != nil || len(ev.Records) == 0 {
		t.Fatalf("not an SQS event: %s (%v)", event, err)
	}
	return slices.Sorted(maps.Keys(ev.Records[0]))
}

func TestRunLocalBatchingWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, _ := newFakeQueue(t, "orders")
		for range 25 {
			f.MustSend(t, src, "x")
		}
		var sizes []int
		var at []time.Duration
		start := time.Now()
		stop := startLocal(t, f, src, func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
			sizes = append(sizes, len(ev.Records))
			at = append(at, time.Since(start))
			return events.SQSEventResponse{}, nil
		}, reportFailures, func(o *sqslambda.LocalOptions) {
			o.BatchSize = 30
			o.MaximumBatchingWindow = 2 * time.Second
		})
		time.Sleep(time.Second)
		for range 3 {
			f.MustSend(t, src, "y")
		}
		time.Sleep(5 * time.Second)
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(sizes, []int{28}) || at[0] != 2*time.Second {
			t.Errorf("invocations of %v records at %v; want one of 28 when the 2s window closed", sizes, at)
		}
	})
}

func TestRunLocalReleasesGatheredRecordsOnStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, _ := newFakeQueue(t, "orders")
		for range 3 {
			f.MustSend(t, src, "x")
		}
		invoked := false
		stop := startLocal(t, f, src, func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
			invoked = true
			return events.SQSEventResponse{}, nil
		}, reportFailures, func(o *sqslambda.LocalOptions) {
			o.BatchSize = 100
			o.MaximumBatchingWindow = time.Minute
		})
		time.Sleep(time.Second)
		if inflight := len(f.Messages(src, "inflight")); inflight != 3 {
			t.Fatalf("%d in flight while gathering, want 3", inflight)
		}
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if v := len(f.Messages(src, "visible")); v != 3 || invoked {
			t.Errorf("after stopping: %d visible, invoked=%v; gathered records must be released, not invoked", v, invoked)
		}
	})
}

func TestRunLocalRefusesWhatLambdaRefuses(t *testing.T) {
	f := sqstest.For(t)
	short := f.MustCreateQueue(t, "short", map[string]string{"VisibilityTimeout": "2"})
	fifo, _ := f.MustCreateQueueWithDLQ(t, "jobs.fifo", 5, nil)
	std := f.MustCreateQueue(t, "std", nil)
	fn := func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
		return events.SQSEventResponse{}, nil
	}
	for _, tc := range []struct {
		name, url, want string
		opt             func(*sqslambda.LocalOptions)
	}{
		{"visibility shorter than the timeout", short, "VisibilityTimeout", func(*sqslambda.LocalOptions) {}},
		{"FIFO batch above 10", fifo, "FIFO", func(o *sqslambda.LocalOptions) { o.BatchSize = 20; o.MaximumBatchingWindow = time.Second }},
		{"FIFO batching window", fifo, "FIFO", func(o *sqslambda.LocalOptions) { o.MaximumBatchingWindow = time.Second }},
		{"batch above 10 without a window", std, "MaximumBatchingWindow", func(o *sqslambda.LocalOptions) { o.BatchSize = 50 }},
		{"missing queue", "https://sqs.us-east-1.amazonaws.com/000000000000/nope", "does not exist", func(*sqslambda.LocalOptions) {}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := sqslambda.RunLocal(t.Context(), f, tc.url, fn, tc.opt, func(o *sqslambda.LocalOptions) { o.Logger = quiet })
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("RunLocal = %v, want an error about %s", err, tc.want)
			}
		})
	}
}

// TestWithoutClientFailuresWaitForTheVisibilityTimeout is the contrast to
// TestRunLocalSettlesLikeLambda: without a client a failed record comes
// back only when the queue's visibility timeout (30 s) ends.
func TestWithoutClientFailuresWaitForTheVisibilityTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, _ := newFakeQueue(t, "orders")
		f.MustSend(t, src, "flaky-1")
		var at []time.Duration
		start := time.Now()
		h := mustNew(t, worker.Chain(jobs, func(next worker.Handler) worker.Handler {
			return worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
				at = append(at, time.Since(start))
				return next.Handle(ctx, m)
			})
		}), func(o *sqslambda.Options) { o.Logger = quiet; o.RetryPolicy = fixedPolicy(3, 2*time.Second) })
		stop := startLocal(t, f, src, h.Handle, reportFailures)
		time.Sleep(45 * time.Second)
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if want := []time.Duration{0, 30 * time.Second}; !slices.Equal(at, want) {
			t.Errorf("attempts at %v, want %v", at, want)
		}
	})
}

// sdkDeletes repeats failed DeleteMessageBatch calls as the SDK's retryer
// does, counting every request.
type sdkDeletes struct {
	*sqstest.Fake
	requests int
}

func (c *sdkDeletes) DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	return sdkretry.Do(ctx, optFns, &c.requests, func() (*sqs.DeleteMessageBatchOutput, error) { return c.Fake.DeleteMessageBatch(ctx, in, optFns...) })
}

// RunLocal deletes as the event source mapping does: one request per
// batch of ten, with no retry hidden in the SDK, and a record whose delete
// failed — as a call, as an entry, or left out of SQS's answer — is not
// counted as deleted: it comes back and runs again.
func TestRunLocalDeletesOnceLikeTheMapping(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault sqstest.Fault
	}{
		{"call", sqstest.Fault{API: "DeleteMessageBatch", Code: "RequestThrottled", Times: 1}},
		{"entry", sqstest.Fault{API: "DeleteMessageBatch", Code: "InternalError", Entries: true, Times: 1}},
		{"left out", sqstest.Fault{API: "DeleteMessageBatch", Omit: true, Entries: true, Times: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f, src, _ := newFakeQueue(t, "orders")
				f.MustSend(t, src, "a")
				f.InjectFault(tc.fault)
				c := &sdkDeletes{Fake: f}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				var runs []time.Duration
				start := time.Now()
				go func() {
					done <- sqslambda.RunLocal(ctx, c, src, func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
						runs = append(runs, time.Since(start))
						return events.SQSEventResponse{}, nil
					}, func(o *sqslambda.LocalOptions) { o.Logger = quiet })
				}()
				time.Sleep(45 * time.Second)
				cancel()
				if err := <-done; err != nil {
					t.Fatal(err)
				}
				if want := []time.Duration{0, 30 * time.Second}; !slices.Equal(runs, want) {
					t.Errorf("the record ran at %v, want %v (its failed delete not retried: it comes back after the visibility timeout)", runs, want)
				}
				if c.requests != 2 {
					t.Errorf("%d DeleteMessageBatch requests, want 2 (one per invocation, none hidden in the SDK)", c.requests)
				}
				if n := len(f.Messages(src)); n != 0 {
					t.Errorf("source holds %d messages; want the second run's delete to go through", n)
				}
			})
		})
	}
}

// stuckAttributes is a Fake whose GetQueueAttributes answers only when its
// context ends.
type stuckAttributes struct{ *sqstest.Fake }

func (s stuckAttributes) GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, o ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestRunLocalStoppedWhileStarting: RunLocal stopped (ctx cancelled) while
// it still reads the queue returns nil, as when it is stopped later, not
// an error that blames the queue's URL or the credentials; the chaos
// suite's lambda variant saw such an error from a process SIGTERMed as it
// started.
func TestRunLocalStoppedWhileStarting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, src, _ := newFakeQueue(t, "orders")
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			done <- sqslambda.RunLocal(ctx, stuckAttributes{f}, src, func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
				return events.SQSEventResponse{}, nil
			}, func(o *sqslambda.LocalOptions) { o.Logger = quiet })
		}()
		time.Sleep(time.Second)
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("RunLocal stopped while starting returned %v; want nil", err)
		}
	})
}
