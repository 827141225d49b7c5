// Package sqsbatch is sqsworker's one layer for SQS's batch calls
// (SendMessageBatch, DeleteMessageBatch, ChangeMessageVisibilityBatch) and
// SNS's PublishBatch, which has the same shape (ten entries, results by Id,
// failures with a code and SenderFault). Every package that makes them —
// the settlement batcher, the heartbeat, the producer (for queues and SNS
// topics), the dead-letter tools, the Lambda adapter's local runner — goes
// through it, so each call is made the same way:
//
//   - entries go out in calls of at most ten (sends and publishes also at
//     most the batch payload limit: SQS's 1 MiB, SNS's 256 KiB), each entry
//     with an Id distinct within its call;
//   - the response is mapped back to the entries by Id, and an entry the
//     response does not mention counts as failed (ErrNoResult), never as done;
//   - the SDK's own retries are off (RetryMaxAttempts 1): the layer retries,
//     with one rule (Backoff), and internal/sqserr alone decides which errors
//     and which failed entries are worth another call;
//   - every request is reported once to Policy.OnCall, retries included.
//
// Callers that schedule their own retries (the settlement batcher holds a
// lease per message between calls; the heartbeat races a deadline) use
// Once; the others use Run.
package sqsbatch

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	snstypes "github.com/aws/aws-sdk-go-v2/service/sns/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/cenkalti/backoff/v4"

	"github.com/sqsworker/sqsworker/internal/sqserr"
	"github.com/sqsworker/sqsworker/internal/sqslimit"
)

