package conformance

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	snstypes "github.com/aws/aws-sdk-go-v2/service/sns/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/harness/testenv"
	"github.com/sqsworker/sqsworker/internal/queuepolicy"
)

// SNSAPI is every SNS call the SNS suite makes, with the SDK's exact
// method signatures, so an *sns.Client and snstest's fake both satisfy it.
type SNSAPI interface {
	CreateTopic(ctx context.Context, params *sns.CreateTopicInput, optFns ...func(*sns.Options)) (*sns.CreateTopicOutput, error)
	DeleteTopic(ctx context.Context, params *sns.DeleteTopicInput, optFns ...func(*sns.Options)) (*sns.DeleteTopicOutput, error)
	Subscribe(ctx context.Context, params *sns.SubscribeInput, optFns ...func(*sns.Options)) (*sns.SubscribeOutput, error)
	GetSubscriptionAttributes(ctx context.Context, params *sns.GetSubscriptionAttributesInput, optFns ...func(*sns.Options)) (*sns.GetSubscriptionAttributesOutput, error)
	SetSubscriptionAttributes(ctx context.Context, params *sns.SetSubscriptionAttributesInput, optFns ...func(*sns.Options)) (*sns.SetSubscriptionAttributesOutput, error)
	ListSubscriptionsByTopic(ctx context.Context, params *sns.ListSubscriptionsByTopicInput, optFns ...func(*sns.Options)) (*sns.ListSubscriptionsByTopicOutput, error)
	Publish(ctx context.Context, params *sns.PublishInput, optFns ...func(*sns.Options)) (*sns.PublishOutput, error)
	PublishBatch(ctx context.Context, params *sns.PublishBatchInput, optFns ...func(*sns.Options)) (*sns.PublishBatchOutput, error)
}

var _ SNSAPI = (*sns.Client)(nil)

// The SNS quirks of fauxqs 1.9.2, each verified by the SNS suite.
const (
	// QuirkSNSIgnoresQueuePolicy: SNS delivers to a queue whose policy does
	// not let the topic send; real SNS fails the delivery (a client error)
	// and sends the message to the subscription's dead-letter queue.
	QuirkSNSIgnoresQueuePolicy Quirk = "SNSIgnoresQueuePolicy"

	// QuirkSNSNoSubscriptionDLQ: a delivery to a queue that no longer
	// exists is dropped; real SNS sends the message to the subscription's
	// dead-letter queue (RedrivePolicy).
	QuirkSNSNoSubscriptionDLQ Quirk = "SNSNoSubscriptionDLQ"

	// QuirkSNSConfirmsEverySQSSubscription: a subscription of a queue in
	// another account is confirmed at once, listed with its ARN; real SNS
	// keeps it pending until the queue's owner confirms it, and lists it
	// with the SubscriptionArn "PendingConfirmation".
	QuirkSNSConfirmsEverySQSSubscription Quirk = "SNSConfirmsEverySQSSubscription"

	// QuirkSNSNoStandardMessageGroupId: a MessageGroupId published to a
	// standard topic (Publish or PublishBatch) is accepted but does not
	// reach the subscribed standard queue; real SNS passes it on, and the
	// queue returns it as the MessageGroupId system attribute (the tenant
	// of an SQS fair queue).
	QuirkSNSNoStandardMessageGroupId Quirk = "SNSNoStandardMessageGroupId"
)

// snsQuirkDescription describes the SNS quirks.
func snsQuirkDescription(q Quirk) (string, bool) {
	switch q {
	case QuirkSNSIgnoresQueuePolicy:
		return "SNS delivers to a queue whose policy does not let the topic send (real SNS: the delivery fails and goes to the subscription's DLQ)", true
	case QuirkSNSNoSubscriptionDLQ:
		return "a delivery to a deleted queue is dropped, never sent to the subscription's dead-letter queue (real SNS: it is)", true
	case QuirkSNSConfirmsEverySQSSubscription:
		return "a subscription of another account's queue is confirmed at once and listed with its ARN (real SNS: pending, listed as PendingConfirmation)", true
	case QuirkSNSNoStandardMessageGroupId:
		return "a MessageGroupId published to a standard topic does not reach the subscribed standard queue (real SNS: passed on, the fair queue's tenant)", true
	}
	return "", false
}

