package console

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/harness/faultproxy"
	"github.com/sqsworker/sqsworker/harness/testenv"
	"github.com/sqsworker/sqsworker/queueref"
	"github.com/sqsworker/sqsworker/sqstest"
)

// BenchmarkSearch10k is the search figure: a 10,000-message
// dead-letter queue behind a proxy that adds 15 ms to every SQS call. Each
// iteration runs a first query that reads the queue (read again: the read
// included) and a second query over the same read, and reports both in
// milliseconds (first-ms, second-ms) and the second's SQS calls. Run it with
//
//	bash localstack/with-aws.sh go test -run '^$' -bench Search10k -benchtime 3x ./console
func BenchmarkSearch10k(b *testing.B) {
	client := testenv.SQS(b)
	ctx := context.Background()
	setup, err := dlq.Setup(ctx, client, dlq.SetupOptions{Name: testenv.UniqueName("console-search")})
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
	searchLoop(b, hh, target, calls)
}

// BenchmarkSearch10kFake is BenchmarkSearch10k on sqstest's Fake with
// 15 ms of latency per call.
func BenchmarkSearch10kFake(b *testing.B) {
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
	searchLoop(b, hh, target, func() int { return total(f.Requests()) })
}

// searchLoop runs b.N pairs of queries: the first reads the queue (fresh=1)
// and finds the 2,000 messages of one failure kind, the second searches the
// bodies of the same read for one customer (11 of 10,000).
func searchLoop(b *testing.B, hh http.Handler, target dlq.Target, calls func() int) {
	base := "/queues/" + queueref.Name(target.SourceURL) + "/dlq/search?"
	query := func(q, want string) time.Duration {
		start := time.Now()
		rec := httptest.NewRecorder()
		hh.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, base+q, nil))
		took := time.Since(start)
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `<b id="matched">`+want+`</b> of 10000 messages read`) {
			b.Fatalf("search %s: want %s of 10000 matched: %d\n%.3000s", q, want, rec.Code, rec.Body.String())
		}
		return took
	}
	var first, second time.Duration
	secondCalls := 0
	for b.Loop() {
		first += query("error=failure+kind+3&fresh=1", "2000")
		before := calls()
		second += query("text=%22customer%22%3A%22c-5%22", "11")
		secondCalls += calls() - before
	}
	n := float64(b.N)
	b.ReportMetric(float64(first.Milliseconds())/n, "first-ms")
	b.ReportMetric(float64(second.Microseconds())/1000/n, "second-ms")
	b.ReportMetric(float64(secondCalls)/n, "second-sqs-calls")
}
