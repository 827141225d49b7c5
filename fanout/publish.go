package fanout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	snstypes "github.com/aws/aws-sdk-go-v2/service/sns/types"

	"github.com/sqsworker/sqsworker/internal/awscall"
	"github.com/sqsworker/sqsworker/internal/sqsbatch"
	"github.com/sqsworker/sqsworker/internal/sqslimit"
	"github.com/sqsworker/sqsworker/retry"
)

// PublishAPI is the SNS call a Publisher makes, with the AWS SDK for Go
// v2's exact signature. *sns.Client and snstest's Fake satisfy it.
type PublishAPI interface {
	PublishBatch(ctx context.Context, params *sns.PublishBatchInput, optFns ...func(*sns.Options)) (*sns.PublishBatchOutput, error)
}

var _ PublishAPI = (*sns.Client)(nil)

// ErrInvalid is wrapped by the errors of messages a Publisher refuses
// before any call: an empty body, a FIFO topic's message without a
// GroupID, a DeduplicationID on a standard topic, a GroupID SNS would
// refuse, a message too large (ErrTooLarge too).
var ErrInvalid = errors.New("fanout: invalid message")

// ErrTooLarge is wrapped by the error of a message over SNS's 256 KiB
// (the message and its attributes).
var ErrTooLarge = errors.New("message too large")

// maxGroupID is the longest MessageGroupId SNS and SQS take.
const maxGroupID = 128

// PublisherOptions configures a Publisher. Every field's zero value
// selects the documented default.
type PublisherOptions struct {
	// MaxAttempts is how many PublishBatch calls may carry one message:
	// entries SNS failed on its side (throttling, an internal error) and
	// calls that failed as a whole with a retryable error (throttling, a
	// server error, the network, the call's timeout) are sent again after
	// a backoff; entries SNS refused (a sender fault) are not. Zero value:
	// 5.
	MaxAttempts int
	// Retry is the wait between those attempts: Delay(n) after the n-th
	// call that carried an entry; giving up (false) ends the entry's
	// attempts early. Zero value: the library's one retry rule for its AWS
	// calls (exponential from 100 ms to 5 s, jittered).
	Retry retry.Policy
	// CallTimeout bounds each PublishBatch call. Zero value: 30 s.
	CallTimeout time.Duration
	// Concurrency is how many PublishBatch calls may be in flight at once
	// on a standard topic. On a FIFO topic batches go out one at a time,
	// in order. Zero value: 4.
	Concurrency int
	// MaxBatch is the most messages one call carries, 1 to 10. Zero
	// value: 10.
	MaxBatch int
}

// Publisher publishes messages to one SNS topic with PublishBatch calls
// of up to 10 messages (and SNS's 256 KiB per call), retried as the
// producer's sends are, with one Result per message. Each message's
// GroupID is its MessageGroupId: on a FIFO topic its message group; on a
// standard topic its tenant, which SNS passes on to the standard queues
// subscribed to it, making them SQS fair queues (a consumer caps a
// tenant's running jobs with fleet.Cap keyed by fleet.ByGroup). It is safe
// for concurrent use.
type Publisher struct {
	sender   *sqsbatch.Queue
	topicARN string
	topic    string // its name
	fifo     bool
	opts     PublisherOptions
	st       struct{ requests, published, failed, retried atomic.Int64 }
}

// PublisherStats is a snapshot of a Publisher's counters since
// NewPublisher.
type PublisherStats struct {
	Requests  int64 // PublishBatch calls made, retries included
	Published int64 // messages SNS accepted
	Failed    int64 // messages not published (their Result has the error)
	Retried   int64 // entries sent again after a retryable failure
}

