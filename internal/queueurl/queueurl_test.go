package queueurl_test

import (
	"testing"

	"github.com/sqsworker/sqsworker/internal/queueurl"
	"github.com/sqsworker/sqsworker/queueref"
)

func TestFromARNPerPartition(t *testing.T) {
	for arn, want := range map[string]string{
		"arn:aws:sqs:eu-west-1:123456789012:orders":          "https://sqs.eu-west-1.amazonaws.com/123456789012/orders",
		"arn:aws:sqs:us-east-2:123456789012:payments.fifo":   "https://sqs.us-east-2.amazonaws.com/123456789012/payments.fifo",
		"arn:aws-cn:sqs:cn-north-1:123456789012:orders":      "https://sqs.cn-north-1.amazonaws.com.cn/123456789012/orders",
		"arn:aws-us-gov:sqs:us-gov-west-1:123456789012:jobs": "https://sqs.us-gov-west-1.amazonaws.com/123456789012/jobs",
	} {
		a, err := queueref.ParseARN(arn)
		if got := queueurl.FromARN(a); err != nil || got != want {
			t.Errorf("FromARN(%s) = %q, %v; want %q", arn, got, err, want)
		}
	}
}

// FuzzFromARN: the URL of every ARN ParseARN accepts passes queueref.Check
// and names the ARN's queue.
func FuzzFromARN(f *testing.F) {
	for _, s := range []string{
		"arn:aws:sqs:us-east-1:000000000000:orders", "arn:aws-cn:sqs:cn-north-1:123456789012:o.fifo",
		"arn:aws:sqs:::x", "arn:aws:s3:::bucket", "", ":::::", "arn:aws:sqs:us-east-1:000000000000:a:b",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := queueref.ParseARN(s)
		if err != nil {
			return
		}
		if u := queueurl.FromARN(a); queueref.Name(u) != a.Name || queueref.Check(u) != nil {
			t.Fatalf("URL %q of %q does not name %q", u, s, a.Name)
		}
	})
}
