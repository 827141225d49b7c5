package fanout_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sns/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/fanout"
	"github.com/sqsworker/sqsworker/internal/deadletter"
	"github.com/sqsworker/sqsworker/sqstest"
	"github.com/sqsworker/sqsworker/sqstest/snstest"
)

// lint runs fanout.Lint and returns the findings by code, checking that
// each says what to do.
func lint(t *testing.T, topics fanout.API, queues *sqstest.Fake, url string, d fanout.Delivery) map[string]dlq.Finding {
	t.Helper()
	fs, err := fanout.Lint(context.Background(), topics, queues, url, fanout.LintOptions{Delivery: d, Queue: dlq.LintOptions{Attempts: 4}})
	if err != nil {
		t.Fatalf("Lint: %v", err)
	}
	out := map[string]dlq.Finding{}
	for _, f := range fs {
		if f.Message == "" || f.Fix == "" {
			t.Errorf("finding %s lacks a message or a fix", f.Code)
		}
		out[f.Code] = f
	}
	return out
}

// only checks that the findings are exactly the given code (plus the
// queue's own DLQ-retention note, which has nothing to do with SNS).
func only(t *testing.T, got map[string]dlq.Finding, code string, sev dlq.Severity, fixHas string) {
	t.Helper()
	f, ok := got[code]
	if !ok || len(got) != 1 {
		t.Fatalf("findings %v; want only %s", keys(got), code)
	}
	if f.Severity != sev || !strings.Contains(f.Fix, fixHas) {
		t.Errorf("%s: severity %v, fix %q (want %v and %q)", code, f.Severity, f.Fix, sev, fixHas)
	}
}

func hasKey(m map[string]dlq.Finding, code string) bool {
	_, ok := m[code]
	return ok
}

func keys(m map[string]dlq.Finding) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func setSub(t *testing.T, topics *snstest.Fake, arn, name, value string) {
	t.Helper()
	if _, err := topics.SetSubscriptionAttributes(context.Background(), &sns.SetSubscriptionAttributesInput{SubscriptionArn: aws.String(arn), AttributeName: aws.String(name), AttributeValue: aws.String(value)}); err != nil {
		t.Fatal(err)
	}
}

func setQueue(t *testing.T, queues *sqstest.Fake, url string, attrs map[string]string) {
	t.Helper()
	if _, err := queues.SetQueueAttributes(context.Background(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url), Attributes: attrs}); err != nil {
		t.Fatal(err)
	}
}

func TestLintCorrectChainIsOK(t *testing.T) {
	queues, topics, res := chain(t, "fulfilment", raw)
	if got := lint(t, topics, queues, res.Queue.QueueURL, fanout.DeliveryRaw); len(got) != 0 {
		t.Errorf("findings on a correct chain: %v", got)
	}
	queues, topics, res = chain(t, "billing")
	if got := lint(t, topics, queues, res.Queue.QueueURL, fanout.DeliveryEnvelope); len(got) != 0 {
		t.Errorf("findings on a correct enveloped chain: %v", got)
	}
}

func TestLintSubscriptionWithoutDLQ(t *testing.T) {
	queues, topics, res := chain(t, "fulfilment", raw)
	setSub(t, topics, res.Subscription.ARN, "RedrivePolicy", "")
	only(t, lint(t, topics, queues, res.Queue.QueueURL, fanout.DeliveryRaw), "subscription-no-dlq", dlq.SeverityError, "sqsworker setup --topic rental-orders fulfilment")
}

func TestLintSubscriptionDLQMissing(t *testing.T) {
	queues, topics, res := chain(t, "fulfilment", raw)
	if _, err := queues.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(res.FanoutDLQURL)}); err != nil {
		t.Fatal(err)
	}
	only(t, lint(t, topics, queues, res.Queue.QueueURL, fanout.DeliveryRaw), "subscription-dlq-missing", dlq.SeverityError, "create queue fulfilment-fanout-dlq")
}

func TestLintSubscriptionDLQInAnotherAccount(t *testing.T) {
	queues, topics, res := chain(t, "fulfilment", raw)
	setSub(t, topics, res.Subscription.ARN, "RedrivePolicy", `{"deadLetterTargetArn":"arn:aws:sqs:eu-west-1:999999999999:elsewhere"}`)
	only(t, lint(t, topics, queues, res.Queue.QueueURL, fanout.DeliveryRaw), "subscription-dlq-other-account-region", dlq.SeverityError, "account 000000000000, region us-east-1")
}

func TestLintSubscriptionDLQOfTheWrongType(t *testing.T) {
	queues, topics, res := chain(t, "fulfilment", raw)
	fifo := queues.MustCreateQueue(t, "odd.fifo", map[string]string{"FifoQueue": "true", "MessageRetentionPeriod": "1209600"})
	setQueue(t, queues, fifo, map[string]string{"Policy": grantPolicy(t, "arn:aws:sqs:us-east-1:000000000000:odd.fifo", res.TopicARN)})
	setSub(t, topics, res.Subscription.ARN, "RedrivePolicy", `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:odd.fifo"}`)
	only(t, lint(t, topics, queues, res.Queue.QueueURL, fanout.DeliveryRaw), "subscription-dlq-wrong-type", dlq.SeverityError, "a standard queue")
}

