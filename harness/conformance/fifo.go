package conformance

import (
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

func fifoBehaviours() []behaviour {
	return []behaviour{
		{name: "FIFOOrderWithinGroup", run: fifoOrderWithinGroup},
		{name: "FIFOSeveralMessagesOfAGroupPerReceive", run: fifoSeveralPerGroup},
		{name: "FIFOGroupLockedWhileInFlight", run: fifoGroupLocked},
		{name: "FIFODeleteWakesLongPollOfItsGroup", run: fifoDeleteWakesLongPoll},
		{name: "FIFODeduplicationByID", run: fifoDedupByID},
		{name: "FIFOContentBasedDeduplication", run: fifoContentBasedDedup},
		{name: "FIFOMissingMessageGroupId", run: fifoMissingGroup},
		{name: "FIFOMissingDeduplicationId", run: fifoMissingDedup},
		{name: "FIFOPerMessageDelayRejected", run: fifoPerMessageDelay},
	}
}

func groupOf(m types.Message) string {
	return m.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)]
}

// Messages of one group are received in the order they were sent, whatever
// other groups interleave.
func fifoOrderWithinGroup(e *env) {
	url := e.createFIFO("order", map[string]string{"ContentBasedDeduplication": "true"})
	for _, s := range [][2]string{{"g1", "a1"}, {"g2", "b1"}, {"g1", "a2"}, {"g2", "b2"}, {"g1", "a3"}} {
		e.sendGroup(url, s[0], "", s[1])
	}
	got := map[string][]string{}
	for range 10 {
		ms := e.recv(url, 10, 1)
		for _, m := range ms {
			got[groupOf(m)] = append(got[groupOf(m)], aws.ToString(m.Body))
			e.deleteMessage(url, aws.ToString(m.ReceiptHandle))
		}
		if len(got["g1"])+len(got["g2"]) == 5 {
			break
		}
	}
	if fmt.Sprint(got["g1"]) != "[a1 a2 a3]" || fmt.Sprint(got["g2"]) != "[b1 b2]" {
		e.t.Errorf("received per group %v, want g1 [a1 a2 a3] and g2 [b1 b2] in send order", got)
	}
}

// One receive returns several messages of the same group, in order, up to
// MaxNumberOfMessages.
func fifoSeveralPerGroup(e *env) {
	url := e.createFIFO("several", map[string]string{"ContentBasedDeduplication": "true"})
	for _, b := range []string{"m1", "m2", "m3"} {
		e.sendGroup(url, "g", "", b)
	}
	ms := e.recv(url, 10, 1)
	if e.quirk(QuirkFIFOOneMessagePerGroup) {
		if got := bodies(ms); fmt.Sprint(got) != "[m1]" {
			e.t.Errorf("quirk no longer holds: one receive of a three-message group returned %v, want [m1]", got)
		}
		return
	}
	if got := bodies(ms); fmt.Sprint(got) != "[m1 m2 m3]" {
		e.t.Errorf("one receive (MaxNumberOfMessages 10) of a three-message group returned %v, want [m1 m2 m3]", got)
	}
}

// While a message of a group is in flight, no other message of that group
// is delivered (even ones never received), but other groups' messages are;
// deleting the in-flight message unlocks the group.
func fifoGroupLocked(e *env) {
	url := e.createFIFO("lock", map[string]string{"ContentBasedDeduplication": "true"})
	e.sendGroup(url, "g1", "", "a1")
	e.sendGroup(url, "g1", "", "a2")
	e.sendGroup(url, "g2", "", "b1")

	first := e.recv(url, 1, 1)
	if len(first) != 1 {
		e.t.Fatalf("first receive: %d messages, want 1", len(first))
	}
	x := first[0]
	locked := groupOf(x)
	if locked == "" {
		e.t.Fatalf("FIFO message %q has no MessageGroupId attribute", aws.ToString(x.Body))
	}
	others := e.recv(url, 10, 1)
	var otherGroups []string
	for _, m := range others {
		if groupOf(m) == locked {
			e.t.Errorf("received %q of group %s while %q of that group is in flight", aws.ToString(m.Body), locked, aws.ToString(x.Body))
		}
		otherGroups = append(otherGroups, groupOf(m))
	}
	if len(others) == 0 {
		e.t.Errorf("no message of the other group was delivered while group %s was locked", locked)
	}

	e.deleteMessage(url, aws.ToString(x.ReceiptHandle))
	next := e.recv(url, 10, 1)
	switch aws.ToString(x.Body) {
	case "a1": // g1 unlocked: a2 is next; g2 is now in flight
		if got := bodies(next); fmt.Sprint(got) != "[a2]" {
			e.t.Errorf("after deleting a1: received %v, want [a2]", got)
		}
	case "b1": // g2 is done and g1 is in flight: nothing
		if len(next) != 0 {
			e.t.Errorf("after deleting b1 with group g1 in flight: received %v, want nothing", bodies(next))
		}
	default:
		e.t.Errorf("first receive returned %q, want the head of a group (a1 or b1); other groups received: %v", aws.ToString(x.Body), otherGroups)
	}
}

