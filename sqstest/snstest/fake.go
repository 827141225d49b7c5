package snstest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sns/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/sqsworker/sqsworker/internal/queuepolicy"
	"github.com/sqsworker/sqsworker/internal/sqslimit"
	"github.com/sqsworker/sqsworker/queueref"
)

// api is every SNS call the Fake implements, with the SDK's signatures.
// Both *sns.Client and *Fake satisfy it.
type api interface {
	CreateTopic(ctx context.Context, params *sns.CreateTopicInput, optFns ...func(*sns.Options)) (*sns.CreateTopicOutput, error)
	DeleteTopic(ctx context.Context, params *sns.DeleteTopicInput, optFns ...func(*sns.Options)) (*sns.DeleteTopicOutput, error)
	GetTopicAttributes(ctx context.Context, params *sns.GetTopicAttributesInput, optFns ...func(*sns.Options)) (*sns.GetTopicAttributesOutput, error)
	ListTopics(ctx context.Context, params *sns.ListTopicsInput, optFns ...func(*sns.Options)) (*sns.ListTopicsOutput, error)
	Subscribe(ctx context.Context, params *sns.SubscribeInput, optFns ...func(*sns.Options)) (*sns.SubscribeOutput, error)
	Unsubscribe(ctx context.Context, params *sns.UnsubscribeInput, optFns ...func(*sns.Options)) (*sns.UnsubscribeOutput, error)
	ListSubscriptions(ctx context.Context, params *sns.ListSubscriptionsInput, optFns ...func(*sns.Options)) (*sns.ListSubscriptionsOutput, error)
	ListSubscriptionsByTopic(ctx context.Context, params *sns.ListSubscriptionsByTopicInput, optFns ...func(*sns.Options)) (*sns.ListSubscriptionsByTopicOutput, error)
	GetSubscriptionAttributes(ctx context.Context, params *sns.GetSubscriptionAttributesInput, optFns ...func(*sns.Options)) (*sns.GetSubscriptionAttributesOutput, error)
	SetSubscriptionAttributes(ctx context.Context, params *sns.SetSubscriptionAttributesInput, optFns ...func(*sns.Options)) (*sns.SetSubscriptionAttributesOutput, error)
	Publish(ctx context.Context, params *sns.PublishInput, optFns ...func(*sns.Options)) (*sns.PublishOutput, error)
	PublishBatch(ctx context.Context, params *sns.PublishBatchInput, optFns ...func(*sns.Options)) (*sns.PublishBatchOutput, error)
}

var (
	_ api = (*sns.Client)(nil)
	_ api = (*Fake)(nil)
)

