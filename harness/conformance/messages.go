package conformance

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

func messageBehaviours() []behaviour {
	return []behaviour{
		{name: "SendReceiveRoundTrip", run: sendReceiveRoundTrip},
		{name: "MessageAttributesOnlyWhenAsked", run: messageAttributesOnlyWhenAsked},
		{name: "SystemAttributesAndTimestamps", run: systemAttributesAndTimestamps},
		{name: "MaxNumberOfMessagesRespected", run: maxNumberOfMessagesRespected},
		{name: "MaxNumberOfMessagesAbove10Rejected", run: maxNumberOfMessagesAbove10},
		{name: "ZeroInputsMeanQueueDefaults", run: zeroInputsMeanQueueDefaults},
		{name: "AWSTraceHeaderBeyondTenAttributes", run: awsTraceHeaderBeyondTenAttributes},
		{name: "MaximumMessageSizePerQueue", run: maximumMessageSizePerQueue},
	}
}

// Each queue enforces its own MaximumMessageSize (1,024 bytes to 1 MiB):
// a 300 KiB message goes to a queue of the default 1 MiB and is refused
// with InvalidParameterValue by one of 256 KiB, as a dead-letter queue
// smaller than its source refuses a copy of a large message. Lowering the
// attribute applies to the next send.
func maximumMessageSizePerQueue(e *env) {
	big := e.createQueue("sizebig", nil)
	small := e.createQueue("sizesmall", map[string]string{"MaximumMessageSize": "262144"})
	if got := e.attributes(small, types.QueueAttributeNameMaximumMessageSize)[string(types.QueueAttributeNameMaximumMessageSize)]; got != "262144" {
		e.t.Errorf("MaximumMessageSize of the small queue reads %q, want 262144", got)
	}
	body := strings.Repeat("x", 300<<10)
	e.send(big, body)
	_, err := e.api.SendMessage(e.ctx(), &sqs.SendMessageInput{QueueUrl: aws.String(small), MessageBody: aws.String(body)})
	e.wantCode(err, "InvalidParameterValue", "SendMessage of 300 KiB to a queue of MaximumMessageSize 256 KiB")
	e.send(small, strings.Repeat("x", 200<<10))

	if _, err := e.api.SetQueueAttributes(e.ctx(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(big),
		Attributes: map[string]string{"MaximumMessageSize": "262144"}}); err != nil {
		e.t.Fatalf("SetQueueAttributes MaximumMessageSize 262144: %v", err)
	}
	_, err = e.api.SendMessage(e.ctx(), &sqs.SendMessageInput{QueueUrl: aws.String(big), MessageBody: aws.String(body)})
	e.wantCode(err, "InvalidParameterValue", "SendMessage of 300 KiB after MaximumMessageSize was lowered to 256 KiB")
}

func stringAttr(v string) types.MessageAttributeValue {
	return types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
}

func sampleAttributes() map[string]types.MessageAttributeValue {
	return map[string]types.MessageAttributeValue{
		"trace":   stringAttr("Root=1-abc;Parent=def"),
		"attempt": {DataType: aws.String("Number"), StringValue: aws.String("42")},
		"blob":    {DataType: aws.String("Binary"), BinaryValue: []byte{0, 1, 2, 0xfe, 0xff}},
	}
}

