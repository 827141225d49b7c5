package conformance

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/harness/testenv"
)

func queueBehaviours() []behaviour {
	return []behaviour{
		{name: "CreateQueueIsIdempotent", run: createQueueIsIdempotent},
		{name: "CreateQueueNameExistsWithDifferentAttributes", run: createQueueNameExists},
		{name: "CreateFIFOQueueNeedsFifoSuffix", run: createFIFONeedsSuffix},
		{name: "CreateQueueFifoSuffixNeedsFifoAttribute", run: createFifoSuffixNeedsAttribute},
		{name: "GetQueueUrlOfUnknownQueue", run: getQueueURLUnknown},
		{name: "UnknownQueueURLIsQueueDoesNotExist", run: unknownQueueURLErrors},
		{name: "DeletedQueueIsQueueDoesNotExist", run: deletedQueueErrors},
		{name: "QueueAttributesRoundTrip", run: queueAttributesRoundTrip},
		{name: "FIFOQueueAttributesRoundTrip", run: fifoQueueAttributesRoundTrip},
		{name: "InvalidQueueAttributeValue", run: invalidQueueAttributeValue},
	}
}

// A second CreateQueue with the same name and attributes, or with no
// attributes at all, returns the existing queue's URL.
func createQueueIsIdempotent(e *env) {
	name := testenv.UniqueName("cfidem")
	attrs := map[string]string{"VisibilityTimeout": "7", "DelaySeconds": "1"}
	url := e.create(name, attrs)
	for _, again := range []map[string]string{attrs, nil, {"DelaySeconds": "1"}} {
		out, err := e.api.CreateQueue(e.ctx(), &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: again})
		if err != nil {
			e.t.Errorf("CreateQueue again with %v: %v", again, err)
			continue
		}
		if got := aws.ToString(out.QueueUrl); got != url {
			e.t.Errorf("CreateQueue again with %v: QueueUrl %s, want %s", again, got, url)
		}
	}
	if got := e.attributes(url)["VisibilityTimeout"]; got != "7" {
		e.t.Errorf("VisibilityTimeout after idempotent creates: %q, want 7", got)
	}
}

// CreateQueue with the name of an existing queue but a different value of
// an attribute fails with QueueNameExists and changes nothing.
func createQueueNameExists(e *env) {
	name := testenv.UniqueName("cfexists")
	url := e.create(name, map[string]string{"VisibilityTimeout": "7"})
	_, err := e.api.CreateQueue(e.ctx(), &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: map[string]string{"VisibilityTimeout": "8"}})
	wantError[*types.QueueNameExists](e.t, err, "CreateQueue with a different VisibilityTimeout")
	if got := e.attributes(url)["VisibilityTimeout"]; got != "7" {
		e.t.Errorf("VisibilityTimeout after the refused create: %q, want 7", got)
	}
}

// FifoQueue=true on a name without the .fifo suffix is InvalidParameterValue.
func createFIFONeedsSuffix(e *env) {
	name := testenv.UniqueName("cfnosuffix")
	out, err := e.api.CreateQueue(e.ctx(), &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: map[string]string{"FifoQueue": "true"}})
	if err == nil {
		e.cleanupQueue(aws.ToString(out.QueueUrl))
	}
	e.wantCode(err, "InvalidParameterValue", "CreateQueue FifoQueue=true without .fifo suffix")
}

// A name ending in .fifo without FifoQueue=true is InvalidParameterValue: a
// standard queue cannot have the suffix, and SQS does not infer FIFO from it.
func createFifoSuffixNeedsAttribute(e *env) {
	name := testenv.UniqueName("cfsuffix") + ".fifo"
	out, err := e.api.CreateQueue(e.ctx(), &sqs.CreateQueueInput{QueueName: aws.String(name)})
	if err == nil {
		e.cleanupQueue(aws.ToString(out.QueueUrl))
	}
	if e.quirk(QuirkFifoSuffixMakesFIFO) {
		if err != nil {
			e.t.Fatalf("quirk no longer holds: CreateQueue %s without FifoQueue failed: %v", name, err)
		}
		if got := e.attributes(aws.ToString(out.QueueUrl))["FifoQueue"]; got != "true" {
			e.t.Errorf("quirk no longer holds: FifoQueue of %s is %q, want true", name, got)
		}
		return
	}
	e.wantCode(err, "InvalidParameterValue", "CreateQueue of a .fifo name without FifoQueue=true")
}

