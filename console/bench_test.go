package console

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"golang.org/x/sync/errgroup"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/harness/faultproxy"
	"github.com/sqsworker/sqsworker/harness/testenv"
	"github.com/sqsworker/sqsworker/internal/deadletter"
	"github.com/sqsworker/sqsworker/queueref"
	"github.com/sqsworker/sqsworker/sqstest"
)

// benchMessages and benchLatency are the figure: a 10,000-message
// dead-letter queue's grouped view, with 15 ms added to every SQS call.
const (
	benchMessages = 10_000
	benchLatency  = 15 * time.Millisecond
)

// BenchmarkGroupedView10k serves the dead-letter queue page of a queue
// whose DLQ holds 10,000 messages in 5 failure groups, through a proxy
// that adds 15 ms to every SQS call (the emulator under make bench), and
// reports the SQS calls one page view makes. Run it with
//
//	make bench BENCHTIME=3x   (or: bash localstack/with-aws.sh go test -run '^$' -bench GroupedView ./console)
func BenchmarkGroupedView10k(b *testing.B) {
	client := testenv.SQS(b)
	ctx := context.Background()
	setup, err := dlq.Setup(ctx, client, dlq.SetupOptions{Name: testenv.UniqueName("console-bench")})
	if err != nil {
		b.Fatal(err)
	}
	target := setup.Target()
	defer client.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(target.SourceURL)})
	defer client.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(target.DLQURL)})
	fillDLQ(b, client, target)

	proxy, err := faultproxy.Start(faultproxy.Options{Upstream: testenv.Get(b).SQS, Rules: map[string]faultproxy.Rule{"*": {Latency: benchLatency}}})
	if err != nil {
		b.Fatal(err)
	}
	defer proxy.Close()
	hh, err := New(testenv.SQSAt(b, proxy.URL))
	if err != nil {
		b.Fatal(err)
	}
	calls := func() int {
		n := 0
		for _, c := range proxy.Counts() {
			n += c.Requests
		}
		return n
	}
	before := calls()
	viewLoop(b, hh, target)
	b.ReportMetric(float64(calls()-before)/float64(b.N), "sqs-calls/op")
}

// BenchmarkGroupedView10kFake is BenchmarkGroupedView10k on sqstest's Fake
// with 15 ms of latency per call: the console's own figure, without the
// emulator's CPU (fauxqs scans its queue on every receive, and shares the
// machine's cores with the benchmark).
func BenchmarkGroupedView10kFake(b *testing.B) {
	f := sqstest.For(b, func(o *sqstest.Options) { o.Latency = benchLatency })
	src, _ := f.MustCreateQueueWithDLQ(b, "orders", 5, nil)
	target, err := dlq.Discover(context.Background(), f, src)
	if err != nil {
		b.Fatal(err)
	}
	fillDLQ(b, f, target)
	hh, err := New(f)
	if err != nil {
		b.Fatal(err)
	}
	before := total(f.Requests())
	viewLoop(b, hh, target)
	b.ReportMetric(float64(total(f.Requests())-before)/float64(b.N), "sqs-calls/op")
}

// viewLoop serves the dead-letter queue page b.N times and checks that it
// shows every message in the five groups.
func viewLoop(b *testing.B, hh http.Handler, target dlq.Target) {
	path := "/queues/" + queueref.Name(target.SourceURL) + "/dlq"
	for b.Loop() {
		rec := httptest.NewRecorder()
		hh.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), fmt.Sprintf(`<span id="total">%d</span> messages in <span id="group-count">5</span> groups`, benchMessages)) {
			b.Fatalf("the page does not show %d messages in 5 groups: %d\n%.2000s", benchMessages, rec.Code, rec.Body.String())
		}
	}
}

type batchSender interface {
	SendMessageBatch(ctx context.Context, params *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
}

// fillDLQ sends benchMessages messages with provenance in five groups
// straight to the dead-letter queue (not through the proxy), 32 batches at
// a time.
func fillDLQ(b *testing.B, client batchSender, t dlq.Target) {
	b.Helper()
	var g errgroup.Group
	g.SetLimit(32)
	str := func(s string) types.MessageAttributeValue {
		return types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(s)}
	}
	for batch := range benchMessages / 10 {
		g.Go(func() error {
			var entries []types.SendMessageBatchRequestEntry
			for i := range 10 {
				n := batch*10 + i
				entries = append(entries, types.SendMessageBatchRequestEntry{
					Id:          aws.String(fmt.Sprint(i)),
					MessageBody: aws.String(fmt.Sprintf(`{"order":%d,"customer":"c-%d","lines":[{"sku":"A-%d","qty":%d}]}`, n, n%977, n%31, n%5+1)),
					MessageAttributes: map[string]types.MessageAttributeValue{
						deadletter.AttrSourceQueue: str(t.SourceURL),
						deadletter.AttrError:       str(fmt.Sprintf("failure kind %d", n%5)),
						deadletter.AttrHandler:     str("orders"),
						deadletter.AttrFailedAt:    str(time.Now().UTC().Format(time.RFC3339)),
					},
				})
			}
			out, err := client.SendMessageBatch(context.Background(), &sqs.SendMessageBatchInput{QueueUrl: aws.String(t.DLQURL), Entries: entries})
			if err == nil && len(out.Failed) > 0 {
				err = fmt.Errorf("%d entries failed: %s", len(out.Failed), aws.ToString(out.Failed[0].Message))
			}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatalf("filling the DLQ: %v", err)
	}
}

// total is the number of calls in a request count by API.
func total(requests map[string]int) int {
	n := 0
	for _, v := range requests {
		n += v
	}
	return n
}
