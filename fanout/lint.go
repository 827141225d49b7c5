package fanout

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/internal/deadletter"
	"github.com/sqsworker/sqsworker/internal/queuepolicy"
	"github.com/sqsworker/sqsworker/internal/sqserr"
	"github.com/sqsworker/sqsworker/internal/sqslimit"
	"github.com/sqsworker/sqsworker/queueref"
)

// Delivery is what a queue's consumer expects SNS to deliver.
type Delivery int

const (
	// DeliveryUnknown says nothing about the consumer: Lint notes an
	// enveloped subscription (info) instead of judging it.
	DeliveryUnknown Delivery = iota
	// DeliveryEnvelope is a consumer that unwraps SNS's envelope (Unwrap):
	// a subscription with raw delivery would make every message fail.
	DeliveryEnvelope
	// DeliveryRaw is a consumer that expects the published message itself:
	// a subscription without raw delivery hands it the envelope.
	DeliveryRaw
)

// The finding codes Lint reports, besides dlq.Lint's; Lint's documentation
// lists them for users.
const (
	codeNoSubscriptionDLQ        = "subscription-no-dlq"                   // error: SNS discards what it cannot deliver
	codeSubscriptionDLQMissing   = "subscription-dlq-missing"              // error: the RedrivePolicy names a queue that does not exist
	codeSubscriptionDLQElsewhere = "subscription-dlq-other-account-region" // error: SNS needs the DLQ in the subscription's account and region
	codeSubscriptionDLQWrongType = "subscription-dlq-wrong-type"           // error: FIFO-ness differs from the topic's
	codeQueuePolicyRefusesTopic  = "queue-policy-refuses-topic"            // error: SNS cannot deliver to the queue
	codeQueuePolicyOpen          = "queue-policy-open"                     // error: anyone may send; Unwrap would take a forged envelope for SNS's
	codeDLQPolicyRefusesTopic    = "subscription-dlq-policy-refuses-topic" // error: SNS cannot dead-letter either
	codeAWSManagedKey            = "kms-aws-managed-key"                   // error: SNS cannot use the key
	codeCustomerManagedKey       = "kms-customer-managed-key"              // info: the key policy must grant SNS
	codeSubscriptionDLQRetention = "subscription-dlq-retention-short"      // warning: dead-lettered deliveries expire before the queue's
	codeSubscriptionPending      = "subscription-pending"                  // warning: nothing is delivered until it is confirmed
	codeEnvelopeDelivery         = "envelope-delivery"                     // info: the consumer must unwrap SNS's envelope
	codeRawDeliveryMismatch      = "raw-delivery-mismatch"                 // error: the subscription delivers what the consumer does not expect
	codeIsSubscriptionDLQ        = "is-subscription-dlq"                   // info: the queue is a subscription's dead-letter queue
	codeSubscriptionsNotChecked  = "subscriptions-not-checked"             // info: no permission to read the subscriptions
)

// LintOptions configures Lint. Every field's zero value is usable.
type LintOptions struct {
	// Queue is passed to dlq.Lint for the queue's own dead-letter setup.
	Queue dlq.LintOptions
	// Delivery is what the consumer expects (see Unwrap). Zero value:
	// DeliveryUnknown.
	Delivery Delivery
}

