package fanout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sns/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/internal/deadletter"
	"github.com/sqsworker/sqsworker/internal/queuepolicy"
	"github.com/sqsworker/sqsworker/internal/sqslimit"
	"github.com/sqsworker/sqsworker/internal/validate"
	"github.com/sqsworker/sqsworker/queueref"
)

// ErrSubscriptionPending is wrapped by Setup's error when the queue's
// subscription to the topic waits for confirmation.
var ErrSubscriptionPending = errors.New("fanout: the subscription is pending confirmation")

// SetupOptions describes a topic → subscription → queue chain for Setup.
// As with dlq.Setup, the zero value of a setting keeps what an existing
// resource has and gives a new one the documented default.
type SetupOptions struct {
	// Topic is the topic's name or ARN (required). A name ending in ".fifo"
	// makes a FIFO topic, and then FIFO queues throughout.
	Topic string
	// Queue describes the subscribed queue and its own dead-letter queue,
	// as dlq.Setup takes it (Queue.Name is required). Queue.AllowLowering
	// also allows lowering the fan-out dead-letter queue's retention.
	Queue dlq.SetupOptions
	// FanoutDLQName is the subscription's dead-letter queue, where SNS puts
	// what it cannot deliver to the queue. Zero value: the one the
	// subscription's RedrivePolicy names, else Queue.Name + "-fanout-dlq"
	// (".fifo" kept last).
	FanoutDLQName string
	// FanoutDLQRetention is its MessageRetentionPeriod. Zero value: the
	// current one; a new queue gets 14 days (the most SQS allows).
	FanoutDLQRetention time.Duration
	// RawMessageDelivery sets the subscription's RawMessageDelivery. Nil:
	// left as it is (a new subscription delivers SNS's envelope; see Unwrap).
	RawMessageDelivery *bool
	// FilterPolicy is the subscription's filter policy (JSON). Zero value:
	// left as it is (a new subscription gets every message).
	FilterPolicy string
	// FilterPolicyScope is "MessageAttributes" or "MessageBody". Zero
	// value: left as it is (SNS's default is MessageAttributes).
	FilterPolicyScope string
}

// SetupResult is what Setup set up, as it is now.
type SetupResult struct {
	// TopicARN is the topic.
	TopicARN string
	// Subscription is the queue's subscription to the topic.
	Subscription Subscription
	// Queue is the subscribed queue and its dead-letter queue.
	Queue dlq.SetupResult
	// FanoutDLQURL and FanoutDLQARN identify the subscription's dead-letter
	// queue.
	FanoutDLQURL, FanoutDLQARN string
	// FIFO reports a FIFO topic and queues.
	FIFO bool
	// Changes lists everything Setup created or changed, in order (the
	// queue pair's first); empty when all was already as asked.
	Changes []dlq.Change
	// Findings are the problems Setup found and left as they are, each with
	// its fix, as Lint reports them: a queue policy (of the queue or of the
	// subscription's dead-letter queue) that lets everyone send
	// ("queue-policy-open"). Empty when there are none.
	Findings []dlq.Finding
}