// FauxqsSNSQuirks returns the SNS quirks of fauxqs 1.9.2.
func FauxqsSNSQuirks() map[Quirk]bool {
	return map[Quirk]bool{QuirkSNSIgnoresQueuePolicy: true, QuirkSNSNoSubscriptionDLQ: true, QuirkSNSConfirmsEverySQSSubscription: true,
		QuirkSNSNoStandardMessageGroupId: true}
}

// SNSQuirksFor returns the declared SNS quirks of a backend named as
// testenv names them: fauxqs's, and none for LocalStack and real SNS.
func SNSQuirksFor(backend string) map[Quirk]bool {
	if backend == "fauxqs" {
		return FauxqsSNSQuirks()
	}
	return nil
}

// SNSBackend is one SNS implementation under test, with the SQS it
// delivers to.
type SNSBackend struct {
	// Name identifies the backend, as in Backend.
	Name string
	// NewClients returns the SNS client and the SQS client one behaviour
	// uses (called inside Wrap). Required.
	NewClients func(t *testing.T) (SNSAPI, API)
	// Quirks are the declared ways this backend differs from real SNS.
	Quirks map[Quirk]bool
	// Wrap, when set, runs each behaviour's body (e.g. in synctest.Test).
	Wrap func(t *testing.T, f func(t *testing.T))
}

// snsEnv is what one SNS behaviour works with.
type snsEnv struct {
	*env
	sns SNSAPI
}

// RunSNS runs every SNS behaviour of the suite against b, concurrently as
// Run does: the parts of SNS fan-out sqsworker relies on — enveloped and raw
// delivery with message attributes, filter policies on attributes and on
// the body, FIFO topics, idempotent subscribing, subscription attributes,
// subscription dead-letter queues for deliveries SNS cannot make, and the
// listing of a subscription pending confirmation.
func RunSNS(t *testing.T, b SNSBackend) {
	t.Helper()
	if b.Name == "" || b.NewClients == nil {
		t.Fatal("conformance.RunSNS: SNSBackend.Name and SNSBackend.NewClients are required")
	}
	all := snsBehaviours()
	var declared []string
	for q, on := range b.Quirks {
		if on {
			declared = append(declared, string(q))
		}
	}
	slices.Sort(declared)
	t.Logf("SNS conformance suite: %d behaviours against backend %q; declared quirks: %s", len(all), b.Name, orNone(declared))
	t.Run(b.Name, func(t *testing.T) {
		var wg sync.WaitGroup
		for _, bh := range all {
			wg.Go(func() {
				t.Run(bh.name, func(t *testing.T) {
					body := func(t *testing.T) {
						snsClient, sqsClient := b.NewClients(t)
						e := &snsEnv{env: &env{t: t, b: Backend{Name: b.Name, Sleep: time.Sleep, Quirks: b.Quirks}, api: sqsClient}, sns: snsClient}
						bh.run(e)
					}
					if b.Wrap != nil {
						b.Wrap(t, body)
					} else {
						body(t)
					}
				})
			})
		}
		wg.Wait()
	})
}

type snsBehaviour struct {
	name string
	run  func(e *snsEnv)
}

func snsBehaviours() []snsBehaviour {
	return []snsBehaviour{
		{"EnvelopedDeliveryCarriesMessageAndMetadata", snsEnveloped},
		{"RawDeliveryCarriesBodyAndAttributes", snsRaw},
		{"FilterPolicyOnAttributes", snsFilterAttributes},
		{"FilterPolicyOnBody", snsFilterBody},
		{"FIFOTopicKeepsGroupsAndOrder", snsFIFO},
		{"SubscribeIsIdempotent", snsSubscribeTwice},
		{"SubscriptionAttributesReadBack", snsSubscriptionAttributes},
		{"DeliveryToDeletedQueueGoesToSubscriptionDLQ", snsDeletedQueueDLQ},
		{"QueuePolicyRefusingTheTopicSendsToSubscriptionDLQ", snsPolicyRefusalDLQ},
		{"PendingSubscriptionIsListedWithoutARN", snsPendingListed},
		{"StandardTopicPassesMessageGroupId", snsStandardGroup},
		{"PublishBatchAnswersPerEntry", snsPublishBatch},
	}
}

