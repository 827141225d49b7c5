package unique

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/internal/awscall"
	"github.com/sqsworker/sqsworker/internal/dynamo"
	"github.com/sqsworker/sqsworker/internal/uniqueattr"
	"github.com/sqsworker/sqsworker/producer"
	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/worker"
)

// attribute is the message attribute a unique job carries:
// "<mode>:<token>:<key>" (internal/uniqueattr, which the console reads too).
const attribute = uniqueattr.Name

// The modes in the attribute.
const (
	modeSettled  = uniqueattr.ModeSettled  // until settled
	modePeriod   = uniqueattr.ModePeriod   // for a period
	modeDebounce = uniqueattr.ModeDebounce // debounce
)

// maxDebounceBody is the largest body a debounced send takes: the body is
// stored on the key's item, and a DynamoDB item holds at most 400 KB.
const maxDebounceBody = 380_000

// debounceSleep is the longest wait the Middleware sleeps through in the
// handler; a longer one snoozes the message.
const debounceSleep = time.Second

// margin is added to a claim's expiry beyond the message's retention.
const margin = time.Hour

// maxRetention is SQS's longest message retention, the default bound.
const maxRetention = 14 * 24 * time.Hour

// ErrDuplicate is the error of a send refused because a job already holds
// its key (Store.Send); the Result then carries that job's message ID when
// the Store knows it.
var ErrDuplicate = errors.New("unique: a job with this key is already enqueued")

// The errors caused by a missing table and by throttling match these.
var (
	errTableNotFound = errors.New("unique: table not found")
	errThrottled     = errors.New("unique: throttled")
)

