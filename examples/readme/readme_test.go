package readme

import (
	"context"
	"encoding/json"
	"errors"
	"log"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/console"
	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/fanout"
	"github.com/sqsworker/sqsworker/fleet"
	"github.com/sqsworker/sqsworker/idempotency"
	"github.com/sqsworker/sqsworker/producer"
	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/sqstest"
	"github.com/sqsworker/sqsworker/worker"
	"github.com/sqsworker/sqsworker/worker/sqslambda"
)

// Job stands for the user's job type in the snippets.
type Job struct {
	OrderID string `json:"order_id"`
}

// Process stands for the user's work.
func (j Job) Process(ctx context.Context) error {
	if j.OrderID == "" {
		return errors.New("no order ID")
	}
	return nil
}

// handleOrder is the handler of the embedding snippet, for the test snippet.
var handleOrder = worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
	var job Job
	if err := json.Unmarshal([]byte(m.Body), &job); err != nil {
		return retry.Permanent(err)
	}
	return job.Process(ctx)
})

// README: Embedding a worker in a service.

func serve(ctx context.Context, queueURL string) error {
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return err
	}
	policy, err := retry.ParseDeliveryPolicy([]byte(`{"healthyRetryPolicy": {"minDelayTarget": 10,
		"maxDelayTarget": 600, "numRetries": 4, "backoffFunction": "exponential"}}`))
	if err != nil {
		return err
	}
	h := worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
		var job Job
		if err := json.Unmarshal([]byte(m.Body), &job); err != nil {
			return retry.Permanent(err) // poison: to the DLQ now, with the reason
		}
		return job.Process(ctx) // nil: deleted; an error: retried on the policy
	})
	w, err := worker.New(sqs.NewFromConfig(cfg), queueURL, h, func(o *worker.Options) {
		o.Concurrency = 20
		o.RetryPolicy = policy
	})
	if err != nil {
		return err // e.g. the queue has no RedrivePolicy; the error says what to do
	}
	return w.Run(ctx) // until ctx is cancelled (SIGTERM), then a graceful drain
}

// README: Running on AWS Lambda.

func lambdaMain(cfg aws.Config, h worker.Handler, policy retry.Policy) error {
	fn, err := sqslambda.New(h, func(o *sqslambda.Options) {
		o.Client = sqs.NewFromConfig(cfg) // backoff and dead-letter moves
		o.RetryPolicy = policy            // the worker's policy
	})
	if err != nil {
		return err // an option out of range; the error says which
	}
	lambda.Start(fn.Handle)
	return nil
}

// README: Sending jobs.

func enqueue(ctx context.Context, cfg aws.Config, queue string, batch []Job) error {
	p, err := producer.New(sqs.NewFromConfig(cfg), queue) // "orders", its URL or its ARN
	if err != nil {
		return err
	}
	jobs := producer.JSON[Job](p)
	res, err := jobs.SendBatch(ctx, batch) // any number: 10 per call, failed entries retried
	if err != nil {
		return err // a *producer.BatchError: res[i].Err says which job was not sent, and why
	}
	log.Printf("sent %d jobs in %d calls", len(res), p.Stats().Requests)
	// Send and Enqueue go through a background batcher (flushed by Close),
	// so concurrent callers share calls; a delay may exceed SQS's 15 minutes.
	_, err = jobs.Send(ctx, Job{OrderID: "A-7"}, producer.WithDelay(48*time.Hour))
	return errors.Join(err, p.Close(ctx))
}

var typedHandler = worker.JSON(func(ctx context.Context, job Job, m *worker.Message) error {
	return job.Process(ctx) // a body that is not a valid Job (nor `null`) never gets here: DLQ, with the decode error
})

// README: Observability.

func serveHealth(w *worker.Worker) {
	mux := http.NewServeMux()
	mux.Handle("GET /livez", w.LivenessHandler())              // not live: Run returned or stuck, receives failing > 1 min
	mux.Handle("GET /readyz", w.ReadinessHandler())            // ready: running and receiving
	mux.Handle("GET /debug/sqsworker/stats", w.StatsHandler()) // for sqsworker cost
	go http.ListenAndServe("127.0.0.1:8080", mux)
}

// README: Effectively once: idempotency on DynamoDB.

func guarded(cfg aws.Config, h worker.Handler) (worker.Handler, error) {
	guard, err := idempotency.New(dynamodb.NewFromConfig(cfg), "orders-idempotency", func(o *idempotency.Options) {
		o.KeyPrefix = "charge-order"            // one per handler sharing the table
		o.Key = idempotency.JSONKey("order_id") // default: the SQS message ID
	})
	if err != nil {
		return nil, err // a nil client, no table name, a negative option
	}
	return worker.Chain(h, guard.Wrap), nil // for worker.New and sqslambda.New alike
}

// README: Testing your handlers with sqstest.

