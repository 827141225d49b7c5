package dynamocounter_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sqsworker/sqsworker/harness/testenv"
	"github.com/sqsworker/sqsworker/retry/dynamocounter"
)

// TestCounterWithDynamoDB runs the counter against the local DynamoDB (or the
// endpoint in AWS_ENDPOINT_URL_DYNAMODB): table setup, counts per message,
// the TTL attribute, and atomic concurrent increments.
func TestCounterWithDynamoDB(t *testing.T) {
	client := testenv.DynamoDB(t)
	ctx := t.Context()
	table := testenv.UniqueName("sqsworker-attempts")

	if err := dynamocounter.CreateTable(ctx, client, table); err != nil {
		t.Fatalf("CreateTable: %v", err)
	}
	t.Cleanup(func() {
		_, _ = client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	})
	if err := dynamocounter.CreateTable(ctx, client, table); err != nil {
		t.Fatalf("CreateTable a second time (must be idempotent): %v", err)
	}
	ttl, err := client.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatalf("DescribeTimeToLive: %v", err)
	}
	if d := ttl.TimeToLiveDescription; d == nil || aws.ToString(d.AttributeName) != dynamocounter.TTLAttribute ||
		(d.TimeToLiveStatus != types.TimeToLiveStatusEnabled && d.TimeToLiveStatus != types.TimeToLiveStatusEnabling) {
		t.Fatalf("TTL = %+v, want enabled on %s", ttl.TimeToLiveDescription, dynamocounter.TTLAttribute)
	}

	start := time.Now()
	c := mustCounter(t, client, table, func(o *dynamocounter.Options) {
		o.Now = func() time.Time { return start }
	})

	// Counts are handler starts per message ID; the receive count is ignored.
	for want := 1; want <= 3; want++ {
		got, err := c.Attempt(ctx, "message-a", 42)
		if err != nil || got != want {
			t.Fatalf("Attempt(message-a) #%d = %d, %v; want %d", want, got, err, want)
		}
	}
	if got, err := c.Attempt(ctx, "message-b", 1); err != nil || got != 1 {
		t.Fatalf("Attempt(message-b) = %d, %v; want 1 (independent of message-a)", got, err)
	}
	// A snoozed attempt is taken back, never below zero.
	if err := c.Uncount(ctx, "message-b"); err != nil {
		t.Fatalf("Uncount: %v", err)
	}
	if err := c.Uncount(ctx, "message-b"); err != nil {
		t.Fatalf("Uncount at zero: %v, want nothing to take back and no error", err)
	}
	if err := c.Uncount(ctx, "never-counted"); err != nil {
		t.Fatalf("Uncount of an unknown message: %v", err)
	}
	if got, err := c.Attempt(ctx, "message-b", 1); err != nil || got != 1 {
		t.Fatalf("Attempt(message-b) after Uncount = %d, %v; want 1 again", got, err)
	}

	item, err := client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(table),
		Key:            map[string]types.AttributeValue{dynamocounter.KeyAttribute: &types.AttributeValueMemberS{Value: "message-a"}},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		t.Fatalf("GetItem: %v", err)
	}
	if n := numberAttr(t, item.Item, dynamocounter.CountAttribute); n != 3 {
		t.Errorf("stored attempts = %d, want 3", n)
	}
	expires := numberAttr(t, item.Item, dynamocounter.TTLAttribute)
	if want := start.Add(dynamocounter.DefaultTTL).Unix(); expires != want {
		t.Errorf("stored expiresAt = %d, want now + DefaultTTL = %d", expires, want)
	}
	if expires <= time.Now().Unix() {
		t.Errorf("expiresAt %d is not in the future", expires)
	}

	// Concurrent starts of one message get distinct, gapless numbers.
	const workers = 20
	results := make([]int, workers)
	var wg sync.WaitGroup
	for i := range workers {
		wg.Go(func() {
			n, err := c.Attempt(ctx, "message-c", 1)
			if err != nil {
				t.Errorf("concurrent Attempt: %v", err)
			}
			results[i] = n
		})
	}
	wg.Wait()
	slices.Sort(results)
	for i, n := range results {
		if n != i+1 {
			t.Fatalf("concurrent counts = %v, want 1 … %d each once", results, workers)
		}
	}
	if got, err := c.Attempt(ctx, "message-c", 1); err != nil || got != workers+1 {
		t.Errorf("Attempt after the concurrent ones = %d, %v; want %d", got, err, workers+1)
	}

	// A missing table is reported as such, with what to do.
	missing := mustCounter(t, client, testenv.UniqueName("sqsworker-no-such-table"))
	if _, err := missing.Attempt(ctx, "message-a", 1); !errors.Is(err, dynamocounter.ErrTableNotFound) {
		t.Errorf("Attempt on a missing table = %v, want ErrTableNotFound", err)
	}
}

func numberAttr(t *testing.T, item map[string]types.AttributeValue, name string) int64 {
	t.Helper()
	av, ok := item[name].(*types.AttributeValueMemberN)
	if !ok {
		t.Fatalf("item has no number %s: %v", name, item)
	}
	n, err := strconv.ParseInt(av.Value, 10, 64)
	if err != nil {
		t.Fatalf("%s = %q: %v", name, av.Value, err)
	}
	return n
}