// Message is one message to publish.
type Message struct {
	// Body is the message; it must not be empty.
	Body string
	// Subject is the envelope's Subject (enveloped subscriptions only;
	// raw delivery drops it). Zero value: none.
	Subject string
	// Attributes are the message attributes: what filter policies match,
	// and, with raw delivery, the SQS message attributes.
	Attributes map[string]snstypes.MessageAttributeValue
	// GroupID is the MessageGroupId. On a FIFO topic it is required: the
	// message group, kept in order. On a standard topic it is the tenant:
	// SNS passes it to subscribed standard queues, whose consumers see it
	// as worker.Message.GroupID (SQS fair queues). At most 128 characters.
	// Zero value: none (refused on a FIFO topic).
	GroupID string
	// DeduplicationID is a FIFO topic's deduplication ID. Zero value: none,
	// which needs ContentBasedDeduplication on the topic. Refused on a
	// standard topic.
	DeduplicationID string
}

// WithGroup returns an option that sets a message's GroupID (a FIFO
// group, or a standard topic's tenant) and, on a FIFO topic, its
// DeduplicationID, for the typed publishers.
func WithGroup(groupID, deduplicationID string) func(*Message) {
	return func(m *Message) { m.GroupID, m.DeduplicationID = groupID, deduplicationID }
}

// PublishResult is the outcome of publishing one message.
type PublishResult struct {
	// MessageID is the ID SNS gave the message; empty when it was not
	// published.
	MessageID string
	// SequenceNumber is the FIFO sequence number; empty on standard topics.
	SequenceNumber string
	// Attempts is how many PublishBatch calls carried the message.
	Attempts int
	// Err is nil when SNS accepted the message, else why it was not
	// published (after the retries that could help). A message with an
	// Err was not published, unless a call's response was lost.
	Err error
}

// PublishError is the error Publish and PublishBatch return when some
// messages were not published. Each message's own error is in its
// PublishResult.
type PublishError struct {
	Failed int   // messages not published
	Total  int   // messages given
	First  error // the first failed message's error
}

// Error says how many messages were not published, and why the first was
// not.
func (e *PublishError) Error() string {
	return fmt.Sprintf("fanout: %d of %d messages not published (each PublishResult says why); first: %v", e.Failed, e.Total, e.First)
}

// Unwrap returns the first failed message's error.
func (e *PublishError) Unwrap() error { return e.First }

