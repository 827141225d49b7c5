package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/examples/internal/exampleutil"
	"github.com/sqsworker/sqsworker/producer"
	"github.com/sqsworker/sqsworker/queueref"
	"github.com/sqsworker/sqsworker/s3payload"
	"github.com/sqsworker/sqsworker/worker"
)

func main() {
	exampleutil.Main("producer", func(ctx context.Context, cfg aws.Config) error {
		s3c := s3.NewFromConfig(cfg, func(o *s3.Options) {
			o.DisableLogOutputChecksumValidationSkipped = true // emulators send no checksums
		})
		return run(ctx, os.Stdout, sqs.NewFromConfig(cfg), s3c)
	})
}

// Job is the typed job: a thumbnail to render, or a report.
type Job struct {
	Kind   string `json:"kind"` // "thumbnail" or "report"
	Photo  string `json:"photo,omitempty"`
	Width  int    `json:"width,omitempty"`
	Report string `json:"report,omitempty"` // the report's data: large
}

const thumbnails = 200

func run(ctx context.Context, out io.Writer, client *sqs.Client, s3c *s3.Client) error {
	name := "sqsworker-producer-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	// A short visibility timeout: a message hidden by a receive whose response
	// was lost (a busy machine) comes back in seconds; the heartbeat extends
	// it for running handlers.
	target, err := dlq.Setup(ctx, client, dlq.SetupOptions{Name: name, VisibilityTimeout: 5 * time.Second})
	if err != nil {
		return err
	}
	defer exampleutil.DeleteQueues(ctx, client, target.QueueURL, target.DLQURL)
	if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		return fmt.Errorf("creating bucket %s: %w", name, err)
	}
	defer deleteBucket(ctx, s3c, name)
	fmt.Fprintf(out, "queue %s, bucket %s\n", queueref.Name(target.QueueURL), name)

	// The producer: bodies over 1 MiB go to S3 (in the format of AWS's
	// extended clients), the rest in batches of ten.
	store, err := s3payload.New(s3c, name, func(o *s3payload.Options) { o.KeyPrefix = "reports/" })
	if err != nil {
		return err
	}
	p, err := producer.New(client, target.QueueURL, func(o *producer.Options) { o.Offloader = store })
	if err != nil {
		return err
	}
	jobs := producer.JSON[Job](p)

	var pending []*producer.Pending
	for i := range thumbnails {
		pd, err := jobs.Enqueue(ctx, Job{Kind: "thumbnail", Photo: fmt.Sprintf("photo-%03d.jpg", i), Width: 320})
		if err != nil {
			return err
		}
		pending = append(pending, pd)
	}
	later, err := jobs.Enqueue(ctx, Job{Kind: "thumbnail", Photo: "in-two-days.jpg", Width: 1024}, producer.WithDelay(48*time.Hour))
	if err != nil {
		return err
	}
	report := strings.Repeat("quarterly figures, line after line; ", 2<<20/36+1)[:2<<20]
	big, err := jobs.Enqueue(ctx, Job{Kind: "report", Report: report})
	if err != nil {
		return err
	}
	if err := p.Close(ctx); err != nil { // flushes the batcher; reports any message not sent
		return err
	}
	for _, pd := range append(pending, later, big) {
		if _, err := pd.Wait(ctx); err != nil {
			return err
		}
	}
	st := p.Stats()
	fmt.Fprintf(out, "producer: %d jobs sent in %d SendMessageBatch calls (%.2f requests per job); %d offloaded to S3, %d with a due time\n",
		st.Sent, st.Requests, float64(st.Requests)/float64(st.Sent), st.Offloaded, st.Delayed)
	lr, _ := later.Wait(ctx)
	fmt.Fprintf(out, "delayed job %s due at %s (in %s)\n", lr.MessageID, lr.Due.UTC().Format(time.RFC3339), time.Until(lr.Due).Round(time.Hour))

	// The worker: the Store's middleware brings the report's body back from
	// S3, worker.JSON decodes every body into a Job.
	var mu sync.Mutex
	handled := map[string]int{}
	var reportKey string
	h := worker.Chain(worker.JSON(func(ctx context.Context, job Job, m *worker.Message) error {
		mu.Lock()
		defer mu.Unlock()
		switch job.Kind {
		case "report":
			if job.Report != report {
				return fmt.Errorf("report arrived with %d bytes, want %d", len(job.Report), len(report))
			}
			p, _, _, _ := s3payload.Lookup(aws.ToString(m.Raw.Body), m.Raw.MessageAttributes)
			reportKey = p.String()
			handled["report"]++
			fmt.Fprintf(out, "handled the report: %d bytes, read back from S3\n", len(job.Report))
		default:
			handled[job.Photo]++
		}
		return nil
	}), store.Middleware())
	w, err := worker.New(client, target.QueueURL, h, func(o *worker.Options) {
		o.Concurrency = 20
		o.OnSettled = store.Settled // a payload object goes once SQS confirmed its message's delete
	})
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- w.Run(runCtx) }()
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(handled)
	}
	if err := exampleutil.WaitFor(ctx, 60*time.Second, func() bool { return count() == thumbnails+1 }); err != nil {
		cancel()
		<-runErr
		return fmt.Errorf("%d of %d due jobs handled: %w", count(), thumbnails+1, err)
	}
	cancel()
	if err := <-runErr; err != nil { // flushes the deletes
		return err
	}
	ws := w.Stats()
	fmt.Fprintf(out, "worker: %d jobs handled (%.2f requests per job)\n", ws.Succeeded, ws.Cost(worker.Pricing{}).RequestsPerMessage)

	// Check: each due job once, the delayed one still waiting.
	for job, n := range handled {
		if n != 1 {
			return fmt.Errorf("%s handled %d times", job, n)
		}
	}
	if handled["in-two-days.jpg"] != 0 {
		return errors.New("the job delayed by two days ran now")
	}
	c, err := dlq.Count(ctx, client, target.QueueURL)
	if err != nil {
		return err
	}
	if c.Total() != 1 {
		return fmt.Errorf("queue holds %d messages (%+v), want only the delayed job", c.Total(), c)
	}
	objs, err := s3c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(name)})
	if err != nil {
		return err
	}
	if n := aws.ToInt32(objs.KeyCount); n != 0 {
		return fmt.Errorf("bucket still holds %d objects", n)
	}
	fmt.Fprintf(out, "the report's S3 object %s was deleted after its message\n", reportKey)
	fmt.Fprintf(out, "ok: %d thumbnails and the report handled once; the delayed job waits in the queue (%d delayed, %d visible)\n",
		thumbnails, c.Delayed, c.Visible)
	return nil
}

// deleteBucket removes the example's bucket and whatever it still holds.
func deleteBucket(ctx context.Context, s3c *s3.Client, bucket string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if objs, err := s3c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)}); err == nil {
		for _, o := range objs.Contents {
			_, _ = s3c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: o.Key})
		}
	}
	_, _ = s3c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(bucket)})
}