// SendMessage returns the MessageId and the MD5 digests of body and message
// attributes; ReceiveMessage returns the same body, MessageId, digests and
// attributes, with a receipt handle.
func sendReceiveRoundTrip(e *env) {
	url := e.createQueue("roundtrip", nil)
	body := "héllo, wörld ✓ {\"job\":1}\r\n\ttab & <xml/>"
	attrs := sampleAttributes()
	sent := e.sendInput(&sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body), MessageAttributes: attrs})
	if got, want := aws.ToString(sent.MD5OfMessageBody), md5Hex(body); got != want {
		e.t.Errorf("SendMessage MD5OfMessageBody %s, want %s", got, want)
	}
	wantAttrMD5 := attributesMD5(attrs)
	if got := aws.ToString(sent.MD5OfMessageAttributes); got != wantAttrMD5 {
		e.t.Errorf("SendMessage MD5OfMessageAttributes %s, want %s", got, wantAttrMD5)
	}

	m := e.recvOne(url, "receive the sent message")
	if got := aws.ToString(m.Body); got != body {
		e.t.Errorf("Body %q, want %q", got, body)
	}
	if got := aws.ToString(m.MessageId); got != aws.ToString(sent.MessageId) {
		e.t.Errorf("MessageId %s, want the sent %s", got, aws.ToString(sent.MessageId))
	}
	if got := aws.ToString(m.MD5OfMessageAttributes); got != wantAttrMD5 {
		e.t.Errorf("received MD5OfMessageAttributes %s, want %s", got, wantAttrMD5)
	}
	if len(m.MessageAttributes) != len(attrs) {
		e.t.Errorf("received %d message attributes, want %d: %v", len(m.MessageAttributes), len(attrs), m.MessageAttributes)
	}
	for name, want := range attrs {
		got, ok := m.MessageAttributes[name]
		if !ok {
			e.t.Errorf("message attribute %q missing", name)
			continue
		}
		if aws.ToString(got.DataType) != aws.ToString(want.DataType) || aws.ToString(got.StringValue) != aws.ToString(want.StringValue) || !bytes.Equal(got.BinaryValue, want.BinaryValue) {
			e.t.Errorf("message attribute %q = {%s %q %v}, want {%s %q %v}", name,
				aws.ToString(got.DataType), aws.ToString(got.StringValue), got.BinaryValue,
				aws.ToString(want.DataType), aws.ToString(want.StringValue), want.BinaryValue)
		}
	}
}

// ReceiveMessage returns message attributes only when asked for, by name,
// by prefix (name.*) or with "All".
func messageAttributesOnlyWhenAsked(e *env) {
	url := e.createQueue("attrask", nil)
	attrs := sampleAttributes()
	attrs["trace.span"] = stringAttr("s-1")
	e.sendInput(&sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("with attributes"), MessageAttributes: attrs})

	release := func(m types.Message) {
		if err := e.changeVisibility(url, aws.ToString(m.ReceiptHandle), 0); err != nil {
			e.t.Fatalf("ChangeMessageVisibility 0: %v", err)
		}
	}
	m := e.receiveOne(&sqs.ReceiveMessageInput{QueueUrl: aws.String(url), WaitTimeSeconds: 2, MessageAttributeNames: []string{}})
	if e.quirk(QuirkMessageAttributesAlwaysReturned) {
		if len(m.MessageAttributes) != len(attrs) {
			e.t.Errorf("quirk no longer holds: receive without MessageAttributeNames returned %d attributes, want all %d", len(m.MessageAttributes), len(attrs))
		}
	} else if len(m.MessageAttributes) != 0 {
		e.t.Errorf("receive without MessageAttributeNames returned attributes %v, want none", keys(m.MessageAttributes))
	}
	release(m)

	m = e.receiveOne(&sqs.ReceiveMessageInput{QueueUrl: aws.String(url), WaitTimeSeconds: 2, MessageAttributeNames: []string{"attempt", "nosuch"}})
	if got := keys(m.MessageAttributes); fmt.Sprint(got) != "[attempt]" {
		e.t.Errorf("receive with MessageAttributeNames [attempt nosuch] returned attributes %v, want [attempt]", got)
	}
	release(m)

	m = e.receiveOne(&sqs.ReceiveMessageInput{QueueUrl: aws.String(url), WaitTimeSeconds: 2, MessageAttributeNames: []string{"trace.*"}})
	if got := keys(m.MessageAttributes); fmt.Sprint(got) != "[trace.span]" {
		e.t.Errorf("receive with MessageAttributeNames [trace.*] returned attributes %v, want [trace.span]", got)
	}
}

