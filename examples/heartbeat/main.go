package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/examples/internal/exampleutil"
	"github.com/sqsworker/sqsworker/queueref"
	"github.com/sqsworker/sqsworker/worker"
)

func main() {
	exampleutil.Main("heartbeat", func(ctx context.Context, cfg aws.Config) error {
		return run(ctx, os.Stdout, sqs.NewFromConfig(cfg))
	})
}

const (
	visibilityTimeout = 2 * time.Second
	jobTime           = 5 * time.Second
)

func run(ctx context.Context, out io.Writer, client *sqs.Client) error {
	start := time.Now()
	var mu sync.Mutex // serialises output
	say := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(out, "%5.1fs  %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
	}

	name := "sqsworker-heartbeat-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	setup, err := dlq.Setup(ctx, client, dlq.SetupOptions{Name: name, VisibilityTimeout: visibilityTimeout})
	if err != nil {
		return err
	}
	target := setup.Target()
	defer exampleutil.DeleteQueues(ctx, client, target.SourceURL, target.DLQURL)
	if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl:    aws.String(target.SourceURL),
		MessageBody: aws.String("render video 42"),
	}); err != nil {
		return err
	}
	say("queue %s: visibility timeout %v; sent one job that takes %v", queueref.Name(target.SourceURL), visibilityTimeout, jobTime)

	// The worker gets a client that prints its visibility extensions: any
	// value with the SDK's method signatures will do (worker.API).
	var extensions atomic.Int64
	watched := &extensionPrinter{API: client, onExtend: func(entries int, seconds int32) {
		n := extensions.Add(1)
		say("heartbeat: ChangeMessageVisibilityBatch, %d entry, visible again in %ds unless extended again (extension %d)", entries, seconds, n)
	}}
	var runs atomic.Int64
	started := make(chan struct{})
	h := worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
		if runs.Add(1) == 1 {
			close(started)
		}
		say("handler: %q started (receive %d)", m.Body, m.ReceiveCount)
		select {
		case <-time.After(jobTime):
			say("handler: %q done", m.Body)
			return nil
		case <-ctx.Done():
			// The heartbeat could not keep the message (or the worker is
			// stopping): context.Cause says why.
			return context.Cause(ctx)
		}
	})
	w, err := worker.New(watched, target.SourceURL, h)
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- w.Run(runCtx) }()

	// Once the job runs, another consumer, without sqsworker, polls the
	// same queue until it is done. It stops between polls rather than
	// cancelling one.
	select {
	case <-started:
	case <-time.After(20 * time.Second):
		cancel()
		<-runErr
		return fmt.Errorf("the worker did not start the job within 20s")
	}
	var spyDone atomic.Bool
	spied := make(chan int, 1)
	go func() {
		got := 0
		for !spyDone.Load() {
			o, err := client.ReceiveMessage(context.WithoutCancel(ctx), &sqs.ReceiveMessageInput{
				QueueUrl: aws.String(target.SourceURL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
			})
			if err == nil && len(o.Messages) > 0 {
				got += len(o.Messages)
				say("other consumer: received %d message(s) - the job is exposed!", len(o.Messages))
			}
		}
		spied <- got
	}()

	err = exampleutil.WaitFor(ctx, jobTime+20*time.Second, func() bool { return w.Stats().Succeeded == 1 })
	spyDone.Store(true)
	otherGot := <-spied
	cancel()
	if rerr := <-runErr; err == nil {
		err = rerr
	}
	if err != nil {
		return err
	}

	st := w.Stats()
	say("worker stopped: the job ran %d time(s) with %d heartbeat extension(s); the other consumer received %d message(s)",
		runs.Load(), extensions.Load(), otherGot)
	switch {
	case runs.Load() != 1:
		return fmt.Errorf("the job ran %d times, want once", runs.Load())
	case extensions.Load() == 0:
		return fmt.Errorf("no heartbeat extension was made")
	case otherGot != 0:
		return fmt.Errorf("the other consumer received the message while the job ran")
	case st.Lost != 0:
		return fmt.Errorf("the worker lost ownership of %d message(s)", st.Lost)
	}
	c, err := dlq.Count(ctx, client, target.SourceURL)
	if err != nil {
		return err
	}
	if c.Total() != 0 {
		return fmt.Errorf("the queue still holds %d message(s)", c.Total())
	}
	say("ok: a %v job on a %v visibility timeout ran once", jobTime, visibilityTimeout)
	return nil
}

// extensionPrinter passes every call to the SQS client and reports each
// visibility extension (a ChangeMessageVisibilityBatch with a timeout above
// zero) that SQS accepted.
type extensionPrinter struct {
	worker.API
	onExtend func(entries int, seconds int32)
}

func (p *extensionPrinter) ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	out, err := p.API.ChangeMessageVisibilityBatch(ctx, in, optFns...)
	if err == nil && len(out.Successful) > 0 && len(in.Entries) > 0 && in.Entries[0].VisibilityTimeout > 0 {
		p.onExtend(len(out.Successful), in.Entries[0].VisibilityTimeout)
	}
	return out, err
}
