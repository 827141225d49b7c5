package sqslambda_test

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sqsworker/sqsworker/worker"
	"github.com/sqsworker/sqsworker/worker/sqslambda"
)

// FuzzHandleEvent feeds arbitrary event JSON, as Lambda would deliver it,
// through the adapter (no SQS client, a handler that fails odd bodies): it
// never panics, and every failure it reports names a record of the batch.
func FuzzHandleEvent(f *testing.F) {
	for _, name := range []string{"testdata/standard.json", "testdata/fifo.json"} {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"Records":[{"messageId":"","attributes":{"ApproximateReceiveCount":"x"}}]}`))
	f.Add([]byte(`{"Records":[{"messageId":"a","eventSourceARN":"arn:aws:sqs:::.fifo","attributes":{"MessageGroupId":""}}]}`))
	h := mustNew(f, worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
		if len(m.Body)%2 == 1 {
			return context.Canceled
		}
		return nil
	}), func(o *sqslambda.Options) { o.Logger = quiet })
	f.Fuzz(func(t *testing.T, data []byte) {
		var ev events.SQSEvent
		if json.Unmarshal(data, &ev) != nil {
			return
		}
		resp, err := h.Handle(context.Background(), ev)
		if err != nil {
			return // the whole batch fails: Lambda retries every record
		}
		ids := map[string]bool{}
		for _, r := range ev.Records {
			ids[r.MessageId] = true
		}
		for _, f := range resp.BatchItemFailures {
			if !ids[f.ItemIdentifier] {
				t.Fatalf("reported %q, which is not a record of the batch", f.ItemIdentifier)
			}
		}
	})
}
