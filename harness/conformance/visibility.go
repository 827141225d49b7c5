package conformance

import (
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

func visibilityBehaviours() []behaviour {
	return []behaviour{
		{name: "VisibilityTimeoutHidesMessage", run: visibilityTimeoutHidesMessage},
		{name: "ReceiveVisibilityTimeoutOverridesQueue", run: receiveVisibilityTimeoutOverrides},
		{name: "ChangeVisibilityExtends", run: changeVisibilityExtends},
		{name: "ChangeVisibilityZeroReleasesNow", run: changeVisibilityZeroReleases},
		{name: "DeletedMessageNeverReturns", run: deletedMessageNeverReturns},
		{name: "DeleteWithExpiredHandleStillDeletes", run: deleteWithExpiredHandle},
		{name: "MalformedReceiptHandleIsInvalid", run: malformedReceiptHandle},
		{name: "ChangeVisibilityOfDeletedMessageIsInvalidParameterValue", run: changeVisibilityOfDeletedMessage},
		{name: "ChangeVisibilityWithExpiredHandleIsNoError", run: changeVisibilityWithExpiredHandle},
		{name: "VisibilityTimeoutAbove12hRejected", run: visibilityTimeoutAbove12h},
		{name: "VisibilityCapCountsFromReceipt", run: visibilityCapCountsFromReceipt},
		{name: "VisibilityCap12hFromReceipt", slow: true, run: visibilityCap12hFromReceipt},
	}
}

// A received message is hidden for the queue's VisibilityTimeout, then a
// long poll gets it again as soon as the timeout ends, with a new receipt
// handle and ApproximateReceiveCount 2.
func visibilityTimeoutHidesMessage(e *env) {
	url := e.createQueue("vis", map[string]string{"VisibilityTimeout": "1"})
	sent := e.send(url, "hide me")
	received := time.Now() // before the receive: a lower bound for the server's receipt time
	first := e.recvOne(url, "first receive")
	if n := receiveCount(first); n != 1 {
		e.t.Errorf("first receive: ApproximateReceiveCount %d, want 1", n)
	}
	e.wantEmpty(url, 0, "receive right after the message was received (VisibilityTimeout 1 s)")

	second := e.recv(url, 1, 2)
	waited := time.Since(received)
	if len(second) != 1 {
		e.t.Fatalf("long poll of 2 s after a 1 s visibility timeout received %d messages, want the message back", len(second))
	}
	m := second[0]
	if aws.ToString(m.MessageId) != aws.ToString(sent.MessageId) {
		e.t.Errorf("got message %s back, want %s", aws.ToString(m.MessageId), aws.ToString(sent.MessageId))
	}
	if aws.ToString(m.ReceiptHandle) == aws.ToString(first.ReceiptHandle) {
		e.t.Errorf("second receive reused the first receipt handle; each receive must hand out a new one")
	}
	if n := receiveCount(m); n != 2 {
		e.t.Errorf("second receive: ApproximateReceiveCount %d, want 2", n)
	}
	if waited < 800*time.Millisecond {
		e.t.Errorf("message came back %v after the receive, before its 1 s visibility timeout ended", waited)
	}
}

// ReceiveMessage's VisibilityTimeout overrides the queue's, longer or
// shorter.
func receiveVisibilityTimeoutOverrides(e *env) {
	short := e.createQueue("visshort", nil) // queue default 30 s
	e.send(short, "short")
	if ms := e.receive(&sqs.ReceiveMessageInput{QueueUrl: aws.String(short), WaitTimeSeconds: 2, VisibilityTimeout: 1}); len(ms) != 1 {
		e.t.Fatalf("receive with VisibilityTimeout 1: %d messages, want 1", len(ms))
	}
	long := e.createQueue("vislong", map[string]string{"VisibilityTimeout": "1"})
	e.send(long, "long")
	if ms := e.receive(&sqs.ReceiveMessageInput{QueueUrl: aws.String(long), WaitTimeSeconds: 2, VisibilityTimeout: 5}); len(ms) != 1 {
		e.t.Fatalf("receive with VisibilityTimeout 5: %d messages, want 1", len(ms))
	}
	e.sleep(1500 * time.Millisecond)
	e.wantEmpty(long, 0, "1.5 s after a receive with VisibilityTimeout 5 on a queue with VisibilityTimeout 1")
	back := e.recv(short, 1, 2)
	if len(back) != 1 || receiveCount(back[0]) != 2 {
		e.t.Errorf("1.5 s after a receive with VisibilityTimeout 1 on a queue with VisibilityTimeout 30: got %d messages, want the message back with receive count 2", len(back))
	}
}

// ChangeMessageVisibility sets the timeout anew from the time of the call.
func changeVisibilityExtends(e *env) {
	url := e.createQueue("extend", map[string]string{"VisibilityTimeout": "1"})
	e.send(url, "extend me")
	m := e.recvOne(url, "receive")
	changed := time.Now() // before the call: a lower bound for when the server applies it
	if err := e.changeVisibility(url, aws.ToString(m.ReceiptHandle), 3); err != nil {
		e.t.Fatalf("ChangeMessageVisibility 3: %v", err)
	}
	e.sleep(1500 * time.Millisecond)
	e.wantEmpty(url, 0, "1.5 s after extending the visibility to 3 s (queue VisibilityTimeout 1 s)")
	back := e.recv(url, 1, 2)
	if len(back) != 1 {
		e.t.Fatalf("long poll until after the extended visibility timeout: %d messages, want the message back", len(back))
	}
	if d := time.Since(changed); d < 2500*time.Millisecond {
		e.t.Errorf("message came back %v after the visibility was set to 3 s", d)
	}
	if n := receiveCount(back[0]); n != 2 {
		e.t.Errorf("ApproximateReceiveCount %d, want 2", n)
	}
}

// ChangeMessageVisibility 0 makes the message visible at once.
func changeVisibilityZeroReleases(e *env) {
	url := e.createQueue("release", nil)
	e.send(url, "release me")
	m := e.recvOne(url, "receive")
	if err := e.changeVisibility(url, aws.ToString(m.ReceiptHandle), 0); err != nil {
		e.t.Fatalf("ChangeMessageVisibility 0: %v", err)
	}
	back := e.recvOne(url, "receive after ChangeMessageVisibility 0") // else hidden for the queue's 30 s
	if n := receiveCount(back); n != 2 {
		e.t.Errorf("ApproximateReceiveCount %d, want 2", n)
	}
}

// A deleted message never comes back, and deleting it again with the same
// receipt handle is not an error.
func deletedMessageNeverReturns(e *env) {
	url := e.createQueue("deleted", map[string]string{"VisibilityTimeout": "1"})
	e.send(url, "delete me")
	m := e.recvOne(url, "receive")
	e.deleteMessage(url, aws.ToString(m.ReceiptHandle))
	e.sleep(1500 * time.Millisecond)
	e.wantEmpty(url, 1, "after DeleteMessage and the visibility timeout")
	if _, err := e.api.DeleteMessage(e.ctx(), &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
		e.t.Errorf("DeleteMessage again with the same receipt handle: %v, want no error", err)
	}
}

// DeleteMessage with the receipt handle of a message whose visibility
// timeout ended (and that no one received since) still deletes it: a
// handler that finishes late does not leave its job to run twice.
func deleteWithExpiredHandle(e *env) {
	url := e.createQueue("latedel", map[string]string{"VisibilityTimeout": "1"})
	e.send(url, "finish late")
	m := e.recvOne(url, "receive")
	e.sleep(1500 * time.Millisecond)
	if _, err := e.api.DeleteMessage(e.ctx(), &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
		e.t.Fatalf("DeleteMessage with an expired receipt handle: %v, want no error", err)
	}
	e.wantEmpty(url, 1, "after DeleteMessage with an expired receipt handle")
}

// A malformed receipt handle is ReceiptHandleIsInvalid for DeleteMessage
// and for ChangeMessageVisibility.
func malformedReceiptHandle(e *env) {
	url := e.createQueue("badhandle", nil)
	e.send(url, "keep me")
	_, delErr := e.api.DeleteMessage(e.ctx(), &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: aws.String("garbage")})
	if e.quirk(QuirkDeleteAcceptsAnyReceiptHandle) {
		if delErr != nil {
			e.t.Errorf("quirk no longer holds: DeleteMessage with a malformed handle failed: %v", delErr)
		}
	} else {
		wantError[*types.ReceiptHandleIsInvalid](e.t, delErr, "DeleteMessage with a malformed receipt handle")
	}
	chErr := e.changeVisibility(url, "garbage", 10)
	if e.quirk(QuirkChangeVisibilityNotInflight) {
		wantError[*types.MessageNotInflight](e.t, chErr, "quirk check: ChangeMessageVisibility with a malformed handle")
	} else {
		wantError[*types.ReceiptHandleIsInvalid](e.t, chErr, "ChangeMessageVisibility with a malformed receipt handle")
	}
	if ms := e.recv(url, 10, 1); len(ms) != 1 {
		e.t.Errorf("the queue's message was affected by calls with a malformed handle: received %d, want 1", len(ms))
	}
}

