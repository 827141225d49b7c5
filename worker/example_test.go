package worker_test

import (
	"context"
	"fmt"
	"log"
	"slices"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/sqstest"
	"github.com/sqsworker/sqsworker/worker"
)

// The main entry point: New checks the queue (it must have a dead-letter
// queue), Run receives and settles until its context ends. A job that
// succeeds is deleted; one that fails for good goes to the dead-letter
// queue with its reason.
func ExampleNew() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client, err := sqstest.New() // or sqs.NewFromConfig(cfg)
	if err != nil {
		log.Fatal(err)
	}
	q, err := dlq.Setup(ctx, client, dlq.SetupOptions{Name: "orders"})
	if err != nil {
		log.Fatal(err)
	}
	for _, body := range []string{`{"id":"A-1","qty":2}`, `{"id":"A-2","qty":0}`, `{"id":"A-3","qty":1}`} {
		if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q.QueueURL), MessageBody: aws.String(body)}); err != nil {
			log.Fatal(err)
		}
	}

	type order struct {
		ID  string `json:"id"`
		Qty int    `json:"qty"`
	}
	h := worker.JSON(func(ctx context.Context, o order, m *worker.Message) error {
		if o.Qty <= 0 {
			return retry.Permanent(fmt.Errorf("order %s has no items", o.ID)) // to the DLQ now, with this reason
		}
		return nil // done: deleted
	})
	var mu sync.Mutex
	var settled []string
	w, err := worker.New(client, q.QueueURL, h, func(o *worker.Options) {
		o.Logger = quiet
		o.OnSettled = func(s worker.Settlement) {
			mu.Lock()
			defer mu.Unlock()
			line := fmt.Sprintf("%s: %s", s.Message.Body, s.Outcome)
			if s.Err != nil {
				line += " (" + s.Err.Error() + ")"
			}
			settled = append(settled, line)
			if len(settled) == 3 {
				cancel() // a service cancels on SIGTERM instead
			}
		}
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := w.Run(ctx); err != nil {
		log.Fatal(err)
	}

	slices.Sort(settled)
	for _, s := range settled {
		fmt.Println(s)
	}
	fmt.Println("left in orders:", len(client.Messages(q.QueueURL)))
	for _, m := range client.Messages(q.DLQURL) {
		p, _ := dlq.ParseProvenance(m.Attributes)
		fmt.Printf("orders-dlq: %s, reason %q, attempt %d\n", m.Body, p.Error, p.Attempt)
	}
	// Output:
	// {"id":"A-1","qty":2}: deleted
	// {"id":"A-2","qty":0}: dead-lettered (order A-2 has no items)
	// {"id":"A-3","qty":1}: deleted
	// left in orders: 0
	// orders-dlq: {"id":"A-2","qty":0}, reason "permanent failure: order A-2 has no items", attempt 1
}
