package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/examples/internal/exampleutil"
	"github.com/sqsworker/sqsworker/fanout"
	"github.com/sqsworker/sqsworker/producer"
	"github.com/sqsworker/sqsworker/queueref"
	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/worker"
)

func main() {
	exampleutil.Main("fanout", func(ctx context.Context, cfg aws.Config) error {
		return run(ctx, os.Stdout, sqs.NewFromConfig(cfg), sns.NewFromConfig(cfg))
	})
}

// rental is an order as the rental application publishes it.
type rental struct {
	Order string `json:"order"`
	Car   string `json:"car"`
	Days  int    `json:"days"`
}

// The orders published, with their order-status attribute. R-5 is
// malformed; are pending (billing's filter drops them).
var orders = []struct{ body, status string }{
	{`{"order":"R-1","car":"compact","days":3}`, "confirmed"},
	{`{"order":"R-2","car":"van","days":7}`, "confirmed"},
	{`{"order":"R-3","car":"suv","days":2}`, "pending"},
	{`{"order":"R-4","car":"compact","days":1}`, "pending"},
	{`{"order":"R-5","car":`, "confirmed"},
	{`{"order":"R-6","car":"van","days":4}`, "canceled"},
}

// undelivered are the orders SNS could not deliver to billing.
var undelivered = []string{`{"order":"R-7","car":"suv","days":5}`, `{"order":"R-8","car":"compact","days":2}`}

// ledger records what each worker completed.
type ledger struct {
	mu   sync.Mutex
	done map[string][]string // queue → order IDs, in completion order
}

func (l *ledger) add(queue, id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.done[queue] = append(l.done[queue], id)
}

func (l *ledger) count(queue string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.done[queue])
}

// handler decodes a rental order; a malformed one is a permanent failure.
func handler(out io.Writer, l *ledger, queue string) worker.Handler {
	return worker.HandlerFunc(func(_ context.Context, m *worker.Message) error {
		var r rental
		if err := json.Unmarshal([]byte(m.Body), &r); err != nil {
			return retry.Permanent(fmt.Errorf("malformed order: %w", err))
		}
		status := aws.ToString(m.MessageAttributes["order-status"].StringValue)
		via := "raw delivery"
		if m.SNS != nil {
			via = fmt.Sprintf("unwrapped from SNS message %s…, published %s", m.SNS.MessageID[:8], m.SNS.Timestamp.Format("15:04:05.000"))
		}
		days := fmt.Sprintf("%d days", r.Days)
		if r.Days == 1 {
			days = "1 day"
		}
		fmt.Fprintf(out, "  %-10s %s: %s for %s, %s (%s)\n", queue, r.Order, r.Car, days, status, via)
		l.add(queue, r.Order)
		return nil
	})
}

