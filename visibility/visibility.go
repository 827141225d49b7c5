package visibility

import (
	"context"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/internal/heartbeat"
	"github.com/sqsworker/sqsworker/internal/sqslimit"
)

// API is the narrow SQS interface the heartbeat uses, with the AWS SDK for
// Go v2's exact method signature. *sqs.Client and *sqstest.Fake satisfy it.
type API interface {
	ChangeMessageVisibilityBatch(ctx context.Context, params *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error)
}

var _ API = (*sqs.Client)(nil)

// MaxVisibility is the longest SQS keeps a message invisible, counted from
// the receive that returned it: 12 hours. No extension, and no retry delay,
// can reach past it. It is sqsworker's one name for this limit.
const MaxVisibility = sqslimit.MaxVisibility

// ErrLost means the heartbeat no longer keeps the message invisible and its
// ownership is lost or uncertain: SQS refused the extension because the
// message was deleted, was received again by another consumer (its receipt
// handle was replaced), or is no longer in flight; or every extension
// attempt failed until the message's visibility deadline was too close to
// try again. The handler should stop and must not delete the message or
// change its visibility: another consumer may own it now. The worker's
// handlers see the same value as their context's cause.
var ErrLost = heartbeat.ErrLost

// ErrMaxVisibility means the message reached the SQS limit of 12 hours of
// invisibility counted from its receipt: no further extension is possible.
// It is reported Threshold before the last deadline SQS allows; the message
// stays invisible until that deadline, given in the error's detail, and the
// handler should stop cleanly before then, or the message will be delivered
// again. The worker's handlers see the same value as their context's cause.
var ErrMaxVisibility = heartbeat.ErrMaxVisibility

// Options configures a Heartbeat. Every field's zero value is usable.
type Options struct {
	// Extension is the visibility timeout each extension asks for, counted
	// from the call. SQS counts in whole seconds, so it is rounded down to
	// a whole second; it must be at least 1 s and at most 12 h. Near the
	// 12-hour limit the heartbeat asks for less (see the package doc).
	// Zero: the visibilityTimeout passed to New.
	Extension time.Duration

	// Threshold is how long before a message's visibility deadline the
	// heartbeat extends it: the time an extension has to succeed, retries
	// included. It must be shorter than Extension, so a message is extended
	// every Extension−Threshold.
	// Zero: a third of Extension; when that is under 1 s, 1 s or half of
	// Extension, whichever is less (30 s → 10 s, 2 s → 1 s, 1 s → 500 ms).
	Threshold time.Duration

	// MaxRetries is how many times, at most, a failed extension of one
	// message is retried (transient failures: throttling, 5xx, network,
	// timeouts). Retries wait with exponential backoff and jitter (the
	// library's one rule: 100 ms doubling up to 5 s, the upper half random;
	// never more than half the time left), and stop in any case when the
	// message's deadline is too close for another attempt; the owner then
	// gets ErrLost.
	// Zero: no limit other than the deadline. Negative: no retries.
	MaxRetries int

	// MaxCalls is how many ChangeMessageVisibilityBatch calls may be in
	// flight at once. The heartbeat only has as many in flight as the due
	// messages fill (ten per call), so this matters when many are due
	// together: N messages due at once, with calls taking L each, are
	// extended in ⌈N/10⌉·L/MaxCalls, which must stay well within
	// Threshold (the default covers SQS's in-flight limit of 120,000
	// messages due together at 20 ms per call in 3.75 s). Give the SQS
	// client's HTTP transport as many idle connections.
	// Zero: 64.
	MaxCalls int

	// CallTimeout is the longest one ChangeMessageVisibilityBatch call may
	// take; each call's own timeout is half the time left before the
	// earliest deadline among its messages, between 1 s and CallTimeout.
	// Zero: 30 s.
	CallTimeout time.Duration

	// Logger receives warnings (failed calls, lost messages, late
	// extensions, the 12-hour limit) and, at debug level, each call.
	// Zero: logs are discarded.
	Logger *slog.Logger
}

// Heartbeat keeps the in-flight messages of one queue invisible while they
// are being handled, extending their visibility timeouts in batches. Create
// it with New, run Run in one goroutine, and call Track for each received
// message. Its methods are safe for concurrent use.
type Heartbeat struct {
	h *heartbeat.Heartbeat
}

// New returns a heartbeat for the queue at queueURL. visibilityTimeout is
// the visibility timeout the messages were received with (the queue's
// VisibilityTimeout attribute, or the receive's own VisibilityTimeout): a
// message tracked with Track is taken to be invisible until receivedAt plus
// visibilityTimeout. It is also the default Extension.
//
// New returns an error when client is nil or the options are invalid (see
// Options); the error says what to change.
func New(client API, queueURL string, visibilityTimeout time.Duration, optFns ...func(*Options)) (*Heartbeat, error) {
	var o Options
	for _, fn := range optFns {
		fn(&o)
	}
	h, err := heartbeat.New(client, queueURL, visibilityTimeout, func(ho *heartbeat.Options) { *ho = heartbeat.Options(o) })
	if err != nil {
		return nil, err
	}
	return &Heartbeat{h: h}, nil
}

// Run keeps the tracked messages invisible until ctx ends; run it in one
// goroutine per Heartbeat. It sleeps until the earliest message is due, then
// extends every due message, ten per call, with up to Options.MaxCalls calls
// in flight. When ctx ends it waits for the calls in flight (their contexts
// end too) and returns nil; messages still tracked are kept (a later Run
// resumes them) but are not extended meanwhile, so keep Run going until
// every message is stopped. It returns an error at once if Run is already
// running on h.
func (h *Heartbeat) Run(ctx context.Context) error { return h.h.Run(ctx) }

// Track starts keeping one received message invisible. receiptHandle is the
// handle the receive returned. receivedAt is when that receive returned
// (take time.Now() right after ReceiveMessage): the message is taken to be
// invisible until receivedAt plus the visibilityTimeout passed to New, and
// the 12-hour limit counts from it.
//
// Call stop the moment the handler is done, before deleting the message or
// changing its visibility (for a retry delay). It stops tracking the
// message and returns only after any ChangeMessageVisibilityBatch call that
// includes the message has returned, so no extension can land after the
// delete or overwrite the retry delay (such a call is bounded by its
// timeout: half the time left before the message's deadline, at most
// Options.CallTimeout). stop is idempotent. It returns the cause onLost
// gets (or got) when the heartbeat gave the message up first — an error
// wrapping ErrLost or ErrMaxVisibility — and nil when the message was still
// held; unlike the onLost call, which may come shortly after stop returns,
// its result is settled when stop returns: use it to decide whether the
// receipt handle may still be used.
//
// onLost, which may be nil, is called at most once, from a heartbeat
// goroutine, when the heartbeat stops keeping the message invisible before
// stop: with an error wrapping ErrLost when ownership is lost or uncertain,
// or ErrMaxVisibility when the 12-hour limit leaves no further extension. It
// must not block (cancelling the handler's context with the cause is the
// intended use), and may call any message's stop. Once stop has begun, no
// new loss is detected; but a loss detected just before may still be
// reported while or shortly after stop returns, so onLost must be harmless
// then (cancelling a finished handler's context is).
//
// Track returns an error when receiptHandle is empty.
func (h *Heartbeat) Track(receiptHandle string, receivedAt time.Time, onLost func(cause error)) (stop func() error, err error) {
	l, err := h.h.Track(receiptHandle, receivedAt, onLost)
	if err != nil {
		return nil, err
	}
	return l.Stop, nil
}
