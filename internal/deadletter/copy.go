package deadletter

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

	"github.com/sqsworker/sqsworker/internal/awscall"
	"github.com/sqsworker/sqsworker/internal/sqslimit"
	"github.com/sqsworker/sqsworker/queueref"
)

// ErrNotDeleted is wrapped by the error Mover.Move returns when the message
// reached the dead-letter queue but could not be deleted from the source:
// the message is in both queues and will be delivered again.
var ErrNotDeleted = errors.New("dlq: copied to the dead-letter queue but not deleted from the source")

// ErrNotSent is wrapped by the error Mover.Move returns when the send to the
// dead-letter queue failed: nothing was deleted, the message stays in the
// source and will be delivered again when its visibility timeout ends.
var ErrNotSent = errors.New("dlq: not sent to the dead-letter queue")

// ErrTooLarge is wrapped by the error Input and Move return when a message
// with its own attributes is larger than the dead-letter queue's
// MaximumMessageSize (a dead-letter queue set smaller than its source) and
// no Offloader stored its body: no copy is made and nothing is deleted.
// The error (and an ERROR log) carries the provenance's reason, since SQS's
// own redrive, which will move the message after maxReceiveCount receives,
// does not.
var ErrTooLarge = errors.New("dlq: the message is too large for the dead-letter queue")

// defaultMaxErrorBytes is how much error text a Copier keeps by default.
const defaultMaxErrorBytes = 1024

// defaultOffloadTimeout is Options.OffloadTimeout's zero value.
const defaultOffloadTimeout = 30 * time.Second

// Offloader stores the body of a dead-letter copy that does not fit the
// dead-letter queue elsewhere, so the copy carries a pointer to it and its
// full provenance. It has dlq.Offloader's method, so the runtimes pass
// their Options.DeadLetterOffloader (an s3payload.Store) to it.
type Offloader interface {
	// OffloadBody stores body and returns the body the copy carries
	// instead and the message attributes that mark it as offloaded (they
	// are added to the message's own).
	OffloadBody(ctx context.Context, body string) (pointer string, marker map[string]types.MessageAttributeValue, err error)
}

// Options configures a Copier (and a Mover). Every field's zero value is
// usable.
type Options struct {
	// MaxErrorBytes caps the error text kept in the provenance; longer text
	// is cut on a character boundary and marked as truncated. Zero value:
	// defaultMaxErrorBytes (1 KiB).
	MaxErrorBytes int
	// Logger receives a warning when a message is copied without its
	// provenance or with it shortened (no attribute or byte left). Zero
	// value: slog.Default().
	Logger *slog.Logger
	// Now is the clock used for Provenance.FailedAt when the caller leaves
	// it zero. Zero value: time.Now.
	Now func() time.Time
	// Offloader, when set, stores the body of a message whose copy, with
	// its full provenance, would be larger than the dead-letter queue's
	// MaximumMessageSize, and the copy carries a pointer instead. Zero
	// value: none; a message too large for the dead-letter queue is not
	// copied (ErrTooLarge), and one that fits only without its full
	// provenance is copied with it shortened (see Mover.Move).
	Offloader Offloader
	// OffloadTimeout bounds each Offloader call. Zero value:
	// defaultOffloadTimeout (30 s).
	OffloadTimeout time.Duration
}

// Copier builds the messages that carry failed messages to a dead-letter
// queue with their provenance: the settlement engine sends them (the
// worker in batches of ten), Mover sends them one by one. It is safe for
// concurrent use.
type Copier struct {
	t    Target
	opts Options
}

