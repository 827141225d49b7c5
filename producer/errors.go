package producer

import (
	"errors"
	"fmt"
)

// ErrClosed is returned for messages given to a Producer after Close, and
// by Enqueue (and Send) calls that were waiting for room when Close began:
// their messages were not accepted.
var ErrClosed = errors.New("producer: closed")

// ErrInvalid is wrapped by the errors of messages refused before any call
// to SQS or SNS: an empty body, a negative delay, a delay on a FIFO queue
// or on a topic, a FIFO message without a group ID, too many attributes, a
// message too large; on a topic also a DeduplicationID on a standard topic
// and a GroupID SNS would refuse; on a queue a Subject.
var ErrInvalid = errors.New("invalid message")

// ErrTooLarge is wrapped by the error of a message larger than the limit
// (Options.MaxMessageSize) that no Offloader took.
var ErrTooLarge = errors.New("message too large")

// BatchError is the error SendBatch and Close return when some messages
// were not sent. Each message's own error is in its Result (or Pending).
type BatchError struct {
	Failed int   // messages not sent
	Total  int   // messages given
	First  error // the first failed message's error
}

// Error says how many messages were not sent, and why the first was not.
func (e *BatchError) Error() string {
	return fmt.Sprintf("producer: %d of %d messages not sent (each Result says why); first: %v", e.Failed, e.Total, e.First)
}

// Unwrap returns the first failed message's error.
func (e *BatchError) Unwrap() error { return e.First }