// A second message with the same MessageDeduplicationId within 5 minutes
// is accepted but not delivered, even after the first was deleted.
func fifoDedupByID(e *env) {
	url := e.createFIFO("dedupid", nil)
	e.sendGroup(url, "g", "same-id", "first")
	e.sendGroup(url, "g", "same-id", "second")
	e.sendGroup(url, "g", "other-id", "third")
	got := e.drainFIFO(url)
	if fmt.Sprint(got) != "[first third]" {
		e.t.Errorf("received %v, want [first third] (second has the deduplication ID of first)", got)
	}
	e.sendGroup(url, "g", "same-id", "after delete")
	e.wantEmpty(url, 1, "a send with a deduplication ID used 0 s ago, after the first was deleted")
}

// With ContentBasedDeduplication a second message with the same body is
// deduplicated whatever its group.
func fifoContentBasedDedup(e *env) {
	url := e.createFIFO("dedupbody", map[string]string{"ContentBasedDeduplication": "true"})
	e.sendGroup(url, "g1", "", `{"job":1}`)
	e.sendGroup(url, "g2", "", `{"job":1}`)
	e.sendGroup(url, "g1", "", `{"job":2}`)
	got := e.drainFIFO(url)
	if fmt.Sprint(got) != `[{"job":1} {"job":2}]` {
		e.t.Errorf(`received %v, want [{"job":1} {"job":2}] (the second {"job":1} is a duplicate)`, got)
	}
}

// drainFIFO receives and deletes until a receive comes back empty and
// returns the bodies in receive order.
func (e *env) drainFIFO(url string) []string {
	var got []string
	for range 10 {
		ms := e.recv(url, 10, 1)
		if len(ms) == 0 {
			break
		}
		for _, m := range ms {
			got = append(got, aws.ToString(m.Body))
			e.deleteMessage(url, aws.ToString(m.ReceiptHandle))
		}
	}
	slices.Sort(got)
	return got
}

// SendMessage to a FIFO queue without MessageGroupId is MissingParameter.
func fifoMissingGroup(e *env) {
	url := e.createFIFO("nogroup", map[string]string{"ContentBasedDeduplication": "true"})
	_, err := e.api.SendMessage(e.ctx(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("x"), MessageDeduplicationId: aws.String("d")})
	e.wantCode(err, "MissingParameter", "SendMessage to a FIFO queue without MessageGroupId")
}

// SendMessage to a FIFO queue without ContentBasedDeduplication and without
// MessageDeduplicationId is InvalidParameterValue.
func fifoMissingDedup(e *env) {
	url := e.createFIFO("nodedup", nil)
	_, err := e.api.SendMessage(e.ctx(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("x"), MessageGroupId: aws.String("g")})
	e.wantCode(err, "InvalidParameterValue", "SendMessage to a FIFO queue without deduplication ID or ContentBasedDeduplication")
}

// A per-message DelaySeconds on a FIFO queue is InvalidParameterValue (only
// the queue's DelaySeconds applies to FIFO queues).
func fifoPerMessageDelay(e *env) {
	url := e.createFIFO("delay", map[string]string{"ContentBasedDeduplication": "true"})
	_, err := e.api.SendMessage(e.ctx(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("x"), MessageGroupId: aws.String("g"), DelaySeconds: 2})
	e.wantCode(err, "InvalidParameterValue", "SendMessage with DelaySeconds to a FIFO queue")
}

// Deleting the in-flight message of a FIFO group unlocks the group: a long
// poll already waiting returns the group's next message right away, rather
// than at the end of its wait. A worker relies on it to go on with a group.
func fifoDeleteWakesLongPoll(e *env) {
	url := e.createFIFO("wake", map[string]string{"ContentBasedDeduplication": "true"})
	e.sendGroup(url, "g", "", "m1")
	e.sendGroup(url, "g", "", "m2")
	head := e.recv(url, 1, 0)
	if len(head) != 1 || aws.ToString(head[0].Body) != "m1" {
		e.t.Fatalf("first receive: %v, want [m1]", bodies(head))
	}
	got := make(chan []types.Message, 1)
	start := time.Now()
	go func() { got <- e.recv(url, 1, 2) }()
	e.sleep(500 * time.Millisecond)
	e.deleteMessage(url, aws.ToString(head[0].ReceiptHandle))
	next := <-got
	if took := time.Since(start); len(next) != 1 || aws.ToString(next[0].Body) != "m2" || took > 1500*time.Millisecond {
		e.t.Errorf("long poll waiting while m1 was in flight got %v after %v; want [m2] right after m1's delete at 0.5s", bodies(next), took)
	}
}
