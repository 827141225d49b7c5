package idempotency_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/harness/testenv"
	"github.com/sqsworker/sqsworker/idempotency"
	"github.com/sqsworker/sqsworker/retry/dynamocounter"
	"github.com/sqsworker/sqsworker/worker"
)

// TestScenariosEmulator runs the acceptance scenarios against the local
// SQS (fauxqs) and DynamoDB Local, in real time: the worker's and the
// Lambda adapter's (RunLocal) checks of issue 17.
func TestScenariosEmulator(t *testing.T) {
	e := emulatorEnv(t)
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			sc.run(t, e)
		})
	}
}

// emulatorEnv is an env on the local emulators, with a fresh table.
func emulatorEnv(t *testing.T) *env {
	client := testenv.SQS(t)
	// DynamoDB Local sends no CRC32 header with error responses, and the SDK
	// then logs a spurious warning for every failed condition — every
	// duplicate here (aws/aws-sdk-go-v2#3545).
	db := dynamodb.New(testenv.DynamoDB(t).Options(), func(o *dynamodb.Options) { o.DisableValidateResponseChecksum = true })
	table := newTable(t, db)
	return &env{
		sqs: client, db: db, table: table, name: testenv.UniqueName,
		newQueue: setupQueue(client, testenv.UniqueName),
		left: func(t *testing.T, url string) int {
			out, err := client.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
				QueueUrl: aws.String(url),
				AttributeNames: []sqstypes.QueueAttributeName{
					sqstypes.QueueAttributeNameApproximateNumberOfMessages,
					sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
					sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed,
				},
			})
			if err != nil {
				t.Fatalf("GetQueueAttributes: %v", err)
			}
			n := 0
			for _, v := range out.Attributes {
				var k int
				for _, c := range v {
					k = 10*k + int(c-'0')
				}
				n += k
			}
			return n
		},
		item: func(t *testing.T, key string) map[string]types.AttributeValue {
			out, err := db.GetItem(context.Background(), &dynamodb.GetItemInput{
				TableName: aws.String(table), ConsistentRead: aws.Bool(true),
				Key: map[string]types.AttributeValue{"key": &types.AttributeValueMemberS{Value: key}},
			})
			if err != nil {
				t.Errorf("GetItem: %v", err)
				return nil
			}
			return out.Item
		},
	}
}

// newTable creates an idempotency table for the test and deletes it after.
func newTable(t *testing.T, db *dynamodb.Client) string {
	t.Helper()
	table := testenv.UniqueName("sqsworker-idempotency")
	if err := idempotency.CreateTable(t.Context(), db, table); err != nil {
		t.Fatalf("CreateTable: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = db.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	})
	return table
}

// TestCreateTableWithDynamoDB: CreateTable makes the table (key, TTL on
// expiresAt), is idempotent, and refuses a table made for something else
// with what to do.
func TestCreateTableWithDynamoDB(t *testing.T) {
	db := testenv.DynamoDB(t)
	table := newTable(t, db)
	if err := idempotency.CreateTable(t.Context(), db, table); err != nil {
		t.Fatalf("CreateTable a second time (must be idempotent): %v", err)
	}
	ttl, err := db.DescribeTimeToLive(t.Context(), &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	if d := ttl.TimeToLiveDescription; d == nil || aws.ToString(d.AttributeName) != "expiresAt" ||
		(d.TimeToLiveStatus != types.TimeToLiveStatusEnabled && d.TimeToLiveStatus != types.TimeToLiveStatusEnabling) {
		t.Errorf("TTL %+v, want enabled on %s", ttl.TimeToLiveDescription, "expiresAt")
	}
	counter := testenv.UniqueName("sqsworker-counter")
	if err := dynamocounter.CreateTable(t.Context(), db, counter); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = db.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(counter)})
	})
	err = idempotency.CreateTable(t.Context(), db, counter)
	if err == nil || !strings.Contains(err.Error(), "the Guard needs only a partition key key of type S; use another table name") {
		t.Errorf("CreateTable on the attempt counter's table = %v; want a refusal that says what to do", err)
	}
	// A missing table is reported as such when a message arrives.
	g := mustGuard(t, db, testenv.UniqueName("sqsworker-no-such-table"))
	err = g.Wrap(worker.HandlerFunc(ok)).Handle(fixedLease(time.Minute), msg("m", ""))
	if !errors.Is(err, idempotency.ErrTableNotFound) || !errors.Is(err, idempotency.ErrUnavailable) {
		t.Errorf("a message on a missing table: %v; want ErrTableNotFound and ErrUnavailable", err)
	}
}