// API is the part of the DynamoDB client a Store uses: the claims and
// releases (PutItem, UpdateItem, DeleteItem), Held (Scan), New's check of
// the table (DescribeTable) and CreateTable (CreateTable, DescribeTable,
// DescribeTimeToLive, UpdateTimeToLive). *dynamodb.Client satisfies it.
type API interface {
	PutItem(ctx context.Context, params *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, params *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, params *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	Scan(ctx context.Context, params *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
	DescribeTable(ctx context.Context, params *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	CreateTable(ctx context.Context, params *dynamodb.CreateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	DescribeTimeToLive(ctx context.Context, params *dynamodb.DescribeTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTimeToLiveOutput, error)
	UpdateTimeToLive(ctx context.Context, params *dynamodb.UpdateTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error)
}

var _ API = (*dynamodb.Client)(nil)

// Options configures a Store. Every field's zero value selects the
// documented default.
type Options struct {
	// Retention bounds how long a key whose job was lost for good (a purged
	// queue, an expired message) stays held: a claim expires after the
	// message's delay + Retention + one hour. Set it to the queue's
	// MessageRetentionPeriod; never lower, or a job still waiting could
	// lose its key. Zero value: 14 days, the longest SQS allows.
	Retention time.Duration
	// FailOpen sends a job without its key when the claim cannot be made
	// (DynamoDB throttled or down): a duplicate becomes possible, a lost
	// send does not. Zero value: false, fail closed — Send returns the
	// error and sends nothing.
	FailOpen bool
	// RecordJobID records an accepted job's message ID on its key, with
	// one more DynamoDB write per job (an UpdateItem after the send), so
	// that a refused send's Result carries the holding job's MessageID
	// and a folded debounced send its job's. Zero value: false — two
	// writes per job until settled (the claim and the release), and a
	// refused send's Result has no MessageID.
	RecordJobID bool
	// CallTimeout bounds every DynamoDB call. Zero value: 5 s.
	CallTimeout time.Duration
	// ReleaseConcurrency, when positive, lets Settled make up to this many
	// releases (and expiry refreshes) at once, in the background: Settled
	// then returns once its call has started (waiting only while that many
	// are in flight), so the worker's hook keeps up with a job rate above
	// what one DynamoDB call at a time allows (some 100 to 200 a second),
	// and fewer keys wait in the hook's queue when a process dies or its
	// Run stops at FlushTimeout. Call Close after the runtime has stopped
	// (Run returned) to wait for the calls in flight. Not for Lambda,
	// whose environment freezes once the invocation returns. Zero value:
	// each call made in turn, before Settled returns.
	ReleaseConcurrency int
	// Logger receives the Store's warnings (failed releases). Zero value:
	// slog.Default().
	Logger *slog.Logger
	// Now is the clock. Zero value: time.Now. The processes sharing a
	// table compare the expiries they wrote, so keep their clocks close.
	Now func() time.Time
}

// Key is the unique key of one send, and its mode.
type Key struct {
	// Name is the key (at most 1,024 bytes): one job at a time per Name.
	Name string
	// For is the mode. Zero: until settled — the key is held until the
	// job is deleted after success or dead-lettered. Positive: for a
	// period — at most one job per key in a window of For from the
	// accepted send, whatever becomes of it.
	For time.Duration
	// Debounce, when positive, selects debounce mode with this window:
	// sends of the key while its job waits collapse into that one job,
	// which runs once no send has come for Debounce (or MaxDelay after
	// the first send), with the last send's body. The job's other fields
	// (attributes, group) are the first send's. Once the job runs, the key
	// is held until it is settled, as in until-settled mode. Needs the
	// Store's Middleware on the consumers, and a message without Delay.
	Debounce time.Duration
	// MaxDelay caps a debounced job's wait: it runs at most MaxDelay after
	// the send that created it, however many sends follow. Zero: no cap.
	MaxDelay time.Duration
}

// Stats are a Store's counters since New.
type Stats struct {
	// Claimed: sends that took their key (and were enqueued, or are
	// being sent).
	Claimed int64
	// Refused: sends refused as duplicates (ErrDuplicate).
	Refused int64
	// Recovered: claims that took over a key whose expiry had passed (its
	// job was lost, or its release failed).
	Recovered int64
	// Released: keys freed by a settled job (Settled) or by Release.
	Released int64
	// Debounced: sends folded into a waiting debounced job (their body
	// replaced its body, its wait was pushed later).
	Debounced int64
	// Refreshed: expiries pushed later by a snoozed job.
	Refreshed int64
	// FailedOpen: jobs sent without their key because the claim failed
	// (Options.FailOpen).
	FailedOpen int64
	// SendErrors: claims freed again because the send failed.
	SendErrors int64
	// ReleaseErrors: releases and refreshes that failed (the key then ends
	// at its expiry).
	ReleaseErrors int64
	// Requests and RequestErrors count DynamoDB calls (a condition that
	// did not hold is not an error).
	Requests, RequestErrors int64
}

// Store is the table of unique keys. It is safe for concurrent use.
type Store struct {
	client API
	table  string
	o      Options
	st     struct {
		claimed, refused, debounced, recovered, released, refreshed, failedOpen, sendErrors, releaseErrors, requests, requestErrors atomic.Int64
	}
	// slots bounds the releases in flight (Options.ReleaseConcurrency;
	// nil: made in turn); inFlight counts them for Close.
	slots    chan struct{}
	inFlight sync.WaitGroup
	// early holds the claim tokens Middleware released when their job's
	// handler succeeded, until Settled hears of the job's delete (and so
	// makes no second request for it); see forgetEarly for its bound.
	earlyMu sync.Mutex
	early   map[string]time.Time
}

// earlyKeep is how long Middleware remembers a release it made for
// Settled (which normally hears of the delete within a second); past it
// or past earlyMax entries, the oldest are forgotten and Settled's own
// release (conditional on the claim: a no-op) is made instead.
const (
	earlyKeep = 10 * time.Minute
	earlyMax  = 100_000
)

// New returns the Store on table, after checking with one DescribeTable
// call that the table exists with the right key (see CreateTable).
func New(client API, table string, optFns ...func(*Options)) (*Store, error) {
	if client == nil {
		return nil, errors.New("unique.New: client is nil; pass a *dynamodb.Client")
	}
	if table == "" {
		return nil, errors.New("unique.New: table name is empty; pass the name of the keys table (see unique.CreateTable)")
	}
	var o Options
	for _, fn := range optFns {
		fn(&o)
	}
	if o.Retention < 0 || o.CallTimeout < 0 || o.ReleaseConcurrency < 0 {
		return nil, errors.New("unique.New: Options.Retention, CallTimeout and ReleaseConcurrency must not be negative (zero selects the default)")
	}
	if o.Retention == 0 {
		o.Retention = maxRetention
	}
	if o.CallTimeout == 0 {
		o.CallTimeout = 5 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	s := &Store{client: client, table: table, o: o}
	if o.ReleaseConcurrency > 0 {
		s.slots = make(chan struct{}, o.ReleaseConcurrency)
	}
	// Each request is bounded by CallTimeout, so that one hung request
	// leaves time for a second within the check's 2 × CallTimeout.
	ctx, cancel := context.WithTimeout(context.Background(), 2*o.CallTimeout)
	defer cancel()
	t := keysTable(table)
	t.Rule = awscall.Rule{Timeout: o.CallTimeout, OnRequest: func(r awscall.Request) {
		s.st.requests.Add(1)
		if r.Err != nil {
			s.st.requestErrors.Add(1)
		}
	}}
	if err := t.Check(ctx, client); err != nil {
		return nil, err
	}
	return s, nil
}

// CreateTable makes table ready for a Store: it creates it if it does not
// exist (partition key "key" of type S, on-demand capacity), waits until
// it is ACTIVE (at most maxWait; 0 means 5 minutes), and enables
// time-to-live on expiresAt. It is idempotent and changes nothing that is
// already right. It needs dynamodb:CreateTable, DescribeTable,
// DescribeTimeToLive and UpdateTimeToLive.
func CreateTable(ctx context.Context, client API, table string, maxWait time.Duration) error {
	return keysTable(table).Create(ctx, client, maxWait)
}

// keysTable describes the keys table to package dynamo.
func keysTable(name string) dynamo.Table {
	return dynamo.Table{
		Name: name, Key: attrKey, TTL: attrTTL,
		Pkg: "unique", Items: "unique keys", Use: "the unique keys",
		NotFound: errTableNotFound, Throttled: errThrottled,
	}
}

// Stats returns the Store's counters.
func (s *Store) Stats() Stats {
	return Stats{
		Claimed: s.st.claimed.Load(), Refused: s.st.refused.Load(), Debounced: s.st.debounced.Load(), Recovered: s.st.recovered.Load(),
		Released: s.st.released.Load(), Refreshed: s.st.refreshed.Load(), FailedOpen: s.st.failedOpen.Load(),
		SendErrors: s.st.sendErrors.Load(), ReleaseErrors: s.st.releaseErrors.Load(),
		Requests: s.st.requests.Load(), RequestErrors: s.st.requestErrors.Load(),
	}
}

// Send sends m through p as the one job of key k: it claims the key, then
// sends. A key held by another job refuses the send (nothing is sent):
// the error matches ErrDuplicate and, with Options.RecordJobID, the
// Result's MessageID is the holding job's (unless its send is still in
// flight). A send
// that fails frees the claim again. Send fails closed when the claim
// cannot be made, unless Options.FailOpen. m must leave room for one more
// message attribute (SQS allows 10).
func (s *Store) Send(ctx context.Context, p *producer.Producer, k Key, m producer.Message) (producer.Result, error) {
	if p == nil {
		return producer.Result{}, errors.New("unique: Send: producer is nil")
	}
	if k.Name == "" || len(k.Name) > 1024 {
		return producer.Result{}, fmt.Errorf("unique: Send: the key must have 1 to 1,024 bytes, not %d", len(k.Name))
	}
	if k.For < 0 || k.Debounce < 0 || k.MaxDelay < 0 {
		return producer.Result{}, errors.New("unique: Send: Key.For, Debounce and MaxDelay must not be negative (zero For: until settled)")
	}
	if k.Debounce > 0 {
		switch {
		case k.For > 0:
			return producer.Result{}, errors.New("unique: Send: Key.For and Key.Debounce select different modes; set one of them")
		case m.Delay > 0:
			return producer.Result{}, errors.New("unique: Send: a debounced job waits for its window (Key.Debounce); leave Message.Delay zero")
		case len(m.Body) > maxDebounceBody:
			return producer.Result{}, fmt.Errorf("unique: Send: a debounced job's body is kept on its key's DynamoDB item (at most 400 KB), so it may have at most 380,000 bytes, not %d; send a reference to the payload (an S3 key) instead", len(m.Body))
		}
	} else if k.MaxDelay > 0 {
		return producer.Result{}, errors.New("unique: Send: Key.MaxDelay applies to debounce mode only; set Key.Debounce too")
	}
	for attempt := 0; ; attempt++ {
		res, err, again := s.send(ctx, p, k, m)
		if !again || attempt >= 4 {
			return res, err
		}
	}
}

// send makes one try of Send; again reports that a debounced send lost a
// race with its job's start or release and should try again.
func (s *Store) send(ctx context.Context, p *producer.Producer, k Key, m producer.Message) (_ producer.Result, _ error, again bool) {
	now := s.o.Now()
	c := claim{key: k.Name, token: newToken(), mode: modeSettled}
	switch {
	case k.Debounce > 0:
		c.mode, c.due = modeDebounce, now.Add(k.Debounce)
		c.until = c.due.Add(s.o.Retention + margin)
		c.body = &m.Body
		if k.MaxDelay > 0 {
			c.cap = now.Add(k.MaxDelay)
			if c.cap.Before(c.due) { // a cap shorter than the window
				c.due = c.cap
			}
		}
		m.Delay = c.due.Sub(now)
	case k.For > 0:
		c.mode, c.until = modePeriod, now.Add(k.For)
	default:
		c.until = now.Add(max(m.Delay, 0) + s.o.Retention + margin)
	}
	h, took, err := s.claim(ctx, c, now)
	if errors.Is(err, ErrDuplicate) && c.mode == modeDebounce && h.mode == modeDebounce && !h.running {
		due := now.Add(k.Debounce)
		if !h.cap.IsZero() && h.cap.Before(due) {
			due = h.cap
		}
		folded, ferr := s.fold(ctx, c.key, h.token, m.Body, due, due.Add(s.o.Retention+margin))
		switch {
		case ferr != nil && s.o.FailOpen:
			err = ferr // sent below without the key
		case ferr != nil:
			return producer.Result{}, ferr, false
		case !folded:
			return producer.Result{}, nil, true
		default:
			s.st.debounced.Add(1)
			return producer.Result{MessageID: h.job}, nil, false
		}
	}
	switch {
	case errors.Is(err, ErrDuplicate):
		s.st.refused.Add(1)
		return producer.Result{MessageID: h.job}, err, false
	case err != nil && s.o.FailOpen:
		s.st.failedOpen.Add(1)
		s.o.Logger.Warn("unique: the key could not be claimed; sending the job without it (Options.FailOpen)", "key", k.Name, "err", err)
		res, err := p.Send(ctx, m)
		return res, err, false
	case err != nil:
		return producer.Result{}, err, false
	}
	s.st.claimed.Add(1)
	if took {
		s.st.recovered.Add(1)
	}
	m.Attributes = cloneAttributes(m.Attributes)
	if !m.SetAttribute(attribute, types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(c.value())}) {
		s.free(context.WithoutCancel(ctx), c.key, c.token)
		return producer.Result{}, errors.New("unique: Send: the message has no room for the unique key's attribute (SQS allows 10 message attributes, counting those the producer adds)"), false
	}
	res, err := p.Send(ctx, m)
	if err == nil {
		err = res.Err
	}
	if err != nil {
		s.st.sendErrors.Add(1)
		s.free(context.WithoutCancel(ctx), c.key, c.token)
		return res, err, false
	}
	if s.o.RecordJobID {
		if err := s.recordJob(context.WithoutCancel(ctx), c, res.MessageID); err != nil {
			s.o.Logger.Warn("unique: the job was sent but its message ID could not be recorded on its key; refused sends will not learn it", "key", k.Name, "message", res.MessageID, "err", err)
		}
	}
	return res, nil, false
}

// free deletes a claim of this Store's own after a failed send.
func (s *Store) free(ctx context.Context, key, token string) {
	if err := s.release(ctx, key, token); err != nil {
		s.st.releaseErrors.Add(1)
		s.o.Logger.Warn("unique: a failed send's claim could not be freed; the key is held until its expiry", "key", key, "err", err)
	}
}

// Settled frees or keeps the key of a settled job, from the settlement the
// runtime reports: pass it as worker.Options.OnSettled or
// sqslambda.Options.OnSettled, or call it from your own hook. A job held
// until settled frees its key when it was Deleted or DeadLettered; a
// Snoozed one pushes its key's expiry later (its message may have been
// relayed as a fresh copy, whose retention starts anew); every other
// outcome (retrying, released, lost, abandoned, delayed) keeps the key.
// Messages without a unique key are ignored. Each call is bounded by
// Options.CallTimeout; a failure is logged and counted, and the key then
// ends at its expiry. With Options.ReleaseConcurrency the call is made in
// the background (see Close).
func (s *Store) Settled(st worker.Settlement) {
	if st.Message == nil {
		return
	}
	// The message as received: an enveloped subscription's key is in
	// the SNS envelope (fanout.Unwrap changed only the handler's copy).
	u, ok := uniqueattr.ParseMessage(st.Message.MessageAttributes, st.Message.Body)
	c := claim{key: u.Key, token: u.Token, mode: u.Mode}
	if !ok || (c.mode != modeSettled && c.mode != modeDebounce) {
		return
	}
	switch st.Outcome {
	case worker.Deleted, worker.DeadLettered, worker.Snoozed:
	default:
		return
	}
	if st.Outcome != worker.Snoozed && s.forgetEarly(c.token) {
		return // released by Middleware when the handler succeeded
	}
	if s.slots == nil {
		s.settle(st, c)
		return
	}
	s.slots <- struct{}{}
	s.inFlight.Add(1)
	go func() {
		defer func() { <-s.slots; s.inFlight.Done() }()
		s.settle(st, c)
	}()
}

// Close waits until the releases and refreshes Settled started in the
// background (Options.ReleaseConcurrency) are done, or ctx ends (its
// error is then returned: the keys of the calls still in flight may be
// held until their expiry). Call it once the runtime no longer calls
// Settled: after the worker's Run returned. Without ReleaseConcurrency
// there is nothing to wait for. The Store stays usable.
func (s *Store) Close(ctx context.Context) error {
	done := make(chan struct{})
	go func() { s.inFlight.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// settle makes the DynamoDB call of one settlement (Settled).
func (s *Store) settle(st worker.Settlement, c claim) {
	ctx := context.Background()
	switch st.Outcome {
	case worker.Deleted, worker.DeadLettered:
		if err := s.release(ctx, c.key, c.token); err != nil {
			s.st.releaseErrors.Add(1)
			s.o.Logger.Warn("unique: a settled job's key could not be freed; it is held until its expiry", "key", c.key, "message", st.Message.ID, "outcome", st.Outcome.String(), "err", err)
			return
		}
		s.st.released.Add(1)
	case worker.Snoozed:
		until := s.o.Now().Add(st.Delay + s.o.Retention + margin)
		if err := s.refresh(ctx, c.key, c.token, until); err != nil {
			s.st.releaseErrors.Add(1)
			s.o.Logger.Warn("unique: a snoozed job's key expiry could not be pushed later", "key", c.key, "message", st.Message.ID, "err", err)
			return
		}
		s.st.refreshed.Add(1)
	}
}

// Release frees key at once, whoever holds it: for an operator whose
// queue was purged, or whose jobs were deleted by hand. It reports
// whether the key was held.
func (s *Store) Release(ctx context.Context, key string) (bool, error) {
	held, err := s.forget(ctx, key)
	if err == nil && held {
		s.st.released.Add(1)
	}
	return held, err
}

// Held counts the keys held now (their expiry not passed), with a Scan of
// the whole table: for operators and tests, not for a hot path.
func (s *Store) Held(ctx context.Context) (int, error) { return s.countHeld(ctx, s.o.Now()) }

// Middleware frees the key of a job held until settled (or debounced)
// once its handler has succeeded, before the runtime deletes the message,
// and runs debounced jobs (Key.Debounce): pass it in worker.Chain (or
// wrap the sqslambda handler with it), beside Settled as the runtime's
// settlement hook. Its release is one conditional DeleteItem; Settled then
// makes none for that job, and makes it after the delete when the
// Middleware's failed. A failing handler keeps the key: Settled frees it
// if the job is dead-lettered. When a debounced
// job's message arrives before its window has been quiet, the job waits:
// the Middleware sleeps through a wait of up to one second, and snoozes
// the message for a longer one (retry.Snooze: no attempt spent). Once the
// window is over it marks the job as running (one conditional UpdateItem;
// later sends of the key are then refused until the job is settled),
// replaces the message's body with the last send's, and calls next. A
// debounced message whose key was released already (a repeated delivery
// of a finished job) or taken over after its expiry is dropped without
// calling next. Messages of the other modes and without a key go straight
// to next.
func (s *Store) Middleware(next worker.Handler) worker.Handler {
	return worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
		c, ok := parse(m.MessageAttributes)
		if !ok || (c.mode != modeSettled && c.mode != modeDebounce) {
			return next.Handle(ctx, m)
		}
		if c.mode == modeSettled {
			return s.releaseOnSuccess(ctx, c, m, next)
		}
		for {
			body, wait, found, err := s.start(ctx, c.key, c.token, s.o.Now())
			switch {
			case err != nil:
				return err
			case !found:
				s.o.Logger.Info("unique: a debounced job whose key is no longer its own was dropped (a repeated delivery, or its key was released or expired)", "key", c.key, "message", m.ID)
				return nil
			case wait <= 0:
				m.Body = body
				return s.releaseOnSuccess(ctx, c, m, next)
			case wait > debounceSleep:
				return retry.Snooze(wait, "unique: the debounce window of key "+strconv.Quote(c.key)+" is not over")
			}
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-t.C:
			}
		}
	})
}

// releaseOnSuccess runs next and, when it succeeds (the runtime will
// delete the message), frees the key at once: before the delete, so that
// a process killed between the two leaves no key held until its expiry
// (the message comes back and runs again, as SQS redelivers any job whose
// delete did not happen; its second release is a no-op). A failed
// release is left to Settled, after the delete.
func (s *Store) releaseOnSuccess(ctx context.Context, c claim, m *worker.Message, next worker.Handler) error {
	if err := next.Handle(ctx, m); err != nil {
		return err
	}
	if err := s.release(context.WithoutCancel(ctx), c.key, c.token); err != nil {
		s.o.Logger.Info("unique: the key of a succeeded job could not be freed before its delete; Settled frees it after", "key", c.key, "message", m.ID, "err", err)
		return nil
	}
	s.st.released.Add(1)
	s.rememberEarly(c.token)
	return nil
}

// rememberEarly records that Middleware released token's key.
func (s *Store) rememberEarly(token string) {
	now := s.o.Now()
	s.earlyMu.Lock()
	defer s.earlyMu.Unlock()
	if s.early == nil {
		s.early = map[string]time.Time{}
	}
	if len(s.early) >= earlyMax {
		for t, at := range s.early {
			if now.Sub(at) > earlyKeep || len(s.early) >= earlyMax {
				delete(s.early, t)
			}
		}
	}
	s.early[token] = now
}

// forgetEarly reports whether Middleware released token's key, and
// forgets it.
func (s *Store) forgetEarly(token string) bool {
	s.earlyMu.Lock()
	defer s.earlyMu.Unlock()
	_, ok := s.early[token]
	delete(s.early, token)
	return ok
}

// claim is one send's claim on a key.
type claim struct {
	key, token, mode string
	until            time.Time
	// Debounce mode: the job's body, when it is due, and its cap (zero:
	// none).
	body     *string
	due, cap time.Time
}

// holder is what a refused claim learns of the key's holder.
type holder struct {
	job, token, mode string
	cap              time.Time // debounce: the cap on its due time
	running          bool      // debounce: the job has started
}

// value is the claim's message attribute value.
func (c claim) value() string {
	return uniqueattr.Claim{Mode: c.mode, Token: c.token, Key: c.key}.Value()
}

// parse reads a message's claim from its attributes.
func parse(attrs map[string]types.MessageAttributeValue) (claim, bool) {
	c, ok := uniqueattr.Parse(attrs)
	return claim{key: c.Key, token: c.Token, mode: c.Mode}, ok
}

func newToken() string {
	var b [8]byte
	_, _ = crand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func cloneAttributes(a map[string]types.MessageAttributeValue) map[string]types.MessageAttributeValue {
	out := make(map[string]types.MessageAttributeValue, len(a)+1)
	for k, v := range a {
		out[k] = v
	}
	return out
}