// NewPublisher returns a Publisher for the topic with ARN topicARN (Setup
// returns it as SetupResult.TopicARN). A topic whose name ends in ".fifo"
// is a FIFO topic: every message then needs a GroupID.
//
// IAM: sns:Publish on the topic (it authorises PublishBatch), and
// kms:GenerateDataKey and kms:Decrypt on its key when the topic is
// encrypted with a customer managed KMS key.
func NewPublisher(client PublishAPI, topicARN string, optFns ...func(*PublisherOptions)) (*Publisher, error) {
	if client == nil {
		return nil, errors.New("fanout.NewPublisher: client is nil; pass an *sns.Client (or an snstest.Fake)")
	}
	a, err := ParseTopicARN(topicARN)
	if err != nil {
		return nil, fmt.Errorf("fanout.NewPublisher: %w; pass the topic's ARN (fanout.Setup returns it as SetupResult.TopicARN)", err)
	}
	var o PublisherOptions
	for _, fn := range optFns {
		fn(&o)
	}
	switch {
	case o.MaxAttempts < 0, o.CallTimeout < 0, o.Concurrency < 0:
		return nil, errors.New("fanout.NewPublisher: PublisherOptions.MaxAttempts, CallTimeout and Concurrency must not be negative (0 selects the default)")
	case o.MaxBatch < 0 || o.MaxBatch > sqslimit.MaxBatchEntries:
		return nil, fmt.Errorf("fanout.NewPublisher: PublisherOptions.MaxBatch is %d; PublishBatch carries 1 to 10 entries (0 for 10)", o.MaxBatch)
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
	if o.MaxBatch == 0 {
		o.MaxBatch = sqslimit.MaxBatchEntries
	}
	return &Publisher{sender: sqsbatch.NewPublisher(client, topicARN), topicARN: topicARN, topic: a.Name, fifo: a.FIFO(), opts: o}, nil
}

// TopicARN returns the topic the Publisher publishes to.
func (p *Publisher) TopicARN() string { return p.topicARN }

// Stats returns a snapshot of the Publisher's counters.
func (p *Publisher) Stats() PublisherStats {
	return PublisherStats{Requests: p.st.requests.Load(), Published: p.st.published.Load(), Failed: p.st.failed.Load(), Retried: p.st.retried.Load()}
}

// Publish publishes one message and returns its result; the error is the
// result's Err.
func (p *Publisher) Publish(ctx context.Context, m Message) (PublishResult, error) {
	res, err := p.PublishBatch(ctx, []Message{m})
	if err != nil {
		return res[0], res[0].Err
	}
	return res[0], nil
}

// PublishBatch publishes msgs, any number of them, in PublishBatch calls
// of up to MaxBatch messages and 256 KiB, up to Concurrency calls at once
// (one at a time, in order, on a FIFO topic), retrying what can be
// retried. It returns one PublishResult per message, in order, and a
// *PublishError when any message was not published. Messages that cannot
// be published as they are fail with ErrInvalid before any call.
func (p *Publisher) PublishBatch(ctx context.Context, msgs []Message) ([]PublishResult, error) {
	return p.publish(ctx, msgs, nil)
}

// publish is PublishBatch with errors known before publishing: msgs[i]
// fails with errs[i] when that is not nil.
func (p *Publisher) publish(ctx context.Context, msgs []Message, errs []error) ([]PublishResult, error) {
	out := make([]PublishResult, len(msgs))
	var entries []sqsbatch.Entry
	var at []int // entries[k] is msgs[at[k]]
	for i := range msgs {
		if errs != nil && errs[i] != nil {
			out[i].Err = errs[i]
			continue
		}
		e, err := p.entry(&msgs[i])
		if err != nil {
			out[i].Err = err
			continue
		}
		entries = append(entries, sqsbatch.Entry{Publish: e})
		at = append(at, i)
	}
	if len(entries) > 0 {
		concurrency := p.opts.Concurrency
		if p.fifo {
			concurrency = 1 // in order, one at a time
		}
		res := p.sender.Run(ctx, entries, sqsbatch.Policy{
			MaxAttempts: p.opts.MaxAttempts,
			Wait:        sqsbatch.WaitOf(p.opts.Retry.Delay),
			CallTimeout: p.opts.CallTimeout,
			MaxBatch:    p.opts.MaxBatch,
			Concurrency: concurrency,
			OnCall: func(c sqsbatch.Call) {
				p.st.requests.Add(1)
				if c.Attempt > 1 {
					p.st.retried.Add(int64(c.Entries))
				}
			},
		})
		for k, r := range res {
			o := &out[at[k]]
			o.Attempts = r.Attempts
			switch {
			case r.OK:
				o.MessageID, o.SequenceNumber = r.MessageID, r.SequenceNumber
			case r.Attempts == 0:
				o.Err = r.Err // never sent: ctx ended first
			case r.Whole:
				o.Err = fmt.Errorf("fanout: PublishBatch to topic %s failed: %w", p.topic, r.Err)
			case errors.Is(r.Err, sqsbatch.ErrNoResult):
				o.Err = fmt.Errorf("fanout: SNS reported no result for the message in its PublishBatch response: %w", r.Err)
			default:
				o.Err = fmt.Errorf("fanout: SNS did not take the message for topic %s: %w", p.topic, r.Err)
			}
		}
	}
	var perr *PublishError
	for i := range out {
		if out[i].Err == nil {
			p.st.published.Add(1)
			continue
		}
		p.st.failed.Add(1)
		if perr == nil {
			perr = &PublishError{Total: len(out), First: out[i].Err}
		}
		perr.Failed++
	}
	if perr != nil {
		return out, perr
	}
	return out, nil
}

// entry checks m against the topic's rules and SNS's limits and returns
// its PublishBatch entry (Id set per call).
func (p *Publisher) entry(m *Message) (*snstypes.PublishBatchRequestEntry, error) {
	switch {
	case m.Body == "":
		return nil, fmt.Errorf("%w: the body is empty; SNS needs at least one character", ErrInvalid)
	case p.fifo && m.GroupID == "":
		return nil, fmt.Errorf("%w: FIFO topic %s needs a GroupID on every message (its message group)", ErrInvalid, p.topic)
	case !p.fifo && m.DeduplicationID != "":
		return nil, fmt.Errorf("%w: DeduplicationID is set, but topic %s is a standard topic, which takes none (SNS refuses it); drop it, or publish to a FIFO topic", ErrInvalid, p.topic)
	case len(m.GroupID) > maxGroupID:
		return nil, fmt.Errorf("%w: GroupID is %d characters long; SNS and SQS take at most %d", ErrInvalid, len(m.GroupID), maxGroupID)
	}
	for _, c := range m.GroupID {
		if c < '!' || c > '~' {
			return nil, fmt.Errorf("%w: GroupID %q has the character %q; SNS and SQS take letters, digits and ASCII punctuation only", ErrInvalid, m.GroupID, c)
		}
	}
	if n := sqslimit.PublishSize(m.Body, m.Attributes); n > sqslimit.MaxPublishSize {
		return nil, fmt.Errorf("%w: %w: %d bytes (body and attributes), over SNS's limit of %d; store the body elsewhere (S3) and publish a reference to it", ErrInvalid, ErrTooLarge, n, sqslimit.MaxPublishSize)
	}
	e := &snstypes.PublishBatchRequestEntry{Message: aws.String(m.Body), MessageAttributes: m.Attributes}
	if m.Subject != "" {
		e.Subject = aws.String(m.Subject)
	}
	if m.GroupID != "" {
		e.MessageGroupId = aws.String(m.GroupID)
	}
	if m.DeduplicationID != "" {
		e.MessageDeduplicationId = aws.String(m.DeduplicationID)
	}
	return e, nil
}

// JSONPublisher publishes values of type T as JSON messages; worker.JSON[T]
// decodes them on the consuming side (behind Unwrap for an enveloped
// subscription). Make one with JSON.
type JSONPublisher[T any] struct{ p *Publisher }

// JSON returns a publisher of T values through p.
func JSON[T any](p *Publisher) JSONPublisher[T] { return JSONPublisher[T]{p: p} }

// Message returns the message that carries v: its JSON encoding as the
// body, with opts applied (WithGroup, or any func(*Message)).
func (j JSONPublisher[T]) Message(v T, opts ...func(*Message)) (Message, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return Message{}, fmt.Errorf("fanout: encoding a %T as JSON: %w", v, err)
	}
	m := Message{Body: string(body)}
	for _, fn := range opts {
		fn(&m)
	}
	return m, nil
}

// Publish publishes v (see Publisher.Publish).
func (j JSONPublisher[T]) Publish(ctx context.Context, v T, opts ...func(*Message)) (PublishResult, error) {
	m, err := j.Message(v, opts...)
	if err != nil {
		return PublishResult{Err: err}, err
	}
	return j.p.Publish(ctx, m)
}

// PublishBatch publishes vs (see Publisher.PublishBatch), with opts
// applied to every message. A value that does not encode fails in its
// PublishResult.
func (j JSONPublisher[T]) PublishBatch(ctx context.Context, vs []T, opts ...func(*Message)) ([]PublishResult, error) {
	msgs := make([]Message, len(vs))
	errs := make([]error, len(vs))
	for i, v := range vs {
		msgs[i], errs[i] = j.Message(v, opts...)
	}
	return j.p.publish(ctx, msgs, errs)
}