// snsQuirk reports whether the backend declares the SNS quirk q, logging it.
func (e *snsEnv) snsQuirk(q Quirk) bool {
	if !e.b.Quirks[q] {
		return false
	}
	d, _ := snsQuirkDescription(q)
	e.t.Logf("QUIRK %s: %s: %s", e.b.Name, q, d)
	return true
}

// topic creates a topic with a unique name, deleted when the test ends.
func (e *snsEnv) topic(fifo bool) string {
	e.t.Helper()
	name := testenv.UniqueName("cfsns")
	in := &sns.CreateTopicInput{Name: aws.String(name)}
	if fifo {
		in.Name = aws.String(name + ".fifo")
		in.Attributes = map[string]string{"FifoTopic": "true"}
	}
	out, err := e.sns.CreateTopic(e.ctx(), in)
	if err != nil {
		e.t.Fatalf("CreateTopic %s: %v", aws.ToString(in.Name), err)
	}
	arn := aws.ToString(out.TopicArn)
	api := e.sns
	e.t.Cleanup(func() { _, _ = api.DeleteTopic(context.Background(), &sns.DeleteTopicInput{TopicArn: aws.String(arn)}) })
	return arn
}

// grant lets topicARN send to the queue at url (its policy).
func (e *snsEnv) grant(url, topicARN string) {
	e.t.Helper()
	arn := e.arn(url)
	policy, _, err := queuepolicy.GrantTopic(e.attributes(url, types.QueueAttributeNamePolicy)["Policy"], arn, topicARN)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.api.SetQueueAttributes(e.ctx(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url), Attributes: map[string]string{"Policy": policy}}); err != nil {
		e.t.Fatalf("SetQueueAttributes Policy: %v", err)
	}
}

// subscribe subscribes the queue at url to topicARN with attrs, after
// letting the topic send to it.
func (e *snsEnv) subscribe(topicARN, url string, attrs map[string]string) string {
	e.t.Helper()
	e.grant(url, topicARN)
	out, err := e.sns.Subscribe(e.ctx(), &sns.SubscribeInput{TopicArn: aws.String(topicARN), Protocol: aws.String("sqs"),
		Endpoint: aws.String(e.arn(url)), Attributes: attrs, ReturnSubscriptionArn: true})
	if err != nil {
		e.t.Fatalf("Subscribe %v: %v", attrs, err)
	}
	return aws.ToString(out.SubscriptionArn)
}

func (e *snsEnv) publish(in *sns.PublishInput) string {
	e.t.Helper()
	out, err := e.sns.Publish(e.ctx(), in)
	if err != nil {
		e.t.Fatalf("Publish %q: %v", aws.ToString(in.Message), err)
	}
	return aws.ToString(out.MessageId)
}

func strAttr(t, v string) snstypes.MessageAttributeValue {
	return snstypes.MessageAttributeValue{DataType: aws.String(t), StringValue: aws.String(v)}
}

// drain receives everything the queue gets within a few seconds.
func (e *snsEnv) drain(url string, want int) []types.Message {
	e.t.Helper()
	var got []types.Message
	for tries := 0; tries < 4 && len(got) < want; tries++ {
		ms := e.recv(url, 10, 1)
		if len(ms) == 0 {
			continue
		}
		tries = 0
		for _, m := range ms {
			got = append(got, m)
			e.deleteMessage(url, aws.ToString(m.ReceiptHandle))
		}
	}
	// Nothing more arrives.
	if extra := e.recv(url, 10, 1); len(extra) > 0 {
		got = append(got, extra...)
	}
	return got
}

