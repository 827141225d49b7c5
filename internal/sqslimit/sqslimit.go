// Package sqslimit holds the limits of Amazon SQS that several of
// sqsworker's packages apply, so each is written once, and the SNS limit a
// message published to a subscribed queue meets first (MaxPublishSize). The public name of
// the 12-hour limit is visibility.MaxVisibility.
package sqslimit

import (
	"fmt"
	"regexp"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	snstypes "github.com/aws/aws-sdk-go-v2/service/sns/types"
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

const (
	// DefaultMaxMessageSize is the message size limit assumed when a
	// queue's MaximumMessageSize is unknown: 256 KiB, SQS's limit for
	// years, which queues created before 2025 may still have.
	DefaultMaxMessageSize = 256 << 10
	// MaxRetention is the longest MessageRetentionPeriod SQS allows (14 days).
	MaxRetention = 14 * 24 * time.Hour
	// DefaultRetention is SQS's MessageRetentionPeriod when none is set (4 days).
	DefaultRetention = 4 * 24 * time.Hour
	// MaxReceiveCount is the largest RedrivePolicy maxReceiveCount SQS accepts.
	MaxReceiveCount = 1000
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

// MaxPublishSize is the largest message SNS publishes, and the largest
// PublishBatch request payload it accepts (256 KiB). A message to an SQS
// queue subscribed to a topic meets this limit first.
const MaxPublishSize = 256 << 10

// PublishSize is how SNS counts a message against MaxPublishSize: as
// MessageSize does, the message plus each attribute's name, data type and
// value.
func PublishSize(message string, attrs map[string]snstypes.MessageAttributeValue) int {
	n := len(message)
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

var (
	regionRE  = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-[0-9]+$`)
	accountRE = regexp.MustCompile(`^[0-9]{12}$`)
)

// CheckIdentity reports whether region and account can name queues and
// topics in URLs and ARNs: an AWS region name (such as us-east-1) and a
// 12-digit account ID. The error starts with the field at fault.
func CheckIdentity(region, account string) error {
	if !regionRE.MatchString(region) {
		return fmt.Errorf("Region %q is not an AWS region name (such as us-east-1)", region)
	}
	if !accountRE.MatchString(account) {
		return fmt.Errorf("AccountID %q is not a 12-digit AWS account ID", account)
	}
	return nil
}

// BillingChunk is the payload SQS bills as one request: 64 KiB.
const BillingChunk = 64 << 10

// BilledRequests returns how many requests SQS bills for one call carrying
// payload bytes of messages, with chunk-byte billing chunks: one per started
// chunk, and at least one. A chunk of 0 or less means BillingChunk.
func BilledRequests(payload, chunk int) int64 {
	if chunk <= 0 {
		chunk = BillingChunk
	}
	if payload <= chunk {
		return 1
	}
	return int64((payload + chunk - 1) / chunk)
}

// CapVisibility clamps d to [0, 12 h], the visibility timeouts SQS can set
// (MaxVisibility).
func CapVisibility(d time.Duration) time.Duration {
	return min(max(d, 0), MaxVisibility)
}

// VisibilitySeconds converts a delay to the whole seconds that SQS's
// ChangeMessageVisibility takes: CapVisibility(d) rounded up, so a message
// is never released before its delay is over. The result is in [0, 43200].
func VisibilitySeconds(d time.Duration) int32 {
	d = CapVisibility(d)
	s := d / time.Second
	if d%time.Second != 0 {
		s++
	}
	return int32(s)
}
