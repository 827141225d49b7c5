package dlq

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sqsworker/sqsworker/internal/deadletter"
	"github.com/sqsworker/sqsworker/internal/sqslimit"
	"github.com/sqsworker/sqsworker/internal/validate"
	"github.com/sqsworker/sqsworker/queueref"
)

// RecommendedMaxReceiveCount is the rule for a queue's maxReceiveCount
// given how many deliveries (attempts) the retry policy makes: at least
// attempts on a standard queue, so that SQS does not dead-letter a message
// before the policy gives up; ten times attempts on a FIFO queue (see
// "maxReceiveCount" in the package doc); at most 1000, SQS's limit. Setup,
// Lint (and so `sqsworker doctor`) and the runtimes' start-up check all
// apply this rule.
func RecommendedMaxReceiveCount(attempts int, fifo bool) int {
	return deadletter.RecommendedMaxReceiveCount(attempts, fifo)
}

// ErrWouldLower is wrapped by the error Setup returns when the options would
// lower an existing queue's maxReceiveCount or retention and
// SetupOptions.AllowLowering is not set (and by fanout.Setup's for its
// subscription's dead-letter queue). Nothing was changed.
var ErrWouldLower = deadletter.ErrWouldLower

// SetupOptions describes a queue and its dead-letter queue for Setup.
//
// Setup creates what is missing and changes only what an option asks for:
// the zero value of a setting keeps an existing queue's current value, and
// gives a new queue the default documented below.
type SetupOptions struct {
	// Name is the queue's name (required). With FIFO the ".fifo" suffix is
	// added when missing; a name ending in ".fifo" makes a FIFO pair. The
	// URL or ARN of an existing queue in the client's region and account
	// stands for its name (Setup creates queues only there).
	Name string
	// FIFO makes both queues FIFO queues.
	FIFO bool
	// DLQName is the dead-letter queue's name. Zero value: the dead-letter
	// queue the queue's RedrivePolicy already names (unless it names the
	// queue itself: Setup then replaces it), else Name + "-dlq" (before the
	// ".fifo" suffix of a FIFO queue).
	DLQName string
	// MaxReceiveCount is the RedrivePolicy's maxReceiveCount, 1 to 1000:
	// see RecommendedMaxReceiveCount. Zero value: the current one, else 5
	// (SNS's default delivery policy makes 4 deliveries, and AWS advises at
	// least 5 for Lambda consumers), or 40 for FIFO queues (the FIFO rule
	// for those 4 deliveries).
	MaxReceiveCount int
	// VisibilityTimeout is the queue's VisibilityTimeout. Zero value: left
	// as it is (a new queue gets SQS's default, 30 seconds).
	VisibilityTimeout time.Duration
	// Retention is the queue's MessageRetentionPeriod, 1 minute to 14 days
	// in whole seconds: long enough for the whole retry schedule. Zero
	// value: the current one, else 4 days (SQS's default).
	Retention time.Duration
	// DLQRetention is the dead-letter queue's MessageRetentionPeriod. It
	// should be longer than Retention: SQS keeps a message's original enqueue
	// time when it moves it to the dead-letter queue. Zero value: the
	// current one, else 14 days (the most SQS allows).
	DLQRetention time.Duration
	// ContentBasedDeduplication turns on content-based deduplication for a
	// FIFO queue (not its dead-letter queue, which gets explicit IDs). Zero
	// value: left as it is (off for a new queue).
	ContentBasedDeduplication bool
	// Attributes are further attributes for the queue, set as given.
	Attributes map[string]string
	// AllowLowering lets Setup lower an existing queue's maxReceiveCount or
	// either queue's MessageRetentionPeriod. Zero value: Setup refuses with
	// an error wrapping ErrWouldLower and changes nothing, because lowering
	// maxReceiveCount under a running retry policy makes SQS dead-letter
	// jobs before the policy gives up (without provenance), and lowering
	// retention deletes messages waiting for their retries.
	AllowLowering bool
}

// Change is one thing a setup created or changed.
type Change struct {
	// Resource is the kind of resource: "queue", "dead-letter queue",
	// "topic", "subscription", …
	Resource string `json:"resource"`
	// Name names the resource (a queue or topic name, a subscription ARN).
	Name string `json:"name"`
	// Attribute is the attribute that was set; empty when the resource was
	// created.
	Attribute string `json:"attribute,omitempty"`
	// From and To are the attribute's values before and after; From is
	// empty when it was not set.
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
}