// Without raw delivery the queue gets SNS's JSON envelope: Type
// Notification, the publish's MessageId, TopicArn, Subject and Message, an
// RFC 3339 Timestamp and the message attributes as {Type, Value} (Binary
// in base64); the SQS message itself carries no message attributes.
func snsEnveloped(e *snsEnv) {
	topic := e.topic(false)
	q := e.createQueue("snsenv", nil)
	e.subscribe(topic, q, nil)
	msg := `{"order":42,"note":"ünïcode \"quoted\""}`
	id := e.publish(&sns.PublishInput{TopicArn: aws.String(topic), Message: aws.String(msg), Subject: aws.String("order 42"),
		MessageAttributes: map[string]snstypes.MessageAttributeValue{
			"status": strAttr("String", "confirmed"), "amount": strAttr("Number", "12.5"),
			"blob": {DataType: aws.String("Binary"), BinaryValue: []byte{0, 1, 2, 250}},
		}})
	m := e.recvOne(q, "enveloped delivery")
	var env struct {
		Type, MessageId, TopicArn, Subject, Message, Timestamp string
		MessageAttributes                                      map[string]struct{ Type, Value string }
	}
	if err := json.Unmarshal([]byte(aws.ToString(m.Body)), &env); err != nil {
		e.t.Fatalf("the body is not a JSON envelope: %v\n%s", err, aws.ToString(m.Body))
	}
	if env.Type != "Notification" || env.MessageId != id || env.TopicArn != topic || env.Subject != "order 42" || env.Message != msg {
		e.t.Errorf("envelope %+v; want Notification %s from %s with the subject and message", env, id, topic)
	}
	if _, err := time.Parse(time.RFC3339Nano, env.Timestamp); err != nil {
		e.t.Errorf("Timestamp %q is not RFC 3339", env.Timestamp)
	}
	want := map[string]struct{ Type, Value string }{
		"status": {"String", "confirmed"}, "amount": {"Number", "12.5"}, "blob": {"Binary", base64.StdEncoding.EncodeToString([]byte{0, 1, 2, 250})},
	}
	for k, w := range want {
		if env.MessageAttributes[k] != w {
			e.t.Errorf("envelope attribute %s = %+v, want %+v", k, env.MessageAttributes[k], w)
		}
	}
	if len(m.MessageAttributes) != 0 {
		e.t.Errorf("an enveloped delivery carries SQS message attributes %v; want none (they are in the envelope)", m.MessageAttributes)
	}
}

// With raw delivery the queue gets the published message byte for byte,
// and the SNS message attributes as SQS message attributes.
func snsRaw(e *snsEnv) {
	topic := e.topic(false)
	q := e.createQueue("snsraw", nil)
	e.subscribe(topic, q, map[string]string{"RawMessageDelivery": "true"})
	msg := "line 1\nline 2 — ünïcode {\"not\":\"an envelope\"}"
	e.publish(&sns.PublishInput{TopicArn: aws.String(topic), Message: aws.String(msg), MessageAttributes: map[string]snstypes.MessageAttributeValue{
		"status": strAttr("String", "confirmed"), "amount": strAttr("Number", "7"),
		"blob": {DataType: aws.String("Binary"), BinaryValue: []byte{9, 8, 7}},
	}})
	m := e.recvOne(q, "raw delivery")
	if aws.ToString(m.Body) != msg {
		e.t.Errorf("raw body %q, want %q", aws.ToString(m.Body), msg)
	}
	a := m.MessageAttributes
	if aws.ToString(a["status"].StringValue) != "confirmed" || aws.ToString(a["status"].DataType) != "String" ||
		aws.ToString(a["amount"].StringValue) != "7" || aws.ToString(a["amount"].DataType) != "Number" ||
		string(a["blob"].BinaryValue) != string([]byte{9, 8, 7}) || aws.ToString(a["blob"].DataType) != "Binary" {
		e.t.Errorf("raw delivery's message attributes %+v", a)
	}
}

func deliveredBodies(ms []types.Message) []string {
	var out []string
	for _, m := range ms {
		out = append(out, aws.ToString(m.Body))
	}
	sort.Strings(out)
	return out
}

// A filter policy on message attributes delivers only matching messages.
func snsFilterAttributes(e *snsEnv) {
	topic := e.topic(false)
	q := e.createQueue("snsfilt", nil)
	e.subscribe(topic, q, map[string]string{"RawMessageDelivery": "true", "FilterPolicy": `{"order-status":["confirmed","canceled"],"amount":[{"numeric":[">",10]}]}`})
	for _, c := range []struct {
		status, amount string
	}{{"confirmed", "20"}, {"canceled", "11"}, {"pending", "20"}, {"confirmed", "5"}, {"", "30"}} {
		attrs := map[string]snstypes.MessageAttributeValue{"amount": strAttr("Number", c.amount)}
		if c.status != "" {
			attrs["order-status"] = strAttr("String", c.status)
		}
		e.publish(&sns.PublishInput{TopicArn: aws.String(topic), Message: aws.String(c.status + "/" + c.amount), MessageAttributes: attrs})
	}
	got := deliveredBodies(e.drain(q, 2))
	if strings.Join(got, " ") != "canceled/11 confirmed/20" {
		e.t.Errorf("delivered %v; want only canceled/11 and confirmed/20", got)
	}
}