// GetQueueUrl of a queue that does not exist is QueueDoesNotExist.
func getQueueURLUnknown(e *env) {
	_, err := e.api.GetQueueUrl(e.ctx(), &sqs.GetQueueUrlInput{QueueName: aws.String(testenv.UniqueName("cfnever"))})
	wantError[*types.QueueDoesNotExist](e.t, err, "GetQueueUrl of an unknown queue")
}

// Every call on the URL of a queue that never existed is QueueDoesNotExist.
func unknownQueueURLErrors(e *env) {
	url := unknownQueueURL(e.createQueue("known", nil))
	for what, err := range queueCalls(e, url) {
		wantError[*types.QueueDoesNotExist](e.t, err, what+" on an unknown queue URL")
	}
}

// After DeleteQueue, calls on its URL and GetQueueUrl of its name are
// QueueDoesNotExist (real SQS may take up to 60 s to notice).
func deletedQueueErrors(e *env) {
	name := testenv.UniqueName("cfdeleted")
	url := e.create(name, nil)
	e.send(url, "left behind")
	if _, err := e.api.DeleteQueue(e.ctx(), &sqs.DeleteQueueInput{QueueUrl: aws.String(url)}); err != nil {
		e.t.Fatalf("DeleteQueue: %v", err)
	}
	e.eventually("GetQueueUrl of a deleted queue", 70*time.Second, func() error {
		_, err := e.api.GetQueueUrl(e.ctx(), &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
		if asError[*types.QueueDoesNotExist](err) {
			return nil
		}
		return fmt.Errorf("got %v, want QueueDoesNotExist", err)
	})
	e.eventually("calls on a deleted queue's URL", 70*time.Second, func() error {
		var bad []string
		for what, err := range queueCalls(e, url) {
			if !asError[*types.QueueDoesNotExist](err) {
				bad = append(bad, fmt.Sprintf("%s: %v", what, err))
			}
		}
		if len(bad) > 0 {
			return fmt.Errorf("want QueueDoesNotExist from every call: %s", strings.Join(bad, "; "))
		}
		return nil
	})
}

// queueCalls makes one call of each queue-level operation on url and yields
// its error.
func queueCalls(e *env, url string) func(yield func(string, error) bool) {
	q := aws.String(url)
	return func(yield func(string, error) bool) {
		ctx := e.ctx()
		_, err := e.api.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q, MessageBody: aws.String("x")})
		if !yield("SendMessage", err) {
			return
		}
		_, err = e.api.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q})
		if !yield("ReceiveMessage", err) {
			return
		}
		_, err = e.api.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: q, AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}})
		if !yield("GetQueueAttributes", err) {
			return
		}
		_, err = e.api.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: q, Attributes: map[string]string{"VisibilityTimeout": "5"}})
		if !yield("SetQueueAttributes", err) {
			return
		}
		_, err = e.api.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: q, Entries: []types.SendMessageBatchRequestEntry{{Id: aws.String("a"), MessageBody: aws.String("x")}}})
		if !yield("SendMessageBatch", err) {
			return
		}
		_, err = e.api.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: q})
		yield("DeleteQueue", err)
	}
}

// GetQueueAttributes returns what CreateQueue and SetQueueAttributes set,
// including the RedrivePolicy JSON and the QueueArn, and only the attributes
// asked for. (MessageRetentionPeriod is set only at creation: real SQS takes
// up to 15 minutes to propagate a change of it.)
func queueAttributesRoundTrip(e *env) {
	dlq := e.createQueue("attrdlq", nil)
	dlqArn := e.arn(dlq)
	url := e.createQueue("attr", map[string]string{"VisibilityTimeout": "5", "MessageRetentionPeriod": "120", "DelaySeconds": "0"})
	name := url[strings.LastIndex(url, "/")+1:]

	got := e.attributes(url)
	want := map[string]string{"VisibilityTimeout": "5", "MessageRetentionPeriod": "120", "DelaySeconds": "0"}
	for k, v := range want {
		if got[k] != v {
			e.t.Errorf("after CreateQueue: %s = %q, want %q", k, got[k], v)
		}
	}
	if arn := got["QueueArn"]; !strings.HasPrefix(arn, "arn:") || !strings.Contains(arn, ":sqs:") || !strings.HasSuffix(arn, ":"+name) {
		e.t.Errorf("QueueArn %q, want arn:<partition>:sqs:<region>:<account>:%s", arn, name)
	}
	if got["FifoQueue"] == "true" {
		e.t.Errorf("standard queue reports FifoQueue=true")
	}
	if _, ok := got["RedrivePolicy"]; ok {
		e.t.Errorf("queue created without a RedrivePolicy reports one: %q", got["RedrivePolicy"])
	}

	_, err := e.api.SetQueueAttributes(e.ctx(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url), Attributes: map[string]string{
		"VisibilityTimeout": "9",
		"DelaySeconds":      "2",
		"RedrivePolicy":     redrivePolicy(dlqArn, 4),
	}})
	if err != nil {
		e.t.Fatalf("SetQueueAttributes: %v", err)
	}
	e.eventually("attributes after SetQueueAttributes", 70*time.Second, func() error {
		got := e.attributes(url)
		for k, v := range map[string]string{"VisibilityTimeout": "9", "DelaySeconds": "2"} {
			if got[k] != v {
				return fmt.Errorf("%s = %q, want %q", k, got[k], v)
			}
		}
		return checkRedrivePolicy(got["RedrivePolicy"], dlqArn, 4)
	})

	only := e.attributes(url, types.QueueAttributeNameVisibilityTimeout, types.QueueAttributeNameQueueArn)
	if len(only) != 2 || only["VisibilityTimeout"] != "9" || only["QueueArn"] == "" {
		e.t.Errorf("GetQueueAttributes(VisibilityTimeout, QueueArn) = %v, want exactly those two", only)
	}
}

