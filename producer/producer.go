package producer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/internal/schedule"
	"github.com/sqsworker/sqsworker/internal/sqsbatch"
	"github.com/sqsworker/sqsworker/internal/sqslimit"
	"github.com/sqsworker/sqsworker/queueref"
	"github.com/sqsworker/sqsworker/retry"
)

// API is the SQS call a Producer makes, with the AWS SDK for Go v2's exact
// signature. *sqs.Client and *sqstest.Fake satisfy it.
type API interface {
	SendMessageBatch(ctx context.Context, params *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
}

var _ API = (*sqs.Client)(nil)

// Offloader stores message bodies too large for SQS elsewhere; package
// s3payload's Store keeps them in S3 in the format of AWS's extended
// clients.
type Offloader interface {
	// Offload is called for every message, after the BeforeSend hooks.
	// When the message is to be offloaded it stores m.Body, replaces it
	// with a pointer and adds at most one attribute; otherwise it leaves m
	// unchanged. It reports whether it offloaded m. An error fails the
	// message.
	Offload(ctx context.Context, m *Message) (bool, error)
}

// Options configures a Producer. Every field's zero value selects the
// documented default.
type Options struct {
	// MaxMessageSize is the largest message (body and attributes, as SQS
	// counts them) sent; larger ones go to the Offloader or fail with
	// ErrTooLarge without a call. Zero value: 1 MiB, SQS's limit (set the
	// queue's MaximumMessageSize when it is lower).
	MaxMessageSize int
	// MaxAttempts is how many SendMessageBatch calls may carry one message:
	// entries SQS failed on its side (SenderFault false) and calls that
	// failed as a whole with a retryable error (throttling, a server error,
	// the network) are sent again after a backoff. Entries SQS refused
	// (SenderFault true) are not retried. Zero value: 5.
	MaxAttempts int
	// Retry is the wait between those attempts: Delay(n) after the n-th
	// call that carried an entry; giving up (false) ends the entry's
	// attempts early. Zero value: the library's one retry rule for SQS calls
	// (exponential from 100 ms to 5 s, jittered).
	Retry retry.Policy
	// CallTimeout bounds each SendMessageBatch call. Zero value: 30 s.
	CallTimeout time.Duration
	// Concurrency is how many SendMessageBatch calls may be in flight at
	// once. On a FIFO queue batches always go out one at a time, in order.
	// Zero value: 4.
	Concurrency int
	// Linger is how long Send and Enqueue let a batch wait for more
	// messages before it goes out with fewer than MaxBatch. Zero value:
	// 20 ms.
	Linger time.Duration
	// MaxBatch is the most messages one call carries, 1 to 10. Zero value:
	// 10.
	MaxBatch int
	// MaxPending is how many messages Enqueue buffers before it blocks.
	// Zero value: 1,000.
	MaxPending int
	// BeforeSend hooks run on every message, in order, on the caller's
	// goroutine and with its context, before the message is checked and
	// sent; observability code uses them to attach trace context (see
	// Message.SetAttribute and Message.TraceHeader). A hook's error fails
	// the message. Zero value: none.
	BeforeSend []func(ctx context.Context, m *Message) error
	// Offloader stores bodies that exceed its threshold elsewhere (see
	// package s3payload). Zero value: none; a message over MaxMessageSize
	// fails with ErrTooLarge.
	Offloader Offloader
	// Now is the clock that due times are computed from. Zero value:
	// time.Now.
	Now func() time.Time
}

// Producer sends messages to one SQS queue in batches. It is safe for
// concurrent use. SendBatch sends a slice of any length at once; Send and
// Enqueue go through a background batcher that gathers messages from every
// caller into full batches, and Close flushes it.
type Producer struct {
	client   API
	sender   *sqsbatch.Queue
	queueURL string
	fifo     bool
	opts     Options

	calls   chan struct{} // SendMessageBatch calls in flight
	flights chan struct{} // batcher batches in flight

	startOnce sync.Once
	queue     chan *item
	mu        sync.RWMutex // guards closed and the registration in enqueuing
	closed    bool
	closing   chan struct{}  // closed by Close: Enqueue stops waiting for room
	enqueuing sync.WaitGroup // Enqueue calls that may send on queue
	loopDone  chan struct{}
	sending   sync.WaitGroup
	ctx       context.Context // the batcher's calls; cancelled by Close's deadline
	cancel    context.CancelCauseFunc

	st stats
}

type stats struct {
	requests, sent, failed, retried, offloaded, delayed atomic.Int64
	enqueuedSent, enqueuedFailed                        atomic.Int64
	firstEnqueuedErr                                    atomic.Pointer[error]
}

// Stats is a snapshot of a Producer's counters since New.
type Stats struct {
	Requests  int64 // SendMessageBatch calls made, retries included
	Sent      int64 // messages SQS accepted
	Failed    int64 // messages not sent (their Result has the error)
	Retried   int64 // entries sent again after a retryable failure
	Offloaded int64 // messages whose body went to the Offloader
	Delayed   int64 // messages sent with a due time (a delay over 15 minutes)
}

// RequestsPerMessage is Requests divided by Sent (0 before any was sent).
func (s Stats) RequestsPerMessage() float64 {
	if s.Sent == 0 {
		return 0
	}
	return float64(s.Requests) / float64(s.Sent)
}

// New returns a Producer for queue: its URL, or its name or ARN (see
// package queueref). A name or ARN is resolved to the URL once, here, with
// one GetQueueUrl call bounded by Options.CallTimeout (an ARN in its own
// region and account); client must then also have GetQueueUrl, as
// *sqs.Client and *sqstest.Fake do. A URL is used as it is, without a call.
// A queue whose name ends in ".fifo" is a FIFO queue: every message then
// needs a GroupID and takes no Delay.
func New(client API, queue string, optFns ...func(*Options)) (*Producer, error) {
	if client == nil {
		return nil, errors.New("producer: client is nil; pass an *sqs.Client (or an sqstest.Fake)")
	}
	var o Options
	for _, fn := range optFns {
		fn(&o)
	}
	if err := o.setDefaults(); err != nil {
		return nil, err
	}
	queueURL, err := resolve(client, queue, o.CallTimeout)
	if err != nil {
		return nil, err
	}
	p := &Producer{
		client: client, sender: sqsbatch.NewSender(client, queueURL), queueURL: queueURL, fifo: queueref.FIFO(queueURL), opts: o,
		calls: make(chan struct{}, o.Concurrency), flights: make(chan struct{}, o.Concurrency),
		loopDone: make(chan struct{}), closing: make(chan struct{}),
	}
	p.ctx, p.cancel = context.WithCancelCause(context.Background())
	return p, nil
}

// resolve returns the URL of queue, a name, URL or ARN, asking SQS for a
// name or an ARN within timeout.
func resolve(client API, queue string, timeout time.Duration) (string, error) {
	r, ok := client.(urlGetter)
	if !ok {
		r = noLookup{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	url, err := queueref.Resolve(ctx, r, queue)
	if err != nil {
		return "", fmt.Errorf("producer: %w", err)
	}
	return url, nil
}

// urlGetter is a client that can find a queue's URL.
type urlGetter interface {
	GetQueueUrl(ctx context.Context, params *sqs.GetQueueUrlInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
}

// noLookup stands in for a client without GetQueueUrl: Resolve calls it
// only for a name or an ARN.
type noLookup struct{}

func (noLookup) GetQueueUrl(context.Context, *sqs.GetQueueUrlInput, ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error) {
	return nil, errors.New("this client has no GetQueueUrl to find the queue's URL with; pass the queue's URL, or an *sqs.Client")
}

func (o *Options) setDefaults() error {
	switch {
	case o.MaxMessageSize < 0 || o.MaxMessageSize > sqslimit.MaxMessageSize:
		return fmt.Errorf("producer: Options.MaxMessageSize is %d; SQS takes messages of up to %d bytes (0 for that)", o.MaxMessageSize, sqslimit.MaxMessageSize)
	case o.MaxAttempts < 0, o.CallTimeout < 0, o.Concurrency < 0, o.Linger < 0, o.MaxPending < 0:
		return errors.New("producer: Options.MaxAttempts, CallTimeout, Concurrency, Linger and MaxPending must not be negative (0 selects the default)")
	case o.MaxBatch < 0 || o.MaxBatch > sqslimit.MaxBatchEntries:
		return fmt.Errorf("producer: Options.MaxBatch is %d; SQS batches carry 1 to 10 entries (0 for 10)", o.MaxBatch)
	}
	if o.MaxMessageSize == 0 {
		o.MaxMessageSize = sqslimit.MaxMessageSize
	}
	if o.MaxAttempts == 0 {
		o.MaxAttempts = 5
	}
	if o.Retry == nil {
		o.Retry = retry.PolicyFunc(func(n int) (time.Duration, bool) { return sqsbatch.Backoff(n), true })
	}
	if o.CallTimeout == 0 {
		o.CallTimeout = 30 * time.Second
	}
	if o.Concurrency == 0 {
		o.Concurrency = 4
	}
	if o.Linger == 0 {
		o.Linger = 20 * time.Millisecond
	}
	if o.MaxBatch == 0 {
		o.MaxBatch = sqslimit.MaxBatchEntries
	}
	if o.MaxPending == 0 {
		o.MaxPending = 1000
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return nil
}

// QueueURL returns the URL of the queue the Producer sends to.
func (p *Producer) QueueURL() string { return p.queueURL }

// Stats returns a snapshot of the Producer's counters.
func (p *Producer) Stats() Stats {
	return Stats{
		Requests: p.st.requests.Load(), Sent: p.st.sent.Load(), Failed: p.st.failed.Load(),
		Retried: p.st.retried.Load(), Offloaded: p.st.offloaded.Load(), Delayed: p.st.delayed.Load(),
	}
}

// item is one message on its way: its request entry and its result.
type item struct {
	entry   types.SendMessageBatchRequestEntry // Id is set per call
	size    int
	delayed bool // carries a due time
	res     Result
	done    chan struct{} // closed once res is final (Enqueue only)
}

// prepare turns a Message into an item: hooks, due time, offloading and
// SQS's limits, all before any call. A message that cannot be sent gets
// its error in res.Err.
func (p *Producer) prepare(ctx context.Context, m Message) *item {
	it := &item{}
	fail := func(err error) *item {
		it.res.Err = err
		return it
	}
	// The hooks and the offloader may change the attributes: work on a copy.
	if m.Attributes != nil {
		attrs := make(map[string]types.MessageAttributeValue, len(m.Attributes)+1)
		for k, v := range m.Attributes {
			attrs[k] = v
		}
		m.Attributes = attrs
	}
	switch {
	case m.Body == "":
		return fail(fmt.Errorf("%w: the body is empty; SQS needs at least one character", ErrInvalid))
	case m.Delay < 0:
		return fail(fmt.Errorf("%w: Delay is %v; use 0 or more", ErrInvalid, m.Delay))
	case p.fifo && m.Delay > 0:
		return fail(fmt.Errorf("%w: Delay is %v, but FIFO queue %s takes no per-message delay; set the queue's DelaySeconds instead", ErrInvalid, m.Delay, queueName(p.queueURL)))
	case p.fifo && m.GroupID == "":
		return fail(fmt.Errorf("%w: FIFO queue %s needs a GroupID on every message", ErrInvalid, queueName(p.queueURL)))
	}
	now := p.opts.Now()
	due := now.Add(m.Delay)
	it.res.Due = due
	delay, attr := schedule.Send(due, now)
	if attr {
		if _, taken := m.Attributes[schedule.Attribute]; !taken && len(m.Attributes) >= sqslimit.MaxMessageAttributes {
			return fail(fmt.Errorf("%w: a delay over 15 minutes records the due time in attribute %s, but the message already has %d attributes (SQS allows %d)",
				ErrInvalid, schedule.Attribute, len(m.Attributes), sqslimit.MaxMessageAttributes))
		}
		if m.Attributes == nil {
			m.Attributes = map[string]types.MessageAttributeValue{}
		}
		m.Attributes[schedule.Attribute] = schedule.Value(due)
	}
	if p.opts.Offloader != nil {
		m.reserved = 1
	}
	for _, hook := range p.opts.BeforeSend {
		if err := hook(ctx, &m); err != nil {
			return fail(fmt.Errorf("producer: a BeforeSend hook refused the message: %w", err))
		}
	}
	m.reserved = 0
	if p.opts.Offloader != nil {
		off, err := p.opts.Offloader.Offload(ctx, &m)
		if err != nil {
			return fail(fmt.Errorf("producer: offloading the body of %d bytes: %w", len(m.Body), err))
		}
		it.res.Offloaded = off
	}
	if n := len(m.Attributes); n > sqslimit.MaxMessageAttributes {
		return fail(fmt.Errorf("%w: %d message attributes; SQS allows %d", ErrInvalid, n, sqslimit.MaxMessageAttributes))
	}
	it.size = m.dropAdded(p.opts.MaxMessageSize) // trace context goes before the message does
	if it.size > p.opts.MaxMessageSize {
		hint := "configure Options.Offloader (package s3payload) to store large bodies in S3"
		switch {
		case it.res.Offloaded:
			hint = "the attributes alone are too large"
		case p.opts.Offloader != nil:
			hint = fmt.Sprintf("Options.Offloader did not take it, so its threshold (s3payload's Options.Threshold) must be above this producer's Options.MaxMessageSize (%d): set the threshold to at most that, or raise MaxMessageSize to the queue's MaximumMessageSize", p.opts.MaxMessageSize)
		}
		return fail(fmt.Errorf("%w: %w: %d bytes (body and attributes), over the limit of %d; %s", ErrInvalid, ErrTooLarge, it.size, p.opts.MaxMessageSize, hint))
	}
	it.entry = types.SendMessageBatchRequestEntry{
		MessageBody:       aws.String(m.Body),
		MessageAttributes: m.Attributes,
		DelaySeconds:      int32(delay / time.Second),
	}
	if m.GroupID != "" {
		it.entry.MessageGroupId = aws.String(m.GroupID)
	}
	if m.DeduplicationID != "" {
		it.entry.MessageDeduplicationId = aws.String(m.DeduplicationID)
	}
	if m.TraceHeader != "" {
		it.entry.MessageSystemAttributes = map[string]types.MessageSystemAttributeValue{
			string(types.MessageSystemAttributeNameForSendsAWSTraceHeader): {DataType: aws.String("String"), StringValue: aws.String(m.TraceHeader)},
		}
	}
	it.delayed = attr
	if it.res.Offloaded {
		p.st.offloaded.Add(1)
	}
	return it
}

// queueName is the last path element of a queue URL.
func queueName(url string) string {
	return url[strings.LastIndex(url, "/")+1:]
}