// Setup creates what is missing of the chain the source documents
// recommend for fan-out — topic, queue and its dead-letter queue (with
// dlq.Setup), the queue's subscription to the topic, the subscription's own
// dead-letter queue set as its RedrivePolicy, and the queue policies that
// let the topic's SNS principal send to the queue and to that dead-letter
// queue (conditioned on the topic's ARN) — and changes only what opts asks
// for. Running it again with the same options changes nothing.
//
// A subscription of a queue in another account than the topic's waits for
// the queue owner's confirmation: a new one comes back with
// Subscription.Pending set. When SNS lists the queue's subscription as
// pending, Setup does everything else, then returns the result so far
// (without Subscription) and an error wrapping ErrSubscriptionPending
// instead of subscribing again.
//
// A queue policy that lets everyone send to the queue unconditionally
// (Principal "*", sqs:SendMessage, no condition) also lets SNS deliver, but
// it lets anyone else put a forged envelope on the queue, which Unwrap
// cannot tell from SNS's. Setup adds the topic-scoped statement to such a
// policy as to any other, keeps the open statement, and reports it in
// SetupResult.Findings: the open statement may be how other senders reach
// the queue, which Setup cannot see, and Setup changes nothing it was not
// asked to. With the scoped statement in place, removing the open one does
// not cut SNS off.
//
// Setup needs, besides dlq.Setup's SQS permissions: sns:CreateTopic,
// sns:GetTopicAttributes, sns:Subscribe, sns:ListSubscriptionsByTopic,
// sns:GetSubscriptionAttributes, sns:SetSubscriptionAttributes.
func Setup(ctx context.Context, snsClient API, sqsClient dlq.API, opts SetupOptions) (SetupResult, error) {
	if opts.Topic == "" || opts.Queue.Name == "" {
		return SetupResult{}, errors.New("fanout setup: set SetupOptions.Topic and SetupOptions.Queue.Name")
	}
	topicName := opts.Topic
	if strings.HasPrefix(topicName, "arn:") {
		a, err := ParseTopicARN(topicName)
		if err != nil {
			return SetupResult{}, fmt.Errorf("fanout setup: %w", err)
		}
		topicName = a.Name
	}
	fifo := strings.HasSuffix(topicName, ".fifo")
	queueName := queueref.Name(opts.Queue.Name)
	if strings.HasSuffix(queueName, ".fifo") && !fifo {
		return SetupResult{}, fmt.Errorf("fanout setup: FIFO queue %s cannot subscribe to standard topic %s; use a FIFO topic (a name ending in .fifo) or a standard queue", queueName, topicName)
	}
	switch opts.FilterPolicyScope {
	case "", "MessageAttributes", "MessageBody":
	default:
		return SetupResult{}, fmt.Errorf("fanout setup: FilterPolicyScope %q: use MessageAttributes or MessageBody", opts.FilterPolicyScope)
	}
	if opts.FilterPolicy != "" {
		if err := validate.FilterPolicy(opts.FilterPolicy, opts.FilterPolicyScope); err != nil {
			return SetupResult{}, fmt.Errorf("fanout setup: %w", err)
		}
	}
	if err := validate.TopicName(topicName, fifo); err != nil {
		return SetupResult{}, fmt.Errorf("fanout setup: %w", err)
	}
	if n := opts.FanoutDLQName; n != "" {
		if fifo && !strings.HasSuffix(n, ".fifo") {
			n += ".fifo"
		}
		if err := validate.QueueName(n, fifo); err != nil {
			return SetupResult{}, fmt.Errorf("fanout setup: the subscription's dead-letter queue: %w", err)
		}
	}
	if r := opts.FanoutDLQRetention; r != 0 && (r < time.Minute || r > sqslimit.MaxRetention || r%time.Second != 0) {
		return SetupResult{}, fmt.Errorf("fanout setup: FanoutDLQRetention %v is out of range; SQS allows whole seconds from 1 minute to 14 days", r)
	}

	// The queue and its dead-letter queue.
	qo := opts.Queue
	qo.FIFO = qo.FIFO || fifo
	q, err := dlq.Setup(ctx, sqsClient, qo)
	if err != nil {
		return SetupResult{}, err
	}
	res := SetupResult{Queue: q, FIFO: fifo}
	res.Changes = append(res.Changes, q.Changes...)

	// The topic, in the queue's account and region unless an ARN says
	// otherwise.
	topicARN := opts.Topic
	if !strings.HasPrefix(topicARN, "arn:") {
		qa, err := queueref.ParseARN(q.QueueARN)
		if err != nil {
			return SetupResult{}, fmt.Errorf("fanout setup: %w", err)
		}
		topicARN = TopicARN{Partition: qa.Partition, Region: qa.Region, Account: qa.Account, Name: topicName}.String()
	}
	if topicARN, err = ensureTopic(ctx, snsClient, topicARN, topicName, fifo, &res.Changes); err != nil {
		return SetupResult{}, err
	}
	res.TopicARN = topicARN

	// The existing subscription, if any: its dead-letter queue is kept
	// unless another is named. One pending confirmation is listed without
	// its ARN: it can be neither read nor changed, and subscribing again
	// would not confirm it.
	var sub *Subscription
	pending := false
	err = eachSQSSubscription(ctx, snsClient, topicARN, func(s types.Subscription, isPending bool) error {
		if sub != nil || aws.ToString(s.Endpoint) != q.QueueARN {
			return nil
		}
		if isPending {
			pending = true
			return nil
		}
		found, err := readSubscription(ctx, snsClient, aws.ToString(s.SubscriptionArn))
		if err == nil {
			sub = &found
		}
		return err
	})
	if err != nil {
		return SetupResult{}, fmt.Errorf("fanout setup: %w", err)
	}
	fdlqName := opts.FanoutDLQName
	switch {
	case fdlqName != "":
	case sub != nil && sub.DLQARN != "":
		fdlqName = queueref.Name(sub.DLQARN)
	default:
		fdlqName = strings.TrimSuffix(queueref.Name(q.QueueURL), ".fifo") + "-fanout-dlq"
	}
	if fifo && !strings.HasSuffix(fdlqName, ".fifo") {
		fdlqName += ".fifo"
	}
	spec := deadletter.QueueSpec{Resource: "subscription dead-letter queue", Name: fdlqName, FIFO: fifo, AllowLowering: opts.Queue.AllowLowering,
		Initial: map[string]string{"MessageRetentionPeriod": strconv.Itoa(int(sqslimit.MaxRetention / time.Second))}}
	if opts.FanoutDLQRetention != 0 {
		spec.Set = map[string]string{"MessageRetentionPeriod": strconv.Itoa(int(opts.FanoutDLQRetention / time.Second))}
	}
	fdlqURL, fdlqAttrs, changes, err := deadletter.EnsureQueue(ctx, sqsClient, spec)
	if err != nil {
		return SetupResult{}, err
	}
	for _, c := range changes {
		res.Changes = append(res.Changes, dlq.Change(c))
	}
	res.FanoutDLQURL, res.FanoutDLQARN = fdlqURL, fdlqAttrs["QueueArn"]

	// The queue policies: SNS may send to the queue and to the fan-out DLQ.
	for _, p := range []struct {
		resource, url, arn string
	}{
		{"queue", q.QueueURL, q.QueueARN},
		{"subscription dead-letter queue", fdlqURL, res.FanoutDLQARN},
	} {
		open, err := grant(ctx, sqsClient, p.resource, p.url, p.arn, topicARN, &res.Changes)
		if err != nil {
			return SetupResult{}, err
		}
		res.Findings = append(res.Findings, openPolicyFindings(p.resource+" "+queueref.Name(p.url), queueref.Name(q.QueueURL), p.arn, open, topicName, true)...)
	}

	if pending && sub == nil {
		return res, fmt.Errorf("%w: the subscription of queue %s to topic %s waits for the queue owner's confirmation; SNS delivers nothing to the queue until then, and shows the subscription's settings only once it is confirmed. Confirm it (ConfirmSubscription with the token SNS sent to the queue, from the queue's account), then run setup again to check its settings",
			ErrSubscriptionPending, queueref.Name(q.QueueURL), topicName)
	}

	// The subscription.
	want := map[string]string{"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q}`, res.FanoutDLQARN)}
	if opts.RawMessageDelivery != nil {
		want["RawMessageDelivery"] = strconv.FormatBool(*opts.RawMessageDelivery)
	}
	if opts.FilterPolicy != "" {
		want["FilterPolicy"] = opts.FilterPolicy
	}
	if opts.FilterPolicyScope != "" {
		want["FilterPolicyScope"] = opts.FilterPolicyScope
	}
	subARN, err := ensureSubscription(ctx, snsClient, topicARN, q.QueueARN, sub, want, &res.Changes)
	if err != nil {
		return SetupResult{}, err
	}
	if res.Subscription, err = readSubscription(ctx, snsClient, subARN); err != nil {
		return SetupResult{}, fmt.Errorf("fanout setup: %w", err)
	}
	return res, nil
}

// ensureTopic creates the topic if GetTopicAttributes does not find it.
func ensureTopic(ctx context.Context, client API, arn, name string, fifo bool, changes *[]dlq.Change) (string, error) {
	_, err := client.GetTopicAttributes(ctx, &sns.GetTopicAttributesInput{TopicArn: aws.String(arn)})
	if err == nil {
		return arn, nil
	}
	if !isNotFound(err) {
		return "", fmt.Errorf("fanout setup: reading topic %s: %w", name, err)
	}
	in := &sns.CreateTopicInput{Name: aws.String(name)}
	if fifo {
		in.Attributes = map[string]string{"FifoTopic": "true"}
	}
	out, err := client.CreateTopic(ctx, in)
	if err != nil {
		return "", fmt.Errorf("fanout setup: creating topic %s: %w", name, err)
	}
	*changes = append(*changes, dlq.Change{Resource: "topic", Name: name})
	return aws.ToString(out.TopicArn), nil
}

// grant adds to a queue's policy the statement that lets the topic send,
// and returns the policy as it is now.
func grant(ctx context.Context, client dlq.API, resource, url, queueARN, topicARN string, changes *[]dlq.Change) (string, error) {
	a, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNamePolicy}})
	if err != nil {
		return "", fmt.Errorf("fanout setup: reading the policy of %s %s: %w", resource, queueref.Name(url), err)
	}
	policy, changed, err := queuepolicy.GrantTopic(a.Attributes["Policy"], queueARN, topicARN)
	if err != nil {
		return "", fmt.Errorf("fanout setup: %s %s: %w; fix or remove the policy, then run setup again", resource, queueref.Name(url), err)
	}
	if !changed {
		return policy, nil
	}
	if _, err := client.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url), Attributes: map[string]string{"Policy": policy}}); err != nil {
		return "", fmt.Errorf("fanout setup: setting the policy of %s %s: %w", resource, queueref.Name(url), err)
	}
	c := dlq.Change{Resource: resource, Name: queueref.Name(url), Attribute: "Policy",
		To: fmt.Sprintf("statement %s lets topic %s send", queuepolicy.StatementID(topicARN), topicName(topicARN))}
	if strings.TrimSpace(a.Attributes["Policy"]) != "" {
		c.From = "existing policy"
	}
	*changes = append(*changes, c)
	return policy, nil
}

