package conformance

import (
	"context"
	"crypto/md5"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/sqsworker/sqsworker/harness/testenv"
)

// env is what one behaviour works with: its test, backend and client.
type env struct {
	t    *testing.T
	b    Backend
	api  API
	slow bool
}

func (e *env) ctx() context.Context { return e.t.Context() }

func (e *env) sleep(d time.Duration) { e.b.Sleep(d) }

// quirk reports whether the backend declares q, logging it when it does.
func (e *env) quirk(q Quirk) bool {
	if !e.b.Quirks[q] {
		return false
	}
	e.t.Logf("QUIRK %s: %s: %s", e.b.Name, q, q.Description())
	return true
}

// createQueue creates a standard queue with a unique name and deletes it
// when the test ends.
func (e *env) createQueue(prefix string, attrs map[string]string) string {
	e.t.Helper()
	return e.create(testenv.UniqueName("cf"+prefix), attrs)
}

// createFIFO creates a FIFO queue (name ending in .fifo, FifoQueue=true).
func (e *env) createFIFO(prefix string, attrs map[string]string) string {
	e.t.Helper()
	all := map[string]string{"FifoQueue": "true"}
	for k, v := range attrs {
		all[k] = v
	}
	return e.create(testenv.UniqueName("cf"+prefix)+".fifo", all)
}

func (e *env) create(name string, attrs map[string]string) string {
	e.t.Helper()
	out, err := e.api.CreateQueue(e.ctx(), &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		e.t.Fatalf("CreateQueue %s %v: %v", name, attrs, err)
	}
	url := aws.ToString(out.QueueUrl)
	if url == "" {
		e.t.Fatalf("CreateQueue %s returned no QueueUrl", name)
	}
	e.cleanupQueue(url)
	return url
}

// cleanupQueue deletes url when the test ends, ignoring errors (the queue
// may already be gone).
func (e *env) cleanupQueue(url string) {
	api := e.api
	e.t.Cleanup(func() {
		_, _ = api.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(url)})
	})
}

func (e *env) attributes(url string, names ...types.QueueAttributeName) map[string]string {
	e.t.Helper()
	if len(names) == 0 {
		names = []types.QueueAttributeName{types.QueueAttributeNameAll}
	}
	out, err := e.api.GetQueueAttributes(e.ctx(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: names})
	if err != nil {
		e.t.Fatalf("GetQueueAttributes %v: %v", names, err)
	}
	return out.Attributes
}

func (e *env) arn(url string) string {
	e.t.Helper()
	arn := e.attributes(url, types.QueueAttributeNameQueueArn)["QueueArn"]
	if arn == "" {
		e.t.Fatalf("GetQueueAttributes(QueueArn) of %s returned no QueueArn", url)
	}
	return arn
}

func redrivePolicy(dlqArn string, maxReceiveCount int) string {
	return fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":%d}`, dlqArn, maxReceiveCount)
}

func (e *env) send(url, body string) *sqs.SendMessageOutput {
	e.t.Helper()
	return e.sendInput(&sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body)})
}

func (e *env) sendInput(in *sqs.SendMessageInput) *sqs.SendMessageOutput {
	e.t.Helper()
	out, err := e.api.SendMessage(e.ctx(), in)
	if err != nil {
		e.t.Fatalf("SendMessage %q: %v", aws.ToString(in.MessageBody), err)
	}
	if aws.ToString(out.MessageId) == "" {
		e.t.Fatalf("SendMessage %q returned no MessageId", aws.ToString(in.MessageBody))
	}
	return out
}

func (e *env) sendGroup(url, group, dedup, body string) *sqs.SendMessageOutput {
	e.t.Helper()
	in := &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body), MessageGroupId: aws.String(group)}
	if dedup != "" {
		in.MessageDeduplicationId = aws.String(dedup)
	}
	return e.sendInput(in)
}

// recv receives up to max messages, long polling wait seconds (0: short
// poll; note that 0 means "the queue's ReceiveMessageWaitTimeSeconds" to
// the SDK), with every system attribute and message attribute.
func (e *env) recv(url string, max, wait int32) []types.Message {
	e.t.Helper()
	return e.receive(&sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: max, WaitTimeSeconds: wait})
}

// receive calls ReceiveMessage, asking for all system and message
// attributes unless in names some, and checks the result against in.
func (e *env) receive(in *sqs.ReceiveMessageInput) []types.Message {
	e.t.Helper()
	if in.MessageSystemAttributeNames == nil {
		in.MessageSystemAttributeNames = []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll}
	}
	if in.MessageAttributeNames == nil {
		in.MessageAttributeNames = []string{"All"}
	}
	out, err := e.api.ReceiveMessage(e.ctx(), in)
	if err != nil {
		e.t.Fatalf("ReceiveMessage(max %d, wait %d, visibility %d): %v", in.MaxNumberOfMessages, in.WaitTimeSeconds, in.VisibilityTimeout, err)
	}
	max := max(in.MaxNumberOfMessages, 1)
	if len(out.Messages) > int(max) {
		e.t.Fatalf("ReceiveMessage(MaxNumberOfMessages %d) returned %d messages", in.MaxNumberOfMessages, len(out.Messages))
	}
	for _, m := range out.Messages {
		if aws.ToString(m.ReceiptHandle) == "" || aws.ToString(m.MessageId) == "" {
			e.t.Fatalf("received message without ReceiptHandle or MessageId: %+v", m)
		}
		if got, want := aws.ToString(m.MD5OfBody), md5Hex(aws.ToString(m.Body)); got != want {
			e.t.Errorf("message %q: MD5OfBody %s, want %s", aws.ToString(m.Body), got, want)
		}
	}
	return out.Messages
}

