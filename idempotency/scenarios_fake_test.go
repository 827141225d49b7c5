package idempotency_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sqsworker/sqsworker/sqstest"
)

// TestScenarios runs the acceptance scenarios on the in-memory SQS
// (sqstest) and DynamoDB (fakeDB) in virtual time; TestScenariosEmulator
// runs the same code against the emulators.
func TestScenarios(t *testing.T) {
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				sc.run(t, fakeEnv(t))
			})
		})
	}
}

// fakeEnv is an env on the in-memory fakes.
func fakeEnv(t testing.TB) *env {
	client, db := sqstest.For(t), newFakeDB()
	var seq atomic.Int64
	name := func(prefix string) string { return fmt.Sprintf("%s-%d", prefix, seq.Add(1)) }
	return &env{
		sqs: client, db: db, table: "idempotency", name: name,
		newQueue: setupQueue(client, name),
		left:     func(_ *testing.T, url string) int { return len(client.Messages(url)) },
		item:     func(_ *testing.T, key string) map[string]types.AttributeValue { return db.item(key) },
	}
}
