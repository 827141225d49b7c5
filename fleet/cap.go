package fleet

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/worker"
)

// attrHolders is a cap item's map of holder → lease expiry (epoch ms).
const attrHolders = "holders"

// errCapFull is returned by Cap.acquire when the key already has its
// limit of live slots.
var errCapFull = errors.New("fleet: cap full")

// errSlotLost is returned by capSlot.renew when the slot is no longer held:
// its lease expired and another holder's acquisition removed it.
var errSlotLost = errors.New("fleet: slot lost")

// CapOptions configures a Cap. Every field's zero value selects the
// documented default.
type CapOptions struct {
	// Key picks the cap's key from a message for Middleware: each key has
	// its own limit (ByGroup caps each tenant). Zero value: one key for
	// every message.
	Key func(m *worker.Message) string
	// Lease is how long a slot lives without renewal when the job's
	// context tells no visibility deadline (outside the worker, e.g. in
	// the Lambda adapter: then the lease is renewed every Lease/3 while
	// the job runs). Inside the worker the slot follows the message's own
	// lease (worker.VisibilityDeadline) plus a margin of a quarter of it
	// (250 ms to 5 s). Zero value: 30 s.
	Lease time.Duration
	// FullSnooze is how long a job that finds the cap full is hidden
	// before it is tried again (plus jitter), the first time; each
	// further receive of the same message doubles it, up to MaxSnooze, so
	// a flooding key's backlog backs off and leaves the receives to other
	// keys (and a message is received fewer times while it waits). Set it
	// near the jobs' duration (SQS counts in whole seconds, so at least
	// 1 s). Zero value: 5 s.
	FullSnooze time.Duration
	// MaxWait is how long a job that finds the cap full waits in-process
	// for a slot before it is snoozed: it is handed a slot this process
	// frees at once (no DynamoDB request), and asks DynamoDB again every
	// half second for a slot another process freed. Its message stays
	// leased by the worker's heartbeat meanwhile, and it holds one of the
	// worker's handlers: so a job waits only in a process that runs jobs
	// of its key (one of their slots frees within a job's time), and at
	// most MaxWaiting jobs of a key wait at once in a process; the others
	// are snoozed at once. Zero value: 1 s. Negative: never wait, snooze
	// at once.
	MaxWait time.Duration
	// MaxWaiting is how many jobs of one key may wait in-process for a
	// slot at once in this process (see MaxWait). A key then occupies at
	// most its running jobs plus MaxWaiting of a process's handlers, so
	// with worker.Options.Concurrency above the cap plus MaxWaiting a
	// flooding key always leaves handlers to other keys. One waiting job
	// is enough to keep a key's slots busy when the worker has its next
	// job prefetched: a freed slot goes to the waiting job, and the freed
	// handler takes the next job, which waits in turn. Zero value: 1.
	MaxWaiting int
	// MaxSnooze caps FullSnooze's doubling. A higher cap leaves more of
	// the receives to other keys while one floods, but lets the flooding
	// key's own slots idle longer between its jobs. Zero value: 4 ×
	// FullSnooze.
	MaxSnooze time.Duration
	// FailOpen lets jobs run without a slot when DynamoDB cannot be asked:
	// the cap may then be exceeded. Zero value: false — fail closed, the
	// job is snoozed for ErrorSnooze.
	FailOpen bool
	// ErrorSnooze is how long a job is hidden when DynamoDB cannot be
	// asked and FailOpen is false. Zero value: 10 s.
	ErrorSnooze time.Duration
}

// Cap limits how many jobs of a key run at once across the fleet. Each
// running job holds a slot: an entry in the key's DynamoDB item with a
// lease expiry that follows the message's visibility deadline, renewed
// while the job runs, removed when it ends. A process that dies (kill -9)
// stops renewing, and its slots expire with its messages' leases: the
// next acquisition drops them.
type Cap struct {
	f     *Fleet
	name  string
	limit int
	o     CapOptions

	mu    sync.Mutex
	cache map[string]capItem // the items as last seen, by key
	held  map[string]int     // slots this process holds, by key
	full  map[string]time.Time
	// full: until when a key is taken for full without asking DynamoDB
	// (found full, and no slot of it released here since)
	waiters map[string][]chan *capSlot
	// gone: by key, holders of this process whose acquisition failed (its
	// write may have taken effect) or whose release did not get through:
	// no job runs under them, and the next write of the key here drops them
	gone map[string]map[string]bool
	// waiters: the jobs waiting in-process for a slot, by key, first come
	// first served; a slot this process frees goes to the first of them
}