// recvOne receives exactly one message (long polling up to 2 s, retrying a
// few times for eventually consistent backends) or fails.
func (e *env) recvOne(url, what string) types.Message {
	e.t.Helper()
	for range 3 {
		if ms := e.recv(url, 1, 2); len(ms) == 1 {
			return ms[0]
		}
	}
	e.t.Fatalf("%s: no message received", what)
	return types.Message{}
}

// wantEmpty checks that a receive with the given long-poll wait returns
// nothing.
func (e *env) wantEmpty(url string, wait int32, why string) {
	e.t.Helper()
	if ms := e.recv(url, 10, wait); len(ms) != 0 {
		e.t.Errorf("%s: received %d message(s) (first %q, receive count %s), want none", why, len(ms), aws.ToString(ms[0].Body), ms[0].Attributes["ApproximateReceiveCount"])
	}
}

func (e *env) deleteMessage(url, handle string) {
	e.t.Helper()
	if _, err := e.api.DeleteMessage(e.ctx(), &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: aws.String(handle)}); err != nil {
		e.t.Fatalf("DeleteMessage: %v", err)
	}
}

func (e *env) changeVisibility(url, handle string, seconds int32) error {
	_, err := e.api.ChangeMessageVisibility(e.ctx(), &sqs.ChangeMessageVisibilityInput{
		QueueUrl: aws.String(url), ReceiptHandle: aws.String(handle), VisibilityTimeout: seconds,
	})
	return err
}

// eventually retries f, sleeping a second between tries, until it returns
// nil or timeout passes (real SQS is eventually consistent for attributes,
// queue deletion and DLQ moves; the fake and fauxqs pass at once).
func (e *env) eventually(what string, timeout time.Duration, f func() error) {
	e.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("%s: still failing after %v: %v", what, timeout, err)
		}
		e.sleep(time.Second)
	}
}

// recvEventually receives one message from url, trying until timeout
// passes (a DLQ move or a move task may take a while on real SQS).
func (e *env) recvEventually(url, what string, timeout time.Duration) types.Message {
	e.t.Helper()
	var got types.Message
	e.eventually(what, timeout, func() error {
		ms := e.recv(url, 1, 2)
		if len(ms) == 0 {
			return errors.New("nothing received yet")
		}
		got = ms[0]
		return nil
	})
	return got
}

func receiveCount(m types.Message) int {
	n, err := strconv.Atoi(m.Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)])
	if err != nil {
		return -1
	}
	return n
}

func bodies(ms []types.Message) []string {
	var out []string
	for _, m := range ms {
		out = append(out, aws.ToString(m.Body))
	}
	return out
}

func md5Hex(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// attributesMD5 is SQS's digest of message attributes: for each attribute
// in name order, the length-prefixed name, the length-prefixed data type, a
// transport byte (1 string, 2 binary) and the length-prefixed value, all
// lengths 4-byte big-endian; MD5 of the whole, in hex.
func attributesMD5(attrs map[string]types.MessageAttributeValue) string {
	if len(attrs) == 0 {
		return ""
	}
	names := make([]string, 0, len(attrs))
	for name := range attrs {
		names = append(names, name)
	}
	slices.Sort(names)
	h := md5.New()
	field := func(b []byte) {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	for _, name := range names {
		v := attrs[name]
		field([]byte(name))
		field([]byte(aws.ToString(v.DataType)))
		if v.BinaryValue != nil {
			h.Write([]byte{2})
			field(v.BinaryValue)
		} else {
			h.Write([]byte{1})
			field([]byte(aws.ToString(v.StringValue)))
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// asError reports whether err wraps an E (e.g. *types.QueueDoesNotExist).
func asError[E error](err error) bool {
	var target E
	return errors.As(err, &target)
}

// wantError checks that err wraps the SDK's typed error E.
func wantError[E error](t *testing.T, err error, what string) {
	t.Helper()
	if asError[E](err) {
		return
	}
	var zero E
	t.Errorf("%s: got error %v (code %q), want %T", what, err, errorCode(err), zero)
}

// errorCode is the API error code of err ("" when it has none).
func errorCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// wantCode checks that err is an API error with the given code, for the
// codes the SDK does not model as types (InvalidParameterValue,
// MissingParameter, InvalidAction); the Go SDK reports them as a
// *smithy.GenericAPIError whose ErrorCode is the query-compatible code
// real SQS sends (e.g. "InvalidParameterValue").
func (e *env) wantCode(err error, code, what string) {
	e.t.Helper()
	want := code
	if code != "InvalidAction" && e.quirk(QuirkPrefixedErrorCodes) {
		want = "AWS.SimpleQueueService." + code
	}
	if got := errorCode(err); got != want {
		e.t.Errorf("%s: got error %v (code %q), want error code %s", what, err, got, want)
	}
}

// unknownQueueURL is url with its queue name replaced by one that was never
// created.
func unknownQueueURL(url string) string {
	i := strings.LastIndex(url, "/")
	return url[:i+1] + testenv.UniqueName("cfnever")
}