// Created reports whether the change is the creation of the resource.
func (c Change) Created() bool { return c.Attribute == "" }

// String describes the change: "created queue orders", or "queue orders:
// maxReceiveCount 5 → 8".
func (c Change) String() string {
	if c.Created() {
		return "created " + c.Resource + " " + c.Name
	}
	from := c.From
	if from == "" {
		from = "(not set)"
	}
	return fmt.Sprintf("%s %s: %s %s → %s", c.Resource, c.Name, c.Attribute, from, c.To)
}

// SetupResult is what Setup set up, as it is now.
type SetupResult struct {
	// QueueURL and QueueARN identify the queue.
	QueueURL, QueueARN string
	// DLQURL and DLQARN identify its dead-letter queue.
	DLQURL, DLQARN string
	// MaxReceiveCount is the queue's RedrivePolicy maxReceiveCount.
	MaxReceiveCount int
	// FIFO reports FIFO queues.
	FIFO bool
	// Retention and DLQRetention are the queues' MessageRetentionPeriods.
	Retention, DLQRetention time.Duration
	// VisibilityTimeout is the queue's VisibilityTimeout.
	VisibilityTimeout time.Duration
	// Changes lists what Setup created or changed, in order; empty when
	// everything was already as asked.
	Changes []Change

	target Target
}

// Target returns the queue's dead-letter Target (as Discover returns it),
// for Redrive.
func (r SetupResult) Target() Target { return r.target }

