package fleet

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sqsworker/sqsworker/internal/awscall"
	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/worker"
)

// The attributes of a cap item besides the version: the slots, holder →
// lease expiry (epoch ms); the processes with jobs of the key snoozed,
// process → [jobs snoozed and not yet back, until when the entry holds
// (epoch ms)]; and the key's job time under a slot (ms, a moving
// average as the last process to take or give back a slot measured it).
const (
	attrHolders = "holders"
	attrWaiting = "waiting"
	attrJobTime = "jobMs"
)

// snoozesPerJob is about how many times a job of a full key is snoozed
// while it waits: a snooze lasts this fraction of the key's backlog time.
const snoozesPerJob = 4

// waitingTTL is how long a process's entry in a key's waiting map holds
// unless it is written again (a dead process's entry ends by itself).
const waitingTTL = 10 * time.Second

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
	// FullSnooze is the shortest time a job that found the cap full (and
	// got no slot within MaxWait) is hidden before it is received again.
	// How long it is hidden is derived from the key's backlog: the jobs of
	// the key the fleet has snoozed and not yet received again (each
	// process registers its count in the key's item) times the key's job
	// time over the cap is how long the backlog takes; a snooze lasts a
	// quarter of that, spread at random between half and one and a half
	// times it, so a waiting job is received about four times while it
	// waits, however long the flood, and the key's jobs come back at about
	// four times the pace its slots free. Zero value: 1 s (SQS counts in
	// whole seconds).
	FullSnooze time.Duration
	// MaxWait is how long a job that finds the cap full waits in-process
	// for a slot before it is snoozed: it is handed a slot this process
	// frees at once (no DynamoDB request), and asks DynamoDB again every
	// half second (spread at random) for a slot another process freed, so
	// a slot freed anywhere in the fleet goes to a waiting job within
	// about a second. Its message stays leased by the worker's heartbeat
	// meanwhile, and it holds one of the worker's handlers: at most
	// MaxWaiting jobs of a key wait at once in a process; the others are
	// snoozed at once. Zero value: 1 s. Negative: never wait, snooze at
	// once.
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
	// MaxSnooze caps a snooze's length (see FullSnooze). Zero value: 15
	// minutes (SQS's longest delay).
	MaxSnooze time.Duration
	// Unkeyed says what becomes of a message Key gives no key ("": no
	// MessageGroupId for ByGroup): "share" — run under the key "" with
	// every such message, one limit for them all; "snooze" — snoozed for
	// ErrorSnooze each time it comes (no attempt counted), held until the
	// configuration changes; "refuse" — dead-lettered at once, its reason
	// saying why (retry.Permanent). The first such message is logged
	// either way, and Stats.Unkeyed counts them. Zero value: "share".
	Unkeyed string
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
	f       *Fleet
	name    string
	limit   int
	o       CapOptions
	unkeyed *unkeyed
	down    outage // the last failed acquisition

	mu    sync.Mutex
	cache map[string]capItem // the items as last seen, by key
	held  map[string]int     // slots this process holds, by key
	full  map[string]time.Time
	// full: until when a key is taken for full without asking DynamoDB
	// (found full, and no slot of it released here since)
	waiters map[string][]chan *capSlot
	// writing: by key, a token held by the acquisition in flight
	writing map[string]chan struct{}
	// idle: by key, slots whose job ended with no job of the key waiting
	// here, kept for linger for the next one
	idle    map[string][]*capSlot
	snoozes map[string]*keySnoozes // this process's snoozes, by key
	jobTime time.Duration          // moving average of a job's time under a slot, any key
	// gone: by key, holders of this process whose acquisition failed (its
	// write may have taken effect) or whose release did not get through:
	// no job runs under them, and the next write of the key here drops them
	gone map[string]map[string]bool
	// waiters: the jobs waiting in-process for a slot, by key, first come
	// first served; a slot this process frees goes to the first of them
}

// linger is how long a slot whose job ended, with no job of its key
// waiting in this process but the key's jobs coming here in a stream (two
// within the last second), stays with the process for the next job of its
// key to arrive (handed over without a request) before it is released.
const linger = 250 * time.Millisecond

// fullFor is how long a key found full is taken for full without a
// request: a flood of one tenant's jobs is snoozed at the speed of the
// handlers, not of DynamoDB. A slot released by another process is seen
// this much later at most.
const fullFor = 500 * time.Millisecond