// receiveOne receives with in and wants exactly one message.
func (e *env) receiveOne(in *sqs.ReceiveMessageInput) types.Message {
	e.t.Helper()
	ms := e.receive(in)
	if len(ms) != 1 {
		e.t.Fatalf("ReceiveMessage returned %d messages, want 1", len(ms))
	}
	return ms[0]
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// SentTimestamp is the send time in epoch milliseconds;
// ApproximateFirstReceiveTimestamp is set at the first receive and stays
// the same on later receives, while ApproximateReceiveCount counts them.
func systemAttributesAndTimestamps(e *env) {
	url := e.createQueue("sysattr", nil)
	before := time.Now()
	e.send(url, "timestamps")
	first := e.recvOne(url, "first receive")
	sent := msAttr(e, first, "SentTimestamp")
	firstRecv := msAttr(e, first, "ApproximateFirstReceiveTimestamp")
	const skew = time.Minute // clocks of the test machine and a remote SQS differ a little
	if d := sent.Sub(before); d < -skew || d > skew {
		e.t.Errorf("SentTimestamp %v is %v from the send time %v", sent, d, before)
	}
	if firstRecv.Before(sent) {
		e.t.Errorf("ApproximateFirstReceiveTimestamp %v is before SentTimestamp %v", firstRecv, sent)
	}
	if n := receiveCount(first); n != 1 {
		e.t.Errorf("first receive: ApproximateReceiveCount %d, want 1", n)
	}

	e.sleep(1500 * time.Millisecond)
	if err := e.changeVisibility(url, aws.ToString(first.ReceiptHandle), 0); err != nil {
		e.t.Fatalf("ChangeMessageVisibility 0: %v", err)
	}
	second := e.recvOne(url, "second receive")
	if n := receiveCount(second); n != 2 {
		e.t.Errorf("second receive: ApproximateReceiveCount %d, want 2", n)
	}
	if got := msAttr(e, second, "ApproximateFirstReceiveTimestamp"); !got.Equal(firstRecv) {
		e.t.Errorf("second receive: ApproximateFirstReceiveTimestamp %v, want it unchanged at %v", got, firstRecv)
	}
	if got := msAttr(e, second, "SentTimestamp"); !got.Equal(sent) {
		e.t.Errorf("second receive: SentTimestamp %v, want it unchanged at %v", got, sent)
	}
}

// msAttr reads a system attribute holding epoch milliseconds.
func msAttr(e *env, m types.Message, name string) time.Time {
	e.t.Helper()
	v, ok := m.Attributes[name]
	if !ok {
		e.t.Fatalf("message has no %s attribute (asked for All): %v", name, m.Attributes)
	}
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		e.t.Fatalf("%s = %q, want epoch milliseconds", name, v)
	}
	return time.UnixMilli(ms)
}

// A receive returns at most MaxNumberOfMessages messages (real SQS may
// return fewer than are available), and repeated receives return every
// message once.
func maxNumberOfMessagesRespected(e *env) {
	url := e.createQueue("maxn", nil)
	var entries []types.SendMessageBatchRequestEntry
	for i := range 7 {
		entries = append(entries, types.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprint("m", i)), MessageBody: aws.String(fmt.Sprint("body-", i))})
	}
	out, err := e.api.SendMessageBatch(e.ctx(), &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
	if err != nil || len(out.Failed) != 0 {
		e.t.Fatalf("SendMessageBatch: %v, failed %v", err, out.Failed)
	}
	seen := map[string]bool{}
	ms := e.recv(url, 2, 1) // receive fails the test on more than 2
	if len(ms) == 0 {
		e.t.Errorf("ReceiveMessage(MaxNumberOfMessages 2) with 7 messages waiting returned none")
	}
	for _, m := range ms {
		seen[aws.ToString(m.Body)] = true
	}
	for range 10 {
		if len(seen) == 7 {
			break
		}
		for _, m := range e.recv(url, 10, 1) {
			if seen[aws.ToString(m.Body)] {
				e.t.Errorf("message %q received twice", aws.ToString(m.Body))
			}
			seen[aws.ToString(m.Body)] = true
		}
	}
	if len(seen) != 7 {
		e.t.Errorf("received %d distinct messages of 7: %v", len(seen), keys(seen))
	}
}

