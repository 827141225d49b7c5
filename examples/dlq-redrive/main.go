package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/examples/internal/exampleutil"
	"github.com/sqsworker/sqsworker/queueref"
	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/worker"
)

func main() {
	exampleutil.Main("dlq-redrive", func(ctx context.Context, cfg aws.Config) error {
		return run(ctx, os.Stdout, sqs.NewFromConfig(cfg))
	})
}

// The orders sent: two fine, two for a product added to the catalogue
// later, two that are not JSON.
var orders = []string{
	`{"order": "A-1", "product": "kettle"}`,
	`{"order": "A-2", "product": "teapot"}`,
	`{"order": "A-3", "product": "samovar"}`,
	`{"order": "A-4", "product": "samovar"}`,
	`{"order": "A-5", "product": kettle}`,
	`order=A-6&product=teapot`,
}

type order struct {
	Order   string `json:"order"`
	Product string `json:"product"`
}

// catalogue is the handler's product list, updated while the worker runs.
type catalogue struct {
	mu    sync.Mutex
	known map[string]bool
}

func (c *catalogue) has(p string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.known[p]
}

func (c *catalogue) add(p string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.known[p] = true
}

func run(ctx context.Context, w io.Writer, client *sqs.Client) error {
	out := exampleutil.LockedWriter(w) // the handlers print while the main flow does
	name := "sqsworker-redrive-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	setup, err := dlq.Setup(ctx, client, dlq.SetupOptions{Name: name})
	if err != nil {
		return err
	}
	target := setup.Target()
	defer exampleutil.DeleteQueues(ctx, client, target.SourceURL, target.DLQURL)
	in := &sqs.SendMessageBatchInput{QueueUrl: aws.String(target.SourceURL)}
	for i, body := range orders {
		in.Entries = append(in.Entries, types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(body)})
	}
	if _, err := client.SendMessageBatch(ctx, in); err != nil {
		return err
	}
	fmt.Fprintf(out, "sent %d orders to %s\n", len(orders), queueref.Name(target.SourceURL))

	cat := &catalogue{known: map[string]bool{"kettle": true, "teapot": true}}
	var mu sync.Mutex
	var done []string
	h := worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
		var o order
		if err := json.Unmarshal([]byte(m.Body), &o); err != nil {
			// No retry can fix this body: to the dead-letter queue now.
			return retry.Permanent(fmt.Errorf("malformed order: %w", err))
		}
		if !cat.has(o.Product) {
			return retry.Permanent(fmt.Errorf("order %s: unknown product %q", o.Order, o.Product))
		}
		mu.Lock()
		defer mu.Unlock()
		done = append(done, o.Order)
		fmt.Fprintf(out, "order %s done\n", o.Order)
		return nil
	})
	wk, err := worker.New(client, target.SourceURL, h, func(o *worker.Options) { o.HandlerName = "orders.Handle" })
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- wk.Run(runCtx) }()
	stop := func() error {
		cancel()
		return <-runErr
	}
	doneCount := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(done)
	}
	settled := func() bool {
		st := wk.Stats()
		return st.Succeeded+st.DeadLettered == int64(len(orders)) && st.InFlight == 0
	}
	if err := exampleutil.WaitFor(ctx, 30*time.Second, settled); err != nil {
		stop()
		return fmt.Errorf("waiting for the orders (%+v): %w", wk.Stats(), err)
	}

	// What is in the dead-letter queue, and why.
	dead, err := dlq.Inspect(ctx, client, target.DLQURL, dlq.InspectOptions{})
	if err != nil {
		stop()
		return err
	}
	fmt.Fprintf(out, "dead-letter queue %s holds %d messages:\n", queueref.Name(target.DLQURL), len(dead))
	for _, m := range dead {
		p := m.Provenance
		fmt.Fprintf(out, "  %s\n    from %s by %s, attempt %d, at %s: %s\n",
			m.Body, queueref.Name(m.Origin()), p.Handler, p.Attempt, p.FailedAt.Format(time.RFC3339), p.Error)
	}

	// The fix: the catalogue learns the product. Redrive what it fixes,
	// after a dry run that shows which messages would move.
	cat.add("samovar")
	fmt.Fprintln(out, `catalogue updated: "samovar" added`)
	filter := dlq.Filter{ErrorContains: "unknown product"}
	show := func(m dlq.Message, a string, err error) {
		if a != "skipped" {
			fmt.Fprintf(out, "  %-10s %s\n", a, m.Body)
		}
	}
	fmt.Fprintln(out, "redrive, dry run:")
	if _, err := dlq.Redrive(ctx, client, target, dlq.RedriveOptions{Filter: filter, DryRun: true, OnMessage: show}); err != nil {
		stop()
		return err
	}
	fmt.Fprintln(out, "redrive:")
	res, err := dlq.Redrive(ctx, client, target, dlq.RedriveOptions{Filter: filter, OnMessage: show})
	if err != nil {
		stop()
		return err
	}
	fmt.Fprintf(out, "redrive (%s): %d scanned, %d moved back, %d left\n", res.Method, res.Scanned, res.Moved, res.Skipped)
	if err := exampleutil.WaitFor(ctx, 30*time.Second, func() bool { return doneCount() == 4 && wk.Stats().InFlight == 0 }); err != nil {
		stop()
		return fmt.Errorf("waiting for the redriven orders: %w", err)
	}
	if err := stop(); err != nil {
		return err
	}

	// Check: the four good orders done once each, the two malformed ones
	// still in the dead-letter queue, nothing in the source.
	left, err := dlq.Inspect(ctx, client, target.DLQURL, dlq.InspectOptions{})
	if err != nil {
		return err
	}
	src, err := dlq.Count(ctx, client, target.SourceURL)
	if err != nil {
		return err
	}
	slices.Sort(done)
	var leftBodies []string
	for _, m := range left {
		leftBodies = append(leftBodies, m.Body)
	}
	slices.Sort(leftBodies)
	fmt.Fprintf(out, "done: %v; still in the dead-letter queue: %q; left in the source: %d\n", done, leftBodies, src.Total())
	switch {
	case !slices.Equal(done, []string{"A-1", "A-2", "A-3", "A-4"}):
		return fmt.Errorf("orders done %v; want A-1 to A-4 once each", done)
	case !slices.Equal(leftBodies, slices.Sorted(slices.Values(orders[4:]))):
		return fmt.Errorf("dead-letter queue holds %q; want the two malformed orders", leftBodies)
	case res.Moved != 2 || src.Total() != 0:
		return fmt.Errorf("redrive moved %d, source holds %d; want 2 moved and an empty source", res.Moved, src.Total())
	}
	fmt.Fprintln(out, "ok: the fixed orders were redriven and completed; the malformed ones wait in the dead-letter queue")
	return nil
}