// ChangeMessageVisibility of a deleted message is InvalidParameterValue
// ("Message does not exist or is not available for visibility timeout
// change"). This is how a heartbeat learns that its message is gone.
func changeVisibilityOfDeletedMessage(e *env) {
	url := e.createQueue("chgdel", nil)
	e.send(url, "gone")
	m := e.recvOne(url, "receive")
	h := aws.ToString(m.ReceiptHandle)
	if err := e.changeVisibility(url, h, 42); err != nil {
		e.t.Fatalf("ChangeMessageVisibility of an in-flight message: %v", err)
	}
	e.deleteMessage(url, h)
	err := e.changeVisibility(url, h, 42)
	if e.quirk(QuirkChangeVisibilityNotInflight) {
		wantError[*types.MessageNotInflight](e.t, err, "quirk check: ChangeMessageVisibility of a deleted message")
		return
	}
	e.wantCode(err, "InvalidParameterValue", "ChangeMessageVisibility of a deleted message")
}

// ChangeMessageVisibility with the handle of a message whose visibility
// timeout has ended (and that was not received again) is not an error on
// real SQS: a heartbeat cannot rely on an error to learn that it lost the
// message by letting the timeout pass.
func changeVisibilityWithExpiredHandle(e *env) {
	url := e.createQueue("chgexp", map[string]string{"VisibilityTimeout": "1"})
	e.send(url, "expired")
	m := e.recvOne(url, "receive")
	e.sleep(1500 * time.Millisecond)
	if err := e.changeVisibility(url, aws.ToString(m.ReceiptHandle), 5); err != nil {
		e.t.Errorf("ChangeMessageVisibility with an expired (not re-received) handle: %v, want no error", err)
	}
}

