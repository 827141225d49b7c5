package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/examples/internal/exampleutil"
	"github.com/sqsworker/sqsworker/queueref"
	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/worker"
	"github.com/sqsworker/sqsworker/worker/sqslambda"
)

// retryPolicyJSON is the default retry policy: four retries, exponential
// from 1 s to 30 s. A worker.Worker consuming the same queue would take the
// same policy.
const retryPolicyJSON = `{"healthyRetryPolicy":{"minDelayTarget":1,"maxDelayTarget":30,"numRetries":4,"backoffFunction":"exponential"}}`

// functionTimeout is the function's timeout; the queue's visibility timeout
// should be at least 6 times as long (AWS's advice for SQS event sources).
const functionTimeout = 5 * time.Second

func main() {
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "lambda: loading the AWS configuration:", err)
		os.Exit(1)
	}
	client := sqs.NewFromConfig(cfg)
	policy, err := retryPolicy(os.Getenv("SQSWORKER_RETRY_POLICY"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "lambda:", err)
		os.Exit(1)
	}

	if os.Getenv("SQSWORKER_LOCAL") != "1" {
		if err := inLambda(os.Getenv); err != nil {
			fmt.Fprintln(os.Stderr, "lambda:", err)
			os.Exit(2)
		}
		log := slog.New(slog.NewJSONHandler(os.Stdout, nil))
		fn, err := newFunction(client, policy, log)
		if err != nil {
			fmt.Fprintln(os.Stderr, "lambda:", err)
			os.Exit(1)
		}
		lambda.Start(fn.Handle)
		return
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{ReplaceAttr: dropTime}))
	if url := os.Getenv("SQSWORKER_QUEUE_URL"); url != "" {
		var fn *sqslambda.Handler
		if fn, err = newFunction(client, policy, log); err == nil {
			err = serveLocal(ctx, client, url, fn, log, time.Minute)
		}
	} else {
		err = runDemo(ctx, os.Stdout, client, policy)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "lambda:", err)
		os.Exit(1)
	}
}

// inLambda returns nil inside AWS Lambda (whose runtime sets
// AWS_LAMBDA_RUNTIME_API), and otherwise an error saying how to run the
// function on this machine: lambda.Start would only fail with the names of
// two variables.
func inLambda(getenv func(string) string) error {
	if getenv("AWS_LAMBDA_RUNTIME_API") != "" || getenv("_LAMBDA_SERVER_PORT") != "" {
		return nil
	}
	return errors.New(`not running inside AWS Lambda (AWS_LAMBDA_RUNTIME_API is not set), so there is no one to invoke the function.
To run it on this machine, set SQSWORKER_LOCAL=1:
  SQSWORKER_LOCAL=1 bash localstack/with-aws.sh go run ./examples/lambda     (a demo queue pair, against the local emulators)
  SQSWORKER_LOCAL=1 SQSWORKER_QUEUE_URL=<queue URL> go run ./examples/lambda (an existing queue, until Ctrl-C)
To deploy it, see examples/lambda/README.md`)
}

// retryPolicy parses an SNS-style delivery policy, or the default.
func retryPolicy(s string) (retry.Policy, error) {
	if s == "" {
		s = retryPolicyJSON
	}
	p, err := retry.ParseDeliveryPolicySQS([]byte(s))
	if err != nil {
		return nil, fmt.Errorf("SQSWORKER_RETRY_POLICY: %w", err)
	}
	return p, nil
}

// order is the job's input.
type order struct {
	ID    string `json:"id"`
	Qty   int    `json:"qty"`
	Flaky bool   `json:"flaky,omitempty"` // the payment service is busy on the first attempt
}

// processOrder is the job code: nothing in it knows about Lambda.
func processOrder(ctx context.Context, m *worker.Message) error {
	var o order
	if err := json.Unmarshal([]byte(m.Body), &o); err != nil {
		return retry.Permanent(fmt.Errorf("not an order: %w", err))
	}
	if o.Qty <= 0 {
		return retry.Permanent(fmt.Errorf("order %s has no items", o.ID))
	}
	if o.Flaky && m.Attempt == 1 {
		return errors.New("payment service busy")
	}
	return nil // charge, ship, …
}

// logged is middleware that logs every attempt's outcome.
func logged(log *slog.Logger) worker.Middleware {
	return func(next worker.Handler) worker.Handler {
		return worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			err := next.Handle(ctx, m)
			log.Info("order attempt", "message", m.ID, "body", m.Body, "attempt", m.Attempt, "err", err)
			return err
		})
	}
}

// newFunction is the Lambda function: the job code with its middleware
// (logging, then any extra), settled by sqslambda with the client for
// backoff and dead-letter moves.
func newFunction(client *sqs.Client, policy retry.Policy, log *slog.Logger, extra ...worker.Middleware) (*sqslambda.Handler, error) {
	mw := append([]worker.Middleware{logged(log)}, extra...)
	return sqslambda.New(worker.Chain(worker.HandlerFunc(processOrder), mw...), func(o *sqslambda.Options) {
		o.Client = client
		o.RetryPolicy = policy
		o.Logger = log
		o.Concurrency = 4
	})
}