// Queues is what the Fake delivers through: the SQS calls SNS's delivery
// makes. *sqstest.Fake (and *sqs.Client) satisfy it.
type Queues interface {
	GetQueueUrl(ctx context.Context, params *sqs.GetQueueUrlInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
	GetQueueAttributes(ctx context.Context, params *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
	SendMessage(ctx context.Context, params *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

// Options configures a Fake. Every field's zero value is usable.
type Options struct {
	// Region is the region of topic and subscription ARNs. Zero value:
	// "us-east-1" (sqstest's default too).
	Region string
	// AccountID is the account of topic ARNs. Zero value: "000000000000".
	AccountID string
	// DeliveryRetries is how many times a delivery that fails with a
	// server error or throttling is retried before it goes to the
	// subscription's dead-letter queue; set it to see that happen without
	// 23 days of virtual time. Zero value: 100,015, SNS's policy for SQS
	// endpoints (see Fake.Publish).
	DeliveryRetries int
}

// Fake is an in-memory Amazon SNS that delivers to SQS queues (an
// sqstest.Fake, typically). It is safe for concurrent use. Create it with
// New.
type Fake struct {
	queues Queues
	opts   Options

	mu      sync.Mutex
	topics  map[string]*topic        // by ARN
	subs    map[string]*subscription // by ARN
	seq     uint64
	stats   Stats
	retries map[*time.Timer]bool // deliveries waiting for a retry
	stopped bool                 // the test ended: no more retries
}

type topic struct {
	arn, name string
	fifo      bool
	attrs     map[string]string
	subs      []string // subscription ARNs in subscription order
}

type subscription struct {
	arn, topicARN, endpoint string
	attrs                   map[string]string
	pending                 bool // waiting for the queue owner's confirmation
}

// pendingARN is what SNS lists instead of a pending subscription's ARN,
// and pendingReply what Subscribe returns for one (without
// ReturnSubscriptionArn).
const (
	pendingARN   = "PendingConfirmation"
	pendingReply = "pending confirmation"
)

// Stats counts deliveries.
type Stats struct {
	// Published is the number of messages published.
	Published int
	// Delivered is the number of deliveries to subscribed queues.
	Delivered int
	// Filtered is the number of deliveries a filter policy skipped.
	Filtered int
	// Retried is the number of retries made of deliveries that failed with
	// a server error or throttling (see Fake.Publish).
	Retried int
	// Waiting is the number of deliveries waiting for their next retry.
	Waiting int
	// DeadLettered is the number of failed deliveries sent to a
	// subscription's dead-letter queue.
	DeadLettered int
	// Lost is the number of failed deliveries that had no dead-letter queue
	// to go to, or could not be sent there, and of deliveries waiting for a
	// retry when their subscription was removed: SNS discards them.
	Lost int
}

// New returns an SNS Fake with no topics that delivers through queues. It
// returns an error when queues is nil or an option is out of range.
func New(queues Queues, optFns ...func(*Options)) (*Fake, error) {
	if queues == nil {
		return nil, errors.New("snstest: New needs the queues to deliver to (an *sqstest.Fake)")
	}
	var o Options
	for _, fn := range optFns {
		fn(&o)
	}
	if o.Region == "" {
		o.Region = "us-east-1"
	}
	if o.AccountID == "" {
		o.AccountID = "000000000000"
	}
	if err := sqslimit.CheckIdentity(o.Region, o.AccountID); err != nil {
		return nil, fmt.Errorf("snstest: Options.%w", err)
	}
	switch {
	case o.DeliveryRetries < 0:
		return nil, fmt.Errorf("snstest: Options.DeliveryRetries is %d; use 0 for SNS's %d, or a positive number", o.DeliveryRetries, managedRetries)
	case o.DeliveryRetries == 0:
		o.DeliveryRetries = managedRetries
	}
	return &Fake{queues: queues, opts: o, topics: map[string]*topic{}, subs: map[string]*subscription{}, retries: map[*time.Timer]bool{}}, nil
}

// For returns a new SNS Fake for a test, failing tb on error: what most
// tests call. Retries still waiting when the test ends are dropped.
func For(tb testing.TB, queues Queues, optFns ...func(*Options)) *Fake {
	tb.Helper()
	f, err := New(queues, optFns...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(f.stopRetries)
	return f
}

// Stats returns the delivery counts so far.
func (f *Fake) Stats() Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stats
}

// topicARN returns the ARN a topic called name has in the Fake.
func (f *Fake) topicARN(name string) string {
	return fmt.Sprintf("arn:aws:sns:%s:%s:%s", f.opts.Region, f.opts.AccountID, name)
}

// opError wraps err as the SDK does.
func opError(op string, err error) error {
	status := http.StatusBadRequest
	if _, ok := err.(*types.NotFoundException); ok {
		status = http.StatusNotFound
	}
	return &smithy.OperationError{ServiceID: "SNS", OperationName: op, Err: &awshttp.ResponseError{
		ResponseError: &smithyhttp.ResponseError{Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status, Header: http.Header{}}}, Err: err},
		RequestID:     "snstest",
	}}
}

func invalid(op, format string, args ...any) error {
	return opError(op, &types.InvalidParameterException{Message: aws.String("Invalid parameter: " + fmt.Sprintf(format, args...))})
}

func notFound(op, what string) error {
	return opError(op, &types.NotFoundException{Message: aws.String(what + " does not exist")})
}

func canceled(op string, ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return &smithy.OperationError{ServiceID: "SNS", OperationName: op, Err: &smithy.CanceledError{Err: err}}
	}
	return nil
}

func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = (b[6] & 0x0f) | 0x40
	b[8] = (b[8] & 0x3f) | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

var topicNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,256}$`)

// CreateTopic creates a topic, or returns the existing one of that name
// when the given attributes agree with it.
func (f *Fake) CreateTopic(ctx context.Context, params *sns.CreateTopicInput, optFns ...func(*sns.Options)) (*sns.CreateTopicOutput, error) {
	const op = "CreateTopic"
	if err := canceled(op, ctx); err != nil {
		return nil, err
	}
	name := aws.ToString(params.Name)
	fifo := params.Attributes["FifoTopic"] == "true"
	base, hasSuffix := strings.CutSuffix(name, ".fifo")
	switch {
	case !topicNameRE.MatchString(base):
		return nil, invalid(op, "Topic Name")
	case fifo != hasSuffix:
		return nil, invalid(op, "Topic Name: a FIFO topic's name ends in .fifo and it has the attribute FifoTopic=true; a standard topic has neither")
	}
	arn := f.topicARN(name)
	f.mu.Lock()
	defer f.mu.Unlock()
	if t, ok := f.topics[arn]; ok {
		for k, v := range params.Attributes {
			if t.attrs[k] != v {
				return nil, invalid(op, "Attributes Reason: Topic already exists with different attributes")
			}
		}
		return &sns.CreateTopicOutput{TopicArn: aws.String(arn)}, nil
	}
	attrs := map[string]string{}
	for k, v := range params.Attributes {
		attrs[k] = v
	}
	f.topics[arn] = &topic{arn: arn, name: name, fifo: fifo, attrs: attrs}
	return &sns.CreateTopicOutput{TopicArn: aws.String(arn)}, nil
}

// DeleteTopic deletes a topic and its subscriptions; deleting a topic that
// does not exist is no error.
func (f *Fake) DeleteTopic(ctx context.Context, params *sns.DeleteTopicInput, optFns ...func(*sns.Options)) (*sns.DeleteTopicOutput, error) {
	if err := canceled("DeleteTopic", ctx); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if t, ok := f.topics[aws.ToString(params.TopicArn)]; ok {
		for _, s := range t.subs {
			delete(f.subs, s)
		}
		delete(f.topics, t.arn)
	}
	return &sns.DeleteTopicOutput{}, nil
}

// GetTopicAttributes returns a topic's attributes.
func (f *Fake) GetTopicAttributes(ctx context.Context, params *sns.GetTopicAttributesInput, optFns ...func(*sns.Options)) (*sns.GetTopicAttributesOutput, error) {
	const op = "GetTopicAttributes"
	if err := canceled(op, ctx); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.topics[aws.ToString(params.TopicArn)]
	if !ok {
		return nil, notFound(op, "Topic")
	}
	pending := 0
	for _, sa := range t.subs {
		if f.subs[sa].pending {
			pending++
		}
	}
	attrs := map[string]string{
		"TopicArn": t.arn, "Owner": f.opts.AccountID, "DisplayName": "", "SubscriptionsConfirmed": strconv.Itoa(len(t.subs) - pending),
		"SubscriptionsPending": strconv.Itoa(pending), "SubscriptionsDeleted": "0",
	}
	for k, v := range t.attrs {
		attrs[k] = v
	}
	if t.fifo {
		attrs["FifoTopic"] = "true"
		if attrs["ContentBasedDeduplication"] == "" {
			attrs["ContentBasedDeduplication"] = "false"
		}
	}
	return &sns.GetTopicAttributesOutput{Attributes: attrs}, nil
}

// ListTopics lists the topics in ARN order, 100 a page.
func (f *Fake) ListTopics(ctx context.Context, params *sns.ListTopicsInput, optFns ...func(*sns.Options)) (*sns.ListTopicsOutput, error) {
	if err := canceled("ListTopics", ctx); err != nil {
		return nil, err
	}
	f.mu.Lock()
	arns := make([]string, 0, len(f.topics))
	for arn := range f.topics {
		arns = append(arns, arn)
	}
	f.mu.Unlock()
	sort.Strings(arns)
	page, next := paginate(arns, params.NextToken)
	out := &sns.ListTopicsOutput{NextToken: next}
	for _, a := range page {
		out.Topics = append(out.Topics, types.Topic{TopicArn: aws.String(a)})
	}
	return out, nil
}

// paginate returns the page of items after token (an index), 100 a page.
func paginate[T any](items []T, token *string) ([]T, *string) {
	start, _ := strconv.Atoi(aws.ToString(token))
	start = min(max(start, 0), len(items))
	end := min(start+100, len(items))
	var next *string
	if end < len(items) {
		next = aws.String(strconv.Itoa(end))
	}
	return items[start:end], next
}

// subscriptionAttributes are the attributes Subscribe and
// SetSubscriptionAttributes accept for an SQS subscription.
var subscriptionAttributes = map[string]bool{
	"RawMessageDelivery": true, "FilterPolicy": true, "FilterPolicyScope": true, "RedrivePolicy": true, "DeliveryPolicy": true,
}

// checkAttribute validates one subscription attribute.
func checkAttribute(name, value string) error {
	if !subscriptionAttributes[name] {
		return fmt.Errorf("AttributeName Reason: unknown or unsupported attribute %s for an sqs subscription", name)
	}
	switch name {
	case "RawMessageDelivery":
		if value != "true" && value != "false" {
			return fmt.Errorf("RawMessageDelivery: must be true or false")
		}
	case "FilterPolicy":
		if value != "" {
			if _, err := parseFilterPolicy(value); err != nil {
				return err
			}
		}
	case "FilterPolicyScope":
		if value != "MessageAttributes" && value != "MessageBody" {
			return fmt.Errorf("FilterPolicyScope: must be MessageAttributes or MessageBody")
		}
	case "RedrivePolicy":
		if value == "" {
			return nil
		}
		var p struct {
			Target string `json:"deadLetterTargetArn"`
		}
		if err := json.Unmarshal([]byte(value), &p); err != nil {
			return fmt.Errorf("RedrivePolicy: must be {\"deadLetterTargetArn\":\"<an SQS queue ARN>\"}")
		}
		if _, err := queueref.ParseARN(p.Target); err != nil {
			return fmt.Errorf("RedrivePolicy: must be {\"deadLetterTargetArn\":\"<an SQS queue ARN>\"}")
		}
	}
	return nil
}

// Subscribe subscribes an SQS queue (Protocol "sqs", Endpoint the queue's
// ARN) to a topic. Subscribing the same queue again returns the existing
// subscription if the attributes agree, and fails otherwise, as SNS does.
//
// A queue of another account than Options.AccountID is subscribed pending
// confirmation, as SNS subscribes it until the queue's owner confirms: the
// reply's SubscriptionArn is "pending confirmation" (its ARN with
// ReturnSubscriptionArn), the listings show "PendingConfirmation" in its
// place, GetSubscriptionAttributes reports PendingConfirmation "true", and
// Publish delivers nothing to it until Confirm.
func (f *Fake) Subscribe(ctx context.Context, params *sns.SubscribeInput, optFns ...func(*sns.Options)) (*sns.SubscribeOutput, error) {
	const op = "Subscribe"
	if err := canceled(op, ctx); err != nil {
		return nil, err
	}
	if p := aws.ToString(params.Protocol); p != "sqs" {
		return nil, invalid(op, "Protocol Reason: the fake delivers to SQS only, not %q", p)
	}
	endpoint := aws.ToString(params.Endpoint)
	endpointARN, err := queueref.ParseARN(endpoint)
	if err != nil {
		return nil, invalid(op, "SQS endpoint ARN: %v", err)
	}
	for k, v := range params.Attributes {
		if err := checkAttribute(k, v); err != nil {
			return nil, invalid(op, "%v", err)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.topics[aws.ToString(params.TopicArn)]
	if !ok {
		return nil, notFound(op, "Topic")
	}
	if !t.fifo && strings.HasSuffix(endpoint, ".fifo") {
		return nil, invalid(op, "Endpoint Reason: FIFO SQS Queues can not be subscribed to standard SNS topics")
	}
	for _, sa := range t.subs {
		s := f.subs[sa]
		if s.endpoint != endpoint {
			continue
		}
		for k, v := range params.Attributes {
			if s.attrs[k] != v {
				return nil, invalid(op, "Attributes Reason: Subscription already exists with different attributes")
			}
		}
		return subscribed(s, params.ReturnSubscriptionArn), nil
	}
	s := &subscription{arn: t.arn + ":" + newID(), topicARN: t.arn, endpoint: endpoint, attrs: map[string]string{},
		pending: endpointARN.Account != f.opts.AccountID}
	for k, v := range params.Attributes {
		s.attrs[k] = v
	}
	f.subs[s.arn] = s
	t.subs = append(t.subs, s.arn)
	return subscribed(s, params.ReturnSubscriptionArn), nil
}

// subscribed is Subscribe's reply for s.
func subscribed(s *subscription, returnARN bool) *sns.SubscribeOutput {
	if s.pending && !returnARN {
		return &sns.SubscribeOutput{SubscriptionArn: aws.String(pendingReply)}
	}
	return &sns.SubscribeOutput{SubscriptionArn: aws.String(s.arn)}
}

// Confirm confirms the pending subscription subscriptionARN (see
// Subscribe), as the queue owner's ConfirmSubscription with the token SNS
// sent would: from then on it is listed with its ARN and gets deliveries.
// Confirming a confirmed subscription changes nothing.
func (f *Fake) Confirm(subscriptionARN string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.subs[subscriptionARN]
	if !ok {
		return fmt.Errorf("snstest: Confirm: subscription %s does not exist", subscriptionARN)
	}
	s.pending = false
	return nil
}

// Unsubscribe removes a subscription.
func (f *Fake) Unsubscribe(ctx context.Context, params *sns.UnsubscribeInput, optFns ...func(*sns.Options)) (*sns.UnsubscribeOutput, error) {
	const op = "Unsubscribe"
	if err := canceled(op, ctx); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.subs[aws.ToString(params.SubscriptionArn)]
	if !ok {
		return nil, notFound(op, "Subscription")
	}
	delete(f.subs, s.arn)
	if t, ok := f.topics[s.topicARN]; ok {
		for i, a := range t.subs {
			if a == s.arn {
				t.subs = append(t.subs[:i], t.subs[i+1:]...)
				break
			}
		}
	}
	return &sns.UnsubscribeOutput{}, nil
}

// listed is s as the listings show it: a pending subscription without its
// ARN, as SNS lists it.
func (f *Fake) listed(s *subscription) types.Subscription {
	arn := s.arn
	if s.pending {
		arn = pendingARN
	}
	return types.Subscription{SubscriptionArn: aws.String(arn), TopicArn: aws.String(s.topicARN), Protocol: aws.String("sqs"),
		Endpoint: aws.String(s.endpoint), Owner: aws.String(f.opts.AccountID)}
}

// ListSubscriptions lists every subscription, 100 a page.
func (f *Fake) ListSubscriptions(ctx context.Context, params *sns.ListSubscriptionsInput, optFns ...func(*sns.Options)) (*sns.ListSubscriptionsOutput, error) {
	if err := canceled("ListSubscriptions", ctx); err != nil {
		return nil, err
	}
	f.mu.Lock()
	var all []types.Subscription
	for _, arn := range f.topicOrder() {
		for _, sa := range f.topics[arn].subs {
			all = append(all, f.listed(f.subs[sa]))
		}
	}
	f.mu.Unlock()
	page, next := paginate(all, params.NextToken)
	return &sns.ListSubscriptionsOutput{Subscriptions: page, NextToken: next}, nil
}

// topicOrder returns the topic ARNs in order. f.mu must be held.
func (f *Fake) topicOrder() []string {
	arns := make([]string, 0, len(f.topics))
	for a := range f.topics {
		arns = append(arns, a)
	}
	sort.Strings(arns)
	return arns
}

// ListSubscriptionsByTopic lists a topic's subscriptions, 100 a page.
func (f *Fake) ListSubscriptionsByTopic(ctx context.Context, params *sns.ListSubscriptionsByTopicInput, optFns ...func(*sns.Options)) (*sns.ListSubscriptionsByTopicOutput, error) {
	const op = "ListSubscriptionsByTopic"
	if err := canceled(op, ctx); err != nil {
		return nil, err
	}
	f.mu.Lock()
	t, ok := f.topics[aws.ToString(params.TopicArn)]
	if !ok {
		f.mu.Unlock()
		return nil, notFound(op, "Topic")
	}
	var all []types.Subscription
	for _, sa := range t.subs {
		all = append(all, f.listed(f.subs[sa]))
	}
	f.mu.Unlock()
	page, next := paginate(all, params.NextToken)
	return &sns.ListSubscriptionsByTopicOutput{Subscriptions: page, NextToken: next}, nil
}

// GetSubscriptionAttributes returns a subscription's attributes.
func (f *Fake) GetSubscriptionAttributes(ctx context.Context, params *sns.GetSubscriptionAttributesInput, optFns ...func(*sns.Options)) (*sns.GetSubscriptionAttributesOutput, error) {
	const op = "GetSubscriptionAttributes"
	if err := canceled(op, ctx); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.subs[aws.ToString(params.SubscriptionArn)]
	if !ok {
		return nil, notFound(op, "Subscription")
	}
	attrs := map[string]string{
		"SubscriptionArn": s.arn, "TopicArn": s.topicARN, "Protocol": "sqs", "Endpoint": s.endpoint, "Owner": f.opts.AccountID,
		"PendingConfirmation": strconv.FormatBool(s.pending), "ConfirmationWasAuthenticated": strconv.FormatBool(!s.pending), "RawMessageDelivery": "false",
	}
	for k, v := range s.attrs {
		attrs[k] = v
	}
	if attrs["FilterPolicy"] != "" && attrs["FilterPolicyScope"] == "" {
		attrs["FilterPolicyScope"] = "MessageAttributes"
	}
	return &sns.GetSubscriptionAttributesOutput{Attributes: attrs}, nil
}

// SetSubscriptionAttributes sets one attribute of a subscription; an empty
// FilterPolicy or RedrivePolicy removes it.
func (f *Fake) SetSubscriptionAttributes(ctx context.Context, params *sns.SetSubscriptionAttributesInput, optFns ...func(*sns.Options)) (*sns.SetSubscriptionAttributesOutput, error) {
	const op = "SetSubscriptionAttributes"
	if err := canceled(op, ctx); err != nil {
		return nil, err
	}
	name, value := aws.ToString(params.AttributeName), aws.ToString(params.AttributeValue)
	if err := checkAttribute(name, value); err != nil {
		return nil, invalid(op, "%v", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.subs[aws.ToString(params.SubscriptionArn)]
	if !ok {
		return nil, notFound(op, "Subscription")
	}
	if value == "" {
		delete(s.attrs, name)
	} else {
		s.attrs[name] = value
	}
	return &sns.SetSubscriptionAttributesOutput{}, nil
}

// Publish publishes a message to a topic and delivers it, before
// returning, to each SQS subscription whose filter policy accepts it: the
// message itself with its attributes (raw message delivery) or SNS's JSON
// envelope. The MessageGroupId goes with the message to the queue: a FIFO
// topic's group (required there), or on a standard topic the tenant of an
// SQS fair queue, which SNS passes to standard queue subscriptions as it
// is. A delivery SNS cannot make because of a client error — the
// queue does not exist, its policy does not let the topic send, it is
// encrypted with the AWS managed key, SQS denies or refuses the send — goes
// to the subscription's dead-letter queue (RedrivePolicy) as the same
// message, or is lost without one, as SNS discards it.
//
// A delivery that fails with a server error or throttling (sqstest's
// InjectFault with Fault.Code "InternalError" or "RequestThrottled", a
// timeout) is retried on SNS's
// delivery policy for SQS endpoints, which cannot be changed: 3 retries at
// once (before Publish returns), 2 after 1 s, 10 from 1 s to 20 s
// (exponential), then 100,000 every 20 s — 100,015 retries over 23 days —
// without SNS's jitter, on timers (virtual time inside a synctest bubble).
// Only when they run out (or Options.DeliveryRetries) does the message go
// to the dead-letter queue.
// Stats.Retried and Stats.Waiting count them. Deliveries do not use the
// publisher's context: SNS has the message once Publish returned.
func (f *Fake) Publish(ctx context.Context, params *sns.PublishInput, optFns ...func(*sns.Options)) (*sns.PublishOutput, error) {
	const op = "Publish"
	if err := canceled(op, ctx); err != nil {
		return nil, err
	}
	id, seq, err := f.publish(ctx, params)
	if err != nil {
		if e, ok := err.(*types.NotFoundException); ok {
			return nil, opError(op, e)
		}
		return nil, invalid(op, "%s", err.Error())
	}
	res := &sns.PublishOutput{MessageId: aws.String(id)}
	if seq != "" {
		res.SequenceNumber = aws.String(seq)
	}
	return res, nil
}

// PublishBatch publishes up to 10 messages as Publish does each, in
// order, and answers per entry: an entry SNS refuses (an empty or too long
// message, a FIFO entry without a group or deduplication ID) is listed in
// Failed with the code InvalidParameter and SenderFault, the others in
// Successful. The whole call fails, as SNS's does, when it has no entries
// (EmptyBatchRequest), more than 10 (TooManyEntriesInBatchRequest), two
// entries with one Id (BatchEntryIdsNotDistinct), or more than 256 KiB of
// messages and attributes in all (BatchRequestTooLong), or when the topic
// does not exist (NotFound).
func (f *Fake) PublishBatch(ctx context.Context, params *sns.PublishBatchInput, optFns ...func(*sns.Options)) (*sns.PublishBatchOutput, error) {
	const op = "PublishBatch"
	if err := canceled(op, ctx); err != nil {
		return nil, err
	}
	entries := params.PublishBatchRequestEntries
	switch {
	case len(entries) == 0:
		return nil, opError(op, &types.EmptyBatchRequestException{Message: aws.String("The batch request doesn't contain any entries")})
	case len(entries) > sqslimit.MaxBatchEntries:
		return nil, opError(op, &types.TooManyEntriesInBatchRequestException{Message: aws.String("The batch request contains more entries than permissible")})
	}
	seen := map[string]bool{}
	size := 0
	for _, e := range entries {
		id := aws.ToString(e.Id)
		if seen[id] {
			return nil, opError(op, &types.BatchEntryIdsNotDistinctException{Message: aws.String("Two or more batch entries in the request have the same Id")})
		}
		seen[id] = true
		size += sqslimit.PublishSize(aws.ToString(e.Message), e.MessageAttributes)
	}
	if size > sqslimit.MaxPublishSize {
		return nil, opError(op, &types.BatchRequestTooLongException{Message: aws.String("The length of all the messages put together is more than the limit")})
	}
	f.mu.Lock()
	_, ok := f.topics[aws.ToString(params.TopicArn)]
	f.mu.Unlock()
	if !ok {
		return nil, notFound(op, "Topic")
	}
	out := &sns.PublishBatchOutput{}
	for _, e := range entries {
		id, seq, err := f.publish(ctx, &sns.PublishInput{
			TopicArn: params.TopicArn, Message: e.Message, Subject: e.Subject, MessageAttributes: e.MessageAttributes,
			MessageGroupId: e.MessageGroupId, MessageDeduplicationId: e.MessageDeduplicationId,
		})
		if err != nil {
			code := "InvalidParameter"
			if _, nf := err.(*types.NotFoundException); nf {
				code = "NotFound"
			}
			out.Failed = append(out.Failed, types.BatchResultErrorEntry{Id: e.Id, Code: aws.String(code), Message: aws.String("Invalid parameter: " + err.Error()), SenderFault: true})
			continue
		}
		r := types.PublishBatchResultEntry{Id: e.Id, MessageId: aws.String(id)}
		if seq != "" {
			r.SequenceNumber = aws.String(seq)
		}
		out.Successful = append(out.Successful, r)
	}
	return out, nil
}

// publish publishes one message and delivers it; it returns the message
// ID and FIFO sequence number, or why SNS refuses the message (a
// *types.NotFoundException for a missing topic, else the message of an
// InvalidParameter error).
func (f *Fake) publish(ctx context.Context, params *sns.PublishInput) (string, string, error) {
	msg := aws.ToString(params.Message)
	if msg == "" {
		return "", "", errors.New("Message: empty message")
	}
	if sqslimit.PublishSize(msg, params.MessageAttributes) > sqslimit.MaxPublishSize {
		return "", "", errors.New("Message too long")
	}
	f.mu.Lock()
	t, ok := f.topics[aws.ToString(params.TopicArn)]
	if !ok {
		f.mu.Unlock()
		return "", "", &types.NotFoundException{Message: aws.String("Topic does not exist")}
	}
	if t.fifo && aws.ToString(params.MessageGroupId) == "" {
		f.mu.Unlock()
		return "", "", errors.New("The MessageGroupId parameter is required for FIFO topics")
	}
	dedup := aws.ToString(params.MessageDeduplicationId)
	if t.fifo && dedup == "" {
		if t.attrs["ContentBasedDeduplication"] != "true" {
			f.mu.Unlock()
			return "", "", errors.New("The topic should either have ContentBasedDeduplication enabled or MessageDeduplicationId provided explicitly")
		}
		dedup = contentHash(msg)
	}
	id := newID()
	f.seq++
	seq := ""
	if t.fifo {
		seq = fmt.Sprintf("%020d", f.seq)
	}
	f.stats.Published++
	var out []delivery
	for _, sa := range t.subs {
		s := f.subs[sa]
		if s.pending {
			continue // SNS delivers nothing before the confirmation
		}
		if !f.accepts(s, params) {
			f.stats.Filtered++
			continue
		}
		in := &sqs.SendMessageInput{MessageGroupId: params.MessageGroupId}
		if s.attrs["RawMessageDelivery"] == "true" {
			in.MessageBody = aws.String(msg)
			in.MessageAttributes = sqsAttributes(params.MessageAttributes)
		} else {
			in.MessageBody = aws.String(f.envelope(t, s, id, seq, params))
		}
		if t.fifo {
			in.MessageDeduplicationId = aws.String(dedup)
		}
		out = append(out, delivery{sub: s, in: in})
	}
	f.mu.Unlock()

	for _, d := range out {
		f.attempt(context.WithoutCancel(ctx), d, 0)
	}
	return id, seq, nil
}

// errRefused is a delivery SNS cannot make.
var errRefused = errors.New("snstest: delivery refused")

// deliver sends in to the queue queueARN as SNS would for topicARN,
// failing as SNS's delivery does (a client error) when the queue does not
// exist, its policy does not let the topic send, or it uses the AWS managed
// KMS key, which SNS cannot use.
func (f *Fake) deliver(ctx context.Context, queueARN, topicARN string, in *sqs.SendMessageInput) error {
	name := queueref.Name(queueARN)
	url, err := queueref.Resolve(ctx, f.queues, queueARN)
	if err != nil {
		if errors.Is(err, queueref.ErrInvalid) {
			return fmt.Errorf("%w: %v", errRefused, err)
		}
		return err
	}
	a, err := f.queues.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNamePolicy, sqstypes.QueueAttributeNameKmsMasterKeyId}})
	if err != nil {
		return err
	}
	if ok, _ := queuepolicy.AllowsTopic(a.Attributes["Policy"], queueARN, topicARN); !ok {
		return fmt.Errorf("%w: the policy of queue %s does not let %s send", errRefused, name, topicARN)
	}
	if k := a.Attributes["KmsMasterKeyId"]; k == "alias/aws/sqs" {
		return fmt.Errorf("%w: queue %s is encrypted with the AWS managed key, which SNS cannot use", errRefused, name)
	}
	send := *in
	send.QueueUrl = aws.String(url)
	_, err = f.queues.SendMessage(ctx, &send)
	return err
}

// accepts applies a subscription's filter policy. f.mu must be held.
func (f *Fake) accepts(s *subscription, params *sns.PublishInput) bool {
	raw := s.attrs["FilterPolicy"]
	if raw == "" {
		return true
	}
	p, err := parseFilterPolicy(raw)
	if err != nil {
		return false
	}
	if s.attrs["FilterPolicyScope"] == "MessageBody" {
		var doc map[string]any
		if json.Unmarshal([]byte(aws.ToString(params.Message)), &doc) != nil {
			return false
		}
		return p.matches(doc)
	}
	return p.matches(attributeDocument(params.MessageAttributes))
}

// envelope builds the JSON document SNS delivers without raw delivery.
// f.mu must be held.
func (f *Fake) envelope(t *topic, s *subscription, id, seq string, params *sns.PublishInput) string {
	type attr struct {
		Type  string `json:"Type"`
		Value string `json:"Value"`
	}
	e := struct {
		Type              string          `json:"Type"`
		MessageID         string          `json:"MessageId"`
		SequenceNumber    string          `json:"SequenceNumber,omitempty"`
		TopicArn          string          `json:"TopicArn"`
		Subject           string          `json:"Subject,omitempty"`
		Message           string          `json:"Message"`
		Timestamp         string          `json:"Timestamp"`
		SignatureVersion  string          `json:"SignatureVersion"`
		Signature         string          `json:"Signature"`
		SigningCertURL    string          `json:"SigningCertURL"`
		UnsubscribeURL    string          `json:"UnsubscribeURL"`
		MessageAttributes map[string]attr `json:"MessageAttributes,omitempty"`
	}{
		Type: "Notification", MessageID: id, SequenceNumber: seq, TopicArn: t.arn, Subject: aws.ToString(params.Subject),
		Message: aws.ToString(params.Message), Timestamp: time.Now().UTC().Format("2006-01-02T15:04:05.000Z"),
		SignatureVersion: "1", Signature: base64.StdEncoding.EncodeToString([]byte("snstest:" + id)),
		SigningCertURL: fmt.Sprintf("https://sns.%s.amazonaws.com/SimpleNotificationService-snstest.pem", f.opts.Region),
		UnsubscribeURL: fmt.Sprintf("https://sns.%s.amazonaws.com/?Action=Unsubscribe&SubscriptionArn=%s", f.opts.Region, s.arn),
	}
	for name, a := range params.MessageAttributes {
		if e.MessageAttributes == nil {
			e.MessageAttributes = map[string]attr{}
		}
		v := aws.ToString(a.StringValue)
		if a.BinaryValue != nil {
			v = base64.StdEncoding.EncodeToString(a.BinaryValue)
		}
		e.MessageAttributes[name] = attr{Type: aws.ToString(a.DataType), Value: v}
	}
	b, _ := json.Marshal(e)
	return string(b)
}

// sqsAttributes maps SNS message attributes to SQS ones, as raw delivery
// does.
func sqsAttributes(in map[string]types.MessageAttributeValue) map[string]sqstypes.MessageAttributeValue {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]sqstypes.MessageAttributeValue, len(in))
	for k, v := range in {
		out[k] = sqstypes.MessageAttributeValue{DataType: v.DataType, StringValue: v.StringValue, BinaryValue: v.BinaryValue}
	}
	return out
}

func contentHash(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}
