package dlq

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/internal/awscall"
	"github.com/sqsworker/sqsworker/internal/deadletter"
	"github.com/sqsworker/sqsworker/internal/sqsbatch"
	"github.com/sqsworker/sqsworker/internal/sqserr"
	"github.com/sqsworker/sqsworker/internal/sqslimit"
	"github.com/sqsworker/sqsworker/queueref"
)

// Message is a dead-lettered message as Inspect and Redrive see it.
type Message struct {
	// ID is the message ID in the dead-letter queue.
	ID string
	// Body is the message body.
	Body string
	// Attributes are the message's own attributes, provenance removed.
	Attributes map[string]types.MessageAttributeValue
	// Provenance is parsed from the provenance attributes the runtimes
	// wrote; HasProvenance reports whether there were any.
	Provenance    Provenance
	HasProvenance bool
	// SentAt is the message's SentTimestamp. SQS's own redrive from a
	// standard queue keeps the original enqueue time, so for those messages
	// it is when the message entered the source queue, and retention counts
	// from it; a FIFO dead-letter queue resets it to the move.
	SentAt time.Time
	// ReceiveCount is the ApproximateReceiveCount, including the receive
	// that inspected the message.
	ReceiveCount int
	// GroupID is the MessageGroupId of a FIFO message.
	GroupID string
	// DeadLetterSourceARN is the queue SQS's own redrive moved the message
	// from (the DeadLetterQueueSourceArn system attribute), when SQS moved it.
	DeadLetterSourceARN string

	raw types.Message
}

// Origin returns the queue the message was dead-lettered from, as far as it
// is known: the provenance's source queue, else SQS's
// DeadLetterQueueSourceArn, else "".
func (m Message) Origin() string {
	if m.Provenance.SourceQueue != "" {
		return m.Provenance.SourceQueue
	}
	return m.DeadLetterSourceARN
}

// FailedAt returns when the message was dead-lettered as far as it is
// known: the provenance's FailedAt, else SentAt.
func (m Message) FailedAt() time.Time {
	if !m.Provenance.FailedAt.IsZero() {
		return m.Provenance.FailedAt
	}
	return m.SentAt
}

func newMessage(raw types.Message) Message {
	m := Message{
		ID:                  aws.ToString(raw.MessageId),
		Body:                aws.ToString(raw.Body),
		Attributes:          deadletter.StripProvenance(raw.MessageAttributes),
		GroupID:             raw.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)],
		DeadLetterSourceARN: raw.Attributes[string(types.MessageSystemAttributeNameDeadLetterQueueSourceArn)],
		raw:                 raw,
	}
	m.Provenance, m.HasProvenance = ParseProvenance(raw.MessageAttributes)
	m.ReceiveCount, _ = strconv.Atoi(raw.Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)])
	if ms, err := strconv.ParseInt(raw.Attributes[string(types.MessageSystemAttributeNameSentTimestamp)], 10, 64); err == nil {
		m.SentAt = time.UnixMilli(ms)
	}
	return m
}

// Counts is how many messages a queue holds, as SQS approximates them.
type Counts struct {
	Visible  int `json:"visible"`  // ApproximateNumberOfMessages
	InFlight int `json:"inFlight"` // ApproximateNumberOfMessagesNotVisible
	Delayed  int `json:"delayed"`  // ApproximateNumberOfMessagesDelayed
}

// Total returns the number of messages in every state.
func (c Counts) Total() int { return c.Visible + c.InFlight + c.Delayed }

// Count returns the approximate message counts of queue (a name, URL or
// ARN, resolved on each call with queueref.Resolve) without receiving any
// message.
//
// Count needs sqs:GetQueueAttributes.
func Count(ctx context.Context, client API, queue string) (Counts, error) {
	queueURL, err := queueref.Resolve(ctx, client, queue)
	if err != nil {
		return Counts{}, err
	}
	return count(ctx, client, queueURL)
}

func count(ctx context.Context, client deadletter.AttributeReader, queueURL string) (Counts, error) {
	a, err := deadletter.GetAttributes(ctx, client, queueURL, deadletter.AttrVisible, deadletter.AttrNotVisible, deadletter.AttrDelayed)
	if err != nil {
		return Counts{}, fmt.Errorf("counting the messages of queue %s: %w", queueref.Name(queueURL), err)
	}
	return Counts{Visible: deadletter.IntAttr(a, deadletter.AttrVisible), InFlight: deadletter.IntAttr(a, deadletter.AttrNotVisible), Delayed: deadletter.IntAttr(a, deadletter.AttrDelayed)}, nil
}