// capItem is a cap item as read or written. exists: it has a version
// (an item holding only waiting entries has none).
type capItem struct {
	holders map[string]int64
	waiting map[string]waitEntry
	jobTime int64 // ms
	ver     int64
	exists  bool
}

// waitEntry is a process's entry in a cap item's waiting map.
type waitEntry struct {
	jobs  int64 // jobs of the key it snoozed that have not come back yet
	until int64 // epoch ms, about when most of them are back; past: void
}

// keySnoozes is this process's side of a key's backlog: the jobs of the
// key it snoozed that have not come back yet, by the second they are due;
// the key's job time under a slot here; the waiting entry it last wrote.
type keySnoozes struct {
	due     map[int64]int // unix second → snoozes due then
	out     int           // their sum
	pruned  int64         // the last second pruned
	jobTime time.Duration
	wrote   int       // the count last written
	wroteAt time.Time // when (zero: never)
	until   time.Time // until when that entry holds
	// arrived, before: when the last two jobs of the key came for a slot
	// here; within a second of each other, the key's jobs come in a stream
	arrived, before time.Time
}

// prune drops the snoozes due by now.
func (k *keySnoozes) prune(now time.Time) {
	sec := now.Unix()
	if sec <= k.pruned {
		return
	}
	k.pruned = sec
	for s, n := range k.due {
		if s <= sec {
			k.out -= n
			delete(k.due, s)
		}
	}
}