// The batch calls, one narrow interface each, with the SDK's signatures.
type (
	// SendAPI makes SendMessageBatch calls.
	SendAPI interface {
		SendMessageBatch(ctx context.Context, params *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
	}
	// DeleteAPI makes DeleteMessageBatch calls.
	DeleteAPI interface {
		DeleteMessageBatch(ctx context.Context, params *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
	}
	// ChangeAPI makes ChangeMessageVisibilityBatch calls.
	ChangeAPI interface {
		ChangeMessageVisibilityBatch(ctx context.Context, params *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error)
	}
	// PublishAPI makes SNS PublishBatch calls.
	PublishAPI interface {
		PublishBatch(ctx context.Context, params *sns.PublishBatchInput, optFns ...func(*sns.Options)) (*sns.PublishBatchOutput, error)
	}
)

// NoSDKRetry turns the SDK's own retries off for one call, so that every
// request reaches the caller's counting and the caller's retry rule. Every
// SQS call the library makes passes it.
func NoSDKRetry(o *sqs.Options) { o.RetryMaxAttempts = 1 }

// NoSDKRetryOpts is NoSDKRetry as a call's options (call(ctx, in,
// NoSDKRetryOpts...)): passing the one func by itself makes the SDK's
// variadic slice, an allocation, on every call. Read only.
var NoSDKRetryOpts = []func(*sqs.Options){NoSDKRetry}

// NoSNSRetry is NoSDKRetry for SNS calls.
func NoSNSRetry(o *sns.Options) { o.RetryMaxAttempts = 1 }

// Entry is one message to send, delete or change. A Queue uses the fields
// of its kind of call.
type Entry struct {
	// Handle is the receipt handle to delete or change.
	Handle string
	// Timeout is the visibility timeout a change sets, in seconds.
	Timeout int32
	// Send is the message to send; its Id is set per call.
	Send types.SendMessageBatchRequestEntry
	// Publish is the message to publish to an SNS topic; its Id is set per
	// call.
	Publish *snstypes.PublishBatchRequestEntry
}

// Size is what a send or publish entry counts against its batch payload
// limit (0 for deletes and changes).
func (e *Entry) Size() int {
	if e.Publish != nil {
		return sqslimit.PublishSize(aws.ToString(e.Publish.Message), e.Publish.MessageAttributes)
	}
	if e.Send.MessageBody == nil {
		return 0
	}
	return sqslimit.MessageSize(*e.Send.MessageBody, e.Send.MessageAttributes)
}

// ErrNoResult is the error of an entry that a batch response named neither
// among its successes nor among its failures: it is treated as failed (and
// retryable), never as done.
var ErrNoResult = errors.New("SQS returned no result for the entry")

// Result is what became of one Entry.
type Result struct {
	// OK: SQS confirmed the entry.
	OK bool
	// MessageID and SequenceNumber are a confirmed send's.
	MessageID, SequenceNumber string
	// Err is why the entry was not confirmed: the whole call's error
	// (Whole), the entry's failure as SQS reported it (an error errors.As
	// finds as a smithy.APIError), ErrNoResult, or — when the caller's
	// context or Policy.Gate stopped it — that error.
	Err error
	// Class is Err's class (sqserr).
	Class sqserr.Class
	// Whole reports that Err is the error of the whole last call.
	Whole bool
	// Attempts is how many calls carried the entry.
	Attempts int
}

// Call is one request, as Policy.OnCall sees it.
type Call struct {
	// Op is the action: "SendMessageBatch", "DeleteMessageBatch",
	// "ChangeMessageVisibilityBatch" or "PublishBatch".
	Op string
	// Entries is how many entries the call carried, Payload their bytes as
	// SQS and SNS count them (sends and publishes only).
	Entries, Payload int
	// Attempt is the call's round: 1 for the first call of its entries, 2
	// for the first retry, and so on.
	Attempt int
	// Err is the whole call's error, nil when SQS answered.
	Err error
	// Failed is how many entries the answer reported failed or left out.
	Failed int
}

// Queue makes one kind of batch call on one queue (or, for PublishBatch,
// one topic).
type Queue struct {
	op  string
	url string
	// maxPayload is the call's payload limit (sends and publishes); 0: none.
	maxPayload int
	do         func(ctx context.Context, entries []Entry, res []Result) error
}

// Op returns the action the Queue calls.
func (q *Queue) Op() string { return q.op }

// ids are the entry Ids, one per position in a call.
var ids = func() (s [sqslimit.MaxBatchEntries]string) {
	for i := range s {
		s[i] = strconv.Itoa(i)
	}
	return s
}()

// callInput is one call's input and its entries in one allocation. It is
// never reused: a client (a user's fake among them) may keep the input it
// was given.
type callInput[In, E any] struct {
	in      In
	entries [sqslimit.MaxBatchEntries]E
}

// newInput returns a callInput whose entries slice has n elements.
func newInput[In, E any](n int) (*callInput[In, E], []E) {
	c := new(callInput[In, E])
	return c, c.entries[:n]
}

// NewDeleter returns the Queue of DeleteMessageBatch calls on url.
func NewDeleter(c DeleteAPI, url string) *Queue {
	u := aws.String(url) // every call's, read only
	return &Queue{op: "DeleteMessageBatch", url: url, do: func(ctx context.Context, entries []Entry, res []Result) error {
		ci, es := newInput[sqs.DeleteMessageBatchInput, types.DeleteMessageBatchRequestEntry](len(entries))
		for i := range entries {
			// The handle is read in place: entries outlive the call.
			es[i] = types.DeleteMessageBatchRequestEntry{Id: &ids[i], ReceiptHandle: &entries[i].Handle}
		}
		ci.in = sqs.DeleteMessageBatchInput{QueueUrl: u, Entries: es}
		out, err := c.DeleteMessageBatch(ctx, &ci.in, NoSDKRetryOpts...)
		if err != nil || out == nil {
			return callError(err)
		}
		return answer(res, out.Successful, func(s *types.DeleteMessageBatchResultEntry) *string { return s.Id }, nil, out.Failed)
	}}
}

// NewChanger returns the Queue of ChangeMessageVisibilityBatch calls on url.
func NewChanger(c ChangeAPI, url string) *Queue {
	u := aws.String(url) // every call's, read only
	return &Queue{op: "ChangeMessageVisibilityBatch", url: url, do: func(ctx context.Context, entries []Entry, res []Result) error {
		ci, es := newInput[sqs.ChangeMessageVisibilityBatchInput, types.ChangeMessageVisibilityBatchRequestEntry](len(entries))
		for i := range entries {
			es[i] = types.ChangeMessageVisibilityBatchRequestEntry{Id: &ids[i], ReceiptHandle: &entries[i].Handle, VisibilityTimeout: entries[i].Timeout}
		}
		ci.in = sqs.ChangeMessageVisibilityBatchInput{QueueUrl: u, Entries: es}
		out, err := c.ChangeMessageVisibilityBatch(ctx, &ci.in, NoSDKRetryOpts...)
		if err != nil || out == nil {
			return callError(err)
		}
		return answer(res, out.Successful, func(s *types.ChangeMessageVisibilityBatchResultEntry) *string { return s.Id }, nil, out.Failed)
	}}
}

// NewSender returns the Queue of SendMessageBatch calls on url.
func NewSender(c SendAPI, url string) *Queue {
	u := aws.String(url) // every call's, read only
	return &Queue{op: "SendMessageBatch", url: url, maxPayload: sqslimit.MaxMessageSize, do: func(ctx context.Context, entries []Entry, res []Result) error {
		ci, es := newInput[sqs.SendMessageBatchInput, types.SendMessageBatchRequestEntry](len(entries))
		for i := range entries {
			es[i] = entries[i].Send
			es[i].Id = &ids[i]
		}
		ci.in = sqs.SendMessageBatchInput{QueueUrl: u, Entries: es}
		out, err := c.SendMessageBatch(ctx, &ci.in, NoSDKRetryOpts...)
		if err != nil || out == nil {
			return callError(err)
		}
		return answer(res, out.Successful, func(s *types.SendMessageBatchResultEntry) *string { return s.Id }, func(s *types.SendMessageBatchResultEntry, r *Result) {
			r.MessageID, r.SequenceNumber = aws.ToString(s.MessageId), aws.ToString(s.SequenceNumber)
		}, out.Failed)
	}}
}

// NewPublisher returns the Queue of SNS PublishBatch calls on topicARN.
// SNS's answer has SQS's shape (Successful and Failed by Id, a failure's
// Code and SenderFault), so its entries are classified by the same table
// (internal/sqserr), which knows SNS's codes too.
func NewPublisher(c PublishAPI, topicARN string) *Queue {
	return &Queue{op: "PublishBatch", url: topicARN, maxPayload: sqslimit.MaxPublishSize, do: func(ctx context.Context, entries []Entry, res []Result) error {
		in := &sns.PublishBatchInput{TopicArn: aws.String(topicARN), PublishBatchRequestEntries: make([]snstypes.PublishBatchRequestEntry, len(entries))}
		for i := range entries {
			if entries[i].Publish != nil {
				in.PublishBatchRequestEntries[i] = *entries[i].Publish
			}
			in.PublishBatchRequestEntries[i].Id = &ids[i]
		}
		out, err := c.PublishBatch(ctx, in, NoSNSRetry)
		if err != nil || out == nil {
			return callError(err)
		}
		fails := make([]types.BatchResultErrorEntry, len(out.Failed))
		for i, f := range out.Failed {
			fails[i] = types.BatchResultErrorEntry{Id: f.Id, Code: f.Code, Message: f.Message, SenderFault: f.SenderFault}
		}
		return answer(res, out.Successful, func(s *snstypes.PublishBatchResultEntry) *string { return s.Id }, func(s *snstypes.PublishBatchResultEntry, r *Result) {
			r.MessageID, r.SequenceNumber = aws.ToString(s.MessageId), aws.ToString(s.SequenceNumber)
		}, fails)
	}}
}

// callError is the error of a call that returned err, or neither a result
// nor an error.
func callError(err error) error {
	if err == nil {
		return errors.New("the batch call returned neither a result nor an error")
	}
	return err
}

// answer maps a response back to its entries by Id: confirmed ones get OK
// (and, when set is not nil, what else the success says), failed ones
// their error. A success wins over a failure for the same Id: SQS
// confirmed it.
func answer[S any](res []Result, ok []S, id func(*S) *string, set func(*S, *Result), fails []types.BatchResultErrorEntry) error {
	for k := range ok {
		if i, found := index(id(&ok[k]), len(res)); found {
			res[i].OK = true
			if set != nil {
				set(&ok[k], &res[i])
			}
		}
	}
	for _, f := range fails {
		if i, found := index(f.Id, len(res)); found && !res[i].OK {
			res[i].Err, res[i].Class = sqserr.EntryError(f), sqserr.OfEntry(f)
		}
	}
	return nil
}

// index maps an entry Id of a response back to the entry's position.
func index(id *string, n int) (int, bool) {
	if id == nil {
		return 0, false
	}
	i, err := strconv.Atoi(*id)
	return i, err == nil && i >= 0 && i < n && *id == ids[i]
}

// Once makes one call carrying entries (1 to 10; the caller keeps sends
// within the payload limit) and returns one Result per entry, in order,
// with Attempts 1: confirmed entries OK, the others with their error,
// ErrNoResult for those the response left out. When the whole call failed
// every Result carries its error (Whole) and Once returns it too. onCall,
// when set, is told about the call.
func (q *Queue) Once(ctx context.Context, entries []Entry, onCall func(Call)) ([]Result, error) {
	res := make([]Result, len(entries))
	err := q.once(ctx, entries, res, 1, onCall)
	return res, err
}

// OnceInto is Once writing its Results into res (len(res) == len(entries)),
// for a caller that keeps its own buffers on a hot path.
func (q *Queue) OnceInto(ctx context.Context, entries []Entry, res []Result, onCall func(Call)) error {
	if len(res) != len(entries) {
		return fmt.Errorf("sqsworker: %d results for %d entries", len(res), len(entries))
	}
	clear(res)
	return q.once(ctx, entries, res, 1, onCall)
}

func (q *Queue) once(ctx context.Context, entries []Entry, res []Result, attempt int, onCall func(Call)) error {
	if len(entries) == 0 || len(entries) > sqslimit.MaxBatchEntries {
		return fmt.Errorf("sqsworker: a %s call carries 1 to %d entries, not %d", q.op, sqslimit.MaxBatchEntries, len(entries))
	}
	for i := range res {
		res[i] = Result{Attempts: res[i].Attempts + 1}
	}
	err := q.do(ctx, entries, res)
	c := Call{Op: q.op, Entries: len(entries), Attempt: attempt, Err: err}
	if q.maxPayload > 0 {
		for i := range entries {
			c.Payload += entries[i].Size()
		}
	}
	if err != nil {
		class := sqserr.Of(err)
		for i := range res {
			res[i].Err, res[i].Class, res[i].Whole = err, class, true
		}
	} else {
		for i := range res {
			if !res[i].OK && res[i].Err == nil {
				res[i].Err, res[i].Class = ErrNoResult, sqserr.Transient
			}
			if !res[i].OK {
				c.Failed++
			}
		}
	}
	if onCall != nil {
		onCall(c)
	}
	return err
}

// Retry timing: the one rule for every SQS call the library retries.
const (
	retryMin = 100 * time.Millisecond
	retryMax = 5 * time.Second
)

// Backoff is the wait before retry n (1, 2, …): 100 ms doubling up to 5 s,
// the upper half of it random (so retries of many callers spread out).
func Backoff(n int) time.Duration {
	d := interval(n)
	return d/2 + rand.N(d/2+1)
}

// interval is retry n's ceiling: cenkalti/backoff's exponential sequence,
// without its own randomisation (Backoff draws in the upper half instead),
// from retryMin doubling to retryMax.
func interval(n int) time.Duration {
	b := backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(retryMin),
		backoff.WithMultiplier(2),
		backoff.WithMaxInterval(retryMax),
		backoff.WithRandomizationFactor(0),
		backoff.WithMaxElapsedTime(0),
	)
	d := retryMin
	// The sequence reaches retryMax by the 7th value; later ones repeat it.
	for range min(max(n, 1), 8) {
		d = b.NextBackOff()
	}
	return d
}

// DefaultAttempts is how many calls Run lets carry one entry when
// Policy.MaxAttempts is zero.
const DefaultAttempts = 5

// WaitOf is a Policy.Wait from a retry policy's Delay (retry.Policy's
// method): its delay before retry n, or a negative wait once it gives up.
func WaitOf(delay func(n int) (time.Duration, bool)) func(n int) time.Duration {
	return func(n int) time.Duration {
		if d, again := delay(n); again {
			return d
		}
		return -1 // the policy gave up
	}
}

// Policy is how Run sends its entries. Every field's zero value selects
// the documented default.
type Policy struct {
	// MaxAttempts is how many calls may carry one entry. Zero value:
	// DefaultAttempts.
	MaxAttempts int
	// Wait is the wait before retry n (1, 2, …); a negative wait gives up.
	// Zero value: Backoff.
	Wait func(n int) time.Duration
	// CallTimeout bounds each call. Zero value: 30 s.
	CallTimeout time.Duration
	// Detach runs the calls on a context that ctx's end does not cancel
	// (each still bounded by CallTimeout): a call that may take effect is
	// not abandoned in flight, as when a redrive must learn which copies it
	// sent. ctx's end still stops further calls and waits. Zero value: the
	// calls end with ctx.
	Detach bool
	// MaxBatch is the most entries one call carries, 1 to 10. Zero value: 10.
	MaxBatch int
	// Concurrency is how many calls of one round may be in flight at once.
	// Zero value: 1, one call at a time, in the entries' order.
	Concurrency int
	// Gate, when set, is called before every call with the number of
	// entries it carries (a rate limit, a shared cap on calls in flight).
	// Its error ends those entries and the ones not yet sent in this round,
	// unsent, with that error; release is called once the call ended.
	Gate func(ctx context.Context, n int) (release func(), err error)
	// OnCall, when set, is told about every call, retries included. It
	// may be called from several goroutines at once (Concurrency > 1).
	OnCall func(Call)
}

// Run sends entries in as few calls as the limits allow and retries, by
// the one rule, what may succeed later: whole calls that failed with a
// retryable error and entries SQS failed with one (or left out of its
// answer), after Wait, until each is confirmed, fails for good, or has
// been carried by MaxAttempts calls, or until ctx ends. It returns one
// Result per entry, in order. An entry that ctx's end (or Gate) kept from
// its next call has that error wrapped in its Err, after the last call's.
func (q *Queue) Run(ctx context.Context, entries []Entry, p Policy) []Result {
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = DefaultAttempts
	}
	if p.Wait == nil {
		p.Wait = Backoff
	}
	if p.CallTimeout <= 0 {
		p.CallTimeout = 30 * time.Second
	}
	if p.MaxBatch <= 0 || p.MaxBatch > sqslimit.MaxBatchEntries {
		p.MaxBatch = sqslimit.MaxBatchEntries
	}
	p.Concurrency = max(p.Concurrency, 1)
	res := make([]Result, len(entries))
	todo := make([]int, len(entries))
	for i := range todo {
		todo[i] = i
	}
	for attempt := 1; len(todo) > 0; attempt++ {
		if attempt > 1 {
			wait := p.Wait(attempt - 1)
			if wait < 0 {
				return res
			}
			if err := Sleep(ctx, wait); err != nil {
				stopped(res, todo, err)
				return res
			}
		}
		if err := ctx.Err(); err != nil {
			stopped(res, todo, context.Cause(ctx))
			return res
		}
		q.round(ctx, entries, res, todo, attempt, p)
		next := todo[:0]
		for _, i := range todo {
			r := &res[i]
			if !r.OK && r.Attempts == attempt && r.Class.Retryable() && attempt < p.MaxAttempts {
				next = append(next, i)
			}
		}
		todo = next
	}
	return res
}