// MaxNumberOfMessages above 10 is InvalidParameterValue.
func maxNumberOfMessagesAbove10(e *env) {
	url := e.createQueue("max11", nil)
	e.send(url, "one")
	_, err := e.api.ReceiveMessage(e.ctx(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 11})
	e.wantCode(err, "InvalidParameterValue", "ReceiveMessage MaxNumberOfMessages=11")
}

// The SDK leaves zero-valued int32 inputs out of the request, so zero
// means "default": WaitTimeSeconds 0 long-polls for the queue's
// ReceiveMessageWaitTimeSeconds, VisibilityTimeout 0 applies the queue's
// VisibilityTimeout (it does not make the message visible at once), and
// MaxNumberOfMessages 0 receives one message. A fake used in place of the
// client must read its inputs the same way.
func zeroInputsMeanQueueDefaults(e *env) {
	url := e.createQueue("zero", map[string]string{"ReceiveMessageWaitTimeSeconds": "1"})
	start := time.Now()
	out, err := e.api.ReceiveMessage(e.ctx(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url)})
	if err != nil {
		e.t.Fatalf("ReceiveMessage: %v", err)
	}
	if len(out.Messages) != 0 {
		e.t.Fatalf("empty queue returned %d messages", len(out.Messages))
	}
	if d := time.Since(start); d < 800*time.Millisecond {
		e.t.Errorf("ReceiveMessage with WaitTimeSeconds 0 on a queue with ReceiveMessageWaitTimeSeconds=1 returned after %v, want a ~1 s long poll", d)
	}

	for i := range 3 {
		e.send(url, fmt.Sprint("zero-", i))
	}
	first := e.receive(&sqs.ReceiveMessageInput{QueueUrl: aws.String(url), VisibilityTimeout: 0, MaxNumberOfMessages: 0})
	if len(first) != 1 {
		e.t.Fatalf("ReceiveMessage with MaxNumberOfMessages 0 and 3 messages waiting returned %d, want 1", len(first))
	}
	var rest []types.Message
	for range 5 {
		ms := e.recv(url, 10, 0) // WaitTimeSeconds 0: the queue's 1 s
		if len(ms) == 0 {
			break
		}
		rest = append(rest, ms...)
	}
	for _, m := range rest {
		if aws.ToString(m.MessageId) == aws.ToString(first[0].MessageId) {
			e.t.Errorf("message received with VisibilityTimeout 0 came back at once; want it hidden for the queue's 30 s")
		}
	}
	if len(rest) != 2 {
		e.t.Errorf("drained %d other messages, want 2", len(rest))
	}
}

// The AWSTraceHeader system attribute (X-Ray format) set on a send comes
// back among the received message's system attributes, and it does not
// count against the 10 message attributes: a message with 10 of them
// still carries it (sqsotel relies on both to link a full message to its
// producer).
func awsTraceHeaderBeyondTenAttributes(e *env) {
	url := e.createQueue("tracehdr", nil)
	const header = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
	attrs := map[string]types.MessageAttributeValue{}
	for i := range 10 {
		attrs["a"+strconv.Itoa(i)] = stringAttr("v")
	}
	e.sendInput(&sqs.SendMessageInput{
		QueueUrl: aws.String(url), MessageBody: aws.String("traced"), MessageAttributes: attrs,
		MessageSystemAttributes: map[string]types.MessageSystemAttributeValue{
			string(types.MessageSystemAttributeNameForSendsAWSTraceHeader): {DataType: aws.String("String"), StringValue: aws.String(header)},
		},
	})
	m := e.recvOne(url, "receive the traced message")
	got := m.Attributes[string(types.MessageSystemAttributeNameAWSTraceHeader)]
	switch {
	case e.quirk(QuirkNoAWSTraceHeader):
		if got != "" {
			e.t.Errorf("quirk %s declared, but AWSTraceHeader came back: %q; remove the quirk", QuirkNoAWSTraceHeader, got)
		}
	case got != header:
		e.t.Errorf("AWSTraceHeader %q, want %q", got, header)
	}
	if len(m.MessageAttributes) != 10 {
		e.t.Errorf("%d message attributes, want the 10 sent", len(m.MessageAttributes))
	}
}