// Lint checks the whole chain of queue (a name, URL or ARN, resolved on
// each call with queueref.Resolve): the queue's own
// dead-letter setup (dlq.Lint), then for each of its SNS subscriptions the
// subscription's dead-letter queue (present, existing, in the same account
// and region, of the topic's type, keeping messages at least as long as the
// queue), the queue policies on the queue and on that dead-letter queue
// (they must let the topic send), KMS encryption SNS cannot use or must be
// granted, a pending subscription, and raw delivery against what the
// consumer expects. A queue that is a subscription's dead-letter queue is
// recognised as such. Each finding has a stable code and says what to do.
// The codes, besides dlq.Lint's (the severity in brackets):
//
//	subscription-no-dlq                    [error]   no RedrivePolicy: SNS discards what it cannot deliver
//	subscription-dlq-missing               [error]   the RedrivePolicy names a queue that does not exist
//	subscription-dlq-other-account-region  [error]   SNS needs the DLQ in the subscription's account and region
//	subscription-dlq-wrong-type            [error]   the DLQ's FIFO-ness differs from the topic's
//	subscription-dlq-policy-refuses-topic  [error]   the DLQ's policy does not let the topic send
//	subscription-dlq-retention-short       [warning] dead-lettered deliveries expire before the queue's messages
//	subscription-pending                   [warning] nothing is delivered until the subscription is confirmed
//	queue-policy-refuses-topic             [error]   the queue's policy does not let the topic send
//	queue-policy-open                      [error]   anyone may send; Unwrap would take a forged envelope for SNS's
//	kms-aws-managed-key                    [error]   SNS cannot use the AWS managed key alias/aws/sqs
//	kms-customer-managed-key               [info]    the key policy must grant SNS
//	raw-delivery-mismatch                  [error]   the subscription delivers what the consumer does not expect
//	envelope-delivery                      [info]    the consumer must unwrap SNS's envelope (DeliveryUnknown)
//	is-subscription-dlq                    [info]    the queue is a subscription's dead-letter queue
//	subscriptions-not-checked              [info]    no permission to read the subscriptions
//
// Lint needs dlq.Lint's permissions, sns:ListSubscriptions and
// sns:GetSubscriptionAttributes; without the SNS ones it reports
// subscriptions-not-checked instead of failing.
func Lint(ctx context.Context, snsClient API, sqsClient dlq.API, queue string, opts LintOptions) ([]dlq.Finding, error) {
	queueURL, err := queueref.Resolve(ctx, sqsClient, queue)
	if err != nil {
		return nil, err
	}
	fs, err := dlq.Lint(ctx, sqsClient, queueURL, opts.Queue)
	if err != nil {
		return fs, err
	}
	name := queueref.Name(queueURL)
	attrs, err := queueAttributes(ctx, sqsClient, queueURL)
	if err != nil {
		return fs, err
	}
	queueARN := attrs["QueueArn"]
	add := func(sev dlq.Severity, code, msg, fix string) {
		fs = append(fs, dlq.Finding{Severity: sev, Code: code, Message: msg, Fix: fix})
	}

	// A queue without a RedrivePolicy may be a subscription's DLQ.
	if attrs["RedrivePolicy"] == "" && hasCode(fs, deadletter.CodeNoRedrivePolicy) {
		served, err := ServedBy(ctx, snsClient, queueARN)
		if err != nil {
			if isAccessDenied(err) {
				add(dlq.SeverityInfo, codeSubscriptionsNotChecked, fmt.Sprintf("cannot read the SNS subscriptions (%v), so whether queue %s is a subscription's dead-letter queue is unknown", shortErr(err), name),
					"grant sns:ListSubscriptions and sns:GetSubscriptionAttributes to check them")
				return append(fs, openPolicyFindings("queue "+name, name, queueARN, attrs["Policy"], "", false)...), nil
			}
			return fs, err
		}
		if len(served) > 0 {
			fs = dropCode(fs, deadletter.CodeNoRedrivePolicy)
			s := served[0]
			add(dlq.SeverityInfo, codeIsSubscriptionDLQ,
				fmt.Sprintf("queue %s is the dead-letter queue of the subscription of queue %s to topic %s; a dead-letter queue needs no RedrivePolicy of its own", name, queueref.Name(s.QueueARN), topicName(s.TopicARN)),
				fmt.Sprintf("nothing to change here; check the chain with `sqsworker doctor %s`", queueref.Name(s.QueueARN)))
			return append(fs, openPolicyFindings("queue "+name, queueref.Name(s.QueueARN), queueARN, attrs["Policy"], topicName(s.TopicARN), false)...), nil
		}
	}

	subs, err := Subscriptions(ctx, snsClient, queueARN)
	topic := ""
	if len(subs) > 0 {
		topic = topicName(subs[0].TopicARN)
	}
	fs = append(fs, openPolicyFindings("queue "+name, name, queueARN, attrs["Policy"], topic, false)...)
	if err != nil {
		if isAccessDenied(err) {
			add(dlq.SeverityInfo, codeSubscriptionsNotChecked, fmt.Sprintf("cannot read the SNS subscriptions of queue %s (%v)", name, shortErr(err)),
				"grant sns:ListSubscriptions and sns:GetSubscriptionAttributes to check them, or skip them (`sqsworker doctor --no-subscriptions`)")
			return fs, nil
		}
		return fs, err
	}
	retention, ok := seconds(attrs, "MessageRetentionPeriod")
	if !ok {
		retention = sqslimit.DefaultRetention
	}
	for _, s := range subs {
		topic := topicName(s.TopicARN)
		where := fmt.Sprintf("the subscription of queue %s to topic %s", name, topic)
		if s.Pending {
			msg := where + " is pending confirmation: SNS delivers nothing to the queue until it is confirmed, and deletes it unconfirmed after three days"
			if s.ARN == "" {
				msg += "; its settings (dead-letter queue, raw delivery) cannot be read until then"
			}
			add(dlq.SeverityWarning, codeSubscriptionPending, msg,
				"confirm it from the queue's account (ConfirmSubscription with the token SNS sent to the queue), or subscribe the queue from its own account, then check again")
		}
		if s.ARN != "" {
			fs = append(fs, deliveryFindings(where, name, topic, s, opts.Delivery)...)
		}
		if ok, err := queuepolicy.AllowsTopic(attrs["Policy"], queueARN, s.TopicARN); err != nil || !ok {
			why := "does not let the topic send"
			if err != nil {
				why = "cannot be read: " + err.Error()
			}
			add(dlq.SeverityError, codeQueuePolicyRefusesTopic,
				fmt.Sprintf("queue %s's policy %s: SNS cannot deliver %s's messages (client errors, not retried); they go to the subscription's dead-letter queue, or are lost without one", name, why, topic),
				fmt.Sprintf("add a statement allowing sns.amazonaws.com sqs:SendMessage on %s with the condition ArnEquals aws:SourceArn %s (`sqsworker setup --topic %s %s` adds it)", queueARN, s.TopicARN, topic, name))
		}
		fs = append(fs, kmsFindings(fmt.Sprintf("queue %s", name), attrs["KmsMasterKeyId"])...)
		if s.ARN == "" {
			continue // pending: its attributes are unknown
		}
		if s.DLQARN == "" {
			add(dlq.SeverityError, codeNoSubscriptionDLQ,
				where+" has no RedrivePolicy: a message SNS cannot deliver (a deleted queue, a policy that refuses SNS, a KMS key SNS cannot use) is discarded",
				fmt.Sprintf("give the subscription a dead-letter queue: `sqsworker setup --topic %s %s` creates %s-fanout-dlq and sets the RedrivePolicy {\"deadLetterTargetArn\":\"…\"}", topic, name, strings.TrimSuffix(name, ".fifo")))
			continue
		}
		f, err := dlqFindings(ctx, sqsClient, where, s, retention)
		if err != nil {
			return fs, err
		}
		fs = append(fs, f...)
	}
	return fs, nil
}