// NewCopier returns a Copier for the dead-letter queue t (see Discover).
func NewCopier(t Target, optFns ...func(*Options)) (*Copier, error) {
	if t.DLQURL == "" || t.SourceURL == "" {
		return nil, fmt.Errorf("dlq: the Target needs the dead-letter queue's URL and its source queue's URL (got %q and %q); get it from Discover", t.DLQURL, t.SourceURL)
	}
	var o Options
	for _, fn := range optFns {
		fn(&o)
	}
	if o.MaxErrorBytes <= 0 {
		o.MaxErrorBytes = defaultMaxErrorBytes
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.OffloadTimeout <= 0 {
		o.OffloadTimeout = defaultOffloadTimeout
	}
	if t.MaxMessageSize > 0 && t.SourceMaxMessageSize > t.MaxMessageSize {
		// The runtimes make their Copier when they discover the queue's
		// dead-letter queue: this is their warning (worker.New, sqslambda's
		// first dead-letter move).
		if o.Offloader == nil {
			o.Logger.Warn(fmt.Sprintf("sqsworker/dlq: dead-letter queue %s takes messages of at most %s but queue %s takes up to %s; a failed message larger than that cannot be copied there with its reason: it is retried until SQS's own redrive moves it, without provenance (its reason is logged at ERROR). Raise the dead-letter queue's MaximumMessageSize to %d, or configure an offloader for dead-letter copies (e.g. an s3payload.Store)",
				queueref.Name(t.DLQURL), SizeString(t.MaxMessageSize), queueref.Name(t.SourceURL), SizeString(t.SourceMaxMessageSize), t.SourceMaxMessageSize),
				"queue", t.SourceURL, "dlq", t.DLQURL, "code", CodeDLQMaxMessageSizeSmaller)
		} else {
			o.Logger.Info("sqsworker/dlq: dead-letter queue is smaller than its source; dead-letter copies that do not fit go through the offloader",
				"queue", t.SourceURL, "dlq", t.DLQURL, "dlqMaxMessageSize", t.MaxMessageSize, "sourceMaxMessageSize", t.SourceMaxMessageSize)
		}
	}
	return &Copier{t: t, opts: o}, nil
}

// Target returns the dead-letter queue the copies go to.
func (c *Copier) Target() Target { return c.t }

// MoveAPI is what a Mover calls: SendMessage to the dead-letter queue,
// DeleteMessage on the source.
type MoveAPI interface {
	SendMessage(ctx context.Context, params *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	DeleteMessage(ctx context.Context, params *sqs.DeleteMessageInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
}

var _ MoveAPI = (*sqs.Client)(nil)

// Mover moves failed messages from a queue to its dead-letter queue, one at
// a time: what the runtimes do in batches, for tests and tools that
// dead-letter a message themselves. It is safe for concurrent use.
type Mover struct {
	*Copier
	client MoveAPI
}

// NewMover returns a Mover for the dead-letter queue t (see Discover).
func NewMover(client MoveAPI, t Target, optFns ...func(*Options)) (*Mover, error) {
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
// The message's own attributes are always kept. Provenance (see the
// AttrPrefix constants) goes in one attribute per field when SQS's limit of ten
// attributes leaves room, else in the single AttrProvenance JSON attribute;
// with ten user attributes, or a message so close to the size limit that
// not even the JSON fits, the message is moved without provenance and a
// warning is logged. Provenance from an earlier dead-lettering is replaced.
//
// On a FIFO queue the message keeps its MessageGroupId and gets a
// deduplication ID derived from the source queue and the message ID, so a
// retried Move of the same message is deduplicated by SQS for five minutes.
//
// A message larger than the dead-letter queue's MaximumMessageSize (a
// dead-letter queue set smaller than its source) is copied through
// Options.Offloader when one is set: the copy carries a pointer to
// the stored body and its full provenance. Without one it is not moved:
// the error wraps ErrTooLarge and carries the reason, which is also logged
// at ERROR with the message ID.
//
// Errors: a failed send wraps ErrNotSent (nothing deleted; the message
// returns to the source when its visibility timeout ends); a failed delete
// wraps ErrNotDeleted (the message stays in the source and is delivered
// again, and the dead-letter queue may hold a duplicate). A message is never
// lost.
func (m *Mover) Move(ctx context.Context, msg types.Message, p Provenance) error {
	id := aws.ToString(msg.MessageId)
	src := queueref.Name(m.t.SourceURL)
	if msg.ReceiptHandle == nil || *msg.ReceiptHandle == "" {
		return fmt.Errorf("moving message %s to the dead-letter queue: it has no receipt handle; pass the message exactly as ReceiveMessage returned it", id)
	}
	in, err := m.InputContext(ctx, msg, p)
	if err != nil {
		return err
	}
	out, err := awscall.SQS(ctx, awscall.Rule{}, m.client.SendMessage, in)
	if err != nil {
		return Wrap(ErrNotSent, err, "moving message %s from queue %s to dead-letter queue %s: the send failed, so nothing was deleted and the message will be delivered again from %s",
			id, src, queueref.Name(m.t.DLQURL), src)
	}
	_, err = awscall.SQS(ctx, awscall.Rule{}, m.client.DeleteMessage, &sqs.DeleteMessageInput{QueueUrl: aws.String(m.t.SourceURL), ReceiptHandle: msg.ReceiptHandle})
	if err != nil {
		return Wrap(ErrNotDeleted, err, "message %s was copied to dead-letter queue %s (as %s) but could not be deleted from queue %s; it stays there and will be delivered again, so the dead-letter queue may hold a duplicate",
			id, queueref.Name(m.t.DLQURL), aws.ToString(out.MessageId), src)
	}
	return nil
}

// Input builds the SendMessage request that copies msg (the raw SDK message
// as received) to the dead-letter queue with provenance p, as Move does:
// see Move for what is kept, how provenance fits SQS's limits and what
// happens to a message too large for the dead-letter queue. It is
// InputContext with a background context (an Offloader call still has
// Options.OffloadTimeout).
func (m *Copier) Input(msg types.Message, p Provenance) (*sqs.SendMessageInput, error) {
	return m.InputContext(context.Background(), msg, p)
}

// InputContext is Input with a context for the Offloader's call.
func (m *Copier) InputContext(ctx context.Context, msg types.Message, p Provenance) (*sqs.SendMessageInput, error) {
	id := aws.ToString(msg.MessageId)
	body := aws.ToString(msg.Body)
	in := &sqs.SendMessageInput{QueueUrl: aws.String(m.t.DLQURL), MessageBody: aws.String(body)}
	if trace := msg.Attributes[string(types.MessageSystemAttributeNameAWSTraceHeader)]; trace != "" {
		in.MessageSystemAttributes = map[string]types.MessageSystemAttributeValue{
			string(types.MessageSystemAttributeNameForSendsAWSTraceHeader): {DataType: aws.String("String"), StringValue: aws.String(trace)},
		}
	}
	if m.t.FIFO {
		group := msg.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)]
		if group == "" {
			return nil, fmt.Errorf("moving message %s to FIFO dead-letter queue %s: the message has no MessageGroupId attribute; receive messages with MessageSystemAttributeNames [\"All\"] (or at least MessageGroupId)",
				id, queueref.Name(m.t.DLQURL))
		}
		in.MessageGroupId = aws.String(group)
		in.MessageDeduplicationId = aws.String(moveDeduplicationID(m.t.SourceARN, id))
	}

	p = m.fillProvenance(msg, p)
	limit := m.t.MaxMessageSize
	if limit <= 0 {
		limit = sqslimit.DefaultMaxMessageSize
	}
	user := StripProvenance(msg.MessageAttributes)
	size := len(body) + attributesSize(user)
	var offloadErr error
	if m.opts.Offloader != nil && size+attributesSize(separateAttributes(p)) > limit {
		// Offloaded, the copy keeps its full provenance.
		pointer, withMarker, err := m.offload(ctx, body, user)
		if err == nil {
			body, user = pointer, withMarker
			size = len(body) + attributesSize(user)
			in.MessageBody = aws.String(body)
			m.opts.Logger.Info("sqsworker/dlq: the dead-letter copy's body was offloaded; the copy carries a pointer to it",
				"message_id", id, "queue", queueref.Name(m.t.SourceURL), "dlq", queueref.Name(m.t.DLQURL))
		} else {
			offloadErr = err
		}
	}
	if size > limit {
		return nil, m.tooLarge(id, size, limit, p, offloadErr)
	}
	budget := limit - size
	attrs, kept, mode := attachProvenance(user, p, sanitize(id), budget)
	switch {
	case mode == provenanceNone:
		m.opts.Logger.Warn("sqsworker/dlq: moving message without provenance attributes: no attribute or byte left",
			"message_id", id, "queue", queueref.Name(m.t.SourceURL), "user_attributes", len(user),
			"bytes_left", budget, "error", p.Error, "attempt", p.Attempt, "handler", p.Handler)
	case kept.Error != p.Error:
		m.opts.Logger.Warn("sqsworker/dlq: error text shortened to fit the message size limit",
			"message_id", id, "queue", queueref.Name(m.t.SourceURL), "error", p.Error)
	}
	if len(attrs) > 0 {
		in.MessageAttributes = attrs
	}
	return in, nil
}

// offload stores body through the Offloader and returns the pointer and
// the user's attributes with the offloader's marker added.
func (m *Copier) offload(ctx context.Context, body string, user map[string]types.MessageAttributeValue) (string, map[string]types.MessageAttributeValue, error) {
	if len(user) >= sqslimit.MaxMessageAttributes {
		return "", nil, fmt.Errorf("the message has %d attributes, SQS's limit, and leaves none for the offloaded body's marker", len(user))
	}
	ctx, cancel := context.WithTimeout(ctx, m.opts.OffloadTimeout)
	defer cancel()
	pointer, marker, err := m.opts.Offloader.OffloadBody(ctx, body)
	if err != nil {
		return "", nil, fmt.Errorf("the offloader failed: %w", err)
	}
	out := make(map[string]types.MessageAttributeValue, len(user)+len(marker))
	for k, v := range user {
		out[k] = v
	}
	for k, v := range marker {
		out[k] = v
	}
	if len(out) > sqslimit.MaxMessageAttributes {
		return "", nil, fmt.Errorf("the message's %d attributes and the offloader's %d marker attributes are more than SQS's limit of %d (the stored body is left to the bucket's lifecycle rule)", len(user), len(marker), sqslimit.MaxMessageAttributes)
	}
	return pointer, out, nil
}

// tooLarge logs, at ERROR, a message that cannot be copied to the
// dead-letter queue because of its size, with the reason it failed (SQS's
// own redrive will move it without one), and returns the error saying so.
func (m *Copier) tooLarge(id string, size, limit int, p Provenance, offloadErr error) error {
	src, dlqName := queueref.Name(m.t.SourceURL), queueref.Name(m.t.DLQURL)
	how := "no offloader is configured (the runtimes' Options.DeadLetterOffloader)"
	if offloadErr != nil {
		how = "offloading its body failed: " + offloadErr.Error()
	}
	redrive := "SQS's own redrive moves it once its receives exceed maxReceiveCount"
	if m.t.MaxReceiveCount > 0 {
		redrive = fmt.Sprintf("SQS's own redrive moves it after %d receives (maxReceiveCount)", m.t.MaxReceiveCount)
	}
	fix := fmt.Sprintf("raise dead-letter queue %s's MaximumMessageSize to at least %d (SQS allows up to %d), or configure an offloader for dead-letter copies (e.g. an s3payload.Store)",
		dlqName, max(size, m.t.SourceMaxMessageSize), sqslimit.MaxMessageSize)
	m.opts.Logger.Error("sqsworker/dlq: a failed message is too large for its dead-letter queue and is not copied there; it stays in its queue, and "+redrive+" without provenance: this log keeps its reason (SQS's redrive keeps the message ID)",
		"message_id", id, "queue", src, "dlq", dlqName, "bytes", size, "dlqMaxMessageSize", limit,
		"error", p.Error, "attempt", p.Attempt, "handler", p.Handler, "offload", how, "fix", fix)
	return fmt.Errorf("%w: message %s is %d bytes with its attributes, more than dead-letter queue %s's MaximumMessageSize (%d), and %s; it stays in queue %s and comes back, and %s, without provenance (the reason %q is logged at ERROR with the message ID); %s",
		ErrTooLarge, id, size, dlqName, limit, how, src, redrive, p.Error, fix)
}

// SizeString formats a message size: "256 KiB", "1 MiB", "1000 bytes".
func SizeString(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.Itoa(n>>20) + " MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.Itoa(n>>10) + " KiB"
	}
	return strconv.Itoa(n) + " bytes"
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
