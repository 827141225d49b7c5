package fleet

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sqsworker/sqsworker/queueref"
	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/worker"
)

// The attributes of a pause item.
const (
	attrPaused = "paused" // BOOL
	attrReason = "reason" // S
	attrBy     = "by"     // S: the holder that set it
)

// PauseState is a queue's pause switch as stored.
type PauseState struct {
	Queue  string    // the queue's name
	Paused bool      // whether the queue is paused
	Reason string    // why, as given to Pause; "" after Resume
	By     string    // the Options.Holder (or CLI user) that last changed it
	At     time.Time // when it was last changed; zero if never
}

// pauseKey is a queue's pause item key. A queue given by name, URL or ARN
// is the same queue: the key is its name (the table is per account and
// region, as queues are).
func pauseKey(queue string) (string, string, error) {
	if err := queueref.Check(queue); err != nil {
		return "", "", fmt.Errorf("fleet: pause switch: %w", err)
	}
	name := queueref.Name(queue)
	return "pause|" + name, name, nil
}

// Pause pauses queue for every worker whose Options.ReceiveGate is a
// Pauser of it: within its Interval (2 s by default) each stops
// receiving, ends its poll in flight and releases its prefetched messages;
// running handlers finish. reason is stored for operators (may be empty).
func (f *Fleet) Pause(ctx context.Context, queue, reason string) error {
	return f.setPause(ctx, queue, true, reason)
}

// Resume resumes a paused queue: its workers receive again within their
// Pauser's Interval.
func (f *Fleet) Resume(ctx context.Context, queue string) error {
	return f.setPause(ctx, queue, false, "")
}

func (f *Fleet) setPause(ctx context.Context, queue string, paused bool, reason string) error {
	pk, name, err := pauseKey(queue)
	if err != nil {
		return err
	}
	_, err = call(f, ctx, func(ctx context.Context) (*dynamodb.UpdateItemOutput, error) {
		return f.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:        aws.String(f.table),
			Key:              itemKey(pk),
			UpdateExpression: aws.String("SET #p = :p, #r = :r, #by = :by, #at = :at"),
			ExpressionAttributeNames: map[string]string{
				"#p": attrPaused, "#r": attrReason, "#by": attrBy, "#at": attrAt,
			},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":p": &types.AttributeValueMemberBOOL{Value: paused}, ":r": str(reason),
				":by": str(f.o.Holder), ":at": num(f.o.Now().UnixMilli()),
			},
		})
	})
	if err != nil {
		verb := "resuming"
		if paused {
			verb = "pausing"
		}
		return f.explain(err, fmt.Sprintf("%s queue %s", verb, name))
	}
	f.notePaused(name, paused)
	return nil
}

// PauseState reads queue's pause switch (one consistent read). A queue
// never paused is not paused.
func (f *Fleet) PauseState(ctx context.Context, queue string) (PauseState, error) {
	pk, name, err := pauseKey(queue)
	if err != nil {
		return PauseState{}, err
	}
	item, err := f.getItem(ctx, pk)
	if err != nil {
		return PauseState{Queue: name}, f.explain(err, "reading the pause switch of queue "+name)
	}
	st := PauseState{Queue: name, Reason: strAttr(item, attrReason), By: strAttr(item, attrBy)}
	if b, ok := item[attrPaused].(*types.AttributeValueMemberBOOL); ok {
		st.Paused = b.Value
	}
	if ms := numAttr(item, attrAt); ms > 0 {
		st.At = time.UnixMilli(ms)
	}
	return st, nil
}

func (f *Fleet) notePaused(name string, paused bool) {
	f.mu.Lock()
	f.paused[name] = paused
	f.mu.Unlock()
}

// PauserOptions configures a Pauser. Every field's zero value selects the
// documented default.
type PauserOptions struct {
	// Interval is how often the pause switch is read (one consistent
	// GetItem per Pauser per interval): a pause or resume is honoured
	// within Interval plus a read's latency. At most 5 s. Zero value: 2 s.
	Interval time.Duration
	// Snooze is how long Middleware hides a message received while the
	// queue is paused. Zero value: 30 s.
	Snooze time.Duration
}

