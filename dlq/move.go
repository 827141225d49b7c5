package dlq

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// ErrNotDeleted is wrapped by the error Move returns when the message
// reached the dead-letter queue but could not be deleted from the source:
// the message is in both queues and will be delivered again.
var ErrNotDeleted = errors.New("dlq: copied to the dead-letter queue but not deleted from the source")

// ErrNotSent is wrapped by the error Move returns when the send to the
// dead-letter queue failed: nothing was deleted, the message stays in the
// source and will be delivered again when its visibility timeout ends.
var ErrNotSent = errors.New("dlq: not sent to the dead-letter queue")

// DefaultMaxErrorBytes is how much error text Move keeps by default.
const DefaultMaxErrorBytes = 1024

// MoverOptions configures a Mover. Every field's zero value is usable.
type MoverOptions struct {
	// MaxErrorBytes caps the error text kept in the provenance; longer text
	// is cut on a character boundary and marked as truncated. Zero value:
	// DefaultMaxErrorBytes (1 KiB).
	MaxErrorBytes int
	// Logger receives a warning when a message is moved without its
	// provenance or with it shortened (no attribute or byte left). Zero
	// value: slog.Default().
	Logger *slog.Logger
	// Now is the clock used for Provenance.FailedAt when the caller leaves
	// it zero. Zero value: time.Now.
	Now func() time.Time
}

// Copier builds the messages that carry failed messages to a dead-letter
// queue with their provenance: what Mover sends, for callers that send the
// copies themselves (the worker sends them in batches of ten). It is safe
// for concurrent use.
type Copier struct {
	t    Target
	opts MoverOptions
}

// NewCopier returns a Copier for the dead-letter queue t (see Discover).
func NewCopier(t Target, optFns ...func(*MoverOptions)) (*Copier, error) {
	if t.QueueURL == "" || t.SourceURL == "" {
		return nil, fmt.Errorf("dlq: the Target needs the dead-letter queue's URL and its source queue's URL (got %q and %q); get it from dlq.Discover", t.QueueURL, t.SourceURL)
	}
	var o MoverOptions
	for _, fn := range optFns {
		fn(&o)
	}
	if o.MaxErrorBytes <= 0 {
		o.MaxErrorBytes = DefaultMaxErrorBytes
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Copier{t: t, opts: o}, nil
}

// Target returns the dead-letter queue the copies go to.
func (c *Copier) Target() Target { return c.t }

// Mover moves failed messages from a queue to its dead-letter queue. It is
// safe for concurrent use.
type Mover struct {
	*Copier
	client API
}

// NewMover returns a Mover for the dead-letter queue t (see Discover).
func NewMover(client API, t Target, optFns ...func(*MoverOptions)) (*Mover, error) {
	if client == nil {
		return nil, errors.New("dlq: NewMover needs an SQS client (an *sqs.Client or *sqstest.Fake)")
	}
	c, err := NewCopier(t, optFns...)
	if err != nil {
		return nil, err
	}
	return &Mover{Copier: c, client: client}, nil
}

// Move sends msg (the raw SDK message as received: body, message attributes,
// and system attributes such as MessageGroupId) to the dead-letter queue
// with provenance attributes, and deletes it from the source
// (msg.ReceiptHandle) only after the send succeeded.
//
// For everything to survive the move, receive the message with
// MessageAttributeNames ["All"] and MessageSystemAttributeNames ["All"] (at
// least MessageGroupId on a FIFO queue): Move can only copy what msg holds.
//
// The message's own attributes are always kept. Provenance (see the Attr…
// constants) goes in one attribute per field when SQS's limit of ten
// attributes leaves room, else in the single AttrProvenance JSON attribute;
// with ten user attributes, or a message so close to the size limit that
// not even the JSON fits, the message is moved without provenance and a
// warning is logged. Provenance from an earlier dead-lettering is replaced.
//
// On a FIFO queue the message keeps its MessageGroupId and gets a
// deduplication ID derived from the source queue and the message ID, so a
// retried Move of the same message is deduplicated by SQS for five minutes.
//
// Errors: a failed send wraps ErrNotSent (nothing deleted; the message
// returns to the source when its visibility timeout ends); a failed delete
// wraps ErrNotDeleted (the message stays in the source and is delivered
// again, and the dead-letter queue may hold a duplicate). A message is never
// lost.
func (m *Mover) Move(ctx context.Context, msg types.Message, p Provenance) error {
	id := aws.ToString(msg.MessageId)
	src := QueueName(m.t.SourceURL)
	if msg.ReceiptHandle == nil || *msg.ReceiptHandle == "" {
		return fmt.Errorf("moving message %s to the dead-letter queue: it has no receipt handle; pass the message exactly as ReceiveMessage returned it", id)
	}
	in, err := m.Input(msg, p)
	if err != nil {
		return err
	}
	out, err := m.client.SendMessage(ctx, in)
	if err != nil {
		return wrap(ErrNotSent, err, "moving message %s from queue %s to dead-letter queue %s: the send failed, so nothing was deleted and the message will be delivered again from %s",
			id, src, QueueName(m.t.QueueURL), src)
	}
	_, err = m.client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(m.t.SourceURL), ReceiptHandle: msg.ReceiptHandle})
	if err != nil {
		return wrap(ErrNotDeleted, err, "message %s was copied to dead-letter queue %s (as %s) but could not be deleted from queue %s; it stays there and will be delivered again, so the dead-letter queue may hold a duplicate",
			id, QueueName(m.t.QueueURL), aws.ToString(out.MessageId), src)
	}
	return nil
}

