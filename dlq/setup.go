package dlq

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/internal/awscall"
	"github.com/sqsworker/sqsworker/internal/sqserr"
	"github.com/sqsworker/sqsworker/internal/validate"
	"github.com/sqsworker/sqsworker/queueref"
)

// DefaultMaxReceiveCount is Setup's maxReceiveCount for a new standard
// queue when none is given. It leaves room above SNS's default delivery
// policy (3 retries, so 4 deliveries) and meets AWS's advice of at least 5
// for Lambda consumers.
const DefaultMaxReceiveCount = 5

// DefaultFIFOMaxReceiveCount is Setup's maxReceiveCount for a new FIFO
// queue when none is given: RecommendedMaxReceiveCount for SNS's default
// delivery policy (4 deliveries) on a FIFO queue.
const DefaultFIFOMaxReceiveCount = fifoReceiveFactor * defaultPolicyDeliveries

// defaultPolicyDeliveries is how many deliveries SNS's default delivery
// policy makes (3 retries after the first delivery).
const defaultPolicyDeliveries = 4

// fifoReceiveFactor is how many receives per policy attempt a FIFO queue's
// maxReceiveCount should allow. When a message of a group fails, the
// messages received behind it in the same batch (up to 9) are released
// unprocessed to keep the group's order, and each release counts as a
// receive for them; so a message can be received up to ten times per
// attempt of its own.
const fifoReceiveFactor = 10

// MaxMaxReceiveCount is the largest maxReceiveCount SQS accepts.
const MaxMaxReceiveCount = 1000

// RecommendedMaxReceiveCount is the rule for a queue's maxReceiveCount given
// how many deliveries (attempts) the retry policy makes: at least attempts on
// a standard queue, so that SQS does not dead-letter a message before the
// policy gives up; fifoReceiveFactor × attempts on a FIFO queue (see
// fifoReceiveFactor), at most MaxMaxReceiveCount. Setup, Lint (and so
// `sqsworker doctor`) and the worker's start-up check all apply this rule.
func RecommendedMaxReceiveCount(attempts int, fifo bool) int {
	attempts = max(attempts, 1)
	if fifo {
		return min(MaxMaxReceiveCount, fifoReceiveFactor*attempts)
	}
	return min(MaxMaxReceiveCount, attempts)
}

// ErrWouldLower is wrapped by the error Setup returns when the options would
// lower an existing queue's maxReceiveCount or retention and
// SetupOptions.AllowLowering is not set. Nothing was changed.
var ErrWouldLower = errors.New("dlq: setup would lower an existing setting")

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
	// MaxReceiveCount is the RedrivePolicy's maxReceiveCount: see
	// RecommendedMaxReceiveCount. Zero value: the current one, else
	// DefaultMaxReceiveCount (DefaultFIFOMaxReceiveCount for FIFO queues).
	MaxReceiveCount int
	// VisibilityTimeout is the queue's VisibilityTimeout. Zero value: left
	// as it is (a new queue gets SQS's default, 30 seconds).
	VisibilityTimeout time.Duration
	// Retention is the queue's MessageRetentionPeriod: long enough for the
	// whole retry schedule. Zero value: the current one, else
	// DefaultRetention (4 days, SQS's default).
	Retention time.Duration
	// DLQRetention is the dead-letter queue's MessageRetentionPeriod. It
	// should be longer than Retention: SQS keeps a message's original enqueue
	// time when it moves it to the dead-letter queue. Zero value: the
	// current one, else MaxRetention (14 days).
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
// for NewMover and Redrive.
func (r SetupResult) Target() Target { return r.target }

