package fanout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sns/types"
	"github.com/aws/smithy-go"

	"github.com/sqsworker/sqsworker/queueref"
)

// Subscription is an SQS queue's subscription to an SNS topic, as its
// attributes describe it.
type Subscription struct {
	// ARN is the subscription's ARN; empty for a subscription pending
	// confirmation that SNS listed without its ARN (see Pending).
	ARN string `json:"subscriptionArn"`
	// TopicARN is the topic.
	TopicARN string `json:"topicArn"`
	// QueueARN is the subscribed queue (the subscription's endpoint).
	QueueARN string `json:"queueArn"`
	// Raw reports raw message delivery: the queue gets the published
	// message itself, not SNS's JSON envelope.
	Raw bool `json:"rawMessageDelivery"`
	// FilterPolicy and FilterPolicyScope are the subscription's filter.
	FilterPolicy      string `json:"filterPolicy,omitempty"`
	FilterPolicyScope string `json:"filterPolicyScope,omitempty"`
	// DLQARN is the dead-letter queue of the subscription's RedrivePolicy,
	// where SNS sends what it cannot deliver; "" without one.
	DLQARN string `json:"dlqArn,omitempty"`
	// Pending reports a subscription waiting for confirmation: SNS
	// delivers nothing to it until the queue's owner confirms it, and
	// deletes it unconfirmed after three days. SNS lists such a subscription
	// with "PendingConfirmation" in place of its ARN, so one found by
	// listing has no ARN, and only TopicARN and QueueARN are known of it.
	Pending bool `json:"pending,omitempty"`
}

// ErrNoSubscription is wrapped by the errors of Subscriptions' callers
// (FindSubscription) that find no subscription to act on.
var ErrNoSubscription = errors.New("fanout: no matching SNS subscription")

// readSubscription reads one subscription's attributes.
func readSubscription(ctx context.Context, client API, arn string) (Subscription, error) {
	out, err := client.GetSubscriptionAttributes(ctx, &sns.GetSubscriptionAttributesInput{SubscriptionArn: aws.String(arn)})
	if err != nil {
		return Subscription{}, fmt.Errorf("reading subscription %s: %w", arn, err)
	}
	a := out.Attributes
	s := Subscription{ARN: arn, TopicARN: a["TopicArn"], QueueARN: a["Endpoint"], Raw: a["RawMessageDelivery"] == "true",
		FilterPolicy: a["FilterPolicy"], FilterPolicyScope: a["FilterPolicyScope"], Pending: a["PendingConfirmation"] == "true"}
	if rp := a["RedrivePolicy"]; rp != "" {
		var p struct {
			Target string `json:"deadLetterTargetArn"`
		}
		if err := json.Unmarshal([]byte(rp), &p); err != nil {
			return s, fmt.Errorf("subscription %s has a RedrivePolicy that is not JSON: %q", arn, rp)
		}
		s.DLQARN = p.Target
	}
	return s, nil
}

// pendingARN is what SNS lists in place of the ARN of a subscription
// pending confirmation.
const pendingARN = "PendingConfirmation"

// eachSQSSubscription calls fn for every SQS subscription SNS lists (of
// topicARN, or of the account when it is ""), with pending set for one
// pending confirmation, which SNS lists without its ARN. Entries with
// neither an ARN nor that mark (being deleted) are skipped.
func eachSQSSubscription(ctx context.Context, client API, topicARN string, fn func(s types.Subscription, pending bool) error) error {
	var token *string
	for {
		var subs []types.Subscription
		var next *string
		if topicARN == "" {
			out, err := client.ListSubscriptions(ctx, &sns.ListSubscriptionsInput{NextToken: token})
			if err != nil {
				return fmt.Errorf("listing SNS subscriptions: %w", err)
			}
			subs, next = out.Subscriptions, out.NextToken
		} else {
			out, err := client.ListSubscriptionsByTopic(ctx, &sns.ListSubscriptionsByTopicInput{TopicArn: aws.String(topicARN), NextToken: token})
			if err != nil {
				return fmt.Errorf("listing the subscriptions of topic %s: %w", topicARN, err)
			}
			subs, next = out.Subscriptions, out.NextToken
		}
		for _, s := range subs {
			arn := aws.ToString(s.SubscriptionArn)
			pending := arn == pendingARN
			if aws.ToString(s.Protocol) != "sqs" || !pending && !isARN(arn) {
				continue
			}
			if err := fn(s, pending); err != nil {
				return err
			}
		}
		if aws.ToString(next) == "" {
			return nil
		}
		token = next
	}
}

