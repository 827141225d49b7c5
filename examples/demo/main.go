// Command demo will run sqsworker end to end against a local AWS: ordinary
// jobs, a long job kept alive by the heartbeat, retries on a delivery
// policy, poison jobs in the dead-letter queue and a redrive, closing with a
// reconciliation of every job sent.
//
// Until that lands (see the project's examples issue) it checks that the
// local AWS answers and says what is coming.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo: loading AWS configuration:", err)
		os.Exit(1)
	}
	out, err := sqs.NewFromConfig(cfg).ListQueues(ctx, &sqs.ListQueuesInput{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo: the local SQS does not answer:", err)
		os.Exit(1)
	}
	fmt.Printf("demo: local SQS answers (%d queues). The full demo (jobs, heartbeat, retries, DLQ, redrive, reconciliation) is coming with the examples issue.\n", len(out.QueueUrls))
}
