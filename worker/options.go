package worker

import (
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/internal/awscall"
	"github.com/sqsworker/sqsworker/internal/sqslimit"
	"github.com/sqsworker/sqsworker/retry"
)

// Options configures a Worker. Every field's zero value selects the
// documented default; pass functions that set fields to New.
type Options struct {
	// Concurrency is how many handlers run at once. Zero value: 10.
	Concurrency int

	// RetryPolicy gives the delay before each retry and when to give up
	// (then the message goes to the dead-letter queue). Zero value:
	// retry.DefaultDeliveryPolicy(), SNS's default (3 retries, 20 s apart).
	RetryPolicy retry.Policy

	// AttemptCounter numbers the attempts that RetryPolicy sees. Zero value:
	// SQS's ApproximateReceiveCount (which can over-count; see
	// retry/dynamocounter for an exact count).
	AttemptCounter retry.AttemptCounter

	// Logger receives the worker's logs. Zero value: slog.Default().
	Logger *slog.Logger

	// ShutdownTimeout is how long Run waits, once its context is cancelled,
	// for running handlers to finish before cancelling them (cause
	// ErrShutdown) and releasing their messages as they return. Cancelled
	// handlers then have half of FlushTimeout to return; Run returns
	// without those that do not (ErrHandlersNotStopped: their messages stay
	// leased while the process lives and are settled as usual when the
	// handlers return, see Run). Run flushes pending settlements for at most
	// FlushTimeout from the deadline (or from the moment every handler has
	// returned), so it returns within ShutdownTimeout + FlushTimeout
	// whatever the network and the handlers do. Zero value: 30 s.
	ShutdownTimeout time.Duration

	// FlushTimeout bounds the flush at the end of Run: deletes, retry
	// delays, releases and dead-letter copies still pending are sent (and
	// retried) until it passes; what is still unconfirmed then is counted in
	// Stats.Abandoned and logged once — those messages are delivered again.
	// Messages whose visibility deadline already passed are not sent. When
	// the shutdown deadline cancels handlers, the flush budget starts then,
	// and its first half is also the time they have to return. Zero
	// value: 5 s.
	FlushTimeout time.Duration

	// CallTimeout bounds every SQS call the worker makes (a receive gets
	// WaitTime on top); a call that times out is retried like any transient
	// failure. Zero value: 10 s.
	CallTimeout time.Duration

	// MaxUnsettled is how many messages whose handler is done may wait for
	// SQS to confirm their settlement (delete, retry delay, dead-letter
	// move) before the worker stops receiving: a slow or failing settlement
	// path slows receiving instead of letting held messages pile up. The
	// waiting messages stay owned, kept invisible by the heartbeat. Zero
	// value: Concurrency + MaxPrefetch.
	MaxUnsettled int

	// OnSettled, when set, is called once per message after SQS confirmed
	// its fate (or it is clear it will not): deleted, retrying, snoozed,
	// delayed, dead-lettered, released, lost or abandoned, with the attempt,
	// the timings and the handler's error. It runs on a goroutine of its
	// own, one event at a time, in the order the settlements were
	// confirmed, so it never delays settlement or the heartbeat; if it falls
	// more than 4,096 events behind, newer events are dropped and counted in
	// Stats.HookDropped. A panic in it is recovered and logged. Run waits
	// for queued events within FlushTimeout before returning; those still
	// queued then are dropped and counted (a call in progress is left to
	// finish). Zero value: nil.
	OnSettled func(Settlement)

	// HandlerTimeout bounds each handler call; on expiry its context is
	// cancelled (cause ErrHandlerTimeout) and the message is retried. Zero
	// value: no limit (the heartbeat keeps the message invisible for up to
	// SQS's 12-hour limit).
	HandlerTimeout time.Duration

	// AllowNoDLQ lets New accept a queue without a RedrivePolicy. Without a
	// dead-letter queue, a message that exhausts its retries, or that a
	// handler marks retry.Permanent, cannot be set aside: it is retried
	// until the queue's retention period deletes it. Zero value: false, New
	// refuses such a queue.
	AllowNoDLQ bool

	// WaitTime is the long-poll wait of each receive (1 s to 20 s). A
	// receive waits at most the visibility timeout less the heartbeat's
	// threshold (a third of it), in whole seconds and at least 1 s, so that
	// a message handed out at the end of a wait arrives with its lease
	// still held: a lease counts from the receive's start. With a 5 s
	// visibility timeout that is 3 s; from 30 s on, WaitTime itself. Zero
	// value: 20 s.
	WaitTime time.Duration

	// VisibilityTimeout is the visibility timeout the worker asks for on
	// every receive; the heartbeat counts each message's lease from it and
	// extends by it. It is rounded down to whole seconds, as SQS counts
	// them, and must be at least 1 s. Zero value: the queue's
	// VisibilityTimeout as New reads it; a later change of the queue's
	// attribute does not change what a running worker asks for (restart it
	// to pick the change up).
	VisibilityTimeout time.Duration

	// MaxPrefetch caps how many messages the worker receives ahead of a
	// free handler, so handlers never wait for a receive's round trip. The
	// depth adapts between a full receive batch and this cap: twice the
	// measured throughput × receive latency, plus one batch (at most
	// Concurrency, when that is under 10). Throughput is what the handlers
	// can take (Concurrency / mean handler time) while receives come back
	// full, and the arrival rate while they come back partial. Prefetched
	// messages are leased from their receipt like running ones (the
	// heartbeat keeps them invisible), counted in Stats.Prefetched, and
	// released at once on shutdown. The depth reaches the cap only when
	// handlers outrun receiving (fast handlers, a distant SQS, a backlog);
	// the buffer then holds up to MaxPrefetch messages in memory, so lower
	// it for very large bodies.
	// Zero value: 300. Negative: no prefetch, receive only for free
	// handlers.
	MaxPrefetch int

	// Pollers is how many receive calls may be in flight at once; how many
	// are, the flow control decides (full batches only, one long poll while
	// the queue is empty). Zero value: enough for Concurrency + MaxPrefetch
	// messages, ten per receive (at least 2).
	Pollers int

	// ReceiveBatchWait is how long a poller, with a handler free and
	// nothing received ahead or on its way, waits for room for a fuller
	// batch before it receives fewer than 10. Zero value: 10 ms. Negative:
	// do not wait.
	ReceiveBatchWait time.Duration

	// MaxReceivesPerSecond limits how many messages per second the worker
	// receives (SNS's throttlePolicy.maxReceivesPerSecond). Zero value: the
	// RetryPolicy's throttlePolicy.maxReceivesPerSecond when it is a
	// retry.DeliveryPolicy that sets one, else no limit.
	MaxReceivesPerSecond float64

	// ReceiveGate, when set, pauses and resumes receiving: for example a
	// pause switch shared by every worker of the queue (fleet.Pauser). Run
	// does not receive until the gate's first report. While it is closed
	// the worker receives nothing: the receive calls in flight get half a
	// second to come back and are then ended, messages they bring and
	// prefetched messages are released at once (visibility 0, for whichever consumer receives first once the
	// queue resumes), running handlers finish and their messages settle as
	// usual, and Health reports the worker live but not ready. A pause
	// costs no attempt and dead-letters nothing (a released message's
	// ApproximateReceiveCount still grew by its receive). Zero value: nil,
	// always open.
	ReceiveGate ReceiveGate

	// BatchLinger is how long a pending delete or visibility change waits for
	// more entries before its batch call goes out with fewer than 10. Zero
	// value: 20 ms.
	BatchLinger time.Duration

	// ReceiveRetry is the wait between failed receive calls: Delay(n) after
	// the n-th failure in a row. When it gives up (false), Run shuts down and
	// returns an error wrapping the last receive error. Zero value: the
	// library's one retry rule for SQS calls (exponential from 100 ms to 5 s,
	// jittered), retrying forever; fatal errors such as a deleted queue or
	// denied access end Run instead.
	ReceiveRetry retry.Policy

	// HandlerName names the handler in dead-letter provenance. Zero value:
	// "sqsworker".
	HandlerName string

	// StartupTimeout bounds New's calls to SQS (queue attributes, DLQ
	// discovery). Zero value: 30 s.
	StartupTimeout time.Duration

	// DeadLetterOffloader, when set, stores the body of a failed message
	// whose dead-letter copy would not fit the dead-letter queue (one whose
	// MaximumMessageSize is below its source's, as SQS allows) elsewhere:
	// the copy then carries a pointer to it and the full reason. An
	// s3payload.Store does it in S3, in the extended clients' format, so
	// its Middleware reads a redriven copy as it read the original. Each
	// call is bounded by CallTimeout. Zero value: none; such a message is
	// not dead-lettered: its reason is logged at ERROR with the message ID
	// and given in the settlement's Reason, and it comes back after the
	// visibility timeout until SQS's own redrive moves it (after
	// maxReceiveCount receives, without provenance). New warns when the
	// dead-letter queue is smaller than its source.
	DeadLetterOffloader dlq.Offloader

	// SystemAttributes lists the system attributes each receive asks for
	// besides those the worker reads itself (ApproximateReceiveCount,
	// SentTimestamp, ApproximateFirstReceiveTimestamp, MessageGroupId and
	// AWSTraceHeader), for handlers that read others from
	// Message.Attributes: SenderId, SequenceNumber, MessageDeduplicationId,
	// DeadLetterQueueSourceArn; types.MessageSystemAttributeNameAll asks for
	// every one. Zero value: only those the worker reads (each attribute
	// asked for costs every message its decoding).
	SystemAttributes []types.MessageSystemAttributeName

	// BacklogInterval is how often Run reads the queue's depth
	// (GetQueueAttributes: ApproximateNumberOfMessages, …NotVisible and
	// …Delayed) into Stats.Backlog, a scaling signal; the first read is at
	// Run's start. Each read is one request (every minute: about 43,000 a
	// month, within the free tier), counted in Stats.Requests. Zero value:
	// never — KEDA, ECS and Lambda read the depth from SQS or CloudWatch
	// themselves.
	BacklogInterval time.Duration
}