// checkRedrivePolicy parses a RedrivePolicy attribute. SQS accepts
// maxReceiveCount as a JSON number or string and the library must read both.
func checkRedrivePolicy(policy, dlqArn string, maxReceiveCount int) error {
	var p map[string]any
	if err := json.Unmarshal([]byte(policy), &p); err != nil {
		return fmt.Errorf("RedrivePolicy %q is not JSON: %v", policy, err)
	}
	if p["deadLetterTargetArn"] != dlqArn {
		return fmt.Errorf("RedrivePolicy %s: deadLetterTargetArn %v, want %s", policy, p["deadLetterTargetArn"], dlqArn)
	}
	var n int
	switch v := p["maxReceiveCount"].(type) {
	case float64:
		n = int(v)
	case string:
		n, _ = strconv.Atoi(v)
	}
	if n != maxReceiveCount {
		return fmt.Errorf("RedrivePolicy %s: maxReceiveCount %v, want %d", policy, p["maxReceiveCount"], maxReceiveCount)
	}
	return nil
}

// A FIFO queue reports FifoQueue=true and its ContentBasedDeduplication,
// which SetQueueAttributes can change.
func fifoQueueAttributesRoundTrip(e *env) {
	url := e.createFIFO("fattr", map[string]string{"ContentBasedDeduplication": "true"})
	got := e.attributes(url)
	if got["FifoQueue"] != "true" || got["ContentBasedDeduplication"] != "true" {
		e.t.Errorf("FIFO queue attributes FifoQueue=%q ContentBasedDeduplication=%q, want true, true", got["FifoQueue"], got["ContentBasedDeduplication"])
	}
	if !strings.HasSuffix(got["QueueArn"], ".fifo") {
		e.t.Errorf("FIFO QueueArn %q does not end in .fifo", got["QueueArn"])
	}
	if _, err := e.api.SetQueueAttributes(e.ctx(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url), Attributes: map[string]string{"ContentBasedDeduplication": "false"}}); err != nil {
		e.t.Fatalf("SetQueueAttributes ContentBasedDeduplication=false: %v", err)
	}
	e.eventually("ContentBasedDeduplication after SetQueueAttributes", 70*time.Second, func() error {
		if got := e.attributes(url)["ContentBasedDeduplication"]; got != "false" {
			return fmt.Errorf("ContentBasedDeduplication %q, want false", got)
		}
		return nil
	})
}

// Out-of-range attribute values are InvalidAttributeValue, on CreateQueue
// and on SetQueueAttributes.
func invalidQueueAttributeValue(e *env) {
	url := e.createQueue("badattr", nil)
	for attr, value := range map[string]string{"VisibilityTimeout": "43201", "MessageRetentionPeriod": "59", "DelaySeconds": "901"} {
		_, err := e.api.SetQueueAttributes(e.ctx(), &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url), Attributes: map[string]string{attr: value}})
		wantError[*types.InvalidAttributeValue](e.t, err, fmt.Sprintf("SetQueueAttributes %s=%s", attr, value))
	}
	name := testenv.UniqueName("cfbadattr")
	out, err := e.api.CreateQueue(e.ctx(), &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: map[string]string{"VisibilityTimeout": "43201"}})
	if err == nil {
		e.cleanupQueue(aws.ToString(out.QueueUrl))
	}
	wantError[*types.InvalidAttributeValue](e.t, err, "CreateQueue VisibilityTimeout=43201")
}