// fullFor is how long a key found full is taken for full without a
// request: a flood of one tenant's jobs is snoozed at the speed of the
// handlers, not of DynamoDB. A slot released by another process is seen
// this much later at most.
const fullFor = 500 * time.Millisecond

// capItem is a cap item as read or written.
type capItem struct {
	holders map[string]int64
	ver     int64
	exists  bool
}

// Cap returns the cap name allowing limit jobs of each key to run at once
// across the fleet. limit must be at least 1.
func (f *Fleet) Cap(name string, limit int, optFns ...func(*CapOptions)) (*Cap, error) {
	if err := checkName("Cap", name); err != nil {
		return nil, err
	}
	if limit < 1 {
		return nil, fmt.Errorf("fleet: Cap %q: limit is %d; use 1 or more (a cap of 0 would stop every job: pause the queue instead, see Pauser)", name, limit)
	}
	var o CapOptions
	for _, fn := range optFns {
		fn(&o)
	}
	if o.Lease < 0 || o.FullSnooze < 0 || o.MaxSnooze < 0 || o.ErrorSnooze < 0 || o.MaxWaiting < 0 {
		return nil, fmt.Errorf("fleet: Cap %q: Lease, FullSnooze, MaxSnooze, ErrorSnooze and MaxWaiting must not be negative (zero selects the default; a negative MaxWait turns waiting off)", name)
	}
	if o.MaxWait == 0 {
		o.MaxWait = time.Second
	}
	if o.MaxWaiting == 0 {
		o.MaxWaiting = 1
	}

	if o.Lease == 0 {
		o.Lease = 30 * time.Second
	}
	if o.Lease < 3*time.Second {
		return nil, fmt.Errorf("fleet: Cap %q: Lease is %v; use 3 s or more, so that renewals (every Lease/3) have time to reach DynamoDB", name, o.Lease)
	}
	if o.FullSnooze == 0 {
		o.FullSnooze = 5 * time.Second
	}
	if o.MaxSnooze == 0 {
		o.MaxSnooze = 4 * o.FullSnooze
	}
	o.MaxSnooze = max(o.MaxSnooze, o.FullSnooze)
	if o.ErrorSnooze == 0 {
		o.ErrorSnooze = 10 * time.Second
	}
	return &Cap{f: f, name: name, limit: limit, o: o, cache: map[string]capItem{}, held: map[string]int{}, full: map[string]time.Time{}, waiters: map[string][]chan *capSlot{}, gone: map[string]map[string]bool{}}, nil
}

// capSlot is one running job's place under a Cap. Release it when the job
// ends.
type capSlot struct {
	c      *Cap
	key    string
	holder string
	mu     sync.Mutex
	until  time.Time
	done   bool
}

