package sqsbatch

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// bothLists answers a delete of two entries with entry 0 both confirmed and
// failed, and entry 1 failed then confirmed, as a response stitched from
// retries might.
type bothLists struct{}

func (bothLists) DeleteMessageBatch(context.Context, *sqs.DeleteMessageBatchInput, ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	failed := func(id string) types.BatchResultErrorEntry {
		return types.BatchResultErrorEntry{Id: aws.String(id), Code: aws.String("InternalError"), SenderFault: false}
	}
	return &sqs.DeleteMessageBatchOutput{
		Successful: []types.DeleteMessageBatchResultEntry{{Id: aws.String("0")}, {Id: aws.String("1")}},
		Failed:     []types.BatchResultErrorEntry{failed("0"), failed("1")},
	}, nil
}

// An entry the answer lists both as confirmed and as failed is confirmed:
// SQS did it. Taken for failed, a deleted message's delete would be
// retried with a stale handle, or a sent copy sent again (a duplicate).
func TestSuccessWinsOverFailureForOneID(t *testing.T) {
	res, err := NewDeleter(bothLists{}, "q").Once(t.Context(), handles(2), nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if !r.OK || r.Err != nil {
			t.Errorf("entry %d: %+v; want confirmed", i, r)
		}
	}
}