func TestLintQueuePolicyRefusesTheTopic(t *testing.T) {
	queues, topics, res := chain(t, "fulfilment", raw)
	setQueue(t, queues, res.Queue.QueueURL, map[string]string{"Policy": grantPolicy(t, res.Queue.QueueARN, res.TopicARN+"-other")})
	only(t, lint(t, topics, queues, res.Queue.QueueURL, fanout.DeliveryRaw), "queue-policy-refuses-topic", dlq.SeverityError, "aws:SourceArn "+res.TopicARN)
}

func TestLintSubscriptionDLQPolicyRefusesTheTopic(t *testing.T) {
	queues, topics, res := chain(t, "fulfilment", raw)
	setQueue(t, queues, res.FanoutDLQURL, map[string]string{"Policy": ""})
	only(t, lint(t, topics, queues, res.Queue.QueueURL, fanout.DeliveryRaw), "subscription-dlq-policy-refuses-topic", dlq.SeverityError, "sqs:SendMessage on "+res.FanoutDLQARN)
}

func TestLintAWSManagedKey(t *testing.T) {
	queues, topics, res := chain(t, "fulfilment", raw)
	setQueue(t, queues, res.FanoutDLQURL, map[string]string{"KmsMasterKeyId": "alias/aws/sqs"})
	only(t, lint(t, topics, queues, res.Queue.QueueURL, fanout.DeliveryRaw), "kms-aws-managed-key", dlq.SeverityError, "customer managed KMS key")
}

func TestLintCustomerManagedKeyNotesTheGrant(t *testing.T) {
	queues, topics, res := chain(t, "fulfilment", raw)
	setQueue(t, queues, res.Queue.QueueURL, map[string]string{"KmsMasterKeyId": "alias/orders"})
	only(t, lint(t, topics, queues, res.Queue.QueueURL, fanout.DeliveryRaw), "kms-customer-managed-key", dlq.SeverityInfo, "kms:GenerateDataKey*")
}

func TestLintSubscriptionDLQRetention(t *testing.T) {
	queues, topics, res := chain(t, "fulfilment", raw)
	setQueue(t, queues, res.FanoutDLQURL, map[string]string{"MessageRetentionPeriod": "86400"})
	only(t, lint(t, topics, queues, res.Queue.QueueURL, fanout.DeliveryRaw), "subscription-dlq-retention-short", dlq.SeverityWarning, "1209600")
}

func TestLintDeliveryAgainstTheConsumer(t *testing.T) {
	queues, topics, res := chain(t, "fulfilment")
	only(t, lint(t, topics, queues, res.Queue.QueueURL, fanout.DeliveryUnknown), "envelope-delivery", dlq.SeverityInfo, "fanout.Unwrap")
	only(t, lint(t, topics, queues, res.Queue.QueueURL, fanout.DeliveryRaw), "raw-delivery-mismatch", dlq.SeverityError, "--raw")
	setSub(t, topics, res.Subscription.ARN, "RawMessageDelivery", "true")
	only(t, lint(t, topics, queues, res.Queue.QueueURL, fanout.DeliveryEnvelope), "raw-delivery-mismatch", dlq.SeverityError, "--raw=false")
}

// pendingChain sets up topic "rental-orders" → queue name with the topic
// in another account than the queue: SNS keeps the subscription pending
// until the queue's owner confirms it, and lists it as PendingConfirmation.
func pendingChain(t *testing.T, name string) (*sqstest.Fake, *snstest.Fake, fanout.SetupResult) {
	t.Helper()
	queues := sqstest.For(t)
	topics := snstest.For(t, queues, func(o *snstest.Options) { o.AccountID = "111122223333" })
	res := setupChain(t, topics, queues, name, raw)
	if !res.Subscription.Pending || res.Subscription.ARN == "" {
		t.Fatalf("subscription %+v; want a pending one with its ARN", res.Subscription)
	}
	return queues, topics, res
}

func TestLintPendingSubscription(t *testing.T) {
	queues, topics, res := pendingChain(t, "fulfilment")
	got := lint(t, topics, queues, res.Queue.QueueURL, fanout.DeliveryRaw)
	only(t, got, "subscription-pending", dlq.SeverityWarning, "ConfirmSubscription")
	if !strings.Contains(got["subscription-pending"].Message, "topic rental-orders") {
		t.Errorf("message %q does not name the topic", got["subscription-pending"].Message)
	}
	if err := topics.Confirm(res.Subscription.ARN); err != nil {
		t.Fatal(err)
	}
	if got := lint(t, topics, queues, res.Queue.QueueURL, fanout.DeliveryRaw); hasKey(got, "subscription-pending") {
		t.Errorf("findings once confirmed: %v", keys(got))
	}
}

// denied has no SNS permissions.
type denied struct{ *snstest.Fake }

