package worker

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/internal/sqserr"
	"github.com/sqsworker/sqsworker/internal/sqslimit"
)

// API is the narrow set of SQS calls a Worker makes, with the SDK's exact
// signatures. *sqs.Client and *sqstest.Fake satisfy it.
//
//   - GetQueueAttributes, GetQueueUrl: the queue's settings and its
//     dead-letter queue, once, in New.
//   - ReceiveMessage: the messages.
//   - DeleteMessageBatch: successes, and messages whose dead-letter copy is
//     confirmed.
//   - ChangeMessageVisibilityBatch: the heartbeat, retry delays, releases.
//   - SendMessageBatch: copies to the dead-letter queue.
type API interface {
	GetQueueAttributes(ctx context.Context, params *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
	GetQueueUrl(ctx context.Context, params *sqs.GetQueueUrlInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
	ReceiveMessage(ctx context.Context, params *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessageBatch(ctx context.Context, params *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
	ChangeMessageVisibilityBatch(ctx context.Context, params *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error)
	SendMessageBatch(ctx context.Context, params *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
}

var _ API = (*sqs.Client)(nil)

// The APIs counted in Stats.Requests.
const (
	apiGetQueueAttributes = iota
	apiGetQueueURL
	apiReceiveMessage
	apiDeleteMessageBatch
	apiChangeMessageVisibilityBatch
	apiSendMessageBatch
	numAPIs
)

var apiNames = [numAPIs]string{
	"GetQueueAttributes", "GetQueueUrl", "ReceiveMessage",
	"DeleteMessageBatch", "ChangeMessageVisibilityBatch", "SendMessageBatch",
}

// countingClient counts every call the worker and the packages it drives
// (heartbeat, dead-letter copies) make: by API, by result class, and by the
// payload SQS bills for. It also tells the worker's health (health.go) how
// its receives fare.
type countingClient struct {
	next    API
	calls   [numAPIs]atomic.Int64
	results [numAPIs][numResults]atomic.Int64
	bytes   [numAPIs]atomic.Int64 // message payload sent and received
	billed  [numAPIs]atomic.Int64 // requests as SQS bills them (64 KiB chunks)
	health  health
	// deleted, when set, is told how long each DeleteMessageBatch that
	// succeeded took (the delete path's part of Stats.Capacity).
	deleted func(now time.Time, took time.Duration)
}

// The result classes of Stats.RequestResults: "ok", then sqserr's classes.
const numResults = 1 + int(sqserr.Canceled) + 1

// resultName names result class i of countingClient.results.
func resultName(i int) string {
	if i == 0 {
		return "ok"
	}
	return sqserr.Class(i - 1).String()
}

// count accounts for one call of api that returned err and carried payload
// bytes of messages.
func (c *countingClient) count(api int, err error, payload int) {
	c.calls[api].Add(1)
	res := 0
	if err != nil {
		res = 1 + int(sqserr.Of(err))
	}
	c.results[api][res].Add(1)
	if payload > 0 {
		c.bytes[api].Add(int64(payload))
	}
	c.billed[api].Add(sqslimit.BilledRequests(payload, sqslimit.BillingChunk))
}

// The calls pass through: the caller retries them by the one rule
// (internal/awscall, internal/sqsbatch) with the SDK's retryer off, so
// each request reaches the counters once.

func (c *countingClient) GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	out, err := c.next.GetQueueAttributes(ctx, in, optFns...)
	c.count(apiGetQueueAttributes, err, 0)
	return out, err
}

func (c *countingClient) GetQueueUrl(ctx context.Context, in *sqs.GetQueueUrlInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error) {
	out, err := c.next.GetQueueUrl(ctx, in, optFns...)
	c.count(apiGetQueueURL, err, 0)
	return out, err
}

func (c *countingClient) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	id := c.health.receiveStarted(time.Now())
	out, err := c.next.ReceiveMessage(ctx, in, optFns...)
	c.health.receiveDone(id, time.Now(), err)
	payload := 0
	if err == nil && out != nil {
		for _, m := range out.Messages {
			payload += sqslimit.MessageSize(aws.ToString(m.Body), m.MessageAttributes)
		}
	}
	c.count(apiReceiveMessage, err, payload)
	return out, err
}

func (c *countingClient) DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	began := time.Now()
	out, err := c.next.DeleteMessageBatch(ctx, in, optFns...)
	if err == nil && c.deleted != nil {
		now := time.Now()
		c.deleted(now, now.Sub(began))
	}
	c.count(apiDeleteMessageBatch, err, 0)
	return out, err
}

func (c *countingClient) ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	out, err := c.next.ChangeMessageVisibilityBatch(ctx, in, optFns...)
	c.count(apiChangeMessageVisibilityBatch, err, 0)
	return out, err
}

func (c *countingClient) SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error) {
	out, err := c.next.SendMessageBatch(ctx, in, optFns...)
	payload := 0
	for _, e := range in.Entries {
		payload += sqslimit.MessageSize(aws.ToString(e.MessageBody), e.MessageAttributes)
	}
	c.count(apiSendMessageBatch, err, payload)
	return out, err
}