// acquire takes a slot of key, leased until until, or returns errCapFull
// when limit live slots are held already. Slots whose lease has expired
// are removed on the way.
func (c *Cap) acquire(ctx context.Context, key string, until time.Time) (*capSlot, error) {
	pk := c.pk(key)
	holder := c.f.o.Holder + "#" + strconv.FormatInt(c.f.seq.Add(1), 10)
	c.mu.Lock()
	it, cached := c.cache[key]
	if c.held[key] >= c.limit || c.f.o.Now().Before(c.full[key]) {
		c.mu.Unlock()
		return nil, errCapFull
	}
	gone := maps.Clone(c.gone[key])
	c.mu.Unlock()
	for attempt := range 8 {
		now := c.f.o.Now().UnixMilli()
		live := make(map[string]int64, len(it.holders)+1)
		for h, exp := range it.holders {
			if exp > now && !gone[h] {
				live[h] = exp
			}
		}
		if len(live) >= c.limit {
			if cached {
				// The cached item may hold slots released since: read it.
				item, err := c.f.getItem(ctx, pk)
				if err != nil {
					return nil, c.f.explain(err, fmt.Sprintf("reading cap %q (key %q)", c.name, key))
				}
				it, cached = parseCap(item), false
				continue
			}
			c.mu.Lock()
			c.cache[key] = it
			c.full[key] = c.f.o.Now().Add(fullFor)
			c.mu.Unlock()
			return nil, errCapFull
		}
		live[holder] = until.UnixMilli()
		hm := make(map[string]types.AttributeValue, len(live))
		for h, exp := range live {
			hm[h] = num(exp)
		}
		in := &dynamodb.UpdateItemInput{
			TableName:                           aws.String(c.f.table),
			Key:                                 itemKey(pk),
			UpdateExpression:                    aws.String("SET #h = :h, #v = :v, #e = :e"),
			ExpressionAttributeNames:            map[string]string{"#h": attrHolders, "#v": attrVersion, "#e": ttlAttribute},
			ExpressionAttributeValues:           map[string]types.AttributeValue{":h": &types.AttributeValueMemberM{Value: hm}, ":v": num(it.ver + 1), ":e": expires(c.f.o.Now())},
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}
		if it.exists {
			in.ConditionExpression = aws.String("#v = :old")
			in.ExpressionAttributeValues[":old"] = num(it.ver)
		} else {
			in.ConditionExpression = aws.String("attribute_not_exists(#v)")
		}
		_, err := call(c.f, ctx, func(ctx context.Context) (*dynamodb.UpdateItemOutput, error) {
			return c.f.client.UpdateItem(ctx, in)
		})
		if err == nil {
			c.mu.Lock()
			c.cache[key] = capItem{holders: live, ver: it.ver + 1, exists: true}
			c.held[key]++
			c.forget(key, gone) // dropped by this write
			c.mu.Unlock()
			c.f.st.slotsHeld.Add(1)
			return &capSlot{c: c, key: key, holder: holder, until: until}, nil
		}
		if !isConditionFailed(err) {
			c.mu.Lock()
			c.goneHolder(key, holder)
			c.mu.Unlock()
			return nil, c.f.explain(err, fmt.Sprintf("acquiring a slot of cap %q (key %q)", c.name, key))
		}
		// Another holder wrote first. Many contending for one key would
		// all read and write again at once: wait a little, at random.
		if attempt > 0 && !sleep(ctx, time.Duration(rand.Int64N(int64(attempt)*int64(20*time.Millisecond)))) {
			return nil, context.Cause(ctx)
		}
		item, ok := failedItem(err)
		if !ok {
			if item, err = c.f.getItem(ctx, pk); err != nil {
				return nil, c.f.explain(err, fmt.Sprintf("reading cap %q (key %q)", c.name, key))
			}
		}
		it, cached = parseCap(item), false
		if _, mine := it.holders[holder]; mine {
			// The write took effect and its answer was lost (the SDK's
			// retry then failed the condition): the slot is ours. Holder
			// names are never reused, so no other write put it there.
			c.mu.Lock()
			c.cache[key] = it
			c.held[key]++
			c.forget(key, gone)
			c.mu.Unlock()
			c.f.st.slotsHeld.Add(1)
			return &capSlot{c: c, key: key, holder: holder, until: until}, nil
		}
	}
	// Slots of this key change faster than a conditional write gets
	// through: treat it as full, the job comes back.
	return nil, errCapFull
}

func (c *Cap) pk(key string) string { return "cap|" + c.name + "|" + key }

// goneHolder notes a holder of key no job runs under, whose entry may be
// in the item (c.mu held).
func (c *Cap) goneHolder(key, holder string) {
	if c.gone[key] == nil {
		c.gone[key] = map[string]bool{}
	}
	c.gone[key][holder] = true
}

// forget drops the gone holders a write of key left out (c.mu held).
func (c *Cap) forget(key string, dropped map[string]bool) {
	for h := range dropped {
		delete(c.gone[key], h)
	}
	if len(c.gone[key]) == 0 {
		delete(c.gone, key)
	}
}

// dropped notes that this process no longer holds a slot of key: its
// next job of key asks DynamoDB again.
func (c *Cap) dropped(key string) {
	c.mu.Lock()
	if c.held[key]--; c.held[key] <= 0 {
		delete(c.held, key)
	}
	delete(c.full, key)
	c.mu.Unlock()
}