func (denied) ListSubscriptions(context.Context, *sns.ListSubscriptionsInput, ...func(*sns.Options)) (*sns.ListSubscriptionsOutput, error) {
	return nil, &types.AuthorizationErrorException{Message: aws.String("User is not authorized to perform: SNS:ListSubscriptions")}
}

func TestLintWithoutSNSPermissionsSaysSo(t *testing.T) {
	queues, topics, res := chain(t, "fulfilment", raw)
	only(t, lint(t, denied{topics}, queues, res.Queue.QueueURL, fanout.DeliveryRaw), "subscriptions-not-checked", dlq.SeverityInfo, "sns:ListSubscriptions")
}

func TestLintRecognisesASubscriptionDLQ(t *testing.T) {
	queues, topics, res := chain(t, "fulfilment", raw)
	got := lint(t, topics, queues, res.FanoutDLQURL, fanout.DeliveryUnknown)
	only(t, got, "is-subscription-dlq", dlq.SeverityInfo, "sqsworker doctor fulfilment")
	if strings.Contains(got["is-subscription-dlq"].Fix, "-dlq-dlq") {
		t.Error("suggests a DLQ for the DLQ")
	}
}

func TestLintKeepsTheQueuesOwnFindings(t *testing.T) {
	queues, topics, res := chain(t, "fulfilment", raw)
	setQueue(t, queues, res.Queue.QueueURL, map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"` + res.Queue.DLQARN + `","maxReceiveCount":2}`})
	only(t, lint(t, topics, queues, res.Queue.QueueURL, fanout.DeliveryRaw), deadletter.CodeMaxReceiveCountLow, dlq.SeverityError, "maxReceiveCount")
}

func grantPolicy(t *testing.T, queueARN, topicARN string) string {
	t.Helper()
	return `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"sns.amazonaws.com"},"Action":"sqs:SendMessage","Resource":"` + queueARN + `","Condition":{"ArnEquals":{"aws:SourceArn":"` + topicARN + `"}}}]}`
}

// openPolicy lets everyone send to the queue, with no condition.
func openPolicy(queueARN string) string {
	return `{"Version":"2012-10-17","Statement":[{"Sid":"anyone","Effect":"Allow","Principal":"*","Action":"sqs:SendMessage","Resource":"` + queueARN + `"}]}`
}

// An open policy lets SNS deliver, so the topic's check passes; but anyone
// may then send a forged envelope, which Unwrap believes.
func TestLintOpenQueuePolicy(t *testing.T) {
	queues, topics, res := chain(t, "fulfilment", raw)
	setQueue(t, queues, res.Queue.QueueURL, map[string]string{"Policy": openPolicy(res.Queue.QueueARN)})
	got := lint(t, topics, queues, res.Queue.QueueURL, fanout.DeliveryRaw)
	only(t, got, "queue-policy-open", dlq.SeverityError, "`sqsworker setup --topic rental-orders fulfilment` first")
	if f := got["queue-policy-open"]; !strings.Contains(f.Message, "statement anyone") || !strings.Contains(f.Fix, "remove statement anyone") {
		t.Errorf("finding does not name the statement: %+v", f)
	}

	// The same on the subscription's dead-letter queue, whose messages a
	// redrive puts back on the queue.
	queues, topics, res = chain(t, "billing", raw)
	setQueue(t, queues, res.FanoutDLQURL, map[string]string{"Policy": `{"Statement":[{"Effect":"Allow","Principal":{"AWS":"*"},"Action":"sqs:*","Resource":"*"}]}`})
	got = lint(t, topics, queues, res.Queue.QueueURL, fanout.DeliveryRaw)
	only(t, got, "queue-policy-open", dlq.SeverityError, "remove statement 1")
	if f := got["queue-policy-open"]; !strings.Contains(f.Message, "dead-letter queue billing-fanout-dlq's policy") {
		t.Errorf("finding does not name the dead-letter queue: %+v", f)
	}

	// A queue with no subscription is checked too.
	lone := queues.MustCreateQueue(t, "lone", nil)
	setQueue(t, queues, lone, map[string]string{"Policy": openPolicy("arn:aws:sqs:us-east-1:000000000000:lone")})
	got = lint(t, topics, queues, lone, fanout.DeliveryUnknown)
	if f, ok := got["queue-policy-open"]; !ok || !strings.Contains(f.Fix, "--topic TOPIC lone") {
		t.Errorf("findings on an open queue without subscriptions: %v", got)
	}

	// A condition scopes the statement: not open.
	scoped := strings.Replace(openPolicy(res.Queue.QueueARN), `"Resource"`, `"Condition":{"StringEquals":{"aws:SourceAccount":"000000000000"}},"Resource"`, 1)
	setQueue(t, queues, res.FanoutDLQURL, map[string]string{"Policy": grantPolicy(t, res.FanoutDLQARN, res.TopicARN)})
	setQueue(t, queues, res.Queue.QueueURL, map[string]string{"Policy": scoped})
	if got := lint(t, topics, queues, res.Queue.QueueURL, fanout.DeliveryRaw); hasKey(got, "queue-policy-open") {
		t.Errorf("a conditioned statement reported open: %v", got)
	}
}
