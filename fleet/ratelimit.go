package fleet

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sqsworker/sqsworker/internal/awscall"
	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/worker"
)

// The attributes of a rate-limit bucket item.
const (
	attrTokens  = "milliTokens" // tokens left at attrAt, in thousandths
	attrAt      = "at"          // the bucket's time when attrTokens was computed, ms (see fetch)
	attrVersion = "ver"         // bumped by every write; writes are conditional on it
)

// RateLimitOptions configures a RateLimit. Every field's zero value selects
// the documented default.
type RateLimitOptions struct {
	// Key picks the limit's key from a message for Middleware: each key
	// has its own bucket (a downstream per tenant, say). Zero value: one
	// bucket for every message.
	Key func(m *worker.Message) string
	// Burst is how many tokens the bucket holds: how many jobs may start
	// at once after a quiet spell. Over any window of t seconds at most
	// Burst + rate × t jobs start. Zero value: a fifth of a second's worth
	// (at least 1), so a 10 s window stays within 2% of the limit. A
	// larger burst takes more tokens per request (fewer requests per job)
	// and absorbs DynamoDB's latency: tokens that would overflow the
	// bucket while requests are on their way are not lost.
	Burst int
	// MaxWait is how long a job waits in-process for a token before it is
	// snoozed instead (hidden until a token is due; a snooze costs a
	// receive, see the package documentation). Zero value: 1 s. Negative:
	// never wait, snooze at once.
	MaxWait time.Duration
	// Unkeyed says what becomes of a message Key gives no key ("": no
	// MessageGroupId for ByGroup): "share" (one bucket "" for all of
	// them), "snooze" (snoozed for ErrorSnooze each time) or "refuse"
	// (dead-lettered at once), as CapOptions.Unkeyed. Zero value: "share".
	Unkeyed string
	// FailOpen lets jobs through when DynamoDB cannot be asked (an outage,
	// throttling past the library's retry): the downstream may then get more
	// than the limit. Zero value: false — fail closed, the job is snoozed
	// for ErrorSnooze; nothing is lost or dead-lettered.
	FailOpen bool
	// ErrorSnooze is how long a job is hidden when DynamoDB cannot be
	// asked and FailOpen is false. Zero value: 10 s.
	ErrorSnooze time.Duration
}

// RateLimit is a token bucket shared by every process that makes one with
// the same name and rate on the same table: at most rate jobs per second
// start across the fleet (plus the burst). Tokens are taken from DynamoDB
// in batches for the jobs waiting in this process, with conditional
// writes, so a job costs a fraction of a DynamoDB request when the fleet
// is busy.
type RateLimit struct {
	f       *Fleet
	name    string
	rate    float64 // tokens per second
	o       RateLimitOptions
	unkeyed *unkeyed
	down    outage

	mu      sync.Mutex
	buckets map[string]*bucket
}

// bucket is this process's side of one key's bucket: the jobs waiting for
// a token, the tokens taken for them, and the item as last seen.
type bucket struct {
	mu       sync.Mutex
	waiting  int           // jobs waiting for a token
	spare    int           // tokens taken and not yet handed out
	fetching bool          // a waiter is asking DynamoDB
	wake     chan struct{} // closed when spare tokens arrive or a fetch ends
	notUntil time.Time     // no token is due before then (from the item)

	// conflicts grows with each write that lost a race with another
	// process, and shrinks with each that won: it spreads the next
	// attempts of processes hungry for the same tokens.
	conflicts int

	known bool  // the item as last seen (an upper bound on its tokens)
	milli int64 // tokens × 1000 at at
	at    int64 // the bucket's time, ms
	ver   int64
	seen  time.Time // when this process learnt it, on its clock
}

// RateLimit returns the rate limit name allowing perSecond jobs per second
// across the fleet. perSecond must be positive.
func (f *Fleet) RateLimit(name string, perSecond float64, optFns ...func(*RateLimitOptions)) (*RateLimit, error) {
	if err := checkName("RateLimit", name); err != nil {
		return nil, err
	}
	if !(perSecond > 0) || math.IsInf(perSecond, 0) {
		return nil, fmt.Errorf("fleet: RateLimit %q: perSecond is %v; use a positive rate (a limit of 0 would stop every job: pause the queue instead, see Pauser)", name, perSecond)
	}
	var o RateLimitOptions
	for _, fn := range optFns {
		fn(&o)
	}
	if o.Burst < 0 || o.ErrorSnooze < 0 {
		return nil, fmt.Errorf("fleet: RateLimit %q: Burst and ErrorSnooze must not be negative (zero selects the default)", name)
	}
	if o.Burst == 0 {
		o.Burst = max(1, int(math.Ceil(perSecond/5)))
	}
	if o.MaxWait == 0 {
		o.MaxWait = time.Second
	}
	if o.ErrorSnooze == 0 {
		o.ErrorSnooze = 10 * time.Second
	}
	u, err := newUnkeyed(f, fmt.Sprintf("RateLimit %q", name), o.Unkeyed, o.ErrorSnooze)
	if err != nil {
		return nil, err
	}
	return &RateLimit{f: f, name: name, rate: perSecond, o: o, unkeyed: u, down: outage{f: f}, buckets: map[string]*bucket{}}, nil
}