// A visibility timeout above 43200 s (12 h) is InvalidParameterValue, on
// ChangeMessageVisibility and on ReceiveMessage.
func visibilityTimeoutAbove12h(e *env) {
	url := e.createQueue("vis12h", nil)
	e.send(url, "twelve hours")
	m := e.recvOne(url, "receive")
	e.wantCode(e.changeVisibility(url, aws.ToString(m.ReceiptHandle), 43201), "InvalidParameterValue", "ChangeMessageVisibility 43201")
	_, err := e.api.ReceiveMessage(e.ctx(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), VisibilityTimeout: 43201})
	e.wantCode(err, "InvalidParameterValue", "ReceiveMessage VisibilityTimeout 43201")
}

// The 12 h maximum counts from the receipt: once any time has passed since
// the receive, ChangeMessageVisibility 43200 is InvalidParameterValue
// (SQS does not clip it to the time left), while a value within the time
// left succeeds.
func visibilityCapCountsFromReceipt(e *env) {
	url := e.createQueue("cap", nil)
	e.send(url, "capped")
	m := e.recvOne(url, "receive")
	e.sleep(2 * time.Second)
	h := aws.ToString(m.ReceiptHandle)
	err := e.changeVisibility(url, h, 43200)
	if e.quirk(QuirkNoVisibilityCapFromReceipt) {
		if err != nil {
			e.t.Errorf("quirk no longer holds: ChangeMessageVisibility 43200 two seconds after the receive failed: %v", err)
		}
	} else {
		e.wantCode(err, "InvalidParameterValue", "ChangeMessageVisibility 43200 two seconds after the receive")
	}
	if err := e.changeVisibility(url, h, 43200-60); err != nil {
		e.t.Errorf("ChangeMessageVisibility 43140 two seconds after the receive: %v, want success", err)
	}
}

// The same cap over hours (virtual time) or a minute (real time, slow):
// after waiting w, a timeout beyond 12 h − w is refused, one within it is
// accepted, and on virtual time the message is visible again 12 h after the
// receipt however often it was extended.
func visibilityCap12hFromReceipt(e *env) {
	w := 61 * time.Second
	if e.b.Fast {
		w = 6 * time.Hour
	}
	url := e.createQueue("cap12", nil)
	e.send(url, "capped for hours")
	received := time.Now()
	ms := e.receive(&sqs.ReceiveMessageInput{QueueUrl: aws.String(url), WaitTimeSeconds: 2, VisibilityTimeout: 43200})
	if len(ms) != 1 {
		e.t.Fatalf("receive with VisibilityTimeout 43200: %d messages, want 1", len(ms))
	}
	h := aws.ToString(ms[0].ReceiptHandle)
	e.sleep(w)
	left := int32((12*time.Hour - time.Since(received)) / time.Second)
	err := e.changeVisibility(url, h, left+30)
	if e.quirk(QuirkNoVisibilityCapFromReceipt) {
		if err != nil {
			e.t.Errorf("quirk no longer holds: ChangeMessageVisibility beyond the time left failed: %v", err)
		}
		return
	}
	e.wantCode(err, "InvalidParameterValue", "ChangeMessageVisibility 30 s beyond the 12 h left from the receipt")
	if err := e.changeVisibility(url, h, left-30); err != nil {
		e.t.Fatalf("ChangeMessageVisibility 30 s within the 12 h from the receipt: %v", err)
	}
	if !e.b.Fast {
		return
	}
	e.sleep(12*time.Hour - time.Since(received))
	back := e.recv(url, 1, 1)
	if len(back) != 1 || receiveCount(back[0]) != 2 {
		e.t.Errorf("12 h after the receipt: got %d messages, want the message visible again with receive count 2", len(back))
	}
}