// deliveryFindings judges raw delivery against what the consumer expects.
func deliveryFindings(where, queue, topic string, s Subscription, d Delivery) []dlq.Finding {
	switch {
	case d == DeliveryEnvelope && s.Raw:
		return []dlq.Finding{{Severity: dlq.SeverityError, Code: codeRawDeliveryMismatch,
			Message: where + " uses raw message delivery, but the consumer unwraps SNS's envelope (fanout.Unwrap): every message would be a permanent failure",
			Fix:     fmt.Sprintf("turn raw delivery off (`sqsworker setup --topic %s --raw=false %s`), or drop fanout.Unwrap from the consumer", topic, queue)}}
	case d == DeliveryRaw && !s.Raw:
		return []dlq.Finding{{Severity: dlq.SeverityError, Code: codeRawDeliveryMismatch,
			Message: where + " delivers SNS's JSON envelope, but the consumer expects the published message itself",
			Fix:     fmt.Sprintf("turn raw delivery on (`sqsworker setup --topic %s --raw %s`), or unwrap the envelope with fanout.Unwrap", topic, queue)}}
	case d == DeliveryUnknown && !s.Raw:
		return []dlq.Finding{{Severity: dlq.SeverityInfo, Code: codeEnvelopeDelivery,
			Message: where + " delivers SNS's JSON envelope: the handler gets the message inside it only through fanout.Unwrap",
			Fix:     "use worker.Chain(handler, fanout.Unwrap()) (and tell doctor with --delivery envelope), or turn raw delivery on (--delivery raw)"}}
	}
	return nil
}