// A filter policy of scope MessageBody matches the JSON body's members.
func snsFilterBody(e *snsEnv) {
	topic := e.topic(false)
	q := e.createQueue("snsbody", nil)
	e.subscribe(topic, q, map[string]string{"RawMessageDelivery": "true", "FilterPolicyScope": "MessageBody",
		"FilterPolicy": `{"order":{"status":["paid"]},"region":[{"prefix":"eu-"}]}`})
	for _, body := range []string{
		`{"order":{"status":"paid"},"region":"eu-west-1"}`,
		`{"order":{"status":"open"},"region":"eu-west-1"}`,
		`{"order":{"status":"paid"},"region":"us-east-1"}`,
		`not json`,
	} {
		e.publish(&sns.PublishInput{TopicArn: aws.String(topic), Message: aws.String(body)})
	}
	got := deliveredBodies(e.drain(q, 1))
	if len(got) != 1 || got[0] != `{"order":{"status":"paid"},"region":"eu-west-1"}` {
		e.t.Errorf("delivered %v; want only the paid eu order", got)
	}
}

// A FIFO topic delivers to a FIFO queue with the publish's MessageGroupId,
// in order within the group.
func snsFIFO(e *snsEnv) {
	topic := e.topic(true)
	q := e.createFIFO("snsfifo", nil)
	e.subscribe(topic, q, map[string]string{"RawMessageDelivery": "true"})
	for i := range 3 {
		e.publish(&sns.PublishInput{TopicArn: aws.String(topic), Message: aws.String(fmt.Sprintf("step %d", i)),
			MessageGroupId: aws.String("order-7"), MessageDeduplicationId: aws.String(fmt.Sprintf("d%d", i))})
	}
	var got []string
	for tries := 0; tries < 6 && len(got) < 3; tries++ {
		for _, m := range e.recv(q, 10, 1) {
			if g := m.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)]; g != "order-7" {
				e.t.Errorf("message %q has group %q, want order-7", aws.ToString(m.Body), g)
			}
			got = append(got, aws.ToString(m.Body))
			e.deleteMessage(q, aws.ToString(m.ReceiptHandle))
		}
	}
	if strings.Join(got, ",") != "step 0,step 1,step 2" {
		e.t.Errorf("FIFO delivery %v, want steps 0, 1, 2 in order", got)
	}
}

// A standard topic takes a MessageGroupId, by Publish and PublishBatch,
// and passes it to a standard queue subscription (SQS fair queues: the
// group names the tenant); the queue returns it as the MessageGroupId
// system attribute. A message published without one arrives without one.
func snsStandardGroup(e *snsEnv) {
	topic := e.topic(false)
	q := e.createQueue("snsfair", nil)
	e.subscribe(topic, q, map[string]string{"RawMessageDelivery": "true"})
	e.publish(&sns.PublishInput{TopicArn: aws.String(topic), Message: aws.String("a1"), MessageGroupId: aws.String("tenant-a")})
	out, err := e.sns.PublishBatch(e.ctx(), &sns.PublishBatchInput{TopicArn: aws.String(topic), PublishBatchRequestEntries: []snstypes.PublishBatchRequestEntry{
		{Id: aws.String("0"), Message: aws.String("a2"), MessageGroupId: aws.String("tenant-a")},
		{Id: aws.String("1"), Message: aws.String("b1"), MessageGroupId: aws.String("tenant-b")},
		{Id: aws.String("2"), Message: aws.String("none")},
	}})
	if err != nil || len(out.Failed) != 0 || len(out.Successful) != 3 {
		e.t.Fatalf("PublishBatch with MessageGroupId on a standard topic: %v, %+v", err, out)
	}
	got := map[string]string{}
	for _, m := range e.drain(q, 4) {
		got[aws.ToString(m.Body)] = groupOf(m)
	}
	sent := map[string]string{"a1": "tenant-a", "a2": "tenant-a", "b1": "tenant-b", "none": ""}
	want := sent
	if e.snsQuirk(QuirkSNSNoStandardMessageGroupId) {
		if fmt.Sprint(got) == fmt.Sprint(sent) {
			e.t.Errorf("quirk %s declared, but the groups arrived; remove the quirk", QuirkSNSNoStandardMessageGroupId)
			return
		}
		want = map[string]string{"a1": "", "a2": "", "b1": "", "none": ""}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		e.t.Errorf("delivered body → MessageGroupId %v, want %v", got, want)
	}
}

