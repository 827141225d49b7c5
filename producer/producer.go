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
	"github.com/aws/aws-sdk-go-v2/service/sns"
	snstypes "github.com/aws/aws-sdk-go-v2/service/sns/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/internal/awscall"
	"github.com/sqsworker/sqsworker/internal/schedule"
	"github.com/sqsworker/sqsworker/internal/snstopic"
	"github.com/sqsworker/sqsworker/internal/sqsbatch"
	"github.com/sqsworker/sqsworker/internal/sqslimit"
	"github.com/sqsworker/sqsworker/queueref"
	"github.com/sqsworker/sqsworker/retry"
)

// API is the SQS call a Producer for a queue makes, with the AWS SDK for Go
// v2's exact signature. *sqs.Client and *sqstest.Fake satisfy it.
type API interface {
	SendMessageBatch(ctx context.Context, params *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
}

// TopicAPI is the SNS call a Producer for a topic (NewTopic) makes, with
// the AWS SDK for Go v2's exact signature. *sns.Client and snstest's Fake
// satisfy it.
type TopicAPI interface {
	PublishBatch(ctx context.Context, params *sns.PublishBatchInput, optFns ...func(*sns.Options)) (*sns.PublishBatchOutput, error)
}

var (
	_ API      = (*sqs.Client)(nil)
	_ TopicAPI = (*sns.Client)(nil)
)

// Offloader stores message bodies too large for SQS or SNS elsewhere;
// package s3payload's Store keeps them in S3 in the format of AWS's
// extended clients.
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
	// and SNS count them) sent; larger ones go to the Offloader or fail
	// with ErrTooLarge without a call. Zero value: the service's limit,
	// 1 MiB for a queue (set the queue's MaximumMessageSize when it is
	// lower) and 256 KiB for a topic.
	MaxMessageSize int
	// MaxAttempts is how many batch calls (SendMessageBatch, or
	// PublishBatch for a topic) may carry one message: entries the service
	// failed on its side (SenderFault false: throttling, an internal
	// error) and calls that failed as a whole with a retryable error
	// (throttling, a server error, the network, the call's timeout) are
	// sent again after a backoff. Entries it refused (SenderFault true) are
	// not retried. Zero value: 5.
	MaxAttempts int
	// Retry is the wait between those attempts: Delay(n) after the n-th
	// call that carried an entry; giving up (false) ends the entry's
	// attempts early. Zero value: the library's one retry rule for its AWS
	// calls (exponential from 100 ms to 5 s, jittered).
	Retry retry.Policy
	// CallTimeout bounds each batch call. Zero value: 30 s.
	CallTimeout time.Duration
	// Concurrency is how many batch calls may be in flight at once. On a
	// FIFO queue or topic batches always go out one at a time, in order.
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
	// Schedule, when set, takes the messages due later than ScheduleAfter
	// from now instead of the queue: it is meant to create a one-time
	// schedule that sends m at due (schedules.Jobs.At does, so the job
	// holds nothing in flight while it waits and can be cancelled or moved
	// by its ID). Such a message is checked, passed through the BeforeSend
	// hooks and the Offloader like any other (so the attributes they add
	// travel), and then handed to Schedule with its Delay zeroed instead of
	// being sent; no SQS call is made for it. The Result's MessageID is
	// the ID Schedule returns, its Due the due time, and Schedule's error
	// is its Err. Send and Enqueue call it on the caller's goroutine;
	// SendBatch calls it for up to Concurrency messages at once (one at a
	// time, in order, on a FIFO queue). On a FIFO queue a Delay over
	// ScheduleAfter is taken (the job joins its group when it fires), one
	// of ScheduleAfter or less is still refused; a topic refuses Delay
	// whatever Schedule is. Wire it as
	//
	//	o.Schedule = func(ctx context.Context, due time.Time, m producer.Message) (string, error) {
	//		return jobs.At(ctx, "", due, m)
	//	}
	//
	// Zero value: nil, every delay waits in the queue (see Delays in the
	// package documentation).
	Schedule func(ctx context.Context, due time.Time, m Message) (string, error)
	// ScheduleAfter is the horizon past which Schedule takes a message: a
	// message whose Delay is longer goes to Schedule, a shorter one (or
	// equal) to the queue. Zero value: 15 minutes, SQS's own delay limit,
	// so that every delay SQS can make itself stays in the queue.
	ScheduleAfter time.Duration
}