// openPolicyFindings reports the statements of a queue's policy that let
// everyone send to it unconditionally (queuepolicy.OpenStatements). what is
// the queue as the message names it, subscribed the queue subscribed to the
// topic (for setup's command line), topic the topic's name or "" if the
// queue has no subscription; granted says the policy already has the
// statement scoped to the topic (Setup's case). A policy that does not
// parse is reported by the topic's check, not here.
func openPolicyFindings(what, subscribed, queueARN, policy, topic string, granted bool) []dlq.Finding {
	open, err := queuepolicy.OpenStatements(policy, queueARN)
	if err != nil || len(open) == 0 {
		return nil
	}
	which := "statement " + strings.Join(open, ", ")
	if strings.HasPrefix(open[0], "statement ") {
		which = strings.Join(open, ", ")
	}
	fix := fmt.Sprintf("remove %s from the policy, or give it a condition that names your senders (aws:SourceArn, aws:SourceAccount, aws:PrincipalOrgID)", which)
	switch {
	case granted:
		fix = fmt.Sprintf("remove %s from the policy (the statement scoped to topic %s is in place, so SNS keeps delivering), or give it a condition that names your senders (aws:SourceArn, aws:SourceAccount, aws:PrincipalOrgID)", which, topic)
	case topic != "":
		fix += fmt.Sprintf("; run `sqsworker setup --topic %s %s` first: it adds the statement scoped to the topic, so SNS keeps delivering once the open one is gone", topic, subscribed)
	default:
		fix += "; a topic that delivers to the queue needs its own statement (`sqsworker setup --topic TOPIC " + subscribed + "` adds it)"
	}
	return []dlq.Finding{{Severity: dlq.SeverityError, Code: codeQueuePolicyOpen,
		Message: fmt.Sprintf("%s's policy lets everyone send to it (%s: Principal *, sqs:SendMessage, no condition): any AWS account, or an anonymous caller, can put messages on it, and fanout.Unwrap, which does not verify SNS's signatures, takes a forged envelope for one the topic sent", what, which),
		Fix:     fix}}
}

// kmsFindings notes encryption SNS cannot use, or must be granted.
func kmsFindings(what, key string) []dlq.Finding {
	switch {
	case key == "":
		return nil
	case key == "alias/aws/sqs" || strings.HasSuffix(key, ":alias/aws/sqs"):
		return []dlq.Finding{{Severity: dlq.SeverityError, Code: codeAWSManagedKey,
			Message: what + " is encrypted with the AWS managed key alias/aws/sqs, whose key policy SNS cannot be granted: every delivery fails",
			Fix:     "encrypt it with a customer managed KMS key whose policy lets sns.amazonaws.com use kms:GenerateDataKey* and kms:Decrypt, or with SQS-managed encryption (SqsManagedSseEnabled)"}}
	}
	return []dlq.Finding{{Severity: dlq.SeverityInfo, Code: codeCustomerManagedKey,
		Message: fmt.Sprintf("%s is encrypted with KMS key %s", what, key),
		Fix:     `make sure the key policy grants {"Principal":{"Service":"sns.amazonaws.com"},"Action":["kms:GenerateDataKey*","kms:Decrypt"]}, or SNS's deliveries fail`}}
}