func parseCap(item map[string]types.AttributeValue) capItem {
	it := capItem{holders: map[string]int64{}, exists: item != nil, ver: numAttr(item, attrVersion)}
	if m, ok := item[attrHolders].(*types.AttributeValueMemberM); ok {
		for h, v := range m.Value {
			if n, ok := v.(*types.AttributeValueMemberN); ok {
				exp, _ := strconv.ParseInt(n.Value, 10, 64)
				it.holders[h] = exp
			}
		}
	}
	return it
}

// await waits in-process, up to MaxWait, for a slot of key: one this
// process frees is handed over (finish), one another process frees is
// found by asking again every fullFor. A job waits only in a process
// running jobs of key, and at most MaxWaiting at once; otherwise, and
// when the wait ends without a slot, it returns errCapFull.
func (c *Cap) await(ctx context.Context, key string, until func() time.Time) (*capSlot, error) {
	if c.o.MaxWait < 0 {
		return nil, errCapFull
	}
	c.mu.Lock()
	if c.held[key] == 0 || len(c.waiters[key]) >= c.o.MaxWaiting {
		// No slot of key runs here to hand one over soon: the job would
		// hold a handler waiting on other processes' jobs.
		c.mu.Unlock()
		return nil, errCapFull
	}
	handed := make(chan *capSlot, 1)
	c.waiters[key] = append(c.waiters[key], handed)
	c.mu.Unlock()
	c.f.st.capWaits.Add(1)
	c.f.st.waitingForSlot.Add(1)
	var got *capSlot
	defer func() {
		c.f.st.waitingForSlot.Add(-1)
		c.mu.Lock()
		q := c.waiters[key]
		if i := slices.Index(q, handed); i >= 0 {
			q = slices.Delete(q, i, i+1)
		}
		if len(q) == 0 {
			delete(c.waiters, key)
		} else {
			c.waiters[key] = q
		}
		c.mu.Unlock()
		if got == nil {
			select {
			case s := <-handed: // handed over as the wait ended: pass it on
				rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.f.o.CallTimeout)
				defer cancel()
				if err := c.finish(rctx, s); err != nil {
					c.f.o.Logger.Warn("fleet: a slot could not be released; it frees itself when its lease expires", "cap", c.name, "key", key, "err", err)
				}
			default:
			}
		}
	}()
	end := time.NewTimer(c.o.MaxWait)
	defer end.Stop()
	for {
		again := time.NewTimer(fullFor + time.Duration(rand.Int64N(int64(fullFor/5))))
		select {
		case s := <-handed:
			again.Stop()
			// The slot lives until the lease of the job it came from. A
			// chain of short jobs handing it on would outrun that lease:
			// move it to this job's once less than half of it is left.
			want := until()
			if now := c.f.o.Now(); s.until.Sub(now) >= want.Sub(now)/2 {
				got = s
				return s, nil
			}
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.f.o.CallTimeout)
			err := s.renew(rctx, want)
			cancel()
			if err == nil {
				got = s
				return s, nil
			}
			if errors.Is(err, errSlotLost) {
				continue // taken back meanwhile: wait on
			}
			// The slot's state is unknown: pass it on (or release it),
			// and let the caller fail closed or open.
			rctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), c.f.o.CallTimeout)
			_ = c.finish(rctx, s)
			cancel()
			return nil, err
		case <-again.C:
			s, err := c.acquire(ctx, key, until())
			if err == nil {
				got = s
				return s, nil
			}
			if !errors.Is(err, errCapFull) {
				return nil, err
			}
		case <-end.C:
			again.Stop()
			return nil, errCapFull
		case <-ctx.Done():
			again.Stop()
			return nil, context.Cause(ctx)
		}
	}
}

// finish ends a job's hold on slot: handed over to the first job of its
// key waiting in this process (no request; the slot's lease then follows
// that job's message), else released.
func (c *Cap) finish(ctx context.Context, s *capSlot) error {
	s.mu.Lock()
	if s.done {
		s.mu.Unlock()
		return nil
	}
	c.mu.Lock()
	q := c.waiters[s.key]
	if len(q) == 0 {
		c.mu.Unlock()
		s.mu.Unlock()
		return s.release(ctx)
	}
	next := q[0]
	if len(q) == 1 {
		delete(c.waiters, s.key)
	} else {
		c.waiters[s.key] = q[1:]
	}
	s.done = true
	// Sent under c.mu (the channel holds one, never blocks): a waiter
	// that gives up finds the slot in its channel once it is off the
	// queue, and passes it on.
	next <- &capSlot{c: c, key: s.key, holder: s.holder, until: s.until}
	c.mu.Unlock()
	s.mu.Unlock()
	c.f.st.capHandoffs.Add(1)
	return nil
}

