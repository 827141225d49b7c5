package s3payload_test

import (
	"context"
	"fmt"
	"log"
	"strings"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/producer"
	"github.com/sqsworker/sqsworker/s3payload"
	"github.com/sqsworker/sqsworker/worker"
)

// A producer that offloads bodies over SQS's limit to S3, and a worker that
// reads them back (not run: it needs AWS).
func Example() {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	queueURL := "https://sqs.eu-west-1.amazonaws.com/123456789012/reports"
	store, err := s3payload.New(s3.NewFromConfig(cfg), "my-payload-bucket", func(o *s3payload.Options) {
		o.KeyPrefix = "reports/" // objects named reports/<uuid>
	})
	if err != nil {
		log.Fatal(err)
	}
	client := sqs.NewFromConfig(cfg)
	p, err := producer.New(client, queueURL, func(o *producer.Options) { o.Offloader = store })
	if err != nil {
		log.Fatal(err)
	}
	res, err := p.Send(ctx, producer.Message{Body: strings.Repeat("x", 5<<20)}) // 5 MiB
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("offloaded:", res.Offloaded)
	if err := p.Close(ctx); err != nil {
		log.Fatal(err)
	}

	handle := worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
		fmt.Println("report of", len(m.Body), "bytes") // the original body
		return nil
	})
	w, err := worker.New(client, queueURL, worker.Chain(handle, store.Middleware()), func(o *worker.Options) {
		o.OnSettled = store.Settled // deletes each object once its message is deleted
	})
	if err != nil {
		log.Fatal(err)
	}
	log.Fatal(w.Run(ctx))
}