// dlqFindings checks a subscription's dead-letter queue.
func dlqFindings(ctx context.Context, client dlq.API, where string, s Subscription, queueRetention time.Duration) ([]dlq.Finding, error) {
	var fs []dlq.Finding
	add := func(sev dlq.Severity, code, msg, fix string) {
		fs = append(fs, dlq.Finding{Severity: sev, Code: code, Message: msg, Fix: fix})
	}
	name := queueref.Name(s.DLQARN)
	qa, err := queueref.ParseARN(s.DLQARN)
	if err != nil {
		add(dlq.SeverityError, codeSubscriptionDLQMissing, fmt.Sprintf("%s has a RedrivePolicy whose deadLetterTargetArn is not a queue ARN: %v", where, err),
			`set RedrivePolicy to {"deadLetterTargetArn":"arn:aws:sqs:REGION:ACCOUNT:NAME"}`)
		return fs, nil
	}
	ta, _ := ParseTopicARN(s.TopicARN)
	if ta.Account != "" && (qa.Account != ta.Account || qa.Region != ta.Region) {
		add(dlq.SeverityError, codeSubscriptionDLQElsewhere,
			fmt.Sprintf("%s's dead-letter queue %s is in account %s, region %s, but SNS only dead-letters to a queue in the subscription's own account and region (%s, %s)", where, s.DLQARN, qa.Account, qa.Region, ta.Account, ta.Region),
			fmt.Sprintf("create a dead-letter queue in account %s, region %s, and point the RedrivePolicy at it", ta.Account, ta.Region))
		return fs, nil
	}
	out, err := client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(qa.Name), QueueOwnerAWSAccountId: aws.String(qa.Account)})
	if err != nil {
		if !isQueueMissing(err) {
			return fs, fmt.Errorf("finding dead-letter queue %s of %s: %w", s.DLQARN, where, err)
		}
		add(dlq.SeverityError, codeSubscriptionDLQMissing,
			fmt.Sprintf("%s's RedrivePolicy names dead-letter queue %s, which does not exist: a message SNS cannot deliver is lost", where, s.DLQARN),
			fmt.Sprintf("create queue %s (`sqsworker setup --topic %s %s` does), with MessageRetentionPeriod 1209600 (14 days)", name, topicName(s.TopicARN), queueref.Name(s.QueueARN)))
		return fs, nil
	}
	attrs, err := queueAttributes(ctx, client, aws.ToString(out.QueueUrl))
	if err != nil {
		return fs, err
	}
	if dlqFIFO := attrs["FifoQueue"] == "true"; dlqFIFO != ta.FIFO() {
		add(dlq.SeverityError, codeSubscriptionDLQWrongType,
			fmt.Sprintf("%s's dead-letter queue %s is %s, but topic %s is %s: SNS needs a FIFO dead-letter queue for a FIFO topic and a standard one for a standard topic", where, name, kind(dlqFIFO), ta.Name, kind(ta.FIFO())),
			fmt.Sprintf("point the RedrivePolicy at %s", kind(ta.FIFO())))
	}
	if ok, err := queuepolicy.AllowsTopic(attrs["Policy"], s.DLQARN, s.TopicARN); err != nil || !ok {
		add(dlq.SeverityError, codeDLQPolicyRefusesTopic,
			fmt.Sprintf("dead-letter queue %s's policy does not let topic %s send: a message SNS cannot deliver to the queue cannot be dead-lettered either, and is lost", name, ta.Name),
			fmt.Sprintf("add a statement allowing sns.amazonaws.com sqs:SendMessage on %s with the condition ArnEquals aws:SourceArn %s (`sqsworker setup --topic %s %s` adds it)", s.DLQARN, s.TopicARN, ta.Name, queueref.Name(s.QueueARN)))
	}
	fs = append(fs, openPolicyFindings("dead-letter queue "+name, queueref.Name(s.QueueARN), s.DLQARN, attrs["Policy"], ta.Name, false)...)
	fs = append(fs, kmsFindings("dead-letter queue "+name, attrs["KmsMasterKeyId"])...)
	if r, ok := seconds(attrs, "MessageRetentionPeriod"); ok && r < queueRetention {
		add(dlq.SeverityWarning, codeSubscriptionDLQRetention,
			fmt.Sprintf("dead-letter queue %s keeps messages %s, less than queue %s's %s: a delivery SNS could not make expires before the messages delivered with it", name, humanDays(r), queueref.Name(s.QueueARN), humanDays(queueRetention)),
			fmt.Sprintf("set queue %s's MessageRetentionPeriod to 1209600 (14 days, the maximum, as AWS advises for SNS dead-letter queues)", name))
	}
	return fs, nil
}

// queueAttributes reads every attribute of a queue.
func queueAttributes(ctx context.Context, client dlq.API, url string) (map[string]string, error) {
	out, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll}})
	if err != nil {
		return nil, fmt.Errorf("reading queue %s: %w", queueref.Name(url), err)
	}
	if out.Attributes == nil {
		return map[string]string{}, nil
	}
	return out.Attributes, nil
}

func seconds(attrs map[string]string, name string) (time.Duration, bool) {
	var n int64
	if _, err := fmt.Sscan(attrs[name], &n); err != nil {
		return 0, false
	}
	return time.Duration(n) * time.Second, true
}

func humanDays(d time.Duration) string {
	if d%(24*time.Hour) == 0 {
		if d == 24*time.Hour {
			return "1 day"
		}
		return fmt.Sprintf("%d days", d/(24*time.Hour))
	}
	return d.String()
}

func kind(fifo bool) string {
	if fifo {
		return "a FIFO queue"
	}
	return "a standard queue"
}

func hasCode(fs []dlq.Finding, code string) bool {
	for _, f := range fs {
		if f.Code == code {
			return true
		}
	}
	return false
}

func dropCode(fs []dlq.Finding, code string) []dlq.Finding {
	out := fs[:0]
	for _, f := range fs {
		if f.Code != code {
			out = append(out, f)
		}
	}
	return out
}

func isQueueMissing(err error) bool {
	var nq *sqstypes.QueueDoesNotExist
	c := sqserr.Code(err)
	return errors.As(err, &nq) || c == "NonExistentQueue" || c == "QueueDoesNotExist"
}

func isAccessDenied(err error) bool {
	var ae *types.AuthorizationErrorException
	if errors.As(err, &ae) {
		return true
	}
	var api smithy.APIError
	return errors.As(err, &api) && (api.ErrorCode() == "AuthorizationError" || api.ErrorCode() == "AccessDenied")
}

// shortErr is an error's last part: the API's own message.
func shortErr(err error) string {
	var api smithy.APIError
	if errors.As(err, &api) {
		return api.ErrorCode() + ": " + api.ErrorMessage()
	}
	return err.Error()
}