// renew moves the slot's lease expiry to until (one conditional write).
// It returns errSlotLost when the slot is no longer held.
func (s *capSlot) renew(ctx context.Context, until time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return errSlotLost
	}
	c := s.c
	_, err := call(c.f, ctx, func(ctx context.Context) (*dynamodb.UpdateItemOutput, error) {
		return c.f.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                 aws.String(c.f.table),
			Key:                       itemKey(c.pk(s.key)),
			UpdateExpression:          aws.String("SET #h.#me = :until, #v = #v + :one"),
			ConditionExpression:       aws.String("attribute_exists(#h.#me)"),
			ExpressionAttributeNames:  map[string]string{"#h": attrHolders, "#me": s.holder, "#v": attrVersion},
			ExpressionAttributeValues: map[string]types.AttributeValue{":until": num(until.UnixMilli()), ":one": num(1)},
		})
	})
	if isConditionFailed(err) {
		s.done = true
		c.dropped(s.key)
		c.f.st.slotsHeld.Add(-1)
		c.f.st.slotsLost.Add(1)
		return fmt.Errorf("%w: slot of cap %q (key %q) held by %s expired and was taken back", errSlotLost, c.name, s.key, s.holder)
	}
	if err != nil {
		return c.f.explain(err, fmt.Sprintf("renewing a slot of cap %q (key %q)", c.name, s.key))
	}
	s.until = until
	return nil
}

// release gives the slot back (one write). Releasing twice is harmless. A
// slot that cannot be released expires with its lease.
func (s *capSlot) release(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return nil
	}
	s.done = true
	c := s.c
	defer c.dropped(s.key) // once the slot is free in DynamoDB too
	c.f.st.slotsHeld.Add(-1)
	_, err := call(c.f, ctx, func(ctx context.Context) (*dynamodb.UpdateItemOutput, error) {
		return c.f.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                 aws.String(c.f.table),
			Key:                       itemKey(c.pk(s.key)),
			UpdateExpression:          aws.String("REMOVE #h.#me SET #v = #v + :one"),
			ConditionExpression:       aws.String("attribute_exists(#v)"),
			ExpressionAttributeNames:  map[string]string{"#h": attrHolders, "#me": s.holder, "#v": attrVersion},
			ExpressionAttributeValues: map[string]types.AttributeValue{":one": num(1)},
		})
	})
	if err != nil && !isConditionFailed(err) {
		c.mu.Lock()
		c.goneHolder(s.key, s.holder)
		c.mu.Unlock()
		return c.f.explain(err, fmt.Sprintf("releasing a slot of cap %q (key %q); it expires with its lease, or goes with this process's next slot of the key", c.name, s.key))
	}
	return nil
}

// leaseUntil is until when a slot should live from now: inside the
// worker, the message's visibility deadline plus margin (a dead process's
// slot frees margin after its message becomes visible again; the margin
// covers a renewal's way to DynamoDB after the heartbeat moved the
// deadline), else now + Lease.
//
// The worker's deadline is on the machine's clock; a slot's expiry is
// written on the fleet's (Options.Now), which is the machine's unless a
// test injects another: the deadline is moved by the difference.
func (c *Cap) leaseUntil(ctx context.Context, margin time.Duration) time.Time {
	if d, ok := worker.VisibilityDeadline(ctx); ok {
		return d.Add(c.clockOffset() + margin)
	}
	return c.f.o.Now().Add(c.o.Lease)
}

// clockOffset is how far the fleet's clock is ahead of the machine's, to
// the millisecond (item times are in milliseconds): 0 unless injected.
func (c *Cap) clockOffset() time.Duration {
	return c.f.o.Now().Sub(time.Now()).Round(time.Millisecond)
}