func (o *Options) setDefaults() error {
	if o.Concurrency < 0 {
		return fmt.Errorf("sqsworker: Options.Concurrency is %d; use a positive number (or 0 for the default of 10)", o.Concurrency)
	}
	if o.Concurrency == 0 {
		o.Concurrency = 10
	}
	if o.RetryPolicy == nil {
		o.RetryPolicy = retry.DefaultDeliveryPolicy()
	}
	if o.AttemptCounter == nil {
		o.AttemptCounter = retry.ReceiveCount()
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.ShutdownTimeout == 0 {
		o.ShutdownTimeout = 30 * time.Second
	}
	if o.BacklogInterval < 0 {
		return fmt.Errorf("sqsworker: Options.BacklogInterval is %v; use a positive interval (or 0: do not read the queue's depth)", o.BacklogInterval)
	}
	if o.ShutdownTimeout < 0 || o.HandlerTimeout < 0 || o.FlushTimeout < 0 || o.CallTimeout < 0 {
		return fmt.Errorf("sqsworker: Options.ShutdownTimeout, HandlerTimeout, FlushTimeout and CallTimeout must not be negative (zero selects the default)")
	}
	if o.FlushTimeout == 0 {
		o.FlushTimeout = 5 * time.Second
	}
	if o.CallTimeout == 0 {
		o.CallTimeout = 10 * time.Second
	}
	if o.MaxUnsettled < 0 {
		return fmt.Errorf("sqsworker: Options.MaxUnsettled is %d; use a positive number (or 0 for Concurrency + MaxPrefetch)", o.MaxUnsettled)
	}

	if o.WaitTime == 0 {
		o.WaitTime = 20 * time.Second
	}
	if o.WaitTime < time.Second || o.WaitTime > 20*time.Second {
		return fmt.Errorf("sqsworker: Options.WaitTime is %v; SQS long polling takes 1s to 20s", o.WaitTime)
	}
	if o.VisibilityTimeout < 0 || o.VisibilityTimeout > sqslimit.MaxVisibility || (o.VisibilityTimeout > 0 && o.VisibilityTimeout < time.Second) {
		return fmt.Errorf("sqsworker: Options.VisibilityTimeout is %v; SQS counts it in whole seconds from 1s to 12h (or 0 for the queue's own)", o.VisibilityTimeout)
	}
	switch {
	case o.MaxPrefetch == 0:
		o.MaxPrefetch = 300
	case o.MaxPrefetch < 0:
		o.MaxPrefetch = 0
	}
	if o.Pollers < 0 {
		return fmt.Errorf("sqsworker: Options.Pollers is %d; use a positive number (or 0 for the default)", o.Pollers)
	}
	if o.Pollers == 0 {
		o.Pollers = max(2, (o.Concurrency+o.MaxPrefetch+sqslimit.MaxBatchEntries-1)/sqslimit.MaxBatchEntries)
	}
	if o.ReceiveBatchWait == 0 {
		o.ReceiveBatchWait = 10 * time.Millisecond
	}
	if o.MaxUnsettled == 0 {
		o.MaxUnsettled = o.Concurrency + o.MaxPrefetch
	}
	if o.MaxReceivesPerSecond == 0 {
		o.MaxReceivesPerSecond = throttleOf(o.RetryPolicy)
	}
	if o.MaxReceivesPerSecond < 0 {
		return fmt.Errorf("sqsworker: Options.MaxReceivesPerSecond is %v; use a positive rate (or 0 for no limit)", o.MaxReceivesPerSecond)
	}
	if o.BatchLinger <= 0 {
		o.BatchLinger = 20 * time.Millisecond
	}
	if o.ReceiveRetry == nil {
		o.ReceiveRetry = retry.PolicyFunc(func(n int) (time.Duration, bool) { return awscall.Backoff(n), true })
	}
	if o.HandlerName == "" {
		o.HandlerName = "sqsworker"
	}
	if o.StartupTimeout <= 0 {
		o.StartupTimeout = 30 * time.Second
	}
	for _, a := range o.SystemAttributes {
		if !slices.Contains(a.Values(), a) {
			return fmt.Errorf("sqsworker: Options.SystemAttributes names %q, which is not an SQS system attribute; use one of %v", a, a.Values())
		}
	}
	return nil
}

// readAttributes are the system attributes the worker reads from every
// message (settle.Parse, the dead-letter copy, the scaling signals).
var readAttributes = [...]types.MessageSystemAttributeName{
	types.MessageSystemAttributeNameApproximateReceiveCount,
	types.MessageSystemAttributeNameSentTimestamp,
	types.MessageSystemAttributeNameApproximateFirstReceiveTimestamp,
	types.MessageSystemAttributeNameMessageGroupId,
	types.MessageSystemAttributeNameAWSTraceHeader,
}

// receiveAttributes returns the system attributes every receive asks for:
// those the worker reads and those the user asked for, or just All.
func (o *Options) receiveAttributes() []types.MessageSystemAttributeName {
	names := slices.Clone(readAttributes[:])
	for _, a := range o.SystemAttributes {
		if a == types.MessageSystemAttributeNameAll {
			return []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll}
		}
		if !slices.Contains(names, a) {
			names = append(names, a)
		}
	}
	return names
}

// throttleOf returns a delivery policy's throttlePolicy.maxReceivesPerSecond.
func throttleOf(p retry.Policy) float64 {
	switch dp := p.(type) {
	case retry.DeliveryPolicy:
		return float64(dp.ThrottlePolicy.MaxReceivesPerSecond)
	case *retry.DeliveryPolicy:
		if dp != nil {
			return float64(dp.ThrottlePolicy.MaxReceivesPerSecond)
		}
	}
	return 0
}
