package conformance

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// readBehaviours are what a reader that must see every message of a queue
// (dlq.Inspect, dlq.Redrive) relies on: what a lost receive response does,
// and the counts it compares what it saw with.
func readBehaviours() []behaviour {
	return []behaviour{
		{name: "LostReceiveResponseHidesMessages", run: lostReceiveResponse},
		{name: "CountsFollowVisibility", run: countsFollowVisibility},
	}
}

// countsLag is how long real SQS's approximate counts may take to settle.
const countsLag = 90 * time.Second

// A receive takes effect when SQS answers it, whether or not the answer
// reaches the caller: when its response is lost, its message stays hidden
// for the visibility timeout, and comes back afterwards with
// ApproximateReceiveCount 2. (A receive abandoned in flight is the same for
// the messages SQS had picked for it.) Nobody can release such a message,
// since nobody has its receipt handle.
func lostReceiveResponse(e *env) {
	url := e.createQueue("lost", nil)
	sent := e.send(url, "lost on the way back")
	in := &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, VisibilityTimeout: 2, WaitTimeSeconds: 2}
	if err := e.receiveLosingResponse(in); err == nil {
		e.t.Fatal("the ReceiveMessage whose response was lost returned no error")
	}
	e.wantEmpty(url, 0, "receive right after a receive whose response was lost (visibility 2 s)")
	e.eventually("counts after the lost receive", countsLag, func() error { return e.counts(url, 0, 1) })

	e.sleep(2 * time.Second)
	m := e.recvOne(url, "receive after the lost receive's visibility timeout")
	if aws.ToString(m.MessageId) != aws.ToString(sent.MessageId) {
		e.t.Errorf("got message %s back, want %s", aws.ToString(m.MessageId), aws.ToString(sent.MessageId))
	}
	if n := receiveCount(m); n != 2 {
		e.t.Errorf("ApproximateReceiveCount %d after a lost receive and this one, want 2: the lost receive counts", n)
	}
}

// ApproximateNumberOfMessages and ApproximateNumberOfMessagesNotVisible
// follow visibility: a received message moves from the first to the
// second, and back when it is released or when its visibility timeout ends.
// Their sum is every message that is neither delayed nor deleted, which is
// how many a reader that goes through the queue should see. (Real SQS's
// counts are approximate and settle within about a minute; they are read
// until they match.)
func countsFollowVisibility(e *env) {
	url := e.createQueue("counts", nil)
	e.send(url, "a")
	e.send(url, "b")
	e.eventually("counts after two sends", countsLag, func() error { return e.counts(url, 2, 0) })

	receiveOne := func(what string) types.Message {
		e.t.Helper()
		for range 3 {
			if ms := e.receive(&sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 1, VisibilityTimeout: 1, WaitTimeSeconds: 2}); len(ms) == 1 {
				return ms[0]
			}
		}
		e.t.Fatalf("%s: no message received", what)
		return types.Message{}
	}
	m := receiveOne("first receive")
	e.eventually("counts after receiving one", countsLag, func() error { return e.counts(url, 1, 1) })
	if err := e.changeVisibility(url, aws.ToString(m.ReceiptHandle), 0); err != nil {
		e.t.Fatalf("ChangeMessageVisibility(0): %v", err)
	}
	e.eventually("counts after releasing it", countsLag, func() error { return e.counts(url, 2, 0) })

	receiveOne("second receive")
	e.sleep(1500 * time.Millisecond) // its 1 s visibility timeout ends
	if e.quirk(QuirkCountsIgnoreVisibilityExpiry) {
		if err := e.counts(url, 1, 1); err != nil {
			e.t.Errorf("quirk check: %v; the counts now follow the visibility timeout (remove the quirk)", err)
		}
		return
	}
	e.eventually("counts after the visibility timeout ended", countsLag, func() error { return e.counts(url, 2, 0) })
}

// counts compares the queue's visible and not-visible counts with the
// wanted ones.
func (e *env) counts(url string, visible, notVisible int) error {
	e.t.Helper()
	a := e.attributes(url, types.QueueAttributeNameApproximateNumberOfMessages, types.QueueAttributeNameApproximateNumberOfMessagesNotVisible)
	v, _ := strconv.Atoi(a[string(types.QueueAttributeNameApproximateNumberOfMessages)])
	nv, _ := strconv.Atoi(a[string(types.QueueAttributeNameApproximateNumberOfMessagesNotVisible)])
	if v != visible || nv != notVisible {
		return fmt.Errorf("ApproximateNumberOfMessages %d, ApproximateNumberOfMessagesNotVisible %d; want %d and %d", v, nv, visible, notVisible)
	}
	return nil
}

// receiveLosingResponse makes a ReceiveMessage that takes effect and whose
// response is lost, with Backend.LoseResponse or, by default, an HTTP client
// that drops the response (and no retry, so there is one receive).
func (e *env) receiveLosingResponse(in *sqs.ReceiveMessageInput) error {
	if e.b.LoseResponse != nil {
		e.b.LoseResponse(e.api, "ReceiveMessage")
		_, err := e.api.ReceiveMessage(e.ctx(), in)
		return err
	}
	_, err := e.api.ReceiveMessage(e.ctx(), in, func(o *sqs.Options) {
		o.HTTPClient = dropResponse{o.HTTPClient}
		o.RetryMaxAttempts = 1
	})
	return err
}

// dropResponse is an SDK HTTP client that sends the request, reads the
// response and drops it, as a connection reset while reading it would.
type dropResponse struct{ base sqs.HTTPClient }

func (d dropResponse) Do(req *http.Request) (*http.Response, error) {
	resp, err := d.base.Do(req)
	if err != nil {
		return nil, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return nil, errors.New("connection reset by peer (the conformance suite dropped the response)")
}