func TestPoisonGoesToTheDLQ(t *testing.T) {
	synctest.Test(t, func(t *testing.T) { // virtual time: retries and long polls cost nothing
		client := sqstest.For(t)
		setup, err := dlq.Setup(t.Context(), client, dlq.SetupOptions{Name: "orders"})
		if err != nil {
			t.Fatal(err)
		}
		client.SendMessage(t.Context(), &sqs.SendMessageInput{
			QueueUrl: aws.String(setup.QueueURL), MessageBody: aws.String(`{"order_id": 42`),
		})

		w, err := worker.New(client, setup.QueueURL, handleOrder)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- w.Run(ctx) }()
		for w.Stats().DeadLettered == 0 {
			time.Sleep(100 * time.Millisecond)
		}
		cancel()
		<-done

		dead := client.Messages(setup.DLQURL)
		if len(dead) != 1 {
			t.Fatalf("the DLQ holds %d messages, want the poison one", len(dead))
		}
		p, _ := dlq.ParseProvenance(dead[0].Attributes)
		t.Log("dead-lettered:", p.Error) // permanent failure: unexpected end of JSON input
	})
}

// README: Operator console.

func mountConsole(mux *http.ServeMux, client *sqs.Client, snsClient *sns.Client) error {
	h, err := console.New(client, func(o *console.Options) {
		o.Prefix = "/sqs"
		o.SNS = snsClient
		o.Actions = true
		o.Authenticate = func(r *http.Request) (console.User, error) {
			name := r.Header.Get("X-Auth-User") // set by your auth proxy
			if name == "" {
				return console.User{}, errors.New("sign in first")
			}
			return console.User{Name: name, Role: console.RoleOperator}, nil
		}
		o.Redact = func(dlqURL string, m dlq.Message) string { return "(redacted)" }
	})
	if err != nil {
		return err
	}
	mux.Handle("/sqs/", h)
	return nil
}

var _ = mountConsole

// README: Fan-out with SNS.

func consumeBilling(ctx context.Context, client *sqs.Client, queueURL string, h worker.Handler) error {
	w, err := worker.New(client, queueURL, worker.Chain(h, fanout.Unwrap()))
	if err != nil {
		return err
	}
	return w.Run(ctx) // on Lambda: sqslambda.New(worker.Chain(h, fanout.Unwrap()), …)
}

var _ = consumeBilling

// README: Performance.

// Invoice stands for a tenant's job in the fan-out snippet.
type Invoice struct {
	Tenant string `json:"tenant"`
	Amount int    `json:"amount"`
}

func publishInvoices(ctx context.Context, topics *sns.Client, topicARN string, invoices []Invoice) error {
	p, err := producer.NewTopic(topics, topicARN) // the producer, for a topic
	if err != nil {
		return err
	}
	typed := producer.JSON[Invoice](p)
	for _, inv := range invoices {
		if _, err = typed.Enqueue(ctx, inv, producer.WithGroup(inv.Tenant, "")); err != nil {
			break // not accepted: ctx ended
		}
	}
	return errors.Join(err, p.Close(ctx)) // Close sends what waits: a *producer.BatchError when any failed
}

func newSQSClient(cfg aws.Config) *sqs.Client {
	httpClient := awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
		t.MaxIdleConnsPerHost = 100 // at least the calls the worker keeps in flight
	})
	return sqs.NewFromConfig(cfg, func(o *sqs.Options) { o.HTTPClient = httpClient })
}

var _ = newSQSClient

// README: Fleet controls.
func fleetWorker(cfg aws.Config, queueURL string, handler worker.Handler, isOutage func(error) bool) (*worker.Worker, error) {
	f, err := fleet.New(dynamodb.NewFromConfig(cfg), "sqsworker-fleet") // refuses a missing table or a wrong key
	if err != nil {
		return nil, err
	}
	payments, err1 := f.RateLimit("payments-api", 50) // 50 jobs/s across the fleet
	tenants, err2 := f.Cap("tenant", 3, func(o *fleet.CapOptions) { o.Key = fleet.ByGroup })
	down, err3 := f.Breaker("payments-api", func(o *fleet.BreakerOptions) { o.Counts = isOutage })
	pause, err4 := f.Pauser(queueURL)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return nil, err // a limit of 0, a breaker without Counts…
	}
	return worker.New(sqs.NewFromConfig(cfg), queueURL,
		worker.Chain(handler, down.Middleware(), tenants.Middleware(), payments.Middleware()),
		func(o *worker.Options) { o.ReceiveGate = fleet.AllOpen(pause, down) })
}

// docs/guides/dlq.md.

func redriveFixed(ctx context.Context, client *sqs.Client, queue string) error {
	target, err := dlq.Discover(ctx, client, queue) // the queue's DLQ, from its RedrivePolicy
	if err != nil {
		return err
	}
	dead, err := dlq.Inspect(ctx, client, target.DLQURL, dlq.InspectOptions{Max: 10})
	if err != nil {
		return err // a *dlq.NotSeenError when some were hidden from this read: dead holds the others
	}
	for _, m := range dead {
		log.Printf("%s: attempt %d, %s", m.ID, m.Provenance.Attempt, m.Provenance.Error)
	}
	res, err := dlq.Redrive(ctx, client, target, dlq.RedriveOptions{
		Filter: dlq.Filter{ErrorContains: "inventory service unavailable"}, // only what the fix covers
	})
	log.Printf("moved %d of the %d messages seen", res.Moved, res.Scanned)
	return err
}

var _ = redriveFixed

// The snippets are compiled, not called: these uses keep staticcheck's
// unused check quiet about them.
var _ = []any{serve, lambdaMain, enqueue, typedHandler, serveHealth, guarded, publishInvoices, fleetWorker}
