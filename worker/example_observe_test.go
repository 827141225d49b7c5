package worker_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/sqstest"
	"github.com/sqsworker/sqsworker/worker"
)

// Pricing a worker's requests: full batches make 0.2 requests per message.
func ExampleStats_Cost() {
	s := worker.Stats{
		Received:       1000,
		Requests:       map[string]int64{"ReceiveMessage": 100, "DeleteMessageBatch": 100},
		BilledRequests: map[string]int64{"ReceiveMessage": 100, "DeleteMessageBatch": 100},
	}
	c := s.Cost(worker.Pricing{})
	fmt.Printf("%.2f requests per message, $%.3f per million messages\n", c.RequestsPerMessage, c.USDPerMillionMessages)
	fifo := s.Cost(worker.Pricing{PerMillion: worker.PriceFIFO})
	fmt.Printf("on a FIFO queue: $%.3f per million messages\n", fifo.USDPerMillionMessages)
	// Output:
	// 0.20 requests per message, $0.080 per million messages
	// on a FIFO queue: $0.100 per million messages
}

// Probes: before Run the worker is live but not ready.
func ExampleWorker_LivenessHandler() {
	client, err := sqstest.New() // or sqs.NewFromConfig(cfg)
	if err != nil {
		log.Fatal(err)
	}
	q, err := dlq.Setup(context.Background(), client, dlq.SetupOptions{Name: "orders"})
	if err != nil {
		log.Fatal(err)
	}
	w, err := worker.New(client, q.QueueURL, noop, func(o *worker.Options) { o.Logger = quiet })
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /livez", w.LivenessHandler())
	mux.Handle("GET /readyz", w.ReadinessHandler())
	for _, path := range []string{"/livez", "/readyz"} {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		fmt.Println(path, rec.Code)
	}
	fmt.Println(w.Health().Reason)
	// Output:
	// /livez 200
	// /readyz 503
	// Run has not been called
}