// Pauser watches one queue's pause switch. Give it to the worker as
// Options.ReceiveGate: a paused worker stops receiving, ends its poll in
// flight and releases its prefetched messages at once, and lets running
// handlers finish. It fails open: when the switch cannot be read
// (DynamoDB unreachable), the last state read stays in force, and a
// Pauser that has never read it lets the worker receive.
type Pauser struct {
	f     *Fleet
	queue string
	pk    string
	o     PauserOptions

	state chan bool // the last state read; buffered, for Middleware
}

// Pauser returns the Pauser of queue (its name, URL or ARN).
func (f *Fleet) Pauser(queue string, optFns ...func(*PauserOptions)) (*Pauser, error) {
	pk, name, err := pauseKey(queue)
	if err != nil {
		return nil, err
	}
	var o PauserOptions
	for _, fn := range optFns {
		fn(&o)
	}
	if o.Interval == 0 {
		o.Interval = 2 * time.Second
	}
	if o.Interval < 0 || o.Interval > 5*time.Second {
		return nil, fmt.Errorf("fleet: Pauser of %s: Interval is %v; use up to 5 s, so a pause is honoured within 5 s (or 0 for 2 s)", name, o.Interval)
	}
	if o.Snooze < 0 {
		return nil, fmt.Errorf("fleet: Pauser of %s: Snooze is %v; use a positive duration (or 0 for 30 s)", name, o.Snooze)
	}
	if o.Snooze == 0 {
		o.Snooze = 30 * time.Second
	}
	p := &Pauser{f: f, queue: name, pk: pk, o: o, state: make(chan bool, 1)}
	p.state <- false
	return p, nil
}

var _ worker.ReceiveGate = (*Pauser)(nil)

// read reads the switch; on failure it keeps the last state (fail open
// at first) and logs.
func (p *Pauser) read(ctx context.Context) bool {
	st, err := p.f.PauseState(ctx, p.queue)
	last := <-p.state
	if err != nil {
		p.state <- last
		if ctx.Err() == nil {
			p.f.o.Logger.Warn("fleet: the pause switch could not be read; the last state read stays in force", "queue", p.queue, "paused", last, "err", err)
		}
		return last
	}
	p.state <- st.Paused
	p.f.notePaused(p.queue, st.Paused)
	return st.Paused
}

// Watch implements worker.ReceiveGate: it reads the switch at once and
// then every Interval, and reports every change, until ctx ends.
func (p *Pauser) Watch(ctx context.Context, set func(open bool)) {
	paused := p.read(ctx)
	set(!paused)
	t := time.NewTicker(p.o.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if now := p.read(ctx); now != paused && ctx.Err() == nil {
			paused = now
			set(!paused)
		}
	}
}

// lastRead reports the state the Pauser last read.
func (p *Pauser) lastRead() bool {
	v := <-p.state
	p.state <- v
	return v
}

// Ready returns an error while the queue is paused (as last read), and
// nil otherwise: what a worker's Health reports as the reason it is not
// ready while this Pauser is its ReceiveGate.
func (p *Pauser) Ready() error {
	if p.lastRead() {
		return fmt.Errorf("queue %s is paused (sqsworker resume %s)", p.queue, p.queue)
	}
	return nil
}

// Middleware returns middleware for runtimes that receive on their own
// (the Lambda adapter, whose event source mapping polls): while the queue
// is paused, each message is snoozed for PauserOptions.Snooze instead of
// run (no attempt counted; each snooze is a receive, see the package
// documentation). The switch is read at most every Interval. For Lambda,
// disabling the event source mapping stops the polling itself.
func (p *Pauser) Middleware() worker.Middleware {
	var mu = make(chan time.Time, 1) // when the switch was last read
	mu <- time.Time{}
	return func(next worker.Handler) worker.Handler {
		return worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			last := <-mu
			paused := p.lastRead()
			if now := p.f.o.Now(); now.Sub(last) >= p.o.Interval {
				paused = p.read(ctx)
				last = now
			}
			mu <- last
			if paused {
				p.f.st.pauseSnoozed.Add(1)
				return retry.Snooze(snoozeFor(p.o.Snooze), "fleet: queue "+p.queue+" is paused")
			}
			return next.Handle(ctx, m)
		})
	}
}
