package schedules

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/idempotency"
	"github.com/sqsworker/sqsworker/internal/schedenv"
	"github.com/sqsworker/sqsworker/worker"
)

// The message attributes Unwrap adds to a scheduled job: the schedule's
// ARN and the tick's scheduled time (RFC 3339).
const (
	attrARN  = "sqsworker.schedule-arn"
	attrTime = "sqsworker.scheduled-time"
)

// Tick is one firing of a schedule, as the job it sent carries it.
type Tick struct {
	// Schedule and Group name the schedule; ARN is its ARN.
	Schedule, Group, ARN string
	// Time is the tick's scheduled time (not the time Scheduler sent it:
	// a flexible window or retries make that later).
	Time time.Time
	// Attempt is Scheduler's delivery attempt, 1 for the first.
	Attempt int
}

// TickOf returns the tick a message unwrapped by Unwrap came from, and
// false for a message no schedule sent.
func TickOf(m *worker.Message) (Tick, bool) {
	arn := m.MessageAttributes[attrARN]
	at := m.MessageAttributes[attrTime]
	if arn.StringValue == nil || at.StringValue == nil {
		return Tick{}, false
	}
	t, err := time.Parse(time.RFC3339, *at.StringValue)
	if err != nil {
		return Tick{}, false
	}
	tk := Tick{ARN: *arn.StringValue, Time: t, Attempt: 1}
	// arn:aws:scheduler:region:account:schedule/group/name
	if _, rest, ok := strings.Cut(tk.ARN, ":schedule/"); ok {
		tk.Group, tk.Schedule, _ = strings.Cut(rest, "/")
	}
	if a := m.MessageAttributes["sqsworker.schedule-attempt"]; a.StringValue != nil {
		tk.Attempt, _ = strconv.Atoi(*a.StringValue)
	}
	return tk, true
}

// TickKey is an idempotency.KeyFunc for scheduled jobs: the schedule's ARN
// and the tick's time, the same for every delivery of one tick. With
// idempotency.New(…, func(o *idempotency.Options) { o.Key =
// schedules.TickKey }) inside Unwrap, each tick runs once however often
// Scheduler delivers it. It fails on a message no schedule sent.
func TickKey(m *worker.Message) (string, error) {
	t, ok := TickOf(m)
	if !ok {
		return "", fmt.Errorf("schedules: message %s was not sent by a schedule (or Unwrap does not run before this key function)", m.ID)
	}
	return t.ARN + "@" + t.Time.UTC().Format(time.RFC3339), nil
}

// UnwrapOptions configures Unwrap.
type UnwrapOptions struct {
	// Dedup, when set, is asked before a tick's job runs: key is TickKey's
	// and messageID the SQS message's ID. It returns true for the first
	// delivery of the tick and for every redelivery of that same message
	// (a retry after a failure), false for another message of a tick
	// already claimed (Scheduler delivers at least once), which is then
	// skipped and deleted. Back it with a conditional write (a DynamoDB
	// PutItem with attribute_not_exists(key) OR messageId = :id, and a
	// TTL) so it holds across processes; or use idempotency with TickKey.
	// nil runs every delivery, unless Table is set.
	Dedup func(ctx context.Context, key, messageID string) (bool, error)
	// Table and DynamoDB, when set, keep the ticks' state in a DynamoDB
	// table, so that it holds across processes. Each tick is claimed by a
	// conditional write, as Dedup describes (Dedup, when also set, is used
	// instead). For a schedule whose Overlap is "skip", the run holds a
	// lease on the schedule (a conditional write, renewed every third of
	// Lease while the handler runs, removed when it returns): a tick that
	// arrives while any process holds it is skipped as "overlap". The
	// table is an idempotency table (idempotency.CreateTable makes one);
	// these items' keys begin with "sqsworker.schedule/", so it may be
	// shared with idempotency Guards. The calls are PutItem, UpdateItem
	// and DeleteItem; *dynamodb.Client is a DynamoDB.
	Table    string
	DynamoDB idempotency.API
	// Lease bounds how long a process that died while running a "skip"
	// schedule's tick keeps the schedule's next ticks skipped: its lease
	// ends at most Lease after its last renewal. A run whose lease could
	// not be renewed before it ended (DynamoDB unreachable) or was taken
	// over has its context cancelled. The processes' clocks must agree to
	// well within Lease. 0 means 1 minute.
	Lease time.Duration
	// OnSkip is told of every delivery Unwrap skips, with the reason
	// "duplicate" (Dedup said so) or "overlap" (the schedule's Overlap is
	// "skip" and its previous run is still running, in this process or,
	// with Table, in any).
	OnSkip func(ctx context.Context, t Tick, reason string)
}