// Setup creates a queue and its dead-letter queue with a RedrivePolicy
// linking them, creating only what is missing and changing only what opts
// asks for (see SetupOptions): running it again with the same options
// changes nothing, and SetupResult.Changes says what it did. It refuses to
// lower an existing maxReceiveCount or retention unless
// SetupOptions.AllowLowering is set (the error wraps ErrWouldLower), and
// changes nothing then.
//
// Setup needs sqs:CreateQueue, sqs:SetQueueAttributes,
// sqs:GetQueueAttributes and sqs:GetQueueUrl.
func Setup(ctx context.Context, client API, opts SetupOptions) (SetupResult, error) {
	if opts.Name == "" {
		return SetupResult{}, errors.New("setup: no queue name given; set SetupOptions.Name")
	}
	name, err := setupName(ctx, client, opts.Name)
	if err != nil {
		return SetupResult{}, err
	}
	base, hasSuffix := strings.CutSuffix(name, ".fifo")
	fifo := opts.FIFO || hasSuffix
	if fifo {
		name = base + ".fifo"
	}
	if opts.DLQName != "" && !fifo && strings.HasSuffix(opts.DLQName, ".fifo") {
		return SetupResult{}, fmt.Errorf("setup: dead-letter queue name %s ends in .fifo but queue %s is a standard queue; drop the suffix or set FIFO", opts.DLQName, name)
	}
	if err := validate.QueueName(name, fifo); err != nil {
		return SetupResult{}, fmt.Errorf("setup: %w", err)
	}
	if n := opts.DLQName; n != "" {
		if fifo && !strings.HasSuffix(n, ".fifo") {
			n += ".fifo"
		}
		if err := validate.QueueName(n, fifo); err != nil {
			return SetupResult{}, fmt.Errorf("setup: the dead-letter queue: %w", err)
		}
	}
	if m := opts.MaxReceiveCount; m < 0 || m > sqslimit.MaxReceiveCount {
		return SetupResult{}, fmt.Errorf("setup: MaxReceiveCount %d is out of range; SQS allows 1 to %d", m, sqslimit.MaxReceiveCount)
	}
	for _, r := range []struct {
		what string
		d    time.Duration
	}{{"Retention", opts.Retention}, {"DLQRetention", opts.DLQRetention}} {
		if r.d != 0 && (r.d < time.Minute || r.d > sqslimit.MaxRetention || r.d%time.Second != 0) {
			return SetupResult{}, fmt.Errorf("setup: %s %v is out of range; SQS allows whole seconds from 1 minute to 14 days", r.what, r.d)
		}
	}
	if v := opts.VisibilityTimeout; v < 0 || v > 12*time.Hour || v%time.Second != 0 {
		return SetupResult{}, fmt.Errorf("setup: VisibilityTimeout %v is out of range; SQS allows whole seconds from 0 to 12 hours", v)
	}

	// Look first, change afterwards: a refusal changes nothing.
	src, err := deadletter.FindQueue(ctx, client, name)
	if err != nil {
		return SetupResult{}, err
	}
	var current *deadletter.RedrivePolicy
	if src != nil && src.Attrs[deadletter.AttrRedrivePolicy] != "" {
		if p, err := deadletter.ParseRedrivePolicy(src.Attrs[deadletter.AttrRedrivePolicy]); err == nil {
			current = &p
		}
	}
	dlqName := opts.DLQName
	switch {
	case dlqName != "":
	case current != nil && current.TargetARN != src.Attrs[deadletter.AttrQueueArn]:
		dlqName = queueref.Name(current.TargetARN)
	default:
		dlqName = base + "-dlq"
	}
	if fifo && !strings.HasSuffix(dlqName, ".fifo") {
		dlqName += ".fifo"
	}
	if dlqName == name {
		return SetupResult{}, fmt.Errorf("setup: DLQName %s is the queue itself; a queue cannot be its own dead-letter queue: name another queue, or leave DLQName empty for %s", dlqName, deadletter.DefaultDLQName(name))
	}
	if err := validate.QueueName(dlqName, fifo); err != nil {
		return SetupResult{}, fmt.Errorf("setup: the dead-letter queue (named after the queue): %w; name it with SetupOptions.DLQName (`sqsworker setup --dlq-name`)", err)
	}
	dq, err := deadletter.FindQueue(ctx, client, dlqName)
	if err != nil {
		return SetupResult{}, err
	}
	for _, q := range []struct {
		name string
		e    *deadletter.Queue
	}{{name, src}, {dlqName, dq}} {
		if q.e != nil && (q.e.Attrs[deadletter.AttrFifoQueue] == "true") != fifo {
			return SetupResult{}, fmt.Errorf("setup: queue %s exists and is %s, but %s was asked for; SQS cannot change a queue's type: use another name, or delete the queue first",
				q.name, deadletter.QueueKind(!fifo), deadletter.QueueKind(fifo))
		}
	}

	// What each queue should have.
	dlqWant := map[string]string{}
	if opts.DLQRetention != 0 {
		dlqWant[deadletter.AttrRetention] = deadletter.SecondsString(opts.DLQRetention)
	} else if dq == nil {
		dlqWant[deadletter.AttrRetention] = deadletter.SecondsString(sqslimit.MaxRetention)
	}
	srcWant := map[string]string{}
	if opts.Retention != 0 {
		srcWant[deadletter.AttrRetention] = deadletter.SecondsString(opts.Retention)
	} else if src == nil {
		srcWant[deadletter.AttrRetention] = deadletter.SecondsString(sqslimit.DefaultRetention)
	}
	if opts.VisibilityTimeout > 0 {
		srcWant[deadletter.AttrVisibilityTimeout] = deadletter.SecondsString(opts.VisibilityTimeout)
	}
	if fifo && (opts.ContentBasedDeduplication || src == nil) {
		srcWant[deadletter.AttrContentDedup] = strconv.FormatBool(opts.ContentBasedDeduplication)
	}
	for k, v := range opts.Attributes {
		srcWant[k] = v
	}
	mrc := opts.MaxReceiveCount
	switch {
	case mrc != 0:
	case current != nil && current.MaxReceiveCount > 0:
		mrc = current.MaxReceiveCount
	case fifo:
		mrc = deadletter.DefaultFIFOMaxReceiveCount
	default:
		mrc = deadletter.DefaultMaxReceiveCount
	}

	// Refuse to lower, before changing anything.
	if !opts.AllowLowering {
		var lower []string
		if current != nil && mrc < current.MaxReceiveCount {
			lower = append(lower, fmt.Sprintf("queue %s's maxReceiveCount from %d to %d", name, current.MaxReceiveCount, mrc))
		}
		for _, q := range []struct {
			what string
			e    *deadletter.Queue
			want map[string]string
		}{{"queue " + name, src, srcWant}, {"dead-letter queue " + dlqName, dq, dlqWant}} {
			if q.e == nil || q.want[deadletter.AttrRetention] == "" {
				continue
			}
			have, ok1 := deadletter.SecondsAttr(q.e.Attrs, deadletter.AttrRetention)
			want, ok2 := deadletter.SecondsAttr(q.want, deadletter.AttrRetention)
			if ok1 && ok2 && want < have {
				lower = append(lower, fmt.Sprintf("%s's MessageRetentionPeriod from %s to %s", q.what, deadletter.HumanDuration(have), deadletter.HumanDuration(want)))
			}
		}
		if len(lower) > 0 {
			return SetupResult{}, deadletter.Wrap(ErrWouldLower, nil, "setup: refusing to lower %s: a lower maxReceiveCount makes SQS dead-letter jobs before their retry policy gives up (without provenance), "+
				"and a shorter retention deletes messages still waiting for a retry; nothing was changed. Leave the option out to keep the current value, or allow it explicitly (SetupOptions.AllowLowering, `sqsworker setup --force`)",
				strings.Join(lower, " and "))
		}
	}

	// The dead-letter queue first: the queue's RedrivePolicy names it.
	var (
		res     SetupResult
		changes []deadletter.Change
	)
	dlqURL, err := deadletter.Ensure(ctx, client, "dead-letter queue", dlqName, fifo, dq, dlqWant, &changes)
	if err != nil {
		return SetupResult{}, err
	}
	dlqARN := ""
	if dq != nil {
		dlqARN = dq.Attrs[deadletter.AttrQueueArn]
	}
	if dlqARN == "" {
		a, err := deadletter.GetAttributes(ctx, client, dlqURL, deadletter.AttrQueueArn)
		if err != nil {
			return SetupResult{}, fmt.Errorf("setup: reading the ARN of %s: %w", dlqName, err)
		}
		dlqARN = a[deadletter.AttrQueueArn]
	}
	policy := fmt.Sprintf(`{"deadLetterTargetArn":%s,"maxReceiveCount":%d}`, strconv.Quote(dlqARN), mrc)
	if current == nil || current.TargetARN != dlqARN || current.MaxReceiveCount != mrc {
		srcWant[deadletter.AttrRedrivePolicy] = policy
	}
	url, err := deadletter.Ensure(ctx, client, "queue", name, fifo, src, srcWant, &changes)
	if err != nil {
		return SetupResult{}, err
	}
	for _, c := range changes {
		res.Changes = append(res.Changes, Change(c))
	}
	t, attrs, err := deadletter.DiscoverURL(ctx, client, url)
	if err != nil {
		return SetupResult{}, fmt.Errorf("setup: %w", err)
	}
	da, err := deadletter.GetAttributes(ctx, client, t.DLQURL, deadletter.AttrRetention)
	if err != nil {
		return SetupResult{}, fmt.Errorf("setup: reading dead-letter queue %s: %w", dlqName, err)
	}
	res.QueueURL, res.QueueARN, res.DLQURL, res.DLQARN = t.SourceURL, t.SourceARN, t.DLQURL, t.DLQARN
	res.MaxReceiveCount, res.FIFO, res.target = t.MaxReceiveCount, t.FIFO, Target(t)
	res.Retention, _ = deadletter.SecondsAttr(attrs, deadletter.AttrRetention)
	res.VisibilityTimeout, _ = deadletter.SecondsAttr(attrs, deadletter.AttrVisibilityTimeout)
	res.DLQRetention, _ = deadletter.SecondsAttr(da, deadletter.AttrRetention)
	return res, nil
}

// setupName returns the name of the queue ref names: ref itself for a
// name; for a URL or an ARN, the name of that queue, which must exist and
// be the queue of that name in the client's region and account, where
// Setup creates and looks up queues.
func setupName(ctx context.Context, client API, ref string) (string, error) {
	if err := queueref.Check(ref); err != nil {
		return "", fmt.Errorf("setup: %w", err)
	}
	name := queueref.Name(ref)
	if name == ref {
		return name, nil
	}
	url, err := queueref.Resolve(ctx, client, ref)
	if err != nil {
		return "", fmt.Errorf("setup: %w", err)
	}
	e, err := deadletter.FindQueue(ctx, client, name)
	if err != nil {
		return "", err
	}
	if e == nil || e.URL != url {
		return "", fmt.Errorf("setup: queue %s is not in the client's region and account (%s); Setup creates and configures queues only there: use a client for the queue's region and account, or pass a name to create one here", ref, url)
	}
	return name, nil
}
