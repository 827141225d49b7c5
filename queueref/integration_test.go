package queueref_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/harness/testenv"
	"github.com/sqsworker/sqsworker/queueref"
)

// Against the emulator (a custom endpoint, region-aware like LocalStack):
// two queues of one name in two regions; an ARN resolves to its own
// region's, through a client of the other region, and a name to the
// client's.
func TestIntegrationARNResolvesInItsOwnRegion(t *testing.T) {
	home := testenv.SQS(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	otherRegion := "eu-west-1"
	if home.Options().Region == otherRegion {
		otherRegion = "ap-southeast-2"
	}
	other := sqs.New(home.Options(), func(o *sqs.Options) { o.Region = otherRegion })
	name := testenv.UniqueName("qref")
	create := func(c *sqs.Client) (url, arn string) {
		out, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name)})
		if err != nil {
			t.Fatalf("CreateQueue in %s: %v", c.Options().Region, err)
		}
		url = aws.ToString(out.QueueUrl)
		t.Cleanup(func() { _, _ = c.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(url)}) })
		a, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
		if err != nil {
			t.Fatal(err)
		}
		return url, a.Attributes["QueueArn"]
	}
	homeURL, _ := create(home)
	otherURL, otherARN := create(other)
	if homeURL == otherURL {
		t.Fatalf("the emulator gave both regions' queues the URL %s; it cannot show which region an ARN resolves in", homeURL)
	}
	got, err := queueref.Resolve(ctx, home, otherARN)
	if err != nil || got != otherURL {
		t.Errorf("Resolve(%s) through a %s client = %q, %v; want %s's queue %s", otherARN, home.Options().Region, got, err, otherRegion, otherURL)
	}
	if got, err := queueref.Resolve(ctx, home, name); err != nil || got != homeURL {
		t.Errorf("Resolve(%s) = %q, %v; want the client's region's %s", name, got, err, homeURL)
	}
}