func run(ctx context.Context, w io.Writer, sqsClient *sqs.Client, snsClient *sns.Client) (err error) {
	out := exampleutil.LockedWriter(w)
	suffix := strconv.FormatInt(time.Now().UnixNano(), 36)
	topic := "sqsworker-rental-orders-" + suffix

	// The chain, twice: the second setup changes nothing.
	setup := func(queue string, raw bool, filter string) (fanout.SetupResult, error) {
		o := fanout.SetupOptions{Topic: topic, RawMessageDelivery: aws.Bool(raw), FilterPolicy: filter}
		o.Queue.Name = queue + "-" + suffix
		return fanout.Setup(ctx, snsClient, sqsClient, o)
	}
	fulfilment, err := setup("rental-fulfilment", true, "")
	if err != nil {
		return err
	}
	billing, err := setup("rental-billing", false, `{"order-status":["confirmed","canceled"]}`)
	if err != nil {
		return err
	}
	defer func() {
		exampleutil.DeleteQueues(ctx, sqsClient, fulfilment.Queue.QueueURL, fulfilment.Queue.DLQURL, fulfilment.FanoutDLQURL,
			billing.Queue.QueueURL, billing.Queue.DLQURL, billing.FanoutDLQURL)
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_, _ = snsClient.DeleteTopic(dctx, &sns.DeleteTopicInput{TopicArn: aws.String(fulfilment.TopicARN)})
	}()
	fmt.Fprintf(out, "topic %s\n", topic)
	for _, r := range []struct {
		name string
		res  fanout.SetupResult
	}{{"fulfilment", fulfilment}, {"billing", billing}} {
		delivery := "SNS envelope, unwrapped by fanout.Unwrap"
		if r.res.Subscription.Raw {
			delivery = "raw delivery"
		}
		filter := ""
		if r.res.Subscription.FilterPolicy != "" {
			filter = ", filter " + r.res.Subscription.FilterPolicy
		}
		fmt.Fprintf(out, "  → %s (%s%s)\n      its DLQ %s, the subscription's DLQ %s; %d resources created or changed\n",
			queueref.Name(r.res.Queue.QueueURL), delivery, filter, queueref.Name(r.res.Queue.DLQURL), queueref.Name(r.res.FanoutDLQURL), len(r.res.Changes))
	}
	again, err := setup("rental-billing", false, `{"order-status":["confirmed","canceled"]}`)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "setup again: %d changes\n", len(again.Changes))

	// What `sqsworker doctor` says about each chain.
	fmt.Fprintln(out, "\ndoctor:")
	for _, c := range []struct {
		res      fanout.SetupResult
		delivery fanout.Delivery
	}{{fulfilment, fanout.DeliveryRaw}, {billing, fanout.DeliveryEnvelope}} {
		fs, err := fanout.Lint(ctx, snsClient, sqsClient, c.res.Queue.QueueURL, fanout.LintOptions{Delivery: c.delivery})
		if err != nil {
			return err
		}
		status := "ok"
		for _, f := range fs {
			status = "problems"
			fmt.Fprintf(out, "  %s: %s %s: %s\n", queueref.Name(c.res.Queue.QueueURL), f.Severity, f.Code, f.Message)
		}
		fmt.Fprintf(out, "  %s: %s\n", queueref.Name(c.res.Queue.QueueURL), status)
		if status != "ok" {
			return fmt.Errorf("doctor found problems in a chain fanout.Setup made")
		}
	}

	// Publish with a producer for the topic (one PublishBatch call for the
	// six orders), and run a worker on each queue.
	publisher, err := producer.NewTopic(snsClient, fulfilment.TopicARN)
	if err != nil {
		return err
	}
	msgs := make([]producer.Message, len(orders))
	for i, o := range orders {
		msgs[i] = producer.Message{Body: o.body, Subject: "rental order",
			Attributes: map[string]sqstypes.MessageAttributeValue{"order-status": {DataType: aws.String("String"), StringValue: aws.String(o.status)}}}
	}
	if _, err := publisher.SendBatch(ctx, msgs); err != nil {
		return err
	}
	fmt.Fprintf(out, "\npublished %d orders in %d request(s); the workers:\n", len(orders), publisher.Stats().Requests)
	l := &ledger{done: map[string][]string{}}
	var wg sync.WaitGroup
	wctx, stopWorkers := context.WithCancel(ctx)
	defer stopWorkers()
	errs := make(chan error, 2)
	for _, q := range []struct {
		name string
		url  string
		h    worker.Handler
	}{
		{"fulfilment", fulfilment.Queue.QueueURL, handler(out, l, "fulfilment")},
		{"billing", billing.Queue.QueueURL, worker.Chain(handler(out, l, "billing"), fanout.Unwrap())},
	} {
		wk, err := worker.New(sqsClient, q.url, q.h, func(o *worker.Options) { o.WaitTime = time.Second; o.HandlerName = "rental." + q.name })
		if err != nil {
			return err
		}
		wg.Go(func() { errs <- wk.Run(wctx) })
	}
	deadLettered := func(url string) int {
		c, _ := dlq.Count(ctx, sqsClient, url)
		return c.Total()
	}
	if err := exampleutil.WaitFor(ctx, 30*time.Second, func() bool {
		return l.count("fulfilment") == 5 && l.count("billing") == 3 && deadLettered(fulfilment.Queue.DLQURL) == 1 && deadLettered(billing.Queue.DLQURL) == 1
	}); err != nil {
		return fmt.Errorf("waiting for the orders: fulfilment %d, billing %d: %w", l.count("fulfilment"), l.count("billing"), err)
	}
	for _, q := range []fanout.SetupResult{fulfilment, billing} {
		dead, err := dlq.Inspect(ctx, sqsClient, q.Queue.DLQURL, dlq.InspectOptions{})
		if err != nil {
			return err
		}
		for _, m := range dead {
			fmt.Fprintf(out, "  %-10s dead-lettered by its handler: %s\n", strings.TrimSuffix(strings.TrimPrefix(queueref.Name(q.Queue.QueueURL), "rental-"), "-"+suffix), m.Provenance.Error)
		}
	}

	// Two orders SNS could not deliver to billing, in its subscription's
	// dead-letter queue as SNS leaves them: the envelope billing would
	// have got.
	fmt.Fprintf(out, "\n%d orders SNS could not deliver to billing wait in %s; redrive them to the billing queue (not the topic):\n", len(undelivered), queueref.Name(billing.FanoutDLQURL))
	for i, body := range undelivered {
		env, _ := json.Marshal(map[string]any{
			"Type": "Notification", "MessageId": fmt.Sprintf("undelivered-%d-%s", i, suffix), "TopicArn": billing.TopicARN, "Subject": "rental order",
			"Message": body, "Timestamp": time.Now().UTC().Format("2006-01-02T15:04:05.000Z"), "SignatureVersion": "1", "Signature": "…",
			"MessageAttributes": map[string]any{"order-status": map[string]string{"Type": "String", "Value": "confirmed"}},
		})
		if _, err := sqsClient.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(billing.FanoutDLQURL), MessageBody: aws.String(string(env))}); err != nil {
			return err
		}
	}
	res, err := fanout.Redrive(ctx, sqsClient, billing.Subscription, dlq.RedriveOptions{})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "  redrive: moved %d of %d (%s)\n", res.Moved, res.Scanned, res.Method)
	if err := exampleutil.WaitFor(ctx, 30*time.Second, func() bool { return l.count("billing") == 5 }); err != nil {
		return fmt.Errorf("waiting for the redriven orders: %w", err)
	}
	stopWorkers()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}

	// Reconcile.
	got := func(q string) string {
		l.mu.Lock()
		defer l.mu.Unlock()
		ids := slices.Clone(l.done[q])
		slices.Sort(ids)
		return strings.Join(ids, " ")
	}
	fmt.Fprintf(out, "\nfulfilment completed %s (R-5 in its DLQ)\nbilling completed %s (pending R-3, R-4 filtered out; R-5 in its DLQ; R-7, R-8 redriven)\n", got("fulfilment"), got("billing"))
	if got("fulfilment") != "R-1 R-2 R-3 R-4 R-6" || got("billing") != "R-1 R-2 R-6 R-7 R-8" ||
		deadLettered(billing.FanoutDLQURL) != 0 || deadLettered(fulfilment.FanoutDLQURL) != 0 {
		return fmt.Errorf("the orders did not end where they should")
	}
	fmt.Fprintln(out, "every order is where it should be")
	return nil
}