// Input builds the SendMessage request that copies msg (the raw SDK message
// as received) to the dead-letter queue with provenance p, as Move does:
// see Move for what is kept and how provenance fits SQS's limits.
func (m *Copier) Input(msg types.Message, p Provenance) (*sqs.SendMessageInput, error) {
	id := aws.ToString(msg.MessageId)
	body := aws.ToString(msg.Body)
	in := &sqs.SendMessageInput{QueueUrl: aws.String(m.t.QueueURL), MessageBody: aws.String(body)}
	if trace := msg.Attributes[string(types.MessageSystemAttributeNameAWSTraceHeader)]; trace != "" {
		in.MessageSystemAttributes = map[string]types.MessageSystemAttributeValue{
			string(types.MessageSystemAttributeNameForSendsAWSTraceHeader): {DataType: aws.String("String"), StringValue: aws.String(trace)},
		}
	}
	if m.t.FIFO {
		group := msg.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)]
		if group == "" {
			return nil, fmt.Errorf("moving message %s to FIFO dead-letter queue %s: the message has no MessageGroupId attribute; receive messages with MessageSystemAttributeNames [\"All\"] (or at least MessageGroupId)",
				id, QueueName(m.t.QueueURL))
		}
		in.MessageGroupId = aws.String(group)
		in.MessageDeduplicationId = aws.String(moveDeduplicationID(m.t.SourceARN, id))
	}

	p = m.fillProvenance(msg, p)
	limit := m.t.MaxMessageSize
	if limit <= 0 {
		limit = DefaultMaxMessageSize
	}
	user := StripProvenance(msg.MessageAttributes)
	budget := limit - len(body) - attributesSize(user)
	attrs, kept, mode := attachProvenance(msg.MessageAttributes, p, budget)
	switch {
	case mode == provenanceNone:
		m.opts.Logger.Warn("sqsworker/dlq: moving message without provenance attributes: no attribute or byte left",
			"message_id", id, "queue", QueueName(m.t.SourceURL), "user_attributes", len(user),
			"bytes_left", budget, "error", p.Error, "attempt", p.Attempt, "handler", p.Handler)
	case kept.Error != p.Error:
		m.opts.Logger.Warn("sqsworker/dlq: error text shortened to fit the message size limit",
			"message_id", id, "queue", QueueName(m.t.SourceURL), "error", p.Error)
	}
	if len(attrs) > 0 {
		in.MessageAttributes = attrs
	}
	return in, nil
}

// fillProvenance applies Provenance's documented defaults and SQS's limits.
func (m *Copier) fillProvenance(msg types.Message, p Provenance) Provenance {
	if p.SourceQueue == "" {
		p.SourceQueue = m.t.SourceURL
	}
	if p.Attempt == 0 {
		p.Attempt, _ = strconv.Atoi(msg.Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)])
	}
	if p.FirstReceived.IsZero() {
		if ms, err := strconv.ParseInt(msg.Attributes[string(types.MessageSystemAttributeNameApproximateFirstReceiveTimestamp)], 10, 64); err == nil && ms > 0 {
			p.FirstReceived = time.UnixMilli(ms)
		}
	}
	if p.FailedAt.IsZero() {
		p.FailedAt = m.opts.Now()
	}
	p.SourceQueue = sanitize(p.SourceQueue)
	p.Handler = truncate(sanitize(p.Handler), 256)
	p.Error = truncate(sanitize(p.Error), m.opts.MaxErrorBytes)
	return p
}

// moveDeduplicationID is the FIFO deduplication ID of a move: the same for
// every retry of moving one message from one queue, at most 128 characters.
func moveDeduplicationID(sourceARN, messageID string) string {
	sum := sha256.Sum256([]byte("sqsworker/dlq/move\x00" + sourceARN + "\x00" + messageID))
	return hex.EncodeToString(sum[:])
}