// margin is a slot's margin over its message's visibility deadline: a
// quarter of the lease left at the start, between 250 ms and 5 s.
func (c *Cap) margin(ctx context.Context) time.Duration {
	d, ok := worker.VisibilityDeadline(ctx)
	if !ok {
		return 0
	}
	return min(max(time.Until(d)/4, 250*time.Millisecond), 5*time.Second)
}

// Middleware returns middleware that runs a job only with a slot of its
// key: over the cap, the job waits in-process up to MaxWait for a slot
// (at most MaxWaiting jobs of a key at once, each holding its handler),
// then is snoozed (retry.Snooze: no attempt counted, never dead-lettered
// for it). While the job runs the slot
// follows the message's lease: it lives until the visibility deadline
// plus a margin (a quarter of the lease, 250 ms to 5 s), renewed (one
// write) whenever the worker's heartbeat has moved the deadline, or every
// Lease/3 outside the worker. It is released when the handler returns.
func (c *Cap) Middleware() worker.Middleware {
	return func(next worker.Handler) worker.Handler {
		return worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			key := ""
			if c.o.Key != nil {
				key = c.o.Key(m)
			}
			margin := c.margin(ctx)
			slot, err := c.acquire(ctx, key, c.leaseUntil(ctx, margin))
			if errors.Is(err, errCapFull) {
				slot, err = c.await(ctx, key, func() time.Time { return c.leaseUntil(ctx, margin) })
			}
			switch {
			case errors.Is(err, errCapFull):
				c.f.st.capSnoozed.Add(1)
				d := c.o.FullSnooze << min(max(m.ReceiveCount-1, 0), 10)
				return retry.Snooze(snoozeFor(min(d, c.o.MaxSnooze)), fmt.Sprintf("fleet: cap %s (%d) full for key %q", c.name, c.limit, key))
			case err != nil && ctx.Err() != nil:
				return retry.Snooze(time.Second, "fleet: cap "+c.name+": "+err.Error())
			case err != nil && c.o.FailOpen:
				c.f.st.failedOpen.Add(1)
				c.f.o.Logger.Warn("fleet: cap could not be checked; the job runs without a slot (FailOpen)", "cap", c.name, "key", key, "message", m.ID, "err", err)
				return next.Handle(ctx, m)
			case err != nil:
				c.f.st.failedClosed.Add(1)
				c.f.o.Logger.Warn("fleet: cap could not be checked; the job is snoozed (fail closed)", "cap", c.name, "key", key, "message", m.ID, "in", c.o.ErrorSnooze, "err", err)
				return retry.Snooze(c.o.ErrorSnooze, "fleet: cap "+c.name+" unavailable: "+err.Error())
			}
			stop := make(chan struct{})
			renewed := make(chan struct{})
			go func() {
				defer close(renewed)
				c.follow(ctx, slot, margin, stop, m.ID)
			}()
			defer func() {
				close(stop)
				<-renewed
				rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.f.o.CallTimeout)
				defer cancel()
				if err := c.finish(rctx, slot); err != nil {
					c.f.o.Logger.Warn("fleet: a slot could not be released; it frees itself when its lease expires", "cap", c.name, "key", key, "err", err)
				}
			}()
			return next.Handle(ctx, m)
		})
	}
}

// follow renews slot while the job runs: inside the worker whenever the
// message's visibility deadline has moved (checked every half margin, at
// most every second), else every Lease/3.
func (c *Cap) follow(ctx context.Context, slot *capSlot, margin time.Duration, stop <-chan struct{}, id string) {
	every := min(margin/2, time.Second)
	if _, inWorker := worker.VisibilityDeadline(ctx); !inWorker {
		every = c.o.Lease / 3
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		until := c.leaseUntil(ctx, margin)
		slot.mu.Lock()
		moved := until.UnixMilli() > slot.until.UnixMilli() // as written
		slot.mu.Unlock()
		if !moved {
			continue
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.f.o.CallTimeout)
		err := slot.renew(rctx, until)
		cancel()
		if errors.Is(err, errSlotLost) {
			c.f.o.Logger.Warn("fleet: a running job's slot expired and was taken back; the cap may be exceeded until it ends (DynamoDB was unreachable for its whole lease?)", "cap", c.name, "message", id, "err", err)
			return
		}
		if err != nil {
			c.f.o.Logger.Warn("fleet: renewing a slot failed; retrying", "cap", c.name, "message", id, "err", err)
		}
	}
}
