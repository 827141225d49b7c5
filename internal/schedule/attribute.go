package schedule

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// Attribute is the message attribute that carries a job's due time. It is a
// String attribute holding an RFC 3339 time in UTC with milliseconds
// ("2026-03-01T09:30:00.000Z"). The name shares the "sqsworker." prefix of
// the library's other attributes but not the "sqsworker.dlq." prefix of
// dead-letter provenance, so deadletter.StripProvenance and a manual redrive keep
// it (a redriven job whose due time has passed simply runs).
const Attribute = "sqsworker.due"

// layout is how Value writes a due time.
const layout = "2006-01-02T15:04:05.000Z"

// maxValueLen bounds what Parse reads: an RFC 3339 time with nanoseconds and
// an offset is 35 bytes.
const maxValueLen = 64

// ErrInvalid is wrapped by the errors Parse returns for an attribute that is
// present but unreadable.
var ErrInvalid = errors.New("invalid " + Attribute + " attribute")

// Value returns the attribute value that records due (rounded down to the
// millisecond, in UTC).
func Value(due time.Time) types.MessageAttributeValue {
	return types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(Format(due))}
}

// Format writes due as the attribute holds it.
func Format(due time.Time) string { return due.UTC().Truncate(time.Millisecond).Format(layout) }

// Parse reads the due time from a message's attributes. It reports false
// (and no error) when the message has no due time, and an error wrapping
// ErrInvalid when the attribute is there but is not a String holding an
// RFC 3339 time.
func Parse(attrs map[string]types.MessageAttributeValue) (due time.Time, ok bool, err error) {
	v, found := attrs[Attribute]
	if !found {
		return time.Time{}, false, nil
	}
	dt := aws.ToString(v.DataType)
	if base, _, _ := strings.Cut(dt, "."); base != "String" || v.StringValue == nil {
		return time.Time{}, false, fmt.Errorf("%w: data type %q, want String", ErrInvalid, dt)
	}
	due, err = ParseValue(*v.StringValue)
	if err != nil {
		return time.Time{}, false, err
	}
	return due, true, nil
}

// ParseValue parses an attribute value written by Value (any RFC 3339 time
// is accepted).
func ParseValue(s string) (time.Time, error) {
	if len(s) > maxValueLen {
		return time.Time{}, fmt.Errorf("%w: value of %d bytes is not an RFC 3339 time", ErrInvalid, len(s))
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: %q is not an RFC 3339 time", ErrInvalid, s)
	}
	return t.UTC(), nil
}