// meanDue is how long until this process's outstanding snoozes are back,
// on average.
func (k *keySnoozes) meanDue(now time.Time) time.Duration {
	if k.out == 0 {
		return 0
	}
	var sum int64
	for s, n := range k.due {
		sum += (s - now.Unix()) * int64(n)
	}
	return time.Duration(sum/int64(k.out)) * time.Second
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
		o.FullSnooze = time.Second
	}
	if o.MaxSnooze == 0 {
		o.MaxSnooze = 15 * time.Minute
	}
	o.MaxSnooze = max(o.MaxSnooze, o.FullSnooze)
	if o.ErrorSnooze == 0 {
		o.ErrorSnooze = 10 * time.Second
	}
	u, err := newUnkeyed(f, fmt.Sprintf("Cap %q", name), o.Unkeyed, o.ErrorSnooze)
	if err != nil {
		return nil, err
	}
	return &Cap{f: f, name: name, limit: limit, o: o, unkeyed: u, down: outage{f: f}, cache: map[string]capItem{}, held: map[string]int{}, full: map[string]time.Time{}, waiters: map[string][]chan *capSlot{}, gone: map[string]map[string]bool{}, snoozes: map[string]*keySnoozes{}, writing: map[string]chan struct{}{}, idle: map[string][]*capSlot{}}, nil
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
// are removed on the way. A job that is not waiting (queued false) leaves
// the slots to the jobs of key waiting in this process, if any. The
// acquisitions of a key in one process go one at a time (each write is
// conditional on the item's version: two at once would fail each other),
// each from the state the one before left.
func (c *Cap) acquire(ctx context.Context, key string, until time.Time, queued bool) (*capSlot, error) {
	full := func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.held[key] >= c.limit || c.f.o.Now().Before(c.full[key]) || !queued && len(c.waiters[key]) > 0
	}
	if full() {
		return nil, errCapFull
	}
	c.mu.Lock()
	turn := c.writing[key]
	if turn == nil {
		turn = make(chan struct{}, 1)
		c.writing[key] = turn
	}
	c.mu.Unlock()
	select {
	case turn <- struct{}{}:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	defer func() { <-turn }()
	if full() { // as the acquisition before this one left it
		return nil, errCapFull
	}
	pk := c.pk(key)
	holder := c.f.o.Holder + "#" + strconv.FormatInt(c.f.seq.Add(1), 10)
	c.mu.Lock()
	it, cached := c.cache[key]
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
		c.withJobTime(in, key)
		if it.exists {
			in.ConditionExpression = aws.String("#v = :old")
			in.ExpressionAttributeValues[":old"] = num(it.ver)
		} else {
			in.ConditionExpression = aws.String("attribute_not_exists(#v)")
		}
		_, err := call(c.f, ctx, func(ctx context.Context) (*dynamodb.UpdateItemOutput, error) {
			return c.f.client.UpdateItem(ctx, in, awscall.DynamoDBOff)
		})
		if err == nil {
			c.mu.Lock()
			c.cache[key] = capItem{holders: live, waiting: it.waiting, ver: it.ver + 1, exists: true}
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
	_, versioned := item[attrVersion]
	it := capItem{holders: map[string]int64{}, exists: versioned, ver: numAttr(item, attrVersion), jobTime: numAttr(item, attrJobTime)}
	if m, ok := item[attrHolders].(*types.AttributeValueMemberM); ok {
		for h, v := range m.Value {
			if n, ok := v.(*types.AttributeValueMemberN); ok {
				exp, _ := strconv.ParseInt(n.Value, 10, 64)
				it.holders[h] = exp
			}
		}
	}
	if m, ok := item[attrWaiting].(*types.AttributeValueMemberM); ok {
		it.waiting = make(map[string]waitEntry, len(m.Value))
		for p, v := range m.Value {
			l, ok := v.(*types.AttributeValueMemberL)
			if !ok || len(l.Value) < 2 {
				continue
			}
			var e [2]int64
			for i := range e {
				if n, ok := l.Value[i].(*types.AttributeValueMemberN); ok {
					e[i], _ = strconv.ParseInt(n.Value, 10, 64)
				}
			}
			it.waiting[p] = waitEntry{jobs: e[0], until: e[1]}
		}
	}
	return it
}

// noteItem keeps an item a write returned (ALL_NEW) as key's cached
// state, unless the cache holds a later version.
func (c *Cap) noteItem(key string, item map[string]types.AttributeValue) {
	if item == nil {
		return
	}
	it := parseCap(item)
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.cache[key]; ok && old.ver > it.ver {
		return
	}
	c.cache[key] = it
	live, now := 0, c.f.o.Now().UnixMilli()
	for _, exp := range it.holders {
		if exp > now {
			live++
		}
	}
	if live < c.limit {
		delete(c.full, key) // a slot is free: the next job asks
	}
}

// keySnoozesLocked returns key's snoozes (c.mu held).
func (c *Cap) keySnoozesLocked(key string) *keySnoozes {
	k := c.snoozes[key]
	if k == nil {
		k = &keySnoozes{due: map[int64]int{}}
		c.snoozes[key] = k
	}
	return k
}

// withJobTime adds this process's measure of key's job time, if it has
// one, to a write of key's item (the processes that snooze jobs of the
// key and run none read it there).
func (c *Cap) withJobTime(in *dynamodb.UpdateItemInput, key string) {
	c.mu.Lock()
	var d time.Duration
	if k := c.snoozes[key]; k != nil {
		d = k.jobTime
	}
	c.mu.Unlock()
	if d <= 0 {
		return
	}
	*in.UpdateExpression += ", #jt = :jt"
	in.ExpressionAttributeNames["#jt"] = attrJobTime
	in.ExpressionAttributeValues[":jt"] = num(max(d.Milliseconds(), 1))
}

// jobTimeLocked is key's job time under a slot as this process measured
// it, else as the key's item has it (measured where its slots run), else
// this cap's any key; 0 when unknown (c.mu held).
func (c *Cap) jobTimeLocked(key string) time.Duration {
	if k := c.snoozes[key]; k != nil && k.jobTime > 0 {
		return k.jobTime
	}
	if ms := c.cache[key].jobTime; ms > 0 {
		return time.Duration(ms) * time.Millisecond
	}
	return c.jobTime
}

// noteJob notes that a job of key held its slot for d.
func (c *Cap) noteJob(key string, d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	avg := func(a time.Duration) time.Duration {
		if a == 0 {
			return d
		}
		return a + (d-a)/10
	}
	k := c.keySnoozesLocked(key)
	k.jobTime = avg(k.jobTime)
	c.jobTime = avg(c.jobTime)
}

// snoozeLength is how long a job of key that got no slot is hidden: a
// quarter of the time the key's backlog takes at the cap — the jobs of the
// key snoozed across the fleet and not yet back (this process counts its
// own; the others' are in their entries in the key's item) times the key's
// job time, over the cap — between FullSnooze and MaxSnooze, spread at
// random between half and one and a half times that, in whole seconds. A
// job is then snoozed about four times while it waits, however long the
// backlog, and the key's jobs come back at about four times the pace its
// slots free. The count leaves out the jobs visible in the queue or in a
// worker's hands: it errs short, never long. The snooze is counted in this
// process's backlog of key.
func (c *Cap) snoozeLength(key string) time.Duration {
	now := c.f.o.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	k := c.keySnoozesLocked(key)
	k.prune(now)
	jobs := int64(k.out)
	for p, e := range c.cache[key].waiting {
		if p != c.f.o.Holder && e.until > now.UnixMilli() {
			jobs += e.jobs
		}
	}
	d := c.o.FullSnooze
	if jobTime := c.jobTimeLocked(key); jobTime > 0 {
		backlog := time.Duration(jobs) * jobTime / time.Duration(c.limit)
		d = min(max(backlog/snoozesPerJob, c.o.FullSnooze), c.o.MaxSnooze)
	}
	d = max(time.Duration((0.5+rand.Float64())*float64(d)), time.Second).Round(time.Second)
	k.due[now.Add(d).Unix()]++
	k.out++
	return d
}

// register writes this process's entry in key's waiting map (one write):
// its count of jobs of the key snoozed and not yet back, once it is at
// least the cap's limit, when that changed by more than a quarter (and at
// least 3) since it was last written or the entry is about to end; at most
// once a second. The entry holds until
// about when those jobs are back (their mean due time, at most
// waitingTTL). Failures are left for the next snooze to mend.
func (c *Cap) register(ctx context.Context, key string) {
	now := c.f.o.Now()
	me := c.f.o.Holder
	c.mu.Lock()
	k := c.keySnoozesLocked(key)
	k.prune(now)
	n := k.out
	live := now.Before(k.until)
	change := n - k.wrote
	if change < 0 {
		change = -change
	}
	// Fewer than limit snoozed here and in each other process would not
	// lengthen a snooze past FullSnooze unless jobs take seconds: such
	// counts are not worth a write.
	due := now.Sub(k.wroteAt) >= time.Second && n >= c.limit &&
		(!live || k.until.Sub(now) < waitingTTL/2 || change > max(k.wrote/4, 2))
	if !due {
		c.mu.Unlock()
		return
	}
	k.wroteAt = now
	until := now.Add(min(max(k.meanDue(now), time.Second), waitingTTL))
	var stale []string // entries of others void for a while: dropped on the way
	for p, e := range c.cache[key].waiting {
		if p != me && e.until < now.Add(-waitingTTL).UnixMilli() && len(stale) < 4 {
			stale = append(stale, p)
		}
	}
	c.mu.Unlock()

	entry := &types.AttributeValueMemberL{Value: []types.AttributeValue{num(int64(n)), num(until.UnixMilli())}}
	names := map[string]string{"#w": attrWaiting, "#me": me, "#e": ttlAttribute}
	set := "SET #w.#me = :v, #e = :e"
	var remove []string
	for i, p := range stale {
		k := "#s" + strconv.Itoa(i)
		names[k] = p
		remove = append(remove, "#w."+k)
	}
	if len(remove) > 0 {
		set += " REMOVE " + strings.Join(remove, ", ")
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.f.o.CallTimeout)
	defer cancel()
	out, err := call(c.f, ctx, func(ctx context.Context) (*dynamodb.UpdateItemOutput, error) {
		return c.f.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                 aws.String(c.f.table),
			Key:                       itemKey(c.pk(key)),
			UpdateExpression:          aws.String(set),
			ConditionExpression:       aws.String("attribute_exists(#w)"),
			ExpressionAttributeNames:  names,
			ExpressionAttributeValues: map[string]types.AttributeValue{":v": entry, ":e": expires(now)},
			ReturnValues:              types.ReturnValueAllNew,
		}, awscall.DynamoDBOff)
	})
	if isConditionFailed(err) {
		// The item has no waiting map yet: make it with this entry.
		out, err = call(c.f, ctx, func(ctx context.Context) (*dynamodb.UpdateItemOutput, error) {
			return c.f.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
				TableName:                 aws.String(c.f.table),
				Key:                       itemKey(c.pk(key)),
				UpdateExpression:          aws.String("SET #w = :m, #e = :e"),
				ConditionExpression:       aws.String("attribute_not_exists(#w)"),
				ExpressionAttributeNames:  map[string]string{"#w": attrWaiting, "#e": ttlAttribute},
				ExpressionAttributeValues: map[string]types.AttributeValue{":m": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{me: entry}}, ":e": expires(now)},
				ReturnValues:              types.ReturnValueAllNew,
			}, awscall.DynamoDBOff)
		})
	}
	if err != nil {
		if !isConditionFailed(err) {
			c.f.o.Logger.Debug("fleet: a cap's waiting entry could not be written; snoozes are sized without it", "cap", c.name, "key", key, "err", err)
		}
		return
	}
	c.mu.Lock()
	k.wrote, k.until = n, until
	c.mu.Unlock()
	c.noteItem(key, out.Attributes)
}