// round sends the entries at todo once, in calls cut by the limits.
func (q *Queue) round(ctx context.Context, entries []Entry, res []Result, todo []int, attempt int, p Policy) {
	var (
		wg  sync.WaitGroup
		sem = make(chan struct{}, p.Concurrency)
	)
	for len(todo) > 0 {
		n := min(len(todo), p.MaxBatch)
		if q.maxPayload > 0 {
			n = sqslimit.Fit(n, q.maxPayload, func(k int) int { return entries[todo[k]].Size() })
		}
		idx := todo[:n:n]
		todo = todo[n:]
		release := func() {}
		if p.Gate != nil {
			var err error
			if release, err = p.Gate(ctx, n); err != nil {
				stopped(res, idx, err)
				stopped(res, todo, err)
				break
			}
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			defer release()
			q.call(ctx, entries, res, idx, attempt, p)
		})
		if p.Concurrency == 1 {
			wg.Wait()
		}
	}
	wg.Wait()
}

// call makes one call for the entries at idx and records their results.
func (q *Queue) call(ctx context.Context, entries []Entry, res []Result, idx []int, attempt int, p Policy) {
	batch := make([]Entry, len(idx))
	out := make([]Result, len(idx))
	for k, i := range idx {
		batch[k] = entries[i]
		out[k].Attempts = res[i].Attempts
	}
	cctx := ctx
	if p.Detach {
		cctx = context.WithoutCancel(ctx)
	}
	cctx, cancel := context.WithTimeout(cctx, p.CallTimeout)
	err := q.once(cctx, batch, out, attempt, p.OnCall)
	cancel()
	if err != nil && !p.Detach && ctx.Err() != nil {
		// The caller's context ended the call, not SQS.
		for k := range out {
			out[k].Class = sqserr.Canceled
		}
	}
	for k, i := range idx {
		res[i] = out[k]
	}
}

// stopped marks the entries at idx as kept from their next call by err.
func stopped(res []Result, idx []int, err error) {
	for _, i := range idx {
		r := &res[i]
		if r.Err != nil && !errors.Is(r.Err, err) {
			r.Err = fmt.Errorf("%w; %w", r.Err, err)
		} else if r.Err == nil {
			r.Err = err
		}
		r.Class, r.Whole = sqserr.Canceled, false
	}
}

// Sleep waits for d or until ctx ends, and returns ctx's cause then (nil
// after the wait; ctx's cause at once when d is not positive and ctx has
// ended).
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return context.Cause(ctx)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
