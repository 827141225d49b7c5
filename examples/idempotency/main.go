package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/examples/internal/exampleutil"
	"github.com/sqsworker/sqsworker/idempotency"
	"github.com/sqsworker/sqsworker/queueref"
	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/worker"
)

func main() {
	exampleutil.Main("idempotency", func(ctx context.Context, cfg aws.Config) error {
		return run(ctx, os.Stdout, sqs.NewFromConfig(cfg), exampleutil.DynamoDB(cfg))
	})
}

const (
	visibilityTimeout = 2 * time.Second
	chargeTime        = 3 * time.Second
)

func run(ctx context.Context, w io.Writer, client *sqs.Client, db *dynamodb.Client) error {
	start := time.Now()
	out := exampleutil.LockedWriter(w) // the handler and the settlement hook print while the main flow does
	say := func(format string, args ...any) {
		fmt.Fprintf(out, "%5.1fs  %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
	}
	var mu sync.Mutex // guards charges and the counts below
	suffix := strconv.FormatInt(time.Now().UnixNano(), 36)

	table := "sqsworker-idempotency-" + suffix
	if err := idempotency.CreateTable(ctx, db, table); err != nil {
		return err
	}
	defer exampleutil.DeleteTable(ctx, db, table)
	queues, err := dlq.Setup(ctx, client, dlq.SetupOptions{Name: "sqsworker-idempotency-" + suffix, VisibilityTimeout: visibilityTimeout, MaxReceiveCount: 20})
	if err != nil {
		return err
	}
	defer exampleutil.DeleteQueues(ctx, client, queues.QueueURL, queues.DLQURL)
	say("table %s (key %q, TTL on %s); queue %s, visibility timeout %v", table, "key", "expiresAt", queueref.Name(queues.QueueURL), visibilityTimeout)
	for _, order := range []string{"7", "7", "7", "8"} {
		if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(queues.QueueURL), MessageBody: aws.String(`{"order_id": "` + order + `"}`)}); err != nil {
			return err
		}
	}
	say("sent order 7 three times (the producer retried) and order 8 once")

	guard, err := idempotency.New(db, table, func(o *idempotency.Options) {
		o.KeyPrefix = "charge"
		o.Key = idempotency.JSONKey("order_id")
		o.LockMargin = time.Second
		o.OnDuplicate = func(ctx context.Context, m *worker.Message, r idempotency.Record) error {
			say("%s: already charged by message %s at +%.1fs: acknowledged without charging", m.Body, short(r.MessageID), r.CompletedAt.Sub(start).Seconds())
			return nil
		}
	})
	if err != nil {
		return err
	}
	charges := map[string]int{}
	charge := worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
		var o struct {
			OrderID string `json:"order_id"`
		}
		if err := json.Unmarshal([]byte(m.Body), &o); err != nil {
			return err
		}
		key, _ := idempotency.Key(ctx) // what a payment API would get as its idempotency key
		mu.Lock()
		charges[o.OrderID]++
		mu.Unlock()
		if o.OrderID != "7" {
			say("charge order %s (message %s, key %s)", o.OrderID, short(m.ID), key)
			return nil
		}
		say("charge order %s (message %s, key %s): takes %v, longer than the visibility timeout", o.OrderID, short(m.ID), key, chargeTime)
		select {
		case <-time.After(chargeTime):
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	})

	lossy := &loseFirstDelete{API: client, body: `{"order_id": "8"}`, say: say}
	var deleted, deadLettered int
	all := make(chan struct{})
	wk, err := worker.New(lossy, queues.QueueURL, worker.Chain(charge, guard.Wrap), func(o *worker.Options) {
		o.WaitTime = time.Second
		o.OnSettled = func(s worker.Settlement) {
			switch s.Outcome {
			case worker.Snoozed:
				var snooze *retry.SnoozeError
				if errors.As(s.Err, &snooze) {
					say("%s: snoozed %v, not run: %s", s.Message.Body, s.Delay, snooze.Reason)
				}
			default:
				say("%s: %s", s.Message.Body, s.Outcome)
			}
			mu.Lock()
			defer mu.Unlock()
			switch s.Outcome {
			case worker.Deleted:
				if deleted++; deleted == 5 { // 4 messages, one of them deleted twice
					close(all)
				}
			case worker.DeadLettered:
				deadLettered++
			}
		}
	})
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- wk.Run(runCtx) }()
	select {
	case <-all:
	case <-time.After(time.Minute):
		err = fmt.Errorf("not all deliveries settled within a minute (%+v)", wk.Stats())
	case <-ctx.Done():
		err = ctx.Err()
	}
	cancel()
	if rerr := <-runErr; err == nil {
		err = rerr
	}
	if err != nil {
		return err
	}

	item, err := db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(table),
		Key:            map[string]ddbtypes.AttributeValue{"key": &ddbtypes.AttributeValueMemberS{Value: "charge#7"}},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return err
	}
	status, _ := item.Item["status"].(*ddbtypes.AttributeValueMemberS)
	by, _ := item.Item["messageId"].(*ddbtypes.AttributeValueMemberS)
	if status == nil || by == nil {
		return fmt.Errorf("no record for order 7: %v", item.Item)
	}
	say("record charge#7: %s by message %s", status.Value, short(by.Value))
	s := guard.Stats()
	say("guard: %d runs, %d duplicates snoozed while in progress, %d acknowledged as completed, %d lock extensions; DynamoDB requests %v, %.2f per delivery",
		s.Ran, s.DuplicatesInProgress, s.DuplicatesCompleted, s.Extensions, s.Requests, float64(s.TotalRequests())/float64(wk.Stats().Received))

	switch {
	case charges["7"] != 1 || charges["8"] != 1:
		return fmt.Errorf("charges %v; want each order charged once", charges)
	case deadLettered != 0:
		return fmt.Errorf("%d deliveries dead-lettered; duplicates must never be", deadLettered)
	}
	say("ok: order 7 charged once for three deliveries, order 8 once for two; nothing dead-lettered")
	return nil
}

