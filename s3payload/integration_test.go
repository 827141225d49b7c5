package s3payload_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/harness/testenv"
	"github.com/sqsworker/sqsworker/producer"
	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/s3payload"
	"github.com/sqsworker/sqsworker/worker"
)

// These tests run against the local SQS and S3 (fauxqs serves both on one
// port) or whatever AWS_ENDPOINT_URL_SQS / AWS_ENDPOINT_URL_S3 name.

func integrationSetup(t *testing.T, name string) (context.Context, *sqs.Client, *s3.Client, dlq.Target, string) {
	t.Helper()
	sqsc, s3c := testenv.SQS(t), testenv.S3(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	bucket := testenv.UniqueName(name)
	if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatalf("CreateBucket %s: %v", bucket, err)
	}
	target, err := dlq.Setup(ctx, sqsc, dlq.SetupOptions{Name: testenv.UniqueName(name), VisibilityTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return ctx, sqsc, s3c, target.Target(), bucket
}

// runIntegrationWorker runs a worker over src until cond holds.
func runIntegrationWorker(ctx context.Context, t *testing.T, c worker.API, src string, store *s3payload.Store, h worker.Handler, cond func(worker.Stats) bool) {
	t.Helper()
	w, err := worker.New(c, src, h, func(o *worker.Options) {
		o.Logger = quiet
		o.OnSettled = store.Settled
		o.WaitTime = time.Second
		o.RetryPolicy = retry.PolicyFunc(func(attempt int) (time.Duration, bool) { return time.Second, attempt < 3 })
	})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- w.Run(runCtx) }()
	deadline := time.Now().Add(time.Minute)
	for !cond(w.Stats()) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !cond(w.Stats()) {
		t.Fatalf("worker stats %+v after a minute", w.Stats())
	}
}

func objectExists(ctx context.Context, t *testing.T, c *s3.Client, p s3payload.Pointer) bool {
	t.Helper()
	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(p.Bucket), Key: aws.String(p.Key)})
	if err != nil {
		if strings.Contains(err.Error(), "NoSuchKey") {
			return false
		}
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, out.Body)
	out.Body.Close()
	return true
}

// TestIntegrationTwoMiBRoundTrip sends a 2 MiB body through the producer
// and S3, fails its first attempt, and reads it again on the retry: the
// object outlives the failed attempt, and Settled (the worker's settlement
// hook) removes it once SQS confirmed the message's delete.
func TestIntegrationTwoMiBRoundTrip(t *testing.T) {
	ctx, sqsc, s3c, target, bucket := integrationSetup(t, "s3payload")
	store, err := s3payload.New(s3c, bucket, func(o *s3payload.Options) { o.KeyPrefix = "reports/" })
	if err != nil {
		t.Fatal(err)
	}
	p, err := producer.New(sqsc, target.SourceURL, func(o *producer.Options) { o.Offloader = store })
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("2 MiB of report data. ", 2<<20/22+1)[:2<<20]
	res, err := p.Send(ctx, producer.Message{Body: big})
	if err != nil || !res.Offloaded {
		t.Fatalf("Send: %+v, %v", res, err)
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	var attempts []int
	var pointer s3payload.Pointer
	var afterFailure bool
	h := worker.Chain(worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
		mu.Lock()
		defer mu.Unlock()
		if m.Body != big {
			return retry.Permanent(errors.New("the handler did not get the 2 MiB body"))
		}
		attempts = append(attempts, m.Attempt)
		pointer, _, _, _ = s3payload.Lookup(aws.ToString(m.Raw.Body), m.Raw.MessageAttributes)
		if len(attempts) == 2 {
			afterFailure = objectExists(ctx, t, s3c, pointer)
		}
		if len(attempts) == 1 {
			return errors.New("first attempt fails")
		}
		return nil
	}), store.Middleware())
	runIntegrationWorker(ctx, t, sqsc, target.SourceURL, store, h, func(s worker.Stats) bool { return s.Succeeded == 1 })

	if len(attempts) != 2 || attempts[1] != 2 || !afterFailure {
		t.Errorf("attempts %v (object there after the failure: %v), want [1 2]: the retry found the object", attempts, afterFailure)
	}
	if !strings.HasPrefix(pointer.Key, "reports/") || pointer.Bucket != bucket {
		t.Errorf("pointer %v", pointer)
	}
	if objectExists(ctx, t, s3c, pointer) {
		t.Errorf("object %v still there after its message was deleted", pointer)
	}
	if c, err := dlq.Count(ctx, sqsc, target.DLQURL); err != nil || c.Total() != 0 {
		t.Errorf("DLQ: %+v, %v", c, err)
	}
}

// TestIntegrationJavaFixture puts a message in the Java extended client's
// exact wire format (testdata/java-default.json: its 2 MiB object, its
// pointer body, its SQSLargePayloadSize attribute) through the emulator and
// reads it with the Store's middleware.
func TestIntegrationJavaFixture(t *testing.T) {
	ctx, sqsc, s3c, target, bucket := integrationSetup(t, "s3payload-java")
	f := loadFixture(t, "java-default.json")
	if _, err := s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(f.Object.Key), Body: strings.NewReader(f.payload())}); err != nil {
		t.Fatal(err)
	}
	// The fixture's exact body, in this run's bucket.
	body := strings.Replace(f.Message.Body, `"s3BucketName":"`+f.Object.Bucket+`"`, `"s3BucketName":"`+bucket+`"`, 1)
	if _, err := sqsc.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl: aws.String(target.SourceURL), MessageBody: aws.String(body), MessageAttributes: f.attributes(),
	}); err != nil {
		t.Fatal(err)
	}
	store, err := s3payload.New(s3c, bucket)
	if err != nil {
		t.Fatal(err)
	}
	var got string
	var attrs map[string]types.MessageAttributeValue
	h := worker.Chain(worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
		got, attrs = m.Body, m.MessageAttributes
		return nil
	}), store.Middleware())
	runIntegrationWorker(ctx, t, sqsc, target.SourceURL, store, h, func(s worker.Stats) bool { return s.Succeeded == 1 })
	if got != f.payload() || len(got) != 2<<20 {
		t.Errorf("handler got %d bytes, want the fixture's 2 MiB payload", len(got))
	}
	if _, ok := attrs["SQSLargePayloadSize"]; ok {
		t.Errorf("the size attribute reached the handler: %v", attrs)
	}
}