func isARN(s string) bool { return len(s) > 4 && s[:4] == "arn:" }

// Subscriptions returns the subscriptions of the queue queueARN to SNS
// topics, with their attributes. One pending confirmation has Pending set
// and, as SNS lists it without its ARN, neither ARN nor attributes.
//
// It needs sns:ListSubscriptions and sns:GetSubscriptionAttributes.
func Subscriptions(ctx context.Context, client API, queueARN string) ([]Subscription, error) {
	var out []Subscription
	err := eachSQSSubscription(ctx, client, "", func(s types.Subscription, pending bool) error {
		if aws.ToString(s.Endpoint) != queueARN {
			return nil
		}
		if pending {
			out = append(out, Subscription{TopicARN: aws.ToString(s.TopicArn), QueueARN: queueARN, Pending: true})
			return nil
		}
		sub, err := readSubscription(ctx, client, aws.ToString(s.SubscriptionArn))
		if err != nil {
			return err
		}
		out = append(out, sub)
		return nil
	})
	return out, err
}

// ServedBy returns the SQS subscriptions whose RedrivePolicy names the
// queue dlqARN as their dead-letter queue: none when the queue is no
// subscription's dead-letter queue.
//
// It needs sns:ListSubscriptions and sns:GetSubscriptionAttributes (one
// call per SQS subscription of the account). Subscriptions pending
// confirmation are not looked at: SNS lists them without an ARN to read.
func ServedBy(ctx context.Context, client API, dlqARN string) ([]Subscription, error) {
	var out []Subscription
	err := eachSQSSubscription(ctx, client, "", func(s types.Subscription, pending bool) error {
		if pending {
			return nil
		}
		sub, err := readSubscription(ctx, client, aws.ToString(s.SubscriptionArn))
		if err != nil {
			if isNotFound(err) {
				return nil // unsubscribed meanwhile
			}
			return err
		}
		if sub.DLQARN == dlqARN {
			out = append(out, sub)
		}
		return nil
	})
	return out, err
}

// FindSubscription returns the subscription of the queue queueARN to the
// topic (a name or ARN; "" for the queue's only subscription with a
// dead-letter queue). The error wraps ErrNoSubscription when there is none,
// and says which topics there are when the choice is ambiguous.
func FindSubscription(ctx context.Context, client API, queueARN, topic string) (Subscription, error) {
	subs, err := Subscriptions(ctx, client, queueARN)
	if err != nil {
		return Subscription{}, err
	}
	var match []Subscription
	for _, s := range subs {
		if topic == "" && s.DLQARN != "" || topic != "" && (s.TopicARN == topic || topicName(s.TopicARN) == topic) {
			match = append(match, s)
		}
	}
	queue := queueref.Name(queueARN)
	switch {
	case len(match) == 1 && match[0].Pending && match[0].ARN == "":
		return Subscription{}, fmt.Errorf("%w: the subscription of queue %s to topic %s is pending confirmation, and SNS shows its settings only once it is confirmed; confirm it (the queue's owner calls ConfirmSubscription with the token SNS sent to the queue)",
			ErrNoSubscription, queue, topicName(match[0].TopicARN))
	case len(match) == 1:
		return match[0], nil
	case len(match) == 0 && topic != "":
		return Subscription{}, fmt.Errorf("%w: queue %s is not subscribed to topic %s", ErrNoSubscription, queue, topic)
	case len(match) == 0:
		return Subscription{}, fmt.Errorf("%w: queue %s has no SNS subscription with a dead-letter queue (%d subscriptions without one)", ErrNoSubscription, queue, len(subs))
	}
	var topics []string
	for _, s := range match {
		topics = append(topics, topicName(s.TopicARN))
	}
	return Subscription{}, fmt.Errorf("queue %s is subscribed to several topics with dead-letter queues (%v); name the topic", queue, topics)
}

// topicName returns the name part of a topic ARN.
func topicName(arn string) string {
	if a, err := ParseTopicARN(arn); err == nil {
		return a.Name
	}
	return arn
}

func isNotFound(err error) bool {
	var nf *types.NotFoundException
	if errors.As(err, &nf) {
		return true
	}
	var api smithy.APIError
	return errors.As(err, &api) && api.ErrorCode() == "NotFound"
}