// loseFirstDelete is the worker's SQS client with one delete lost: the
// first DeleteMessageBatch entry for a message with the given body is
// reported as done but never sent, as if the process had died right after
// the handler succeeded.
type loseFirstDelete struct {
	worker.API
	body string
	say  func(string, ...any)

	mu      sync.Mutex
	handles map[string]bool
	lost    bool
}

func (c *loseFirstDelete) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	out, err := c.API.ReceiveMessage(ctx, in, optFns...)
	if err == nil {
		c.mu.Lock()
		for _, m := range out.Messages {
			if aws.ToString(m.Body) == c.body {
				if c.handles == nil {
					c.handles = map[string]bool{}
				}
				c.handles[aws.ToString(m.ReceiptHandle)] = true
			}
		}
		c.mu.Unlock()
	}
	return out, err
}

func (c *loseFirstDelete) DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	c.mu.Lock()
	var lost []types.DeleteMessageBatchRequestEntry
	rest := *in
	rest.Entries = nil
	for _, e := range in.Entries {
		if !c.lost && c.handles[aws.ToString(e.ReceiptHandle)] {
			c.lost = true
			lost = append(lost, e)
			continue
		}
		rest.Entries = append(rest.Entries, e)
	}
	c.mu.Unlock()
	out := &sqs.DeleteMessageBatchOutput{}
	if len(rest.Entries) > 0 {
		o, err := c.API.DeleteMessageBatch(ctx, &rest, optFns...)
		if err != nil {
			return nil, err
		}
		out = o
	}
	for _, e := range lost {
		c.say("%s: its delete is lost (kill -9 after the charge); SQS will deliver it again", c.body)
		out.Successful = append(out.Successful, types.DeleteMessageBatchResultEntry{Id: e.Id})
	}
	return out, nil
}

// short abbreviates a message ID for the output.
func short(id string) string {
	if len(id) > 8 {
		return id[:8] + "…"
	}
	return id
}
