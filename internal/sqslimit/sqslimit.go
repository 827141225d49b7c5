// Package sqslimit holds the limits of Amazon SQS that several of
// sqsworker's packages apply, so each is written once. The public name of
// the 12-hour limit is visibility.MaxVisibility.
package sqslimit

import (
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

const (
	// MaxVisibility is the longest SQS keeps a received message invisible,
	// counted from the receive that returned it.
	MaxVisibility = 12 * time.Hour
	// MaxBatchEntries is the most entries one batch call carries.
	MaxBatchEntries = 10
	// MaxMessageSize is the largest message, and the largest batch request
	// payload, SQS accepts (1 MiB since August 2025).
	MaxMessageSize = 1 << 20
	// MaxMessageAttributes is the most message attributes a message carries.
	MaxMessageAttributes = 10
	// MaxDelay is the longest DelaySeconds SQS accepts on a send (15 min).
	MaxDelay = 15 * time.Minute
)

// MessageSize is how SQS counts a message against MaxMessageSize: its body
// plus, for each message attribute, its name, data type and value.
func MessageSize(body string, attrs map[string]types.MessageAttributeValue) int {
	n := len(body)
	for name, v := range attrs {
		n += len(name) + len(aws.ToString(v.DataType)) + len(aws.ToString(v.StringValue)) + len(v.BinaryValue)
	}
	return n
}

// Fit returns how many of n pending batch entries, taken in order, go into
// the next batch call: at most MaxBatchEntries, and no more than maxBytes
// in all (size(i) is entry i's MessageSize). It returns at least 1 when
// n > 0, so an entry larger than maxBytes on its own goes alone (and SQS
// refuses it alone).
func Fit(n, maxBytes int, size func(i int) int) int {
	k, total := 0, 0
	for k < n && k < MaxBatchEntries {
		s := size(k)
		if k > 0 && total+s > maxBytes {
			break
		}
		total += s
		k++
	}
	return k
}
