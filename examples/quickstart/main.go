package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/producer"
	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/worker"
)

// Order is a job: the JSON body of one message.
type Order struct {
	ID    string  `json:"id"`
	Total float64 `json:"total"`
}

func main() {
	// Ctrl-C and SIGTERM (docker stop, Kubernetes) cancel ctx: the worker
	// stops receiving, lets running jobs finish, and Run returns.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, args []string) error {
	flags := flag.NewFlagSet("quickstart", flag.ContinueOnError)
	queue := flags.String("queue", "orders", "the queue: its name, URL or ARN")
	addr := flags.String("addr", "127.0.0.1:8080", "where to serve /livez, /readyz and /debug/sqsworker/stats")
	send := flags.Int("send", 0, "first enqueue this many orders, and one broken order")
	if err := flags.Parse(args); err != nil {
		return err
	}
	// The standard AWS configuration: AWS_REGION, credentials, and
	// AWS_ENDPOINT_URL_SQS for a local emulator.
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return err
	}
	client := sqs.NewFromConfig(cfg)
	if *send > 0 {
		if err := sendOrders(ctx, client, *queue, *send); err != nil {
			return err
		}
	}

	handler := worker.JSON(func(ctx context.Context, o Order, m *worker.Message) error {
		if o.ID == "" {
			return retry.Permanent(errors.New("order has no id")) // to the dead-letter queue now, with this reason
		}
		log.Printf("order %s: %.2f (attempt %d)", o.ID, o.Total, m.Attempt)
		return nil // done: the message is deleted; an error would retry it later
	})
	w, err := worker.New(client, *queue, handler, func(o *worker.Options) {
		o.Concurrency = 10
	})
	if err != nil {
		return err // the queue is missing or has no dead-letter queue: the error says what to run
	}

	mux := http.NewServeMux()
	mux.Handle("GET /livez", w.LivenessHandler())
	mux.Handle("GET /readyz", w.ReadinessHandler())
	mux.Handle("GET /debug/sqsworker/stats", w.StatsHandler())
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	log.Printf("consuming %s; health and stats on http://%s (Ctrl-C stops)", *queue, ln.Addr())

	err = w.Run(ctx) // until ctx is cancelled, then a graceful drain
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return errors.Join(err, srv.Shutdown(shutdown))
}

// sendOrders enqueues n orders and one without an id.
func sendOrders(ctx context.Context, client *sqs.Client, queue string, n int) error {
	p, err := producer.New(client, queue)
	if err != nil {
		return err
	}
	orders := []Order{{Total: 1}} // no id: the handler rejects it
	for i := range n {
		orders = append(orders, Order{ID: fmt.Sprintf("A-%d", i+1), Total: 9.5 * float64(i+1)})
	}
	_, err = producer.JSON[Order](p).SendBatch(ctx, orders) // 10 per SendMessageBatch call
	if err == nil {
		log.Printf("sent %d orders to %s", len(orders), queue)
	}
	return errors.Join(err, p.Close(ctx))
}