// InspectOptions configures Inspect. Every field's zero value is usable.
type InspectOptions struct {
	// Max is the most messages to return. Zero value: no limit.
	Max int
	// Hold is the visibility timeout of Inspect's receives: how long the
	// listed messages stay hidden from other consumers while the listing
	// runs. All are released (made visible) as soon as it ends. A listing
	// that takes longer than Hold sees its first messages again and may end
	// before it has seen every message; raise Hold for large queues. Zero
	// value: one minute.
	Hold time.Duration
	// Wait is how long each receive waits for messages (long polling, which
	// also makes SQS look at all its servers). Zero value: one second.
	Wait time.Duration
}

// Inspect lists the messages of queue (typically a dead-letter queue; a
// name, URL or ARN, resolved on each call with queueref.Resolve) with their
// provenance, without consuming them: it receives them, keeps
// them hidden while it lists, and then releases them all at once with
// ChangeMessageVisibilityBatch (visibility 0).
//
// Receiving is the only way SQS shows a message, so inspecting increases
// each message's ApproximateReceiveCount, and the messages are invisible to
// other consumers for up to Hold. On a FIFO queue, a message group's later
// messages are not returned while an earlier one is held.
//
// Inspect never comes back short without saying so: it counts the queue's
// messages (visible and in flight) first, and when it goes through the
// queue (Max not reached) and sees fewer, it returns the messages it saw
// with a *NotSeenError (errors.Is ErrNotAllSeen) saying how many it missed
// and why. Interrupted (ctx ends), it returns at once with the context's
// error, and releases what it received, including what the receive in
// flight returned; see [Redrive] for how.
//
// Inspect needs sqs:GetQueueAttributes, sqs:ReceiveMessage and
// sqs:ChangeMessageVisibility.
func Inspect(ctx context.Context, client API, queue string, opts InspectOptions) (msgs []Message, err error) {
	queueURL, err := queueref.Resolve(ctx, client, queue)
	if err != nil {
		return nil, fmt.Errorf("inspect: %w", err)
	}
	start, err := count(ctx, client, queueURL)
	if err != nil {
		return nil, fmt.Errorf("inspect: %w", err)
	}
	s := newScanner(client, queueURL, start, opts.Hold, opts.Wait)
	defer func() { err = errors.Join(err, s.releaseAll(ctx)) }()
	for opts.Max <= 0 || len(msgs) < opts.Max {
		batch, err := s.next(ctx, maxBatch)
		if err != nil {
			return msgs, fmt.Errorf("inspect: %w", err)
		}
		if len(batch) == 0 {
			return msgs, s.notSeen()
		}
		for _, raw := range batch {
			s.hold(raw)
			if opts.Max <= 0 || len(msgs) < opts.Max {
				msgs = append(msgs, newMessage(raw))
			}
		}
	}
	return msgs, nil
}

// maxBatch is the most entries a receive or batch call carries.
const maxBatch = sqslimit.MaxBatchEntries

// receiveGrace is how long a receive may take beyond its long-poll wait
// before the scanner gives up on its response.
const receiveGrace = 10 * time.Second

// callTimeout bounds the calls that run on after an interrupt (a send whose
// copies must then be deleted, the delete, the final release).
const callTimeout = 30 * time.Second

// scanner walks a queue by receiving its messages once each, holding them
// hidden until it releases them.
type scanner struct {
	client API
	url    string
	start  Counts        // the queue's messages when the walk began
	hide   time.Duration // the receives' visibility timeout
	wait   time.Duration
	seen   map[string]bool
	lost   int               // messages receives whose response was lost may have hidden
	lostBy error             // the last of those receives' errors
	held   map[string]string // message ID → latest receipt handle
	order  []string          // held IDs in receive order
	extra  int               // messages seen that were not in the queue at the start (a redrive's own copies, back)
}

func newScanner(client API, url string, start Counts, hold, wait time.Duration) *scanner {
	if hold <= 0 {
		hold = deadletter.DefaultHold
	}
	if wait <= 0 {
		wait = time.Second
	}
	return &scanner{
		client: client, url: url, start: start,
		hide: min(hold, 12*time.Hour).Truncate(time.Second),
		wait: min(wait, 20*time.Second).Truncate(time.Second),
		seen: map[string]bool{}, held: map[string]string{},
	}
}