// existing is a queue as Setup found it.
type existing struct {
	url   string
	attrs map[string]string
}

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
func Setup(ctx context.Context, client SetupAPI, opts SetupOptions) (SetupResult, error) {
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
	if m := opts.MaxReceiveCount; m < 0 || m > MaxMaxReceiveCount {
		return SetupResult{}, fmt.Errorf("setup: MaxReceiveCount %d is out of range; SQS allows 1 to %d", m, MaxMaxReceiveCount)
	}
	for _, r := range []struct {
		what string
		d    time.Duration
	}{{"Retention", opts.Retention}, {"DLQRetention", opts.DLQRetention}} {
		if r.d != 0 && (r.d < time.Minute || r.d > MaxRetention || r.d%time.Second != 0) {
			return SetupResult{}, fmt.Errorf("setup: %s %v is out of range; SQS allows whole seconds from 1 minute to 14 days", r.what, r.d)
		}
	}
	if v := opts.VisibilityTimeout; v < 0 || v > 12*time.Hour || v%time.Second != 0 {
		return SetupResult{}, fmt.Errorf("setup: VisibilityTimeout %v is out of range; SQS allows whole seconds from 0 to 12 hours", v)
	}

	// Look first, change afterwards: a refusal changes nothing.
	src, err := findQueue(ctx, client, name)
	if err != nil {
		return SetupResult{}, err
	}
	var current *redrivePolicy
	if src != nil && src.attrs[attrRedrivePolicy] != "" {
		if p, err := parseRedrivePolicy(src.attrs[attrRedrivePolicy]); err == nil {
			current = &p
		}
	}
	dlqName := opts.DLQName
	switch {
	case dlqName != "":
	case current != nil && current.TargetARN != src.attrs[attrQueueArn]:
		dlqName = queueref.Name(current.TargetARN)
	default:
		dlqName = base + "-dlq"
	}
	if fifo && !strings.HasSuffix(dlqName, ".fifo") {
		dlqName += ".fifo"
	}
	if dlqName == name {
		return SetupResult{}, fmt.Errorf("setup: DLQName %s is the queue itself; a queue cannot be its own dead-letter queue: name another queue, or leave DLQName empty for %s", dlqName, defaultDLQName(name))
	}
	if err := validate.QueueName(dlqName, fifo); err != nil {
		return SetupResult{}, fmt.Errorf("setup: the dead-letter queue (named after the queue): %w; name it with SetupOptions.DLQName (`sqsworker setup --dlq-name`)", err)
	}
	dq, err := findQueue(ctx, client, dlqName)
	if err != nil {
		return SetupResult{}, err
	}
	for _, q := range []struct {
		name string
		e    *existing
	}{{name, src}, {dlqName, dq}} {
		if q.e != nil && (q.e.attrs[attrFifoQueue] == "true") != fifo {
			return SetupResult{}, fmt.Errorf("setup: queue %s exists and is %s, but %s was asked for; SQS cannot change a queue's type: use another name, or delete the queue first",
				q.name, queueKind(!fifo), queueKind(fifo))
		}
	}

	// What each queue should have.
	dlqWant := map[string]string{}
	if opts.DLQRetention != 0 {
		dlqWant[attrRetention] = secondsString(opts.DLQRetention)
	} else if dq == nil {
		dlqWant[attrRetention] = secondsString(MaxRetention)
	}
	srcWant := map[string]string{}
	if opts.Retention != 0 {
		srcWant[attrRetention] = secondsString(opts.Retention)
	} else if src == nil {
		srcWant[attrRetention] = secondsString(DefaultRetention)
	}
	if opts.VisibilityTimeout > 0 {
		srcWant[attrVisibilityTimeout] = secondsString(opts.VisibilityTimeout)
	}
	if fifo && (opts.ContentBasedDeduplication || src == nil) {
		srcWant[attrContentDedup] = strconv.FormatBool(opts.ContentBasedDeduplication)
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
		mrc = DefaultFIFOMaxReceiveCount
	default:
		mrc = DefaultMaxReceiveCount
	}

	// Refuse to lower, before changing anything.
	if !opts.AllowLowering {
		var lower []string
		if current != nil && mrc < current.MaxReceiveCount {
			lower = append(lower, fmt.Sprintf("queue %s's maxReceiveCount from %d to %d", name, current.MaxReceiveCount, mrc))
		}
		for _, q := range []struct {
			what string
			e    *existing
			want map[string]string
		}{{"queue " + name, src, srcWant}, {"dead-letter queue " + dlqName, dq, dlqWant}} {
			if q.e == nil || q.want[attrRetention] == "" {
				continue
			}
			have, ok1 := secondsAttr(q.e.attrs, attrRetention)
			want, ok2 := secondsAttr(q.want, attrRetention)
			if ok1 && ok2 && want < have {
				lower = append(lower, fmt.Sprintf("%s's MessageRetentionPeriod from %s to %s", q.what, humanDuration(have), humanDuration(want)))
			}
		}
		if len(lower) > 0 {
			return SetupResult{}, wrap(ErrWouldLower, nil, "setup: refusing to lower %s: a lower maxReceiveCount makes SQS dead-letter jobs before their retry policy gives up (without provenance), "+
				"and a shorter retention deletes messages still waiting for a retry; nothing was changed. Leave the option out to keep the current value, or allow it explicitly (SetupOptions.AllowLowering, `sqsworker setup --force`)",
				strings.Join(lower, " and "))
		}
	}

	// The dead-letter queue first: the queue's RedrivePolicy names it.
	var res SetupResult
	dlqURL, err := ensureQueue(ctx, client, "dead-letter queue", dlqName, fifo, dq, dlqWant, &res.Changes)
	if err != nil {
		return SetupResult{}, err
	}
	dlqARN := ""
	if dq != nil {
		dlqARN = dq.attrs[attrQueueArn]
	}
	if dlqARN == "" {
		a, err := getAttributes(ctx, client, dlqURL, attrQueueArn)
		if err != nil {
			return SetupResult{}, fmt.Errorf("setup: reading the ARN of %s: %w", dlqName, err)
		}
		dlqARN = a[attrQueueArn]
	}
	policy := fmt.Sprintf(`{"deadLetterTargetArn":%s,"maxReceiveCount":%d}`, strconv.Quote(dlqARN), mrc)
	if current == nil || current.TargetARN != dlqARN || current.MaxReceiveCount != mrc {
		srcWant[attrRedrivePolicy] = policy
	}
	url, err := ensureQueue(ctx, client, "queue", name, fifo, src, srcWant, &res.Changes)
	if err != nil {
		return SetupResult{}, err
	}
	t, attrs, err := discover(ctx, client, url)
	if err != nil {
		return SetupResult{}, fmt.Errorf("setup: %w", err)
	}
	da, err := getAttributes(ctx, client, t.DLQURL, attrRetention)
	if err != nil {
		return SetupResult{}, fmt.Errorf("setup: reading dead-letter queue %s: %w", dlqName, err)
	}
	res.QueueURL, res.QueueARN, res.DLQURL, res.DLQARN = t.SourceURL, t.SourceARN, t.DLQURL, t.DLQARN
	res.MaxReceiveCount, res.FIFO, res.target = t.MaxReceiveCount, t.FIFO, t
	res.Retention, _ = secondsAttr(attrs, attrRetention)
	res.VisibilityTimeout, _ = secondsAttr(attrs, attrVisibilityTimeout)
	res.DLQRetention, _ = secondsAttr(da, attrRetention)
	return res, nil
}

