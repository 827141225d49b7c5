package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/console"
	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/examples/internal/exampleutil"
	"github.com/sqsworker/sqsworker/fanout"
	"github.com/sqsworker/sqsworker/fleet"
	"github.com/sqsworker/sqsworker/queueref"
	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/worker"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:9470", "address the console listens on")
	flag.Parse()
	exampleutil.Main("console", func(ctx context.Context, cfg aws.Config) error {
		return run(ctx, os.Stdout, sqs.NewFromConfig(cfg), sns.NewFromConfig(cfg), dynamodb.NewFromConfig(cfg), *addr, nil)
	})
}

const (
	jobs   = 40
	outage = 30 * time.Second
)

// run sets the queues and a fleet table up, lets the worker dead-letter its
// failures, and serves the console on addr until ctx ends; ready, if set,
// is called with the console's URL once every job has been handled once.
func run(ctx context.Context, out io.Writer, client *sqs.Client, snsClient fanout.API, db *dynamodb.Client, addr string, ready func(url string)) error {
	name := "sqsworker-console-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	setup, err := dlq.Setup(ctx, client, dlq.SetupOptions{Name: name})
	if err != nil {
		return err
	}
	target := setup.Target()
	table := ""
	// Whatever ends the demo (Ctrl-C, an error), it deletes what it made
	// and says so, after the worker and the servers have stopped.
	defer func() { cleanUp(context.WithoutCancel(ctx), out, client, db, target, table) }()

	// The fleet table: the worker watches the queue's pause switch in it,
	// and the console's Fleet page pauses and resumes the queue.
	if err := fleet.CreateTable(ctx, db, name, 0); err != nil {
		return err
	}
	table = name
	consoleFleet, err := fleet.New(db, name, func(o *fleet.Options) { o.Holder = "console-demo" })
	if err != nil {
		return err
	}
	workerFleet, err := fleet.New(db, name, func(o *fleet.Options) { o.Holder = "orders-worker" })
	if err != nil {
		return err
	}
	pauser, err := workerFleet.Pauser(target.SourceURL)
	if err != nil {
		return err
	}
	for i := range jobs {
		kind := "book"
		switch {
		case i%5 == 0:
			kind = "declined-card"
		case i%7 == 0:
			kind = "out-of-stock-check"
		}
		body := fmt.Sprintf(`{"order":%d,"kind":%q,"customer":{"id":"c-%03d"},"total":%d.%02d}`, i, kind, i, 10+i, i)
		if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(target.SourceURL), MessageBody: aws.String(body)}); err != nil {
			return err
		}
	}

	start := time.Now()
	var handled atomic.Int64
	allHandled := make(chan struct{})
	w, err := worker.New(client, target.SourceURL, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
		switch {
		case strings.Contains(m.Body, `"declined-card"`):
			return retry.Permanent(errors.New("charge: card declined (do not retry)"))
		case strings.Contains(m.Body, `"out-of-stock-check"`) && time.Since(start) < outage:
			return retry.Permanent(errors.New("inventory: service unavailable (503)"))
		}
		return nil
	}), func(o *worker.Options) {
		o.HandlerName = "orders"
		o.ReceiveGate = pauser
		o.Logger = slog.New(slog.DiscardHandler)
		o.OnSettled = func(worker.Settlement) {
			if handled.Add(1) == jobs {
				close(allHandled)
			}
		}
	})
	if err != nil {
		return err
	}
	wctx, stopWorker := context.WithCancel(ctx)
	defer stopWorker()
	ran := make(chan error, 1)
	go func() { ran <- w.Run(wctx) }()

	// The worker's statistics, as a service would expose them.
	statsLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	statsSrv := &http.Server{Handler: w.StatsHandler(), ReadHeaderTimeout: 5 * time.Second}
	go statsSrv.Serve(statsLn)
	defer statsSrv.Close()

	h, err := console.New(client, func(o *console.Options) {
		o.Queues = []string{target.SourceURL, target.DLQURL}
		o.SNS = snsClient
		o.Actions = true
		o.Workers = []console.Worker{{Name: "orders-worker", StatsURL: "http://" + statsLn.Addr().String() + "/"}}
		o.Fleet = consoleFleet
		o.Logger = slog.New(slog.NewTextHandler(out, nil))
	})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listening on %s (pick another address with -addr): %w", addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()

	select {
	case <-allHandled:
	case err := <-ran:
		return fmt.Errorf("the worker stopped: %w", err)
	case <-ctx.Done():
		return nil
	}
	url := "http://" + ln.Addr().String() + "/"
	fmt.Fprintf(out, `
The worker has handled the %d jobs once: some are in the dead-letter queue.

  Open the console:  %s
  Dead-letter queue: %squeues/%s/dlq

Failures are grouped by reason. The inventory outage ends %s after the
start: then redrive the "inventory" group and the worker handles those
jobs; a declined card fails again and comes back. On the Fleet page, pause
the queue: within 2 s the Workers page shows the worker paused; resume it.
Ctrl-C stops the demo and deletes its queues and table.
`, jobs, url, url, queueref.Name(target.SourceURL), outage)
	if ready != nil {
		ready(url)
	}
	<-ctx.Done()
	fmt.Fprintln(out, "\nStopping: the worker drains, then the demo deletes what it made.")
	stopWorker()
	if err := <-ran; err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// cleanUp deletes the demo's queues and fleet table (table is empty when it
// was not made) and says which it deleted, or how to delete one it could
// not.
func cleanUp(ctx context.Context, out io.Writer, client *sqs.Client, db *dynamodb.Client, target dlq.Target, table string) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var deleted []string
	for _, q := range []struct{ what, url string }{{"queue", target.SourceURL}, {"dead-letter queue", target.DLQURL}} {
		if _, err := client.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(q.url)}); err != nil {
			fmt.Fprintf(out, "could not delete %s %s (%v); delete it with: aws sqs delete-queue --queue-url %s\n", q.what, queueref.Name(q.url), err, q.url)
			continue
		}
		deleted = append(deleted, q.what+" "+queueref.Name(q.url))
	}
	if table != "" {
		if _, err := db.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(table)}); err != nil {
			fmt.Fprintf(out, "could not delete fleet table %s (%v); delete it with: aws dynamodb delete-table --table-name %s\n", table, err, table)
		} else {
			deleted = append(deleted, "fleet table "+table)
		}
	}
	if len(deleted) > 0 {
		fmt.Fprintf(out, "Deleted %s.\n", strings.Join(deleted, ", "))
	}
}
