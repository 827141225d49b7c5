package deadletter

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// QueueAPI is the part of the SQS API that reads a queue's configuration:
// what Discover needs.
type QueueAPI interface {
	GetQueueAttributes(ctx context.Context, params *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
	GetQueueUrl(ctx context.Context, params *sqs.GetQueueUrlInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
}

// SetupAPI is what EnsureQueue and FindQueue use to create and configure a
// queue.
type SetupAPI interface {
	QueueAPI
	CreateQueue(ctx context.Context, params *sqs.CreateQueueInput, optFns ...func(*sqs.Options)) (*sqs.CreateQueueOutput, error)
	SetQueueAttributes(ctx context.Context, params *sqs.SetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.SetQueueAttributesOutput, error)
}

var (
	_ QueueAPI = (*sqs.Client)(nil)
	_ SetupAPI = (*sqs.Client)(nil)
)

// The queue attribute names dlq and this package read and set.
const (
	AttrQueueArn          = "QueueArn"
	AttrRedrivePolicy     = "RedrivePolicy"
	AttrFifoQueue         = "FifoQueue"
	AttrRetention         = "MessageRetentionPeriod"
	AttrVisibilityTimeout = "VisibilityTimeout"
	AttrMaxMessageSize    = "MaximumMessageSize"
	AttrVisible           = "ApproximateNumberOfMessages"
	AttrNotVisible        = "ApproximateNumberOfMessagesNotVisible"
	AttrDelayed           = "ApproximateNumberOfMessagesDelayed"
	AttrContentDedup      = "ContentBasedDeduplication"
)

// AttributeReader reads queue attributes.
type AttributeReader interface {
	GetQueueAttributes(ctx context.Context, params *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
}

// GetAttributes reads the named attributes of the queue at url; the map is
// never nil.
func GetAttributes(ctx context.Context, client AttributeReader, url string, names ...string) (map[string]string, error) {
	in := &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url)}
	for _, n := range names {
		in.AttributeNames = append(in.AttributeNames, types.QueueAttributeName(n))
	}
	out, err := client.GetQueueAttributes(ctx, in)
	if err != nil {
		return nil, err
	}
	if out.Attributes == nil {
		return map[string]string{}, nil
	}
	return out.Attributes, nil
}

// RedrivePolicy is a parsed RedrivePolicy queue attribute.
type RedrivePolicy struct {
	TargetARN       string
	MaxReceiveCount int
}

// ParseRedrivePolicy parses a RedrivePolicy. SQS returns maxReceiveCount
// as a number, but accepts (and some tools write) a string. Every error
// names the RedrivePolicy.
func ParseRedrivePolicy(s string) (RedrivePolicy, error) {
	var raw struct {
		Target string          `json:"deadLetterTargetArn"`
		Count  json.RawMessage `json:"maxReceiveCount"`
	}
	if err := json.Unmarshal([]byte(s), &raw); err != nil {
		return RedrivePolicy{}, fmt.Errorf("RedrivePolicy %q is not valid JSON: %v", s, err)
	}
	if raw.Target == "" {
		return RedrivePolicy{}, fmt.Errorf("RedrivePolicy %q has no deadLetterTargetArn", s)
	}
	p := RedrivePolicy{TargetARN: raw.Target}
	count := strings.Trim(string(raw.Count), `"`)
	if count != "" {
		n, err := strconv.Atoi(count)
		if err != nil {
			return RedrivePolicy{}, fmt.Errorf("RedrivePolicy %q has a maxReceiveCount that is not a whole number", s)
		}
		p.MaxReceiveCount = n
	}
	return p, nil
}

// SecondsAttr parses a queue attribute given in whole seconds.
func SecondsAttr(attrs map[string]string, name string) (time.Duration, bool) {
	v, ok := attrs[name]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, false
	}
	return time.Duration(n) * time.Second, true
}

// IntAttr parses a whole-number queue attribute (zero when absent or not a
// number).
func IntAttr(attrs map[string]string, name string) int {
	n, _ := strconv.Atoi(attrs[name])
	return n
}

// SecondsString formats d as a queue attribute in whole seconds.
func SecondsString(d time.Duration) string {
	return strconv.FormatInt(int64(d/time.Second), 10)
}

// HumanDuration formats d for people: "14 days", "6 hours", "1h19m46s".
func HumanDuration(d time.Duration) string {
	plural := func(n int64, unit string) string {
		if n == 1 {
			return "1 " + unit
		}
		return strconv.FormatInt(n, 10) + " " + unit + "s"
	}
	switch {
	case d == 0:
		return "0s"
	case d%(24*time.Hour) == 0:
		return plural(int64(d/(24*time.Hour)), "day")
	case d >= time.Hour && d%time.Hour == 0:
		return plural(int64(d/time.Hour), "hour")
	case d >= time.Second:
		d = d.Round(time.Second)
	}
	s := d.String()
	if d%time.Minute == 0 {
		s = strings.TrimSuffix(s, "0s") // "2h30m0s" → "2h30m"
	}
	return s
}

// QueueKind names a queue's type: "a FIFO queue", "a standard queue".
func QueueKind(fifo bool) string {
	if fifo {
		return "a FIFO queue"
	}
	return "a standard queue"
}

// DefaultDLQName is the dead-letter queue name dlq.Setup gives queue name
// by default: name + "-dlq", before the ".fifo" suffix of a FIFO queue.
func DefaultDLQName(name string) string {
	if base, ok := strings.CutSuffix(name, ".fifo"); ok {
		return base + "-dlq.fifo"
	}
	return name + "-dlq"
}

// wrappedError is an error with its own text that matches both a sentinel
// and its cause with errors.Is and errors.As.
type wrappedError struct {
	msg  string
	errs []error
}

func (e *wrappedError) Error() string   { return e.msg }
func (e *wrappedError) Unwrap() []error { return e.errs }

// Wrap returns an error reading "<formatted text>: <cause>" that wraps
// sentinel and cause (which may be nil).
func Wrap(sentinel, cause error, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if cause != nil {
		msg += ": " + cause.Error()
	}
	errs := []error{sentinel}
	if cause != nil {
		errs = append(errs, cause)
	}
	return &wrappedError{msg: msg, errs: errs}
}
