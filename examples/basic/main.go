package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/examples/internal/exampleutil"
	"github.com/sqsworker/sqsworker/queueref"
	"github.com/sqsworker/sqsworker/worker"
)

func main() {
	exampleutil.Main("basic", func(ctx context.Context, cfg aws.Config) error {
		return run(ctx, os.Stdout, sqs.NewFromConfig(cfg))
	})
}

const jobs = 10

func run(ctx context.Context, out io.Writer, client *sqs.Client) error {
	// A queue and its dead-letter queue, linked by a RedrivePolicy: the
	// worker refuses a queue without one.
	name := "sqsworker-basic-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	setup, err := dlq.Setup(ctx, client, dlq.SetupOptions{Name: name})
	if err != nil {
		return err
	}
	target := setup.Target()
	defer exampleutil.DeleteQueues(ctx, client, target.SourceURL, target.DLQURL)
	fmt.Fprintf(out, "queue %s, dead-letter queue %s\n", queueref.Name(target.SourceURL), queueref.Name(target.DLQURL))

	in := &sqs.SendMessageBatchInput{QueueUrl: aws.String(target.SourceURL)}
	for i := range jobs {
		in.Entries = append(in.Entries, types.SendMessageBatchRequestEntry{
			Id:          aws.String(strconv.Itoa(i)),
			MessageBody: aws.String(fmt.Sprintf("resize photo-%d.jpg", i)),
		})
	}
	if _, err := client.SendMessageBatch(ctx, in); err != nil {
		return fmt.Errorf("sending the jobs: %w", err)
	}
	fmt.Fprintf(out, "sent %d jobs\n", jobs)

	// The handler: return nil and the message is deleted; return an error
	// and it is retried on the retry policy, then dead-lettered.
	var mu sync.Mutex
	handled := map[string]int{}
	h := worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
		time.Sleep(50 * time.Millisecond) // the work
		mu.Lock()
		defer mu.Unlock()
		handled[m.Body]++
		fmt.Fprintf(out, "handled %q (attempt %d)\n", m.Body, m.Attempt)
		return nil
	})
	w, err := worker.New(client, target.SourceURL, h, func(o *worker.Options) {
		o.Concurrency = 4
	})
	if err != nil {
		return err
	}

	// Run until every job is handled, then cancel: Run stops receiving,
	// lets running handlers finish, flushes the deletes, and returns.
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- w.Run(runCtx) }()
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(handled)
	}
	if err := exampleutil.WaitFor(ctx, 30*time.Second, func() bool { return count() == jobs }); err != nil {
		cancel()
		<-runErr
		return fmt.Errorf("%d of %d jobs handled: %w", count(), jobs, err)
	}
	cancel()
	if err := <-runErr; err != nil {
		return err
	}

	// Check the outcome: every job once, nothing left behind.
	st := w.Stats()
	fmt.Fprintf(out, "worker: received %d, succeeded %d, failed %d; %d SQS requests (%.2f per job)\n",
		st.Received, st.Succeeded, st.Failed, st.TotalRequests(), st.Cost(worker.Pricing{}).RequestsPerMessage)
	for body, n := range handled {
		if n != 1 {
			return fmt.Errorf("%q was handled %d times", body, n)
		}
	}
	for _, u := range []string{target.SourceURL, target.DLQURL} {
		c, err := dlq.Count(ctx, client, u)
		if err != nil {
			return err
		}
		if c.Total() != 0 {
			return fmt.Errorf("queue %s still holds %d messages", queueref.Name(u), c.Total())
		}
	}
	fmt.Fprintln(out, "ok: every job handled once; both queues empty")
	return nil
}