// Stats is a snapshot of a Worker's counters since New. The outcome
// counters (Deleted, Retried, DeadLettered, Released) count what SQS
// confirmed.
type Stats struct {
	Received     int64 // messages received
	Succeeded    int64 // handler returned nil
	Failed       int64 // handler returned an error, panicked or timed out
	Deleted      int64 // deletes SQS confirmed
	Retried      int64 // retry delays SQS confirmed
	DeadLettered int64 // dead-letter moves SQS confirmed (copy sent, source deleted)
	Released     int64 // messages made visible again unprocessed (shutdown, FIFO order)
	// Lost counts messages whose ownership was lost before they were
	// settled (the heartbeat could not keep them invisible): SQS delivers
	// them again.
	Lost int64
	// Abandoned counts settlements that could not be confirmed (the
	// shutdown flush ended, or SQS refused them for good): SQS delivers
	// those messages again. (A message whose handler Run returned without,
	// ErrHandlersNotStopped, is settled as usual when the handler returns.)
	Abandoned int64
	// DeleteRetried counts deletes sent again after a failed call or entry
	// (throttling, server errors, timeouts). The message stays owned, and
	// invisible, meanwhile.
	DeleteRetried int64
	// SettledLate counts settlements SQS confirmed only after the message's
	// visibility deadline: another consumer may have received the message
	// meanwhile, so a duplicate is likely.
	SettledLate int64
	// InFlight is the number of messages held right now: received and not
	// yet settled (running, waiting, or awaiting SQS's confirmation).
	InFlight int64
	// Settling is the number of messages whose handler is done and whose
	// settlement SQS has not confirmed yet.
	Settling int64
	// Prefetched is the number of messages received ahead of a free
	// handler right now: leased, waiting in the worker's buffer.
	Prefetched int
	// PrefetchTarget is how many messages the worker currently aims to
	// hold ahead of its handlers (it adapts; at most Options.MaxPrefetch).
	PrefetchTarget int
	// HookDropped counts settlement events Options.OnSettled missed because
	// it fell too far behind.
	HookDropped int64
	// Snoozed counts messages their handler snoozed (retry.Snooze), as SQS
	// confirmed.
	Snoozed int64
	// Paused is true while Options.ReceiveGate keeps the worker from
	// receiving, and before the gate's first report.
	Paused bool
	// Delayed counts receives of jobs not yet due (sent with a delay beyond
	// 15 minutes) that the worker hid or re-sent to wait, without running
	// the handler or counting an attempt.
	Delayed int64
	// Extensions counts heartbeat extensions SQS confirmed on time.
	Extensions int64
	// LateExtensions counts heartbeat extensions SQS confirmed only after
	// the deadline they were meant to move.
	LateExtensions int64
	// ReceiveSizes counts receive calls by how many messages they returned:
	// ReceiveSizes[n] is the number of receives that brought n (0 to 10).
	ReceiveSizes [11]int64
	// Requests counts SQS calls by API name, including the heartbeat's and
	// dead-letter copies'. Receives and batch calls run with the SDK's own
	// retries off (the worker retries them), so each is one request.
	Requests map[string]int64
	// RequestResults counts the same calls by API name and by result:
	// "ok", or the class of the error the call returned — "throttled",
	// "transient" (server faults, the network, timeouts), "stale" (a receipt
	// handle no longer held), "maxed-out" (past the 12-hour limit), "fatal"
	// (access, credentials, a deleted queue), "invalid" (a malformed
	// request) or "canceled" (the worker's own context ended, as at
	// shutdown). A batch call counts as "ok" when SQS answered it, even if
	// some of its entries failed: the outcome counters account for those.
	RequestResults map[string]map[string]int64
	// PayloadBytes counts, by API name, the message payload the calls
	// carried: the bodies and message attributes (names, types, values) of
	// the messages received (ReceiveMessage) and of the dead-letter copies
	// sent (SendMessageBatch). Other calls carry no message payload.
	PayloadBytes map[string]int64
	// BilledRequests counts the calls by API name as SQS bills them: each
	// call is one request per started 64 KiB of its payload,
	// and at least one. See Cost.
	BilledRequests map[string]int64

	// The scaling signals: what a scaler (KEDA, ECS, Lambda's event source
	// mapping) needs to know about one worker; `sqsworker template
	// --scaling` reads them from StatsHandler.

	// Concurrency is Options.Concurrency: the handler slots.
	Concurrency int
	// HandlerRuns counts the messages that held a handler slot and gave it
	// back since Run started, and HandlerTime is the total time they held
	// it (the handler, its attempt counting and timeouts included).
	HandlerRuns int64
	HandlerTime time.Duration
	// MeanHandlerTime is the mean time a message holds a handler slot, over
	// the last one to two minutes (over the whole run when no handler
	// returned in that time; zero before the first).
	MeanHandlerTime time.Duration
	// Capacity is how many messages per second the worker can take with
	// every slot busy: Concurrency ÷ MeanHandlerTime (zero before the first
	// handler returns), bounded by what its receive and delete paths
	// measured over the same minutes — Pollers × 10 messages per mean
	// round trip of a receive that came back full, and of a
	// DeleteMessageBatch — so that fast handlers do not claim more than the
	// worker can receive and delete. It is measured, not observed: a worker
	// idling on an empty queue keeps the capacity of its last busy minutes.
	// The backlog one worker clears within a latency L is Capacity × L.
	Capacity float64
	// OldestAge is the age at receipt of the oldest message received for
	// the first time (ApproximateReceiveCount 1) in the last one to two
	// minutes: how long fresh messages waited in the queue, from their
	// SentTimestamp, under the clocks of SQS and of this host. Retries are
	// left out (their wait is the retry delay). Zero when none arrived.
	OldestAge time.Duration
	// Backlog is the queue's depth as last read (Options.BacklogInterval;
	// zero At: never read). The backlog per worker a scaler compares with
	// Capacity × the target latency is Backlog.Visible ÷ the workers.
	Backlog QueueDepth
}

// QueueDepth is a queue's depth as SQS reported it, approximately.
type QueueDepth struct {
	Visible  int64     // ApproximateNumberOfMessages: waiting to be received
	InFlight int64     // ApproximateNumberOfMessagesNotVisible: received, not yet deleted (running, or waiting for a retry)
	Delayed  int64     // ApproximateNumberOfMessagesDelayed: sent with a delay not yet over
	At       time.Time // when SQS answered
}

// TotalRequests is the sum of Requests.
func (s Stats) TotalRequests() int64 {
	var n int64
	for _, v := range s.Requests {
		n += v
	}
	return n
}

type counters struct {
	received, succeeded, failed, deleted, retried, deadLettered, released,
	lost, abandoned, deleteRetried, settledLate, inFlight, settling, snoozed, delayed atomic.Int64
	receiveSizes [11]atomic.Int64
}