// next receives up to n messages not seen before. It returns none when the
// queue has no more: an empty receive, or one that only returned messages
// already seen (their hold ran out).
//
// The receive does not end with ctx. A receive abandoned in flight may
// still take effect at SQS, whose messages would then stay hidden for the
// whole hold with nobody to release them; so the receive runs to its end,
// bounded by its own wait plus receiveGrace, and when ctx has ended
// meanwhile, next holds what it returned, for releaseAll to release at
// once, and reports the interrupt.
func (s *scanner) next(ctx context.Context, n int) ([]types.Message, error) {
	n = min(n, maxBatch)
	if ctx.Err() != nil {
		return nil, interrupted(ctx)
	}
	// The SDK's retries are off (the one rule, internal/awscall, retries
	// and sees every request): a retry it made after a lost response would
	// hide that response's messages from the walk, unseen.
	out, err := awscall.SQS(ctx, awscall.Rule{Timeout: s.wait + receiveGrace, Detach: true, OnRequest: func(r awscall.Request) {
		if r.Err != nil && sqserr.Of(r.Err) != sqserr.Throttled && !sqserr.NotSent(r.Err) {
			// The receive may have taken effect before its response was
			// lost: its messages are hidden for the hold, unseen. (A
			// throttled receive, or one that never left the client, took
			// none.)
			s.lost += n
			s.lostBy = r.Err
		}
	}}, s.client.ReceiveMessage, &sqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(s.url),
		MaxNumberOfMessages:         int32(n),
		VisibilityTimeout:           int32(s.hide / time.Second),
		WaitTimeSeconds:             int32(s.wait / time.Second),
		MessageAttributeNames:       []string{"All"},
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
	})
	if err != nil {
		err = fmt.Errorf("receiving from queue %s failed; if the receive took effect before its response was lost, up to %d messages stay hidden until the %s hold ends: %w",
			queueref.Name(s.url), n, deadletter.HumanDuration(s.hide), err)
		if ctx.Err() != nil {
			return nil, errors.Join(interrupted(ctx), err)
		}
		return nil, err
	}
	if ctx.Err() != nil {
		for _, m := range out.Messages {
			s.seen[aws.ToString(m.MessageId)] = true
			s.hold(m)
		}
		return nil, interrupted(ctx)
	}
	var fresh []types.Message
	for _, m := range out.Messages {
		id := aws.ToString(m.MessageId)
		if s.seen[id] {
			if _, ok := s.held[id]; ok {
				s.held[id] = aws.ToString(m.ReceiptHandle) // keep the newest handle for the release
			} else {
				s.hold(m) // seen and let go of (a failed send), now hidden again
			}
			continue
		}
		s.seen[id] = true
		fresh = append(fresh, m)
	}
	return fresh, nil
}

// interrupted is the error of a walk whose ctx ended.
func interrupted(ctx context.Context) error {
	return fmt.Errorf("interrupted: %w", context.Cause(ctx))
}

// notSeen returns a *NotSeenError when the walk, having gone through the
// whole queue, saw fewer messages than the queue held when it began, or
// when receives of its own lost their responses (their messages may be
// hidden still, whatever else arrived meanwhile), and nil otherwise.
func (s *scanner) notSeen() error {
	e := &NotSeenError{Queue: s.url, Expected: s.start.Visible + s.start.InFlight, InFlight: s.start.InFlight, Seen: len(s.seen) - s.extra, Lost: s.lost, Hold: s.hide, lostBy: s.lostBy}
	if e.NotSeen() <= 0 {
		return nil
	}
	return e
}

// hold records a received message to release at the end.
func (s *scanner) hold(m types.Message) {
	id := aws.ToString(m.MessageId)
	if _, ok := s.held[id]; !ok {
		s.order = append(s.order, id)
	}
	s.held[id] = aws.ToString(m.ReceiptHandle)
}

// forget drops a message that was deleted from the queue.
func (s *scanner) forget(id string) { delete(s.held, id) }

// releaseAll makes every held message visible again at once. It runs even
// when ctx has ended, so an interrupted listing does not leave messages
// hidden for the whole hold.
func (s *scanner) releaseAll(ctx context.Context) error {
	var entries []sqsbatch.Entry
	for _, id := range s.order {
		if handle, ok := s.held[id]; ok {
			entries = append(entries, sqsbatch.Entry{Handle: handle, Timeout: 0})
		}
	}
	s.held, s.order = map[string]string{}, nil
	if len(entries) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), callTimeout)
	defer cancel()
	res := sqsbatch.NewChanger(s.client, s.url).Run(ctx, entries, sqsbatch.Policy{CallTimeout: callTimeout})
	failed := 0
	var first error
	for _, r := range res {
		if !r.OK {
			failed++
			if first == nil {
				first = r.Err
			}
		}
	}
	if failed == 0 {
		return nil
	}
	return fmt.Errorf("releasing %d of %d messages of queue %s failed (they become visible again when their hold ends): %w", failed, len(entries), queueref.Name(s.url), first)
}

// handle returns the latest receipt handle of a message, falling back to
// the one it was received with.
func (s *scanner) handle(id string, raw types.Message) string {
	if h, ok := s.held[id]; ok {
		return h
	}
	return aws.ToString(raw.ReceiptHandle)
}
