package heartbeat_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// slowAnswers answers every call delay after it was made, whatever the
// call's context says: a response already on the wire when the client's
// timeout passes, or a client starved of CPU, reads it late.
type slowAnswers struct {
	*recorder
	delay time.Duration
}

func (s slowAnswers) ChangeMessageVisibilityBatch(_ context.Context, in *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	time.Sleep(s.delay)
	return s.recorder.ChangeMessageVisibilityBatch(context.Background(), in, optFns...)
}

// An extension SQS confirms only after the deadline it was to move is
// counted late, and the lease remembers it (Lapsed): the message was
// visible for a while, so its owner's settlement cannot rule out a second
// run. A lease extended in time has not lapsed.
func TestLeaseExtendedLateHasLapsed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, 30)
		h := newHB(t, slowAnswers{e.rec, 2 * time.Second}, e.url, 30*time.Second)
		msgs, receivedAt := e.receive(t, 2)
		// a is known to become visible 1 s after its receive: its
		// extension, due at once, is confirmed after that. b has its 30 s.
		a := trackUntil(t, h, msgs[0].handle, receivedAt, receivedAt.Add(time.Second), nil)
		b := track(t, h, msgs[1].handle, receivedAt, nil)
		run(t, h)
		time.Sleep(25 * time.Second)
		if s := h.Stats(); s.Late != 1 {
			t.Fatalf("Stats.Late = %d, want 1 (a's first extension)", s.Late)
		}
		if !a.Lapsed() {
			t.Error("a's extension was confirmed after its deadline, yet Lapsed is false")
		}
		if b.Lapsed() {
			t.Error("b was extended in time, yet Lapsed is true")
		}
		a.Stop()
		b.Stop()
	})
}
