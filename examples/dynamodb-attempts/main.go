package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/examples/internal/exampleutil"
	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/retry/dynamocounter"
	"github.com/sqsworker/sqsworker/worker"
)

func main() {
	exampleutil.Main("dynamodb-attempts", func(ctx context.Context, cfg aws.Config) error {
		return run(ctx, os.Stdout, sqs.NewFromConfig(cfg), dynamodb.NewFromConfig(cfg))
	})
}

// The attributes of a counter item (package retry/dynamocounter documents
// the table).
const (
	keyAttribute   = "messageId"
	countAttribute = "attempts"
	ttlAttribute   = "expiresAt"
)

func run(ctx context.Context, out io.Writer, client *sqs.Client, db *dynamodb.Client) error {
	suffix := strconv.FormatInt(time.Now().UnixNano(), 36)

	table := "sqsworker-attempts-" + suffix
	if err := dynamocounter.CreateTable(ctx, db, table); err != nil {
		return err
	}
	defer exampleutil.DeleteTable(ctx, db, table)
	fmt.Fprintf(out, "DynamoDB table %s: key %s, TTL on %s\n", table, keyAttribute, ttlAttribute)

	setup, err := dlq.Setup(ctx, client, dlq.SetupOptions{Name: "sqsworker-attempts-" + suffix, MaxReceiveCount: 10})
	if err != nil {
		return err
	}
	target := setup.Target()
	defer exampleutil.DeleteQueues(ctx, client, target.SourceURL, target.DLQURL)
	sent, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(target.SourceURL), MessageBody: aws.String("sync invoice 7")})
	if err != nil {
		return err
	}

	// Someone looks at the queue before the worker runs: receiving is the
	// only way SQS shows a message, so its receive count goes up.
	peeked, err := dlq.Inspect(ctx, client, target.SourceURL, dlq.InspectOptions{})
	if err != nil {
		return err
	}
	if len(peeked) != 1 {
		return fmt.Errorf("the peek found %d messages, want the one sent", len(peeked))
	}
	fmt.Fprintf(out, "an operator peeked at the queue (dlq.Inspect): %d message, receive count %d, no handler has run\n", len(peeked), peeked[0].ReceiveCount)

	var mu sync.Mutex
	var attempts, receives []int
	h := worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
		mu.Lock()
		defer mu.Unlock()
		attempts = append(attempts, m.Attempt)
		receives = append(receives, m.ReceiveCount)
		fmt.Fprintf(out, "handler: %q attempt %d (DynamoDB), ApproximateReceiveCount %d\n", m.Body, m.Attempt, m.ReceiveCount)
		if m.Attempt < 3 {
			return errors.New("invoice service busy")
		}
		return nil
	})
	counter, err := dynamocounter.New(db, table)
	if err != nil {
		return err
	}
	w, err := worker.New(client, target.SourceURL, h, func(o *worker.Options) {
		o.AttemptCounter = counter
		o.RetryPolicy = retry.PolicyFunc(func(attempt int) (time.Duration, bool) {
			return time.Second, attempt <= 3 // three retries, a second apart: 4 attempts
		})
	})
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- w.Run(runCtx) }()
	err = exampleutil.WaitFor(ctx, 30*time.Second, func() bool { st := w.Stats(); return st.Succeeded == 1 && st.InFlight == 0 })
	cancel()
	if rerr := <-runErr; err == nil {
		err = rerr
	}
	if err != nil {
		return fmt.Errorf("waiting for the job (%+v): %w", w.Stats(), err)
	}

	// The counter's item for the message.
	item, err := db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(table),
		Key:            map[string]ddbtypes.AttributeValue{keyAttribute: &ddbtypes.AttributeValueMemberS{Value: aws.ToString(sent.MessageId)}},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return err
	}
	count := numberAttr(item.Item, countAttribute)
	expires := time.Unix(numberAttr(item.Item, ttlAttribute), 0)
	fmt.Fprintf(out, "table item %s: %s = %d, %s = %s (in %.0f days)\n", aws.ToString(sent.MessageId),
		countAttribute, count, ttlAttribute, expires.UTC().Format(time.RFC3339), time.Until(expires).Hours()/24)

	switch {
	case !slices.Equal(attempts, []int{1, 2, 3}):
		return fmt.Errorf("the handler saw attempts %v, want [1 2 3]", attempts)
	case !slices.Equal(receives, []int{2, 3, 4}):
		return fmt.Errorf("SQS counted receives %v, want [2 3 4] (the peek, then the three attempts)", receives)
	case count != 3:
		return fmt.Errorf("the table counts %d attempts, want 3", count)
	}
	fmt.Fprintf(out, "ok: attempts %v by DynamoDB; ApproximateReceiveCount said %v, which would have cost a retry\n", attempts, receives)
	return nil
}

// numberAttr reads a number attribute of a DynamoDB item (0 if absent).
func numberAttr(item map[string]ddbtypes.AttributeValue, name string) int64 {
	if n, ok := item[name].(*ddbtypes.AttributeValueMemberN); ok {
		v, _ := strconv.ParseInt(n.Value, 10, 64)
		return v
	}
	return 0
}
