package dlq

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/internal/deadletter"
)

// Provenance is why and from where a message was dead-lettered, as the
// worker and the Lambda adapter record it on the dead-letter copy (see
// "Provenance attributes" in the package doc).
type Provenance struct {
	// SourceQueue is the queue the message failed in (its URL).
	SourceQueue string
	// Error is the handler's error text, cut to 1 KiB (marked
	// "… [truncated]"), with characters SQS refuses replaced by U+FFFD.
	Error string
	// Attempt is the delivery that failed last (1 for the first).
	Attempt int
	// FirstReceived is when the message was first delivered.
	FirstReceived time.Time
	// FailedAt is when the last attempt failed.
	FailedAt time.Time
	// Handler names the handler that failed (the runtimes'
	// Options.HandlerName).
	Handler string
}

// ParseProvenance reads Provenance back from a dead-lettered message's
// attributes, in either form the runtimes write. It reports false when
// attrs hold no provenance (for example a message SQS's own redrive moved).
func ParseProvenance(attrs map[string]types.MessageAttributeValue) (Provenance, bool) {
	p, ok := deadletter.ParseProvenance(attrs)
	return Provenance(p), ok
}

// Offloader stores the body of a dead-letter copy that does not fit the
// dead-letter queue elsewhere, so the copy carries a pointer to it and its
// full provenance. s3payload.Store implements it: the copy is then in the
// format of AWS's SQS extended clients, and a handler behind the Store's
// middleware reads it after a redrive as it read the original. Set it as
// the worker's or the Lambda adapter's Options.DeadLetterOffloader.
type Offloader interface {
	// OffloadBody stores body and returns the body the copy carries
	// instead and the message attributes that mark it as offloaded (they
	// are added to the message's own).
	OffloadBody(ctx context.Context, body string) (pointer string, marker map[string]types.MessageAttributeValue, err error)
}

// The runtimes hand an Offloader to the internal copier as it is.
var _ deadletter.Offloader = Offloader(nil)