// PublishBatch answers per entry: on a FIFO topic an entry without a
// MessageGroupId fails alone (InvalidParameter, a sender fault), the
// others are published, in order, each with its MessageId and
// SequenceNumber.
func snsPublishBatch(e *snsEnv) {
	topic := e.topic(true)
	q := e.createFIFO("snsbatch", nil)
	e.subscribe(topic, q, map[string]string{"RawMessageDelivery": "true"})
	out, err := e.sns.PublishBatch(e.ctx(), &sns.PublishBatchInput{TopicArn: aws.String(topic), PublishBatchRequestEntries: []snstypes.PublishBatchRequestEntry{
		{Id: aws.String("first"), Message: aws.String("one"), MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String("d1")},
		{Id: aws.String("nogroup"), Message: aws.String("lost"), MessageDeduplicationId: aws.String("d2")},
		{Id: aws.String("third"), Message: aws.String("two"), MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String("d3")},
	}})
	if err != nil {
		e.t.Fatalf("PublishBatch: %v", err)
	}
	if len(out.Failed) != 1 || aws.ToString(out.Failed[0].Id) != "nogroup" || !out.Failed[0].SenderFault || !strings.Contains(aws.ToString(out.Failed[0].Code), "InvalidParameter") {
		e.t.Errorf("Failed %+v; want the entry without a group, InvalidParameter, a sender fault", out.Failed)
	}
	ok := map[string]bool{}
	for _, r := range out.Successful {
		ok[aws.ToString(r.Id)] = aws.ToString(r.MessageId) != ""
	}
	if len(ok) != 2 || !ok["first"] || !ok["third"] {
		e.t.Errorf("Successful %+v; want first and third with their MessageIds", out.Successful)
	}
	var got []string
	for tries := 0; tries < 6 && len(got) < 2; tries++ {
		for _, m := range e.recv(q, 10, 1) {
			got = append(got, aws.ToString(m.Body))
			e.deleteMessage(q, aws.ToString(m.ReceiptHandle))
		}
	}
	if strings.Join(got, ",") != "one,two" {
		e.t.Errorf("delivered %v, want one, two", got)
	}
}

// Subscribing a queue again with the same attributes returns the same
// subscription; with other attributes it fails.
func snsSubscribeTwice(e *snsEnv) {
	topic := e.topic(false)
	q := e.createQueue("snstwice", nil)
	attrs := map[string]string{"RawMessageDelivery": "true"}
	first := e.subscribe(topic, q, attrs)
	if again := e.subscribe(topic, q, attrs); again != first {
		e.t.Errorf("second Subscribe returned %s, want %s", again, first)
	}
	_, err := e.sns.Subscribe(e.ctx(), &sns.SubscribeInput{TopicArn: aws.String(topic), Protocol: aws.String("sqs"),
		Endpoint: aws.String(e.arn(q)), Attributes: map[string]string{"RawMessageDelivery": "false"}, ReturnSubscriptionArn: true})
	var ip *snstypes.InvalidParameterException
	if !errors.As(err, &ip) {
		e.t.Errorf("Subscribe with other attributes: %v, want InvalidParameter", err)
	}
	out, err := e.sns.ListSubscriptionsByTopic(e.ctx(), &sns.ListSubscriptionsByTopicInput{TopicArn: aws.String(topic)})
	if err != nil || len(out.Subscriptions) != 1 || aws.ToString(out.Subscriptions[0].Endpoint) != e.arn(q) || aws.ToString(out.Subscriptions[0].Protocol) != "sqs" {
		e.t.Errorf("ListSubscriptionsByTopic = %+v, %v; want the one subscription", out, err)
	}
}

