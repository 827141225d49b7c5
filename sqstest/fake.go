package sqstest

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/internal/sqslimit"
)

// api is every SQS call the Fake implements, with the SDK's signatures.
// Both *sqs.Client and *Fake satisfy it.
type api interface {
	CreateQueue(ctx context.Context, params *sqs.CreateQueueInput, optFns ...func(*sqs.Options)) (*sqs.CreateQueueOutput, error)
	DeleteQueue(ctx context.Context, params *sqs.DeleteQueueInput, optFns ...func(*sqs.Options)) (*sqs.DeleteQueueOutput, error)
	GetQueueUrl(ctx context.Context, params *sqs.GetQueueUrlInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
	ListQueues(ctx context.Context, params *sqs.ListQueuesInput, optFns ...func(*sqs.Options)) (*sqs.ListQueuesOutput, error)
	GetQueueAttributes(ctx context.Context, params *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
	SetQueueAttributes(ctx context.Context, params *sqs.SetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.SetQueueAttributesOutput, error)
	PurgeQueue(ctx context.Context, params *sqs.PurgeQueueInput, optFns ...func(*sqs.Options)) (*sqs.PurgeQueueOutput, error)
	SendMessage(ctx context.Context, params *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	SendMessageBatch(ctx context.Context, params *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
	ReceiveMessage(ctx context.Context, params *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessage(ctx context.Context, params *sqs.DeleteMessageInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
	DeleteMessageBatch(ctx context.Context, params *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
	ChangeMessageVisibility(ctx context.Context, params *sqs.ChangeMessageVisibilityInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error)
	ChangeMessageVisibilityBatch(ctx context.Context, params *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error)
	ListDeadLetterSourceQueues(ctx context.Context, params *sqs.ListDeadLetterSourceQueuesInput, optFns ...func(*sqs.Options)) (*sqs.ListDeadLetterSourceQueuesOutput, error)
	StartMessageMoveTask(ctx context.Context, params *sqs.StartMessageMoveTaskInput, optFns ...func(*sqs.Options)) (*sqs.StartMessageMoveTaskOutput, error)
	ListMessageMoveTasks(ctx context.Context, params *sqs.ListMessageMoveTasksInput, optFns ...func(*sqs.Options)) (*sqs.ListMessageMoveTasksOutput, error)
	CancelMessageMoveTask(ctx context.Context, params *sqs.CancelMessageMoveTaskInput, optFns ...func(*sqs.Options)) (*sqs.CancelMessageMoveTaskOutput, error)
}

var (
	_ api = (*sqs.Client)(nil)
	_ api = (*Fake)(nil)
)

// Options configures a Fake. Every field's zero value is usable.
type Options struct {
	// Region is the region in queue URLs and ARNs. Zero value: "us-east-1".
	Region string
	// AccountID is the account in queue URLs and ARNs and the SenderId of
	// messages. Zero value: "000000000000".
	AccountID string
	// Latency is added to every call before it takes effect, as network
	// round trips would. The wait ends early, with the context's error, when
	// the call's context ends. Zero value: no latency.
	Latency time.Duration
}

// Fake is an in-memory SQS. It is safe for concurrent use. Create it with
// New, or For in a test.
type Fake struct {
	opts Options

	mu       sync.Mutex
	offset   time.Duration        // added to time.Now by Advance
	queues   map[string]*queue    // by URL
	byName   map[string]*queue    // by name
	byArn    map[string]*queue    // by ARN
	changed  chan struct{}        // closed and replaced whenever messages may have become receivable
	requests map[string]int       // calls by API name
	faults   []*faultRule         // injected faults, in order of injection
	tasks    map[string]*moveTask // message move tasks by handle
	taskSeq  int
	idSeq    uint64
}

// New returns an empty Fake. It returns an error when an option is out of
// range (a malformed region or account ID, a negative latency).
func New(optFns ...func(*Options)) (*Fake, error) {
	var o Options
	for _, fn := range optFns {
		fn(&o)
	}
	if o.Region == "" {
		o.Region = "us-east-1"
	}
	if o.AccountID == "" {
		o.AccountID = "000000000000"
	}
	if err := sqslimit.CheckIdentity(o.Region, o.AccountID); err != nil {
		return nil, fmt.Errorf("sqstest: Options.%w", err)
	}
	if o.Latency < 0 {
		return nil, fmt.Errorf("sqstest: Options.Latency is %v; use a positive duration (or 0 for none)", o.Latency)
	}
	return &Fake{
		opts:     o,
		queues:   map[string]*queue{},
		byName:   map[string]*queue{},
		byArn:    map[string]*queue{},
		changed:  make(chan struct{}),
		requests: map[string]int{},
		tasks:    map[string]*moveTask{},
	}, nil
}

// For returns a new Fake for a test, failing tb when an option is out of
// range: what most tests call.
func For(tb testing.TB, optFns ...func(*Options)) *Fake {
	tb.Helper()
	f, err := New(optFns...)
	if err != nil {
		tb.Fatal(err)
	}
	return f
}

// Now returns the Fake's current time: time.Now plus every Advance so far.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now()
}

func (f *Fake) now() time.Time { return time.Now().Add(f.offset) }

// Advance moves the Fake's clock forward by d: messages whose visibility
// timeout or delay ends within d become receivable at once, and waiting long
// polls see them. Advance does not shorten a long poll's own wait.
func (f *Fake) Advance(d time.Duration) {
	if d <= 0 {
		return
	}
	f.mu.Lock()
	f.offset += d
	f.notifyLocked()
	f.mu.Unlock()
}

// notifyLocked wakes every waiting long poll. f.mu must be held.
func (f *Fake) notifyLocked() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// Requests returns the number of calls made so far by API name
// ("ReceiveMessage", "DeleteMessageBatch", …), failed calls included: a
// snapshot the caller owns. An API not called is absent (its count is 0).
// Index it for one API, sum it for every call, compare two snapshots for
// the calls in between, or print it (fmt prints a map sorted by key).
func (f *Fake) Requests() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]int, len(f.requests))
	for k, v := range f.requests {
		out[k] = v
	}
	return out
}

func (f *Fake) newID() string {
	// IDs and handle nonces need to be unique, not secret: the runtime's
	// fast generator (randomly seeded, 128 bits) is enough.
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], rand.Uint64())
	binary.LittleEndian.PutUint64(b[8:], rand.Uint64())
	b[6] = (b[6] & 0x0f) | 0x40
	b[8] = (b[8] & 0x3f) | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

func (f *Fake) queueURL(name string) string {
	return fmt.Sprintf("https://sqs.%s.amazonaws.com/%s/%s", f.opts.Region, f.opts.AccountID, name)
}

func (f *Fake) queueARN(name string) string {
	return fmt.Sprintf("arn:aws:sqs:%s:%s:%s", f.opts.Region, f.opts.AccountID, name)
}

// enter counts and checks the call, locks the Fake and returns the call and
// the queue at url. On success f.mu is held and the caller must unlock it.
func (f *Fake) enter(ctx context.Context, op string, url *string) (*call, *queue, error) {
	c, err := f.begin(ctx, op)
	if err != nil {
		return nil, nil, err
	}
	q, err := f.lockQueue(op, url)
	return c, q, err
}

// enterBatch is enter for a batch call of n entries: it applies SQS's
// whole-request rules (entry count, distinct and well-formed IDs) first.
func (f *Fake) enterBatch(ctx context.Context, op string, url *string, n int, id func(i int) *string) (*call, *queue, error) {
	c, err := f.begin(ctx, op)
	if err != nil {
		return nil, nil, err
	}
	var buf [sqslimit.MaxBatchEntries]string
	ids := buf[:0]
	if n > len(buf) {
		ids = make([]string, 0, n)
	}
	ids = ids[:n]
	for i := range ids {
		ids[i] = aws.ToString(id(i))
	}
	if err := checkBatch(ids); err != nil {
		return nil, nil, opError(op, err)
	}
	q, err := f.lockQueue(op, url)
	return c, q, err
}

// lockQueue locks the Fake and returns the queue at url; it leaves f.mu
// unlocked when there is no such queue.
func (f *Fake) lockQueue(op string, url *string) (*queue, error) {
	f.mu.Lock()
	q, err := f.lookup(op, url)
	if err != nil {
		f.mu.Unlock()
		return nil, err
	}
	return q, nil
}

// lookup returns the queue at url. f.mu must be held.
func (f *Fake) lookup(op string, url *string) (*queue, error) {
	if url == nil || *url == "" {
		return nil, opError(op, missingParameter("QueueUrl"))
	}
	q, ok := f.queues[*url]
	if !ok {
		return nil, opError(op, errQueueDoesNotExist())
	}
	return q, nil
}