// pollEvery is how long a job waiting for a slot of key waits before it
// asks DynamoDB again for a slot another process freed: the key's job time
// (the slots' turnover), between 100 ms and fullFor, plus up to a fifth
// at random.
func (c *Cap) pollEvery(key string) time.Duration {
	c.mu.Lock()
	d := c.jobTimeLocked(key)
	c.mu.Unlock()
	if d == 0 {
		d = fullFor
	}
	d = min(max(d, 100*time.Millisecond), fullFor)
	return d + time.Duration(rand.Int64N(int64(d/5)))
}

// obtain gets a slot of key for a job whose lease ends at until(): one
// kept here since its job ended (no request), else from DynamoDB, else by
// waiting in-process (await).
func (c *Cap) obtain(ctx context.Context, key string, until func() time.Time) (*capSlot, error) {
	c.mu.Lock()
	k := c.keySnoozesLocked(key)
	k.before, k.arrived = k.arrived, c.f.o.Now()
	c.mu.Unlock()
	for {
		c.mu.Lock()
		s := c.takeIdleLocked(key)
		c.mu.Unlock()
		if s == nil {
			break
		}
		s, err := c.adopt(ctx, s, until())
		if err == nil {
			return s, nil
		}
		if !errors.Is(err, errSlotLost) {
			return nil, err
		}
	}
	if err := c.down.check(c.f.o.Now()); err != nil {
		return nil, err
	}
	slot, err := c.acquire(ctx, key, until(), false)
	if errors.Is(err, errCapFull) {
		slot, err = c.await(ctx, key, until)
	}
	if !errors.Is(err, errCapFull) {
		c.down.note(ctx, c.pk(key), err)
	}
	return slot, err
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
	if s := c.takeIdleLocked(key); s != nil { // parked since obtain looked
		c.mu.Unlock()
		if s, err := c.adopt(ctx, s, until()); !errors.Is(err, errSlotLost) {
			return s, err
		}
		c.mu.Lock()
	}
	if len(c.waiters[key]) >= c.o.MaxWaiting {
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
		again := time.NewTimer(c.pollEvery(key))
		select {
		case s := <-handed:
			again.Stop()
			s, err := c.adopt(ctx, s, until())
			if err == nil {
				got = s
				return s, nil
			}
			if errors.Is(err, errSlotLost) {
				continue // taken back meanwhile: wait on
			}
			return nil, err // let the caller fail closed or open
		case <-again.C:
			s, err := c.acquire(ctx, key, until(), true)
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
		// While the key's jobs come here in a stream (two within the last
		// second), kept for the next to arrive (handed over without a
		// request), then released; otherwise released now.
		k := c.snoozes[s.key]
		if k == nil || c.f.o.Now().Sub(k.before) > time.Second {
			c.mu.Unlock()
			s.mu.Unlock()
			return s.release(ctx)
		}
		s.done = true
		parked := &capSlot{c: c, key: s.key, holder: s.holder, until: s.until}
		c.idle[s.key] = append(c.idle[s.key], parked)
		c.mu.Unlock()
		s.mu.Unlock()
		time.AfterFunc(linger, func() { c.unpark(parked) })
		return nil
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

// unpark releases a parked slot no job took within linger.
func (c *Cap) unpark(s *capSlot) {
	c.mu.Lock()
	q := c.idle[s.key]
	i := slices.Index(q, s)
	if i < 0 {
		c.mu.Unlock()
		return // taken
	}
	if q = slices.Delete(q, i, i+1); len(q) == 0 {
		delete(c.idle, s.key)
	} else {
		c.idle[s.key] = q
	}
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), c.f.o.CallTimeout)
	defer cancel()
	if err := s.release(ctx); err != nil {
		c.f.o.Logger.Warn("fleet: a slot could not be released; it frees itself when its lease expires", "cap", c.name, "key", s.key, "err", err)
	}
}

// takeIdleLocked takes a parked slot of key, or nil (c.mu held).
func (c *Cap) takeIdleLocked(key string) *capSlot {
	q := c.idle[key]
	if len(q) == 0 {
		return nil
	}
	s := q[len(q)-1]
	if len(q) == 1 {
		delete(c.idle, key)
	} else {
		c.idle[key] = q[:len(q)-1]
	}
	c.f.st.capHandoffs.Add(1)
	return s
}

// adopt makes slot, handed over from a job that ended, the slot of a job
// whose lease ends at want. The slot lives until the lease of the job it
// came from: a chain of short jobs handing it on would outrun that lease,
// so it is moved to the new job's once less than half of it is left (one
// write). On errSlotLost the slot was taken back meanwhile; on another
// error its state is unknown: it is passed on or released.
func (c *Cap) adopt(ctx context.Context, s *capSlot, want time.Time) (*capSlot, error) {
	s.mu.Lock()
	until := s.until
	s.mu.Unlock()
	if now := c.f.o.Now(); until.Sub(now) >= want.Sub(now)/2 {
		return s, nil
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.f.o.CallTimeout)
	err := s.renew(rctx, want)
	cancel()
	if err == nil {
		return s, nil
	}
	if !errors.Is(err, errSlotLost) {
		rctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), c.f.o.CallTimeout)
		_ = c.finish(rctx, s)
		cancel()
	}
	return nil, err
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
	out, err := call(c.f, ctx, func(ctx context.Context) (*dynamodb.UpdateItemOutput, error) {
		return c.f.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                 aws.String(c.f.table),
			Key:                       itemKey(c.pk(s.key)),
			UpdateExpression:          aws.String("SET #h.#me = :until, #v = #v + :one"),
			ConditionExpression:       aws.String("attribute_exists(#h.#me)"),
			ExpressionAttributeNames:  map[string]string{"#h": attrHolders, "#me": s.holder, "#v": attrVersion},
			ExpressionAttributeValues: map[string]types.AttributeValue{":until": num(until.UnixMilli()), ":one": num(1)},
			ReturnValues:              types.ReturnValueAllNew,
		}, awscall.DynamoDBOff)
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
	c.noteItem(s.key, out.Attributes)
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
	in := &dynamodb.UpdateItemInput{
		TableName:                 aws.String(c.f.table),
		Key:                       itemKey(c.pk(s.key)),
		UpdateExpression:          aws.String("REMOVE #h.#me SET #v = #v + :one"),
		ConditionExpression:       aws.String("attribute_exists(#v)"),
		ExpressionAttributeNames:  map[string]string{"#h": attrHolders, "#me": s.holder, "#v": attrVersion},
		ExpressionAttributeValues: map[string]types.AttributeValue{":one": num(1)},
		ReturnValues:              types.ReturnValueAllNew,
	}
	c.withJobTime(in, s.key)
	out, err := call(c.f, ctx, func(ctx context.Context) (*dynamodb.UpdateItemOutput, error) {
		return c.f.client.UpdateItem(ctx, in, awscall.DynamoDBOff)
	})
	if err == nil {
		c.noteItem(s.key, out.Attributes) // the key as this release left it
	}
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
	return time.Until(c.f.o.Now()).Round(time.Millisecond)
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
// Lease/3 outside the worker. When the handler returns the slot goes to
// the next job of its key in this process, or is given back (while the
// key's jobs come here in a stream, once none came within a quarter of a
// second).
func (c *Cap) Middleware() worker.Middleware {
	return func(next worker.Handler) worker.Handler {
		return worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			key := ""
			if c.o.Key != nil {
				if key = c.o.Key(m); key == "" {
					if err := c.unkeyed.handle(m); err != nil {
						return err
					}
				}
			}
			margin := c.margin(ctx)
			slot, err := c.obtain(ctx, key, func() time.Time { return c.leaseUntil(ctx, margin) })
			switch {
			case errors.Is(err, errCapFull):
				c.f.st.capSnoozed.Add(1)
				d := c.snoozeLength(key)
				c.register(ctx, key)
				return retry.Snooze(d, fmt.Sprintf("fleet: cap %s (%d) full for key %q", c.name, c.limit, key))
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
			began := c.f.o.Now()
			stop := make(chan struct{})
			renewed := make(chan struct{})
			go func() {
				defer close(renewed)
				c.follow(ctx, slot, margin, stop, m.ID)
			}()
			defer func() {
				close(stop)
				<-renewed
				c.noteJob(key, c.f.o.Now().Sub(began))
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