func (l *RateLimit) bucket(key string) *bucket {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[key]
	if b == nil {
		b = &bucket{wake: make(chan struct{})}
		l.buckets[key] = b
	}
	return b
}

// take takes one token of key's bucket, waiting in-process up to
// RateLimitOptions.MaxWait. It returns 0 with a token; otherwise how long
// until one is due (the job should wait that long, e.g. snoozed), or the
// error that kept it from asking DynamoDB (ctx's, or DynamoDB's).
func (l *RateLimit) take(ctx context.Context, key string) (time.Duration, error) {
	b := l.bucket(key)
	now := l.f.o.Now()
	deadline := now.Add(max(l.o.MaxWait, 0))
	waited := false
	var snooze time.Duration // the exact time until a token is due, as last learnt
	b.mu.Lock()
	b.waiting++
	defer func() {
		if b.waiting--; b.waiting == 0 && !b.fetching {
			// Tokens taken for jobs that stopped waiting are dropped, not
			// kept for later: a token is used within its fetch or never.
			b.spare = 0
		}
		b.mu.Unlock()
		if waited {
			l.f.st.tokenWaits.Add(1)
			l.f.st.waitingForToken.Add(-1)
		}
	}()
	for {
		if b.spare > 0 {
			b.spare--
			l.f.st.tokens.Add(1)
			return 0, nil
		}
		now = l.f.o.Now()
		var wait time.Duration
		switch {
		case b.fetching:
			wait = deadline.Sub(now) // until the fetch ends
		case now.Before(b.notUntil):
			wait = b.notUntil.Sub(now)
		default:
			b.fetching = true
			k := min(b.waiting, l.o.Burst)
			b.mu.Unlock()
			got, due, err := l.fetch(ctx, key, b, k)
			b.mu.Lock()
			b.fetching = false
			b.spare += got
			if got == 0 && err == nil {
				// Waiting processes ask at random moments after the tokens
				// are due, over a spell that grows with the races lost.
				spread := float64(time.Second) / l.rate * float64(min(k, l.o.Burst)) / 2 * float64(int(1)<<b.conflicts)
				b.notUntil = l.f.o.Now().Add(due + time.Duration(rand.Float64()*spread))
				snooze = due
			}
			close(b.wake)
			b.wake = make(chan struct{})
			if err != nil {
				return 0, err
			}
			continue
		}
		if !b.fetching && now.Add(wait).After(deadline) || !now.Before(deadline) {
			// No token within MaxWait: the job waits outside.
			if snooze == 0 && now.Before(b.notUntil) {
				snooze = b.notUntil.Sub(now)
			}
			return max(snooze, time.Duration(float64(time.Second)/l.rate)), nil
		}
		if !waited {
			waited = true
			l.f.st.waitingForToken.Add(1)
		}
		wake := b.wake
		b.mu.Unlock()
		t := time.NewTimer(min(wait, deadline.Sub(now)))
		select {
		case <-wake:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
		b.mu.Lock()
		if err := ctx.Err(); err != nil {
			return 0, context.Cause(ctx)
		}
	}
}

// fetch takes up to k tokens from the bucket's item, with as few calls as
// the last seen state allows: none when it shows no token due, one
// conditional write when it is current. It returns the tokens taken, or
// none and how long until k (at least one) are due.
func (l *RateLimit) fetch(ctx context.Context, key string, b *bucket, k int) (int, time.Duration, error) {
	pk := "rate|" + l.name + "|" + key
	burstMilli := int64(l.o.Burst) * 1000
	for range 5 {
		now := l.f.o.Now()
		milli, at := burstMilli, now.UnixMilli() // a new bucket starts full
		if b.known {
			// The bucket's time is this clock's reading, or, when that is
			// behind the item's (another process's clock is ahead), the
			// item's moved on by what this clock measured since it was
			// learnt: a process whose clock is behind still refills the
			// bucket instead of waiting for its clock to catch up. A clock
			// ahead adds its lead's worth once (at most Burst).
			elapsed := max(now.Sub(b.seen).Milliseconds(), 0)
			at = max(b.at+elapsed, now.UnixMilli())
			milli = min(burstMilli, b.milli+int64(float64(at-b.at)*l.rate))
		}
		// Take the tokens for every waiting job in one request: wait until
		// they are all due, plus jitter, so that processes waiting on one
		// bucket do not all ask at the same moment.
		// The jobs that came to wait since the fetch began share its
		// request.
		b.mu.Lock()
		k = max(k, b.waiting-b.spare)
		b.mu.Unlock()
		want := int64(min(k, l.o.Burst)) * 1000
		if milli < want {
			return 0, time.Duration(float64(want-milli) / l.rate * float64(time.Millisecond)), nil
		}
		take := want / 1000
		in := &dynamodb.UpdateItemInput{
			TableName:        aws.String(l.f.table),
			Key:              itemKey(pk),
			UpdateExpression: aws.String("SET #t = :t, #at = :at, #v = :v, #e = :e"),
			ExpressionAttributeNames: map[string]string{
				"#t": attrTokens, "#at": attrAt, "#v": attrVersion, "#e": ttlAttribute,
			},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":t": num(milli - take*1000), ":at": num(at), ":v": num(b.ver + 1), ":e": expires(now),
			},
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}
		if b.known {
			in.ConditionExpression = aws.String("#v = :old")
			in.ExpressionAttributeValues[":old"] = num(b.ver)
		} else {
			in.ConditionExpression = aws.String("attribute_not_exists(#v)")
			in.ExpressionAttributeValues[":v"] = num(1)
		}
		_, err := call(l.f, ctx, func(ctx context.Context) (*dynamodb.UpdateItemOutput, error) {
			return l.f.client.UpdateItem(ctx, in, awscall.DynamoDBOff)
		})
		if err == nil {
			b.conflicts = max(b.conflicts-1, 0)
			if b.known {
				b.ver++
			} else {
				b.ver = 1
			}
			b.known, b.milli, b.at, b.seen = true, milli-take*1000, at, now
			return int(take), 0, nil
		}
		if !isConditionFailed(err) {
			return 0, 0, l.f.explain(err, fmt.Sprintf("taking tokens of rate limit %q (key %q)", l.name, key))
		}
		// Another process wrote first: read what it wrote, and try again.
		b.conflicts = min(b.conflicts+1, 2)
		item, ok := failedItem(err)
		if !ok {
			if item, err = l.f.getItem(ctx, pk); err != nil {
				return 0, 0, l.f.explain(err, fmt.Sprintf("reading rate limit %q (key %q)", l.name, key))
			}
		}
		b.known = item != nil
		b.milli, b.at, b.ver = numAttr(item, attrTokens), numAttr(item, attrAt), numAttr(item, attrVersion)
		b.seen = l.f.o.Now()
	}
	// Five processes wrote in between: the bucket is busy; try again soon.
	return 0, time.Duration(float64(time.Second) / l.rate), nil
}