// ensureSubscription subscribes the queue with want, or sets on the
// existing subscription the attributes of want that differ.
func ensureSubscription(ctx context.Context, client API, topicARN, queueARN string, sub *Subscription, want map[string]string, changes *[]dlq.Change) (string, error) {
	if sub == nil {
		out, err := client.Subscribe(ctx, &sns.SubscribeInput{TopicArn: aws.String(topicARN), Protocol: aws.String("sqs"),
			Endpoint: aws.String(queueARN), Attributes: want, ReturnSubscriptionArn: true})
		if err != nil {
			return "", fmt.Errorf("fanout setup: subscribing queue %s to topic %s: %w", queueref.Name(queueARN), topicName(topicARN), err)
		}
		arn := aws.ToString(out.SubscriptionArn)
		*changes = append(*changes, dlq.Change{Resource: "subscription", Name: arn})
		return arn, nil
	}
	have := map[string]string{
		"RedrivePolicy": "", "RawMessageDelivery": strconv.FormatBool(sub.Raw), "FilterPolicy": sub.FilterPolicy, "FilterPolicyScope": sub.FilterPolicyScope,
	}
	if sub.DLQARN != "" {
		have["RedrivePolicy"] = fmt.Sprintf(`{"deadLetterTargetArn":%q}`, sub.DLQARN)
	}
	for _, k := range []string{"RedrivePolicy", "RawMessageDelivery", "FilterPolicyScope", "FilterPolicy"} {
		v, ok := want[k]
		if !ok || sameJSON(have[k], v) {
			continue
		}
		if _, err := client.SetSubscriptionAttributes(ctx, &sns.SetSubscriptionAttributesInput{SubscriptionArn: aws.String(sub.ARN),
			AttributeName: aws.String(k), AttributeValue: aws.String(v)}); err != nil {
			return "", fmt.Errorf("fanout setup: setting %s of subscription %s: %w", k, sub.ARN, err)
		}
		*changes = append(*changes, dlq.Change{Resource: "subscription", Name: sub.ARN, Attribute: k, From: have[k], To: v})
	}
	return sub.ARN, nil
}

// sameJSON compares two attribute values, as JSON when both are.
func sameJSON(a, b string) bool {
	if a == b {
		return true
	}
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return string(ja) == string(jb)
}