// setupName returns the name of the queue ref names: ref itself for a
// name; for a URL or an ARN, the name of that queue, which must exist and
// be the queue of that name in the client's region and account, where
// Setup creates and looks up queues.
func setupName(ctx context.Context, client SetupAPI, ref string) (string, error) {
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
	e, err := findQueue(ctx, client, name)
	if err != nil {
		return "", err
	}
	if e == nil || e.url != url {
		return "", fmt.Errorf("setup: queue %s is not in the client's region and account (%s); Setup creates and configures queues only there: use a client for the queue's region and account, or pass a name to create one here", ref, url)
	}
	return name, nil
}

// findQueue returns the queue called name with all its attributes, or nil
// when there is none.
func findQueue(ctx context.Context, client SetupAPI, name string) (*existing, error) {
	out, err := awscall.SQS(ctx, awscall.Rule{}, client.GetQueueUrl, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
	if err != nil {
		if sqserr.NotExist(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("setup: looking up queue %s: %w", name, err)
	}
	url := aws.ToString(out.QueueUrl)
	attrs, err := getAttributes(ctx, client, url, string(types.QueueAttributeNameAll))
	if err != nil {
		return nil, fmt.Errorf("setup: reading queue %s: %w", name, err)
	}
	return &existing{url: url, attrs: attrs}, nil
}

// ensureQueue creates the queue with want when e is nil, or sets on the
// existing queue e the attributes of want that differ, recording each change.
func ensureQueue(ctx context.Context, client SetupAPI, resource, name string, fifo bool, e *existing, want map[string]string, changes *[]Change) (string, error) {
	if e == nil {
		attrs := map[string]string{}
		for k, v := range want {
			attrs[k] = v
		}
		if fifo {
			attrs[attrFifoQueue] = "true"
		}
		out, err := awscall.SQS(ctx, awscall.Rule{}, client.CreateQueue, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
		if err != nil {
			return "", fmt.Errorf("setup: creating %s %s: %w", resource, name, err)
		}
		*changes = append(*changes, Change{Resource: resource, Name: name})
		return aws.ToString(out.QueueUrl), nil
	}
	set := map[string]string{}
	for _, k := range sortedKeys(want) {
		if v := want[k]; !sameAttribute(k, e.attrs[k], v) {
			set[k] = v
			*changes = append(*changes, attributeChanges(resource, name, k, e.attrs[k], v)...)
		}
	}
	if len(set) > 0 {
		if _, err := awscall.SQS(ctx, awscall.Rule{}, client.SetQueueAttributes, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(e.url), Attributes: set}); err != nil {
			return "", fmt.Errorf("setup: configuring %s %s: %w", resource, name, err)
		}
	}
	return e.url, nil
}

// sameAttribute compares a queue attribute's current value with the wanted
// one: RedrivePolicies by their fields, the rest as text.
func sameAttribute(name, have, want string) bool {
	if name == attrRedrivePolicy && have != "" {
		a, err1 := parseRedrivePolicy(have)
		b, err2 := parseRedrivePolicy(want)
		return err1 == nil && err2 == nil && a == b
	}
	return have == want
}

// attributeChanges describes setting attribute name from have to want; a
// RedrivePolicy change is described by its fields.
func attributeChanges(resource, queue, name, have, want string) []Change {
	if name == attrRedrivePolicy && have != "" {
		a, err1 := parseRedrivePolicy(have)
		b, err2 := parseRedrivePolicy(want)
		if err1 == nil && err2 == nil {
			var cs []Change
			if a.TargetARN != b.TargetARN {
				cs = append(cs, Change{Resource: resource, Name: queue, Attribute: "deadLetterTargetArn", From: a.TargetARN, To: b.TargetARN})
			}
			if a.MaxReceiveCount != b.MaxReceiveCount {
				cs = append(cs, Change{Resource: resource, Name: queue, Attribute: "maxReceiveCount", From: strconv.Itoa(a.MaxReceiveCount), To: strconv.Itoa(b.MaxReceiveCount)})
			}
			return cs
		}
	}
	return []Change{{Resource: resource, Name: queue, Attribute: name, From: have, To: want}}
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// QueueSpec describes one queue for EnsureQueue.
type QueueSpec struct {
	// Resource names the queue's role in Changes, such as "queue" or
	// "dead-letter queue".
	Resource string
	// Name is the queue's name (with ".fifo" for a FIFO queue).
	Name string
	// FIFO makes a FIFO queue; an existing queue of the other type is an
	// error.
	FIFO bool
	// Set are attributes the queue must have: set when they differ.
	Set map[string]string
	// Initial are attributes a new queue gets, and an existing one keeps.
	Initial map[string]string
	// AllowLowering lets Set lower an existing MessageRetentionPeriod; zero
	// value: EnsureQueue refuses (ErrWouldLower) and changes nothing.
	AllowLowering bool
}

// EnsureQueue creates the queue spec describes if it does not exist, or
// sets on the existing queue the attributes of spec.Set that differ, with
// Setup's rules: nothing else changes, and a lower retention needs
// AllowLowering. It returns the queue's URL, its attributes as they are now
// and what it changed. fanout.Setup uses it for a subscription's
// dead-letter queue.
func EnsureQueue(ctx context.Context, client SetupAPI, spec QueueSpec) (string, map[string]string, []Change, error) {
	e, err := findQueue(ctx, client, spec.Name)
	if err != nil {
		return "", nil, nil, err
	}
	if e != nil && (e.attrs[attrFifoQueue] == "true") != spec.FIFO {
		return "", nil, nil, fmt.Errorf("setup: queue %s exists and is %s, but %s was asked for; SQS cannot change a queue's type: use another name, or delete the queue first",
			spec.Name, queueKind(!spec.FIFO), queueKind(spec.FIFO))
	}
	want := map[string]string{}
	if e == nil {
		maps.Copy(want, spec.Initial)
	}
	maps.Copy(want, spec.Set)
	if e != nil && !spec.AllowLowering && want[attrRetention] != "" {
		have, ok1 := secondsAttr(e.attrs, attrRetention)
		w, ok2 := secondsAttr(want, attrRetention)
		if ok1 && ok2 && w < have {
			return "", nil, nil, wrap(ErrWouldLower, nil, "setup: refusing to lower %s %s's MessageRetentionPeriod from %s to %s: it deletes messages sooner; nothing was changed. Leave the option out to keep the current value, or allow it explicitly (`sqsworker setup --force`)",
				spec.Resource, spec.Name, humanDuration(have), humanDuration(w))
		}
	}
	var changes []Change
	url, err := ensureQueue(ctx, client, spec.Resource, spec.Name, spec.FIFO, e, want, &changes)
	if err != nil {
		return "", nil, nil, err
	}
	attrs, err := getAttributes(ctx, client, url, string(types.QueueAttributeNameAll))
	if err != nil {
		return "", nil, nil, fmt.Errorf("setup: reading %s %s: %w", spec.Resource, spec.Name, err)
	}
	return url, attrs, changes, nil
}