// Middleware returns middleware that starts a job only with a token of
// its key's bucket: a job over the limit waits up to MaxWait, then is
// snoozed (retry.Snooze: hidden until a token is due, no attempt counted,
// never dead-lettered for it).
func (l *RateLimit) Middleware() worker.Middleware {
	return func(next worker.Handler) worker.Handler {
		return worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			key := ""
			if l.o.Key != nil {
				if key = l.o.Key(m); key == "" {
					if err := l.unkeyed.handle(m); err != nil {
						return err
					}
				}
			}
			wait, err := time.Duration(0), l.down.check(l.f.o.Now())
			if err == nil {
				wait, err = l.take(ctx, key)
				l.down.note(ctx, "rate|"+l.name+"|"+key, err)
			}
			switch {
			case err != nil && ctx.Err() != nil:
				return retry.Snooze(time.Second, "fleet: rate limit "+l.name+": "+err.Error())
			case err != nil && l.o.FailOpen:
				l.f.st.failedOpen.Add(1)
				l.f.o.Logger.Warn("fleet: rate limit could not be checked; the job runs (FailOpen)", "limit", l.name, "key", key, "message", m.ID, "err", err)
			case err != nil:
				l.f.st.failedClosed.Add(1)
				l.f.o.Logger.Warn("fleet: rate limit could not be checked; the job is snoozed (fail closed)", "limit", l.name, "key", key, "message", m.ID, "in", l.o.ErrorSnooze, "err", err)
				return retry.Snooze(l.o.ErrorSnooze, "fleet: rate limit "+l.name+" unavailable: "+err.Error())
			case wait > 0:
				l.f.st.rateSnoozed.Add(1)
				return retry.Snooze(snoozeFor(wait), fmt.Sprintf("fleet: rate limit %s (%v/s) reached for key %q", l.name, l.rate, key))
			}
			return next.Handle(ctx, m)
		})
	}
}
