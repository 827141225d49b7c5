package conformance

import (
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

func lifetimeBehaviours() []behaviour {
	return []behaviour{
		{name: "PurgeQueueDeletesEverything", run: purgeQueue},
		{name: "PurgeQueueTwiceIsPurgeQueueInProgress", run: purgeQueueTwice},
		{name: "RetentionPeriodExpiresMessages", slow: true, run: retentionExpires},
	}
}

// PurgeQueue deletes every message, visible, in flight or delayed.
func purgeQueue(e *env) {
	url := e.createQueue("purge", map[string]string{"VisibilityTimeout": "1"})
	for _, b := range []string{"p1", "p2", "p3"} {
		e.send(url, b)
	}
	e.sendInput(&sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("delayed"), DelaySeconds: 1})
	e.recvOne(url, "receive one message before the purge")
	if _, err := e.api.PurgeQueue(e.ctx(), &sqs.PurgeQueueInput{QueueUrl: aws.String(url)}); err != nil {
		e.t.Fatalf("PurgeQueue: %v", err)
	}
	e.wantEmpty(url, 0, "right after PurgeQueue")
	e.sleep(1500 * time.Millisecond)
	e.wantEmpty(url, 1, "after the purged in-flight and delayed messages' timeouts")
}

// Only one PurgeQueue per queue is allowed every 60 seconds; a second one
// is PurgeQueueInProgress.
func purgeQueueTwice(e *env) {
	url := e.createQueue("purge2", nil)
	if _, err := e.api.PurgeQueue(e.ctx(), &sqs.PurgeQueueInput{QueueUrl: aws.String(url)}); err != nil {
		e.t.Fatalf("PurgeQueue: %v", err)
	}
	_, err := e.api.PurgeQueue(e.ctx(), &sqs.PurgeQueueInput{QueueUrl: aws.String(url)})
	if e.quirk(QuirkPurgeNotRateLimited) {
		if err != nil {
			e.t.Errorf("quirk no longer holds: a second PurgeQueue within 60 s failed: %v", err)
		}
		return
	}
	wantError[*types.PurgeQueueInProgress](e.t, err, "a second PurgeQueue within 60 s")
}

// A message older than the queue's MessageRetentionPeriod (60 s, the
// minimum) is deleted, whether it was never received or received once and
// released by its visibility timeout.
func retentionExpires(e *env) {
	url := e.createQueue("retain", map[string]string{"MessageRetentionPeriod": "60", "VisibilityTimeout": "30"})
	e.send(url, "expires visible")
	e.send(url, "expires after a receive")
	var received bool
	for range 3 {
		if ms := e.recv(url, 1, 1); len(ms) == 1 {
			received = true
			break
		}
	}
	if !received {
		e.t.Fatal("could not receive one of the messages")
	}
	e.sleep(65 * time.Second)
	ms := e.recv(url, 10, 1)
	if e.quirk(QuirkNoRetention) {
		if len(ms) == 0 {
			e.t.Errorf("quirk no longer holds: messages past MessageRetentionPeriod were deleted")
		}
		return
	}
	if len(ms) != 0 {
		e.t.Errorf("65 s after sending to a queue with MessageRetentionPeriod 60: received %v, want nothing", bodies(ms))
	}
}