// Unwrap returns middleware that turns a job a schedule sent back into
// the message its declaration describes: the body and message attributes
// of the job (Scheduler's SQS target carries a body only, so they travel
// in an envelope), plus the attributes "sqsworker.schedule-arn" and
// "sqsworker.scheduled-time" that TickOf reads. Messages no schedule sent
// pass unchanged. Put it first in the chain, before idempotency.
//
// It skips (and so deletes) a delivery when UnwrapOptions.Dedup or Table
// says another delivery claimed the tick, and, for schedules whose Overlap
// is "skip", a tick that arrives while the previous run of the same
// schedule is still running in this process or, with UnwrapOptions.Table,
// in any process; it counts neither as an attempt. A redelivery of a
// message whose earlier attempt still holds the schedule's lease (its
// process died, or its visibility timeout ended mid-run) fails instead,
// and is retried after its visibility timeout.
func Unwrap(optFns ...func(*UnwrapOptions)) worker.Middleware {
	var o UnwrapOptions
	for _, f := range optFns {
		f(&o)
	}
	var store *tickStore
	if o.Table != "" && o.DynamoDB != nil {
		store = &tickStore{db: o.DynamoDB, table: o.Table, lease: o.Lease}
		if store.lease <= 0 {
			store.lease = defaultLease
		}
	}
	dedup := o.Dedup
	if dedup == nil && store != nil {
		dedup = store.claim
	}
	misconfigured := (o.Table == "") != (o.DynamoDB == nil)
	var mu sync.Mutex
	running := map[string]int{}
	return func(next worker.Handler) worker.Handler {
		return worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			e, ok := schedenv.Parse(m.Body)
			if !ok {
				return next.Handle(ctx, m)
			}
			u := *m
			u.Body = e.Body
			u.MessageAttributes = make(map[string]sqstypes.MessageAttributeValue, len(e.Attributes)+3)
			for k, v := range e.Attributes {
				u.MessageAttributes[k] = v.Value()
			}
			u.MessageAttributes[attrARN] = sqstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(e.ARN)}
			u.MessageAttributes[attrTime] = sqstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(e.Time)}
			if e.Attempt != "" {
				u.MessageAttributes["sqsworker.schedule-attempt"] = sqstypes.MessageAttributeValue{DataType: aws.String("Number"), StringValue: aws.String(e.Attempt)}
			}
			if misconfigured {
				return fmt.Errorf("schedules: UnwrapOptions.Table and DynamoDB go together; set both (or neither)")
			}
			tick, _ := TickOf(&u)
			skip := func(reason string) error {
				if o.OnSkip != nil {
					o.OnSkip(ctx, tick, reason)
				}
				return nil
			}
			if dedup != nil {
				key, _ := TickKey(&u)
				first, err := dedup(ctx, key, m.ID)
				if err != nil {
					return fmt.Errorf("schedules: checking tick %s: %w", key, err)
				}
				if !first {
					return skip("duplicate")
				}
			}
			if e.Overlap == "skip" {
				mu.Lock()
				busy := running[e.ARN] > 0
				if !busy {
					running[e.ARN]++
				}
				mu.Unlock()
				if busy {
					return skip("overlap")
				}
				defer func() {
					mu.Lock()
					running[e.ARN]--
					mu.Unlock()
				}()
				if store != nil {
					r, holder, err := store.acquire(ctx, e.ARN, e.Time, m.ID)
					if err != nil {
						return err
					}
					if r == nil && holder == m.ID {
						return fmt.Errorf("schedules: tick %s of %s: an earlier attempt of this message still holds the schedule's run lease; it is retried after its visibility timeout (the lease ends at most UnwrapOptions.Lease after that attempt's process stopped)", e.Time, e.ARN)
					}
					if r == nil {
						return skip("overlap")
					}
					rctx, cancel := context.WithCancelCause(ctx)
					stop, kept := make(chan struct{}), make(chan struct{})
					go func() { r.keep(rctx, cancel, stop, r.until); close(kept) }()
					defer func() {
						close(stop)
						<-kept
						cancel(nil)
						ectx, done := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
						r.end(ectx)
						done()
					}()
					return next.Handle(rctx, &u)
				}
			}
			return next.Handle(ctx, &u)
		})
	}
}
