package dlq

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

	"github.com/sqsworker/sqsworker/internal/awscall"
)

// Limits of Amazon SQS this package works within.
const (
	// DefaultMaxMessageSize is the message size limit assumed when a queue's
	// MaximumMessageSize is unknown: 256 KiB, SQS's limit for years, which
	// queues created before 2025 may still have (SQS now allows 1 MiB).
	DefaultMaxMessageSize = 256 * 1024
	// MaxRetention is the longest MessageRetentionPeriod SQS allows (14 days).
	MaxRetention = 14 * 24 * time.Hour
	// DefaultRetention is SQS's MessageRetentionPeriod when none is set (4 days).
	DefaultRetention = 4 * 24 * time.Hour

	maxBatch = 10 // entries per batch call
)

// Queue attribute names used here.
const (
	attrQueueArn          = "QueueArn"
	attrRedrivePolicy     = "RedrivePolicy"
	attrFifoQueue         = "FifoQueue"
	attrRetention         = "MessageRetentionPeriod"
	attrVisibilityTimeout = "VisibilityTimeout"
	attrMaxMessageSize    = "MaximumMessageSize"
	attrVisible           = "ApproximateNumberOfMessages"
	attrNotVisible        = "ApproximateNumberOfMessagesNotVisible"
	attrDelayed           = "ApproximateNumberOfMessagesDelayed"
	attrContentDedup      = "ContentBasedDeduplication"
)

// attributeReader reads queue attributes; QueueAPI and InspectAPI have it.
type attributeReader interface {
	GetQueueAttributes(ctx context.Context, params *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
}

// getAttributes reads the named attributes of the queue at url.
func getAttributes(ctx context.Context, client attributeReader, url string, names ...string) (map[string]string, error) {
	in := &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url)}
	for _, n := range names {
		in.AttributeNames = append(in.AttributeNames, types.QueueAttributeName(n))
	}
	out, err := awscall.SQS(ctx, awscall.Rule{}, client.GetQueueAttributes, in)
	if err != nil {
		return nil, err
	}
	if out.Attributes == nil {
		return map[string]string{}, nil
	}
	return out.Attributes, nil
}

// redrivePolicy is a parsed RedrivePolicy queue attribute.
type redrivePolicy struct {
	TargetARN       string
	MaxReceiveCount int
}

// parseRedrivePolicy parses a RedrivePolicy. SQS returns maxReceiveCount
// as a number, but accepts (and some tools write) a string.
func parseRedrivePolicy(s string) (redrivePolicy, error) {
	var raw struct {
		Target string          `json:"deadLetterTargetArn"`
		Count  json.RawMessage `json:"maxReceiveCount"`
	}
	if err := json.Unmarshal([]byte(s), &raw); err != nil {
		return redrivePolicy{}, fmt.Errorf("RedrivePolicy %q is not valid JSON: %v", s, err)
	}
	if raw.Target == "" {
		return redrivePolicy{}, fmt.Errorf("RedrivePolicy %q has no deadLetterTargetArn", s)
	}
	p := redrivePolicy{TargetARN: raw.Target}
	count := strings.Trim(string(raw.Count), `"`)
	if count != "" {
		n, err := strconv.Atoi(count)
		if err != nil {
			return redrivePolicy{}, fmt.Errorf("RedrivePolicy %q has a maxReceiveCount that is not a whole number", s)
		}
		p.MaxReceiveCount = n
	}
	return p, nil
}

// secondsAttr parses a queue attribute given in whole seconds.
func secondsAttr(attrs map[string]string, name string) (time.Duration, bool) {
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

func intAttr(attrs map[string]string, name string) int {
	n, _ := strconv.Atoi(attrs[name])
	return n
}

func secondsString(d time.Duration) string {
	return strconv.FormatInt(int64(d/time.Second), 10)
}

// humanDuration formats d for people: "14 days", "6 hours", "1h19m46s".
func humanDuration(d time.Duration) string {
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

// wrappedError is an error with its own text that matches both a sentinel
// and its cause with errors.Is and errors.As.
type wrappedError struct {
	msg  string
	errs []error
}

func (e *wrappedError) Error() string   { return e.msg }
func (e *wrappedError) Unwrap() []error { return e.errs }

// wrap returns an error reading "<formatted text>: <cause>" that wraps
// sentinel and cause.
func wrap(sentinel, cause error, format string, args ...any) error {
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