// GetSubscriptionAttributes reads back what Subscribe and
// SetSubscriptionAttributes set.
func snsSubscriptionAttributes(e *snsEnv) {
	topic := e.topic(false)
	q := e.createQueue("snsattrs", nil)
	dlq := e.createQueue("snsattrsdlq", nil)
	redrive := fmt.Sprintf(`{"deadLetterTargetArn":%q}`, e.arn(dlq))
	sub := e.subscribe(topic, q, map[string]string{"RawMessageDelivery": "true", "RedrivePolicy": redrive})
	if _, err := e.sns.SetSubscriptionAttributes(e.ctx(), &sns.SetSubscriptionAttributesInput{SubscriptionArn: aws.String(sub),
		AttributeName: aws.String("FilterPolicy"), AttributeValue: aws.String(`{"k":["v"]}`)}); err != nil {
		e.t.Fatalf("SetSubscriptionAttributes: %v", err)
	}
	out, err := e.sns.GetSubscriptionAttributes(e.ctx(), &sns.GetSubscriptionAttributesInput{SubscriptionArn: aws.String(sub)})
	if err != nil {
		e.t.Fatal(err)
	}
	a := out.Attributes
	var rp struct{ DeadLetterTargetArn string }
	_ = json.Unmarshal([]byte(a["RedrivePolicy"]), &rp)
	var fp map[string][]string
	_ = json.Unmarshal([]byte(a["FilterPolicy"]), &fp)
	if a["TopicArn"] != topic || a["Endpoint"] != e.arn(q) || a["Protocol"] != "sqs" || a["RawMessageDelivery"] != "true" ||
		rp.DeadLetterTargetArn != e.arn(dlq) || len(fp["k"]) != 1 || fp["k"][0] != "v" {
		e.t.Errorf("subscription attributes %v", a)
	}
}

