package sqsfake_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/harness/sqsfake"
	"github.com/sqsworker/sqsworker/sqstest"
)

// ARN agrees with the QueueArn the Fake reports, in any region and account.
func TestARNIsTheFakesQueueArn(t *testing.T) {
	for _, f := range []*sqstest.Fake{
		sqstest.For(t),
		sqstest.For(t, func(o *sqstest.Options) { o.Region, o.AccountID = "eu-west-1", "111122223333" }),
	} {
		for _, name := range []string{"orders", "orders.fifo"} {
			attrs := map[string]string{}
			if name == "orders.fifo" {
				attrs["FifoQueue"] = "true"
			}
			url := f.MustCreateQueue(t, name, attrs)
			out, err := f.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
				QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn},
			})
			if err != nil {
				t.Fatal(err)
			}
			if got, want := sqsfake.ARN(url), out.Attributes["QueueArn"]; got != want {
				t.Errorf("ARN(%s) = %q; the Fake says %q", url, got, want)
			}
		}
	}
	if got := sqsfake.ARN("http://127.0.0.1:9324/000000000000/orders"); got != "" {
		t.Errorf("ARN of an emulator URL = %q; want \"\"", got)
	}
}

func TestGroup(t *testing.T) {
	f := sqstest.For(t)
	url := f.MustCreateQueue(t, "q.fifo", map[string]string{"FifoQueue": "true"})
	f.MustSend(t, url, "a", sqsfake.Group("g", "1"))
	if m := f.Messages(url); len(m) != 1 || m[0].GroupID != "g" {
		t.Errorf("messages %+v; want one in group g", m)
	}
}