// serveLocal is runLocal against an existing queue, until Ctrl-C, saying
// what it does: what it polls, a line every interval (every) while it
// polls, and what happens to the records when it stops.
func serveLocal(ctx context.Context, client sqslambda.LocalAPI, queueURL string, fn *sqslambda.Handler, log *slog.Logger, every time.Duration) error {
	name := queueref.Name(queueURL)
	log.Info("polling the queue as Lambda's event source mapping would; each batch is one invocation of the function; Ctrl-C stops",
		"queue", name, "function", "orders", "timeout", functionTimeout)
	var mu sync.Mutex
	invocations := 0
	counted := func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		mu.Lock()
		invocations++
		mu.Unlock()
		return fn.Handle(ctx, ev)
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				mu.Lock()
				n := invocations
				mu.Unlock()
				log.Info("still polling", "queue", name, "invocations", n)
			}
		}
	}()
	err := sqslambda.RunLocal(ctx, client, queueURL, counted, localOptions(log))
	if err == nil {
		mu.Lock()
		log.Info("stopped: no more polling; records received but not yet invoked were released to the queue, and the invocation in flight was finished and settled",
			"queue", name, "invocations", invocations)
		mu.Unlock()
	}
	return err
}

// runLocal invokes fn for the queue's messages, as Lambda would, until ctx
// ends.
func runLocal(ctx context.Context, client sqslambda.LocalAPI, queueURL string, fn *sqslambda.Handler, log *slog.Logger) error {
	return sqslambda.RunLocal(ctx, client, queueURL, fn.Handle, localOptions(log))
}

// localOptions are the event source mapping's settings for the local runs.
func localOptions(log *slog.Logger) func(*sqslambda.LocalOptions) {
	return func(o *sqslambda.LocalOptions) {
		o.ReportBatchItemFailures = true // FunctionResponseTypes: ["ReportBatchItemFailures"]
		o.FunctionTimeout = functionTimeout
		o.WaitTime = 2 * time.Second
		o.FunctionName = "orders"
		o.Logger = log
	}
}

// samples are the demo's orders.
var samples = []string{
	`{"id":"A-1","qty":2}`,
	`{"id":"A-2","qty":1,"flaky":true}`,
	`{"id":"A-3","qty":5}`,
	`{"id":"A-4","qty":0}`,
	`this is not json`,
	`{"id":"A-5","qty":3}`,
}

// runDemo creates a queue pair, sends the samples, runs the function
// locally until every sample is settled, and checks where each ended.
func runDemo(ctx context.Context, out io.Writer, client *sqs.Client, policy retry.Policy) error {
	name := "sqsworker-lambda-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	setup, err := dlq.Setup(ctx, client, dlq.SetupOptions{Name: name, VisibilityTimeout: 6 * functionTimeout, MaxReceiveCount: 10})
	if err != nil {
		return err
	}
	target := setup.Target()
	defer exampleutil.DeleteQueues(ctx, client, target.SourceURL, target.DLQURL)
	fmt.Fprintf(out, "queue %s (visibility timeout %v), dead-letter queue %s\n", queueref.Name(target.SourceURL), 6*functionTimeout, queueref.Name(target.DLQURL))
	for _, body := range samples {
		if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(target.SourceURL), MessageBody: aws.String(body)}); err != nil {
			return fmt.Errorf("sending the sample orders: %w", err)
		}
	}
	fmt.Fprintf(out, "sent %d orders; invoking the function as Lambda's event source mapping would\n", len(samples))

	start := time.Now()
	log := slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{ReplaceAttr: dropTime}))
	var mu sync.Mutex
	var attempts []time.Duration // when the flaky order ran
	probe := func(next worker.Handler) worker.Handler {
		return worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			if strings.Contains(m.Body, `"flaky":true`) {
				mu.Lock()
				attempts = append(attempts, time.Since(start))
				mu.Unlock()
			}
			return next.Handle(ctx, m)
		})
	}
	fn, err := newFunction(client, policy, log, probe)
	if err != nil {
		return err
	}

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- runLocal(runCtx, client, target.SourceURL, fn, log) }()
	settled := func() (bool, error) {
		src, err := dlq.Count(ctx, client, target.SourceURL)
		if err != nil {
			return false, err
		}
		dead, err := dlq.Count(ctx, client, target.DLQURL)
		return src.Total() == 0 && dead.Total() == 2, err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		ok, err := settled()
		if err != nil {
			cancel()
			<-done
			return err
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			cancel()
			<-done
			return errors.New("the sample orders were not settled within 30 s")
		}
		select {
		case err := <-done:
			return fmt.Errorf("the local runner stopped: %v", err)
		case <-time.After(200 * time.Millisecond):
		}
	}
	cancel()
	if err := <-done; err != nil {
		return err
	}

	dead, err := dlq.Inspect(ctx, client, target.DLQURL, dlq.InspectOptions{})
	if err != nil {
		return err
	}
	for _, m := range dead {
		fmt.Fprintf(out, "dead-letter queue: %s — %s\n", m.Body, m.Provenance.Error)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(attempts) != 2 {
		return fmt.Errorf("the flaky order ran %d times, want 2", len(attempts))
	}
	fmt.Fprintf(out, "ok: 4 orders processed, the flaky one retried after %.1fs (visibility timeout %v); 2 bad orders in the dead-letter queue with their reason\n",
		(attempts[1] - attempts[0]).Seconds(), 6*functionTimeout)
	return nil
}

// dropTime leaves the time out of local log lines.
func dropTime(groups []string, a slog.Attr) slog.Attr {
	if a.Key == slog.TimeKey && len(groups) == 0 {
		return slog.Attr{}
	}
	return a
}