// A delivery SNS cannot make because the queue was deleted goes to the
// subscription's dead-letter queue as the message the queue would have got.
func snsDeletedQueueDLQ(e *snsEnv) {
	topic := e.topic(false)
	q := e.createQueue("snsgone", nil)
	dlq := e.createQueue("snsgonedlq", nil)
	e.grant(dlq, topic)
	e.subscribe(topic, q, map[string]string{"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q}`, e.arn(dlq))})
	if _, err := e.api.DeleteQueue(e.ctx(), &sqs.DeleteQueueInput{QueueUrl: aws.String(q)}); err != nil {
		e.t.Fatal(err)
	}
	e.publish(&sns.PublishInput{TopicArn: aws.String(topic), Message: aws.String("order for a deleted queue")})
	if e.snsQuirk(QuirkSNSNoSubscriptionDLQ) {
		if got := e.recv(dlq, 10, 1); len(got) != 0 {
			e.t.Errorf("quirk check: the subscription's DLQ got %d messages; the emulator now dead-letters failed deliveries (remove the quirk)", len(got))
		}
		return
	}
	m := e.recvDLQ(dlq, "delivery to a deleted queue")
	var env struct{ Type, Message, TopicArn string }
	if err := json.Unmarshal([]byte(aws.ToString(m.Body)), &env); err != nil || env.Type != "Notification" || env.Message != "order for a deleted queue" || env.TopicArn != topic {
		e.t.Errorf("the DLQ holds %q; want the envelope the queue would have got", aws.ToString(m.Body))
	}
}

// recvDLQ waits up to 30 s for a subscription DLQ's message (real SNS may
// take a few seconds to give up on a delivery).
func (e *snsEnv) recvDLQ(url, what string) types.Message {
	e.t.Helper()
	return e.recvEventually(url, what+" reaches the subscription's DLQ", 30*time.Second)
}

// A queue whose policy does not let the topic send gets nothing; the
// message goes to the subscription's dead-letter queue.
func snsPolicyRefusalDLQ(e *snsEnv) {
	topic := e.topic(false)
	q := e.createQueue("snsdeny", nil)
	dlq := e.createQueue("snsdenydlq", nil)
	e.grant(dlq, topic)
	e.subscribe(topic, q, map[string]string{"RawMessageDelivery": "true", "RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q}`, e.arn(dlq))})
	// Replace the grant with a policy for another topic only.
	other, _, _ := queuepolicy.GrantTopic("", e.arn(q), topic+"-other")
	if _, err := e.api.SetQueueAttributes(e.ctx(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(q), Attributes: map[string]string{"Policy": other}}); err != nil {
		e.t.Fatal(err)
	}
	e.publish(&sns.PublishInput{TopicArn: aws.String(topic), Message: aws.String("refused order")})
	if e.snsQuirk(QuirkSNSIgnoresQueuePolicy) {
		if got := e.recv(q, 10, 1); len(got) != 1 {
			e.t.Errorf("quirk check: the queue got %d messages; the emulator now honours queue policies (remove the quirk)", len(got))
		}
		return
	}
	m := e.recvDLQ(dlq, "a delivery the queue policy refuses")
	if aws.ToString(m.Body) != "refused order" {
		e.t.Errorf("the DLQ holds %q, want the raw message", aws.ToString(m.Body))
	}
	if got := e.recv(q, 10, 1); len(got) != 0 {
		e.t.Errorf("the queue whose policy refuses the topic got %d messages", len(got))
	}
}

// A subscription of a queue in another account waits for the queue owner's
// confirmation: Subscribe answers "pending confirmation" (its ARN with
// ReturnSubscriptionArn), GetSubscriptionAttributes says
// PendingConfirmation "true", and ListSubscriptionsByTopic lists it with the
// SubscriptionArn "PendingConfirmation" instead of its ARN.
func snsPendingListed(e *snsEnv) {
	topic := e.topic(false)
	parts := strings.Split(topic, ":")
	other := "111122223333"
	if parts[4] == other {
		other = "444455556666"
	}
	endpoint := fmt.Sprintf("arn:%s:sqs:%s:%s:%s", parts[1], parts[3], other, testenv.UniqueName("cfpending"))
	in := &sns.SubscribeInput{TopicArn: aws.String(topic), Protocol: aws.String("sqs"), Endpoint: aws.String(endpoint)}
	out, err := e.sns.Subscribe(e.ctx(), in)
	if err != nil {
		e.t.Fatalf("Subscribe a queue of account %s: %v", other, err)
	}
	reply := aws.ToString(out.SubscriptionArn)
	in.ReturnSubscriptionArn = true
	out, err = e.sns.Subscribe(e.ctx(), in)
	if err != nil {
		e.t.Fatalf("Subscribe again with ReturnSubscriptionArn: %v", err)
	}
	arn := aws.ToString(out.SubscriptionArn)
	attrs, err := e.sns.GetSubscriptionAttributes(e.ctx(), &sns.GetSubscriptionAttributesInput{SubscriptionArn: aws.String(arn)})
	if err != nil {
		e.t.Fatalf("GetSubscriptionAttributes %s: %v", arn, err)
	}
	list, err := e.sns.ListSubscriptionsByTopic(e.ctx(), &sns.ListSubscriptionsByTopicInput{TopicArn: aws.String(topic)})
	if err != nil || len(list.Subscriptions) != 1 || aws.ToString(list.Subscriptions[0].Endpoint) != endpoint || aws.ToString(list.Subscriptions[0].Protocol) != "sqs" {
		e.t.Fatalf("ListSubscriptionsByTopic = %+v, %v; want the one subscription", list, err)
	}
	listed := aws.ToString(list.Subscriptions[0].SubscriptionArn)
	if e.snsQuirk(QuirkSNSConfirmsEverySQSSubscription) {
		if listed != arn || reply != arn || attrs.Attributes["PendingConfirmation"] != "false" {
			e.t.Errorf("quirk check: listed as %q, Subscribe answered %q, PendingConfirmation %q; the emulator now keeps such subscriptions pending (remove the quirk)",
				listed, reply, attrs.Attributes["PendingConfirmation"])
		}
		return
	}
	if reply != "pending confirmation" {
		e.t.Errorf("Subscribe answered %q; want \"pending confirmation\"", reply)
	}
	if !strings.HasPrefix(arn, topic+":") {
		e.t.Errorf("Subscribe with ReturnSubscriptionArn answered %q; want the subscription's ARN", arn)
	}
	if attrs.Attributes["PendingConfirmation"] != "true" {
		e.t.Errorf("PendingConfirmation = %q; want true", attrs.Attributes["PendingConfirmation"])
	}
	if listed != "PendingConfirmation" {
		e.t.Errorf("listed with SubscriptionArn %q; want PendingConfirmation", listed)
	}
}