// Producer sends messages to one SQS queue (New) or publishes them to one
// SNS topic (NewTopic), in batches. It is safe for concurrent use.
// SendBatch sends a slice of any length at once; Send and Enqueue go
// through a background batcher that gathers messages from every caller
// into full batches, and Close flushes it.
type Producer struct {
	sender     *sqsbatch.Queue
	target     string // the queue's URL, or the topic's ARN
	name       string // the queue's or the topic's name, for errors
	topic      bool   // an SNS topic (NewTopic)
	fifo       bool
	maxPayload int // a call's payload limit: SQS's 1 MiB, SNS's 256 KiB
	opts       Options

	calls   chan struct{} // batch calls in flight
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

// Stats is a snapshot of a Producer's counters since New (or NewTopic).
// Requests divided by Sent is the requests per message.
type Stats struct {
	Requests  int64 // SendMessageBatch (or PublishBatch) calls made, retries included
	Sent      int64 // messages SQS (or SNS), or Options.Schedule, accepted
	Failed    int64 // messages not sent (their Result has the error)
	Retried   int64 // entries sent again after a retryable failure
	Offloaded int64 // messages whose body went to the Offloader
	Delayed   int64 // messages sent with a due time (a delay over 15 minutes, or through Options.Schedule)
}

// New returns a Producer for queue: its URL, or its name or ARN (see
// package queueref). A name or ARN is resolved to the URL once, here, with
// one GetQueueUrl call bounded by Options.CallTimeout (an ARN in its own
// region and account); client must then also have GetQueueUrl, as
// *sqs.Client and *sqstest.Fake do. A URL is used as it is, without a call.
// A queue whose name ends in ".fifo" is a FIFO queue: every message then
// needs a GroupID and takes no Delay. An SNS topic's ARN is refused: use
// NewTopic.
func New(client API, queue string, optFns ...func(*Options)) (*Producer, error) {
	if client == nil {
		return nil, errors.New("producer: client is nil; pass an *sqs.Client (or an sqstest.Fake)")
	}
	if _, err := snstopic.Parse(queue); err == nil {
		return nil, fmt.Errorf("producer: %s is an SNS topic, not a queue; publish to it with producer.NewTopic and an *sns.Client", queue)
	}
	o, err := options(optFns, sqslimit.MaxMessageSize, "SQS takes messages")
	if err != nil {
		return nil, err
	}
	queueURL, err := resolve(client, queue, o.CallTimeout)
	if err != nil {
		return nil, err
	}
	return newProducer(sqsbatch.NewSender(client, queueURL), queueURL, queueName(queueURL), false, queueref.FIFO(queueURL), sqslimit.MaxMessageSize, o), nil
}

// NewTopic returns a Producer that publishes to the SNS topic with ARN
// topicARN (fanout.Setup returns it as SetupResult.TopicARN), with
// PublishBatch calls of up to 10 messages and 256 KiB, SNS's limits. A
// topic whose name ends in ".fifo" is a FIFO topic: every message then
// needs a GroupID. See the package documentation (Topics) for what a
// Message means on a topic.
func NewTopic(client TopicAPI, topicARN string, optFns ...func(*Options)) (*Producer, error) {
	if client == nil {
		return nil, errors.New("producer: client is nil; pass an *sns.Client (or an snstest.Fake)")
	}
	a, err := snstopic.Parse(topicARN)
	if err != nil {
		return nil, fmt.Errorf("producer.NewTopic: %w; pass the topic's ARN (fanout.Setup returns it as SetupResult.TopicARN)", err)
	}
	o, err := options(optFns, sqslimit.MaxPublishSize, "SNS publishes messages")
	if err != nil {
		return nil, err
	}
	return newProducer(sqsbatch.NewPublisher(client, topicARN), topicARN, a.Name, true, a.FIFO(), sqslimit.MaxPublishSize, o), nil
}

func newProducer(sender *sqsbatch.Queue, target, name string, topic, fifo bool, maxPayload int, o Options) *Producer {
	p := &Producer{
		sender: sender, target: target, name: name, topic: topic, fifo: fifo, maxPayload: maxPayload, opts: o,
		calls: make(chan struct{}, o.Concurrency), flights: make(chan struct{}, o.Concurrency),
		loopDone: make(chan struct{}), closing: make(chan struct{}),
	}
	p.ctx, p.cancel = context.WithCancelCause(context.Background())
	return p
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

// options applies optFns and the defaults; limit is the service's largest
// message, which takes says in words.
func options(optFns []func(*Options), limit int, takes string) (Options, error) {
	var o Options
	for _, fn := range optFns {
		fn(&o)
	}
	switch {
	case o.MaxMessageSize < 0 || o.MaxMessageSize > limit:
		return o, fmt.Errorf("producer: Options.MaxMessageSize is %d; %s of up to %d bytes (0 for that)", o.MaxMessageSize, takes, limit)
	case o.MaxAttempts < 0, o.CallTimeout < 0, o.Concurrency < 0, o.Linger < 0, o.MaxPending < 0:
		return o, errors.New("producer: Options.MaxAttempts, CallTimeout, Concurrency, Linger and MaxPending must not be negative (0 selects the default)")
	case o.ScheduleAfter < 0:
		return o, errors.New("producer: Options.ScheduleAfter must not be negative (0 selects 15 minutes)")
	case o.MaxBatch < 0 || o.MaxBatch > sqslimit.MaxBatchEntries:
		return o, fmt.Errorf("producer: Options.MaxBatch is %d; batch calls carry 1 to 10 entries (0 for 10)", o.MaxBatch)
	}
	if o.MaxMessageSize == 0 {
		o.MaxMessageSize = limit
	}
	if o.MaxAttempts == 0 {
		o.MaxAttempts = sqsbatch.DefaultAttempts
	}
	if o.Retry == nil {
		o.Retry = retry.PolicyFunc(func(n int) (time.Duration, bool) { return awscall.Backoff(n), true })
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
	if o.ScheduleAfter == 0 {
		o.ScheduleAfter = sqslimit.MaxDelay
	}
	return o, nil
}

// Stats returns a snapshot of the Producer's counters.
func (p *Producer) Stats() Stats {
	return Stats{
		Requests: p.st.requests.Load(), Sent: p.st.sent.Load(), Failed: p.st.failed.Load(),
		Retried: p.st.retried.Load(), Offloaded: p.st.offloaded.Load(), Delayed: p.st.delayed.Load(),
	}
}

// item is one message on its way: its request entry and its result.
type item struct {
	entry   sqsbatch.Entry // Send (a queue) or Publish (a topic); the Id is set per call
	size    int
	delayed bool     // carries a due time
	sched   *Message // for Options.Schedule rather than the queue
	res     Result
	done    chan struct{} // closed once res is final (Enqueue only)
}

// prepare turns a Message into an item: hooks, due time, offloading and
// the service's limits, all before any call. A message that cannot be sent
// gets its error in res.Err.
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
	routed := p.opts.Schedule != nil && !p.topic && m.Delay > p.opts.ScheduleAfter
	if err := p.check(&m, routed); err != nil {
		return fail(err)
	}
	now := p.opts.Now()
	due := now.Add(m.Delay)
	it.res.Due = due
	delay, attr := schedule.Send(due, now)
	if routed {
		delay, attr = 0, false
	}
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
		return fail(fmt.Errorf("%w: %d message attributes; %s allows %d", ErrInvalid, n, p.service(), sqslimit.MaxMessageAttributes))
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
		limit := "the limit"
		if p.topic && p.opts.MaxMessageSize == sqslimit.MaxPublishSize {
			limit = "SNS's limit"
		}
		return fail(fmt.Errorf("%w: %w: %d bytes (body and attributes), over %s of %d; %s", ErrInvalid, ErrTooLarge, it.size, limit, p.opts.MaxMessageSize, hint))
	}
	if it.res.Offloaded {
		p.st.offloaded.Add(1)
	}
	if routed {
		m.Delay = 0
		it.sched = &m
		it.delayed = true
		return it
	}
	if p.topic {
		it.entry.Publish = publishEntry(&m)
	} else {
		it.entry.Send = sendEntry(&m, delay)
	}
	it.delayed = attr
	return it
}

// schedule hands a routed item to Options.Schedule and sets its result.
func (p *Producer) schedule(ctx context.Context, it *item) {
	id, err := p.opts.Schedule(ctx, it.res.Due, *it.sched)
	switch {
	case err != nil:
		it.res.Err = fmt.Errorf("producer: Options.Schedule did not take the message due at %s: %w", it.res.Due.UTC().Format(time.RFC3339), err)
	case id == "":
		it.res.Err = errors.New("producer: Options.Schedule returned no error and no ID; return the one-time schedule's ID (the Result's MessageID)")
	default:
		it.res.MessageID = id
	}
}

// check refuses, before any call, what the queue or topic would refuse.
// routed is a message Options.Schedule takes.
func (p *Producer) check(m *Message, routed bool) error {
	switch {
	case m.Body == "":
		return fmt.Errorf("%w: the body is empty; %s needs at least one character", ErrInvalid, p.service())
	case m.Delay < 0:
		return fmt.Errorf("%w: Delay is %v; use 0 or more", ErrInvalid, m.Delay)
	case p.topic && m.Delay > 0:
		return fmt.Errorf("%w: Delay is %v, but SNS topic %s takes no per-message delay; send delayed jobs to the queue itself, or set the subscribed queues' DelaySeconds", ErrInvalid, m.Delay, p.name)
	case p.fifo && m.Delay > 0 && !routed:
		return fmt.Errorf("%w: Delay is %v, but FIFO queue %s takes no per-message delay; set the queue's DelaySeconds instead (or, for a delay over Options.ScheduleAfter, set Options.Schedule)", ErrInvalid, m.Delay, p.name)
	case p.fifo && m.GroupID == "" && p.topic:
		return fmt.Errorf("%w: FIFO topic %s needs a GroupID on every message (its message group)", ErrInvalid, p.name)
	case p.fifo && m.GroupID == "":
		return fmt.Errorf("%w: FIFO queue %s needs a GroupID on every message", ErrInvalid, p.name)
	case !p.topic && m.Subject != "":
		return fmt.Errorf("%w: Subject is set, but %s is a queue; a Subject is for SNS topics (NewTopic)", ErrInvalid, p.name)
	}
	if !p.topic {
		return nil
	}
	switch {
	case !p.fifo && m.DeduplicationID != "":
		return fmt.Errorf("%w: DeduplicationID is set, but topic %s is a standard topic, which takes none (SNS refuses it); drop it, or publish to a FIFO topic", ErrInvalid, p.name)
	case len(m.GroupID) > maxGroupID:
		return fmt.Errorf("%w: GroupID is %d characters long; SNS and SQS take at most %d", ErrInvalid, len(m.GroupID), maxGroupID)
	}
	for _, c := range m.GroupID {
		if c < '!' || c > '~' {
			return fmt.Errorf("%w: GroupID %q has the character %q; SNS and SQS take letters, digits and ASCII punctuation only", ErrInvalid, m.GroupID, c)
		}
	}
	return nil
}

// maxGroupID is the longest MessageGroupId SNS and SQS take.
const maxGroupID = 128

// sendEntry is m's SendMessageBatch entry, with the native delay.
func sendEntry(m *Message, delay time.Duration) types.SendMessageBatchRequestEntry {
	e := types.SendMessageBatchRequestEntry{
		MessageBody:       aws.String(m.Body),
		MessageAttributes: m.Attributes,
		DelaySeconds:      int32(delay / time.Second),
	}
	if m.GroupID != "" {
		e.MessageGroupId = aws.String(m.GroupID)
	}
	if m.DeduplicationID != "" {
		e.MessageDeduplicationId = aws.String(m.DeduplicationID)
	}
	if m.TraceHeader != "" {
		e.MessageSystemAttributes = map[string]types.MessageSystemAttributeValue{
			string(types.MessageSystemAttributeNameForSendsAWSTraceHeader): {DataType: aws.String("String"), StringValue: aws.String(m.TraceHeader)},
		}
	}
	return e
}

// publishEntry is m's PublishBatch entry. SNS's message attributes have
// SQS's shape; a PublishBatch entry has no system attributes, so
// TraceHeader is left out.
func publishEntry(m *Message) *snstypes.PublishBatchRequestEntry {
	e := &snstypes.PublishBatchRequestEntry{Message: aws.String(m.Body)}
	if len(m.Attributes) > 0 {
		e.MessageAttributes = make(map[string]snstypes.MessageAttributeValue, len(m.Attributes))
		for k, v := range m.Attributes {
			e.MessageAttributes[k] = snstypes.MessageAttributeValue{DataType: v.DataType, StringValue: v.StringValue, BinaryValue: v.BinaryValue}
		}
	}
	if m.Subject != "" {
		e.Subject = aws.String(m.Subject)
	}
	if m.GroupID != "" {
		e.MessageGroupId = aws.String(m.GroupID)
	}
	if m.DeduplicationID != "" {
		e.MessageDeduplicationId = aws.String(m.DeduplicationID)
	}
	return e
}

// service is the service the Producer sends to, kind what it sends to.
func (p *Producer) service() string {
	if p.topic {
		return "SNS"
	}
	return "SQS"
}

func (p *Producer) kind() string {
	if p.topic {
		return "topic"
	}
	return "queue"
}

// queueName is the last path element of a queue URL.
func queueName(url string) string {
	return url[strings.LastIndex(url, "/")+1:]
}
