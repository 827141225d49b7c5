package dlq

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/internal/deadletter"
	"github.com/sqsworker/sqsworker/sqstest"
)

// fakePair creates a queue and its DLQ in a fresh Fake and discovers them.
func fakePair(t *testing.T, name string) (*sqstest.Fake, Target) {
	t.Helper()
	f := sqstest.For(t)
	src, _ := f.MustCreateQueueWithDLQ(t, name, 5, nil)
	target, err := Discover(context.Background(), f, src)
	if err != nil {
		t.Fatalf("Discover: %v", err)
	}
	return f, target
}

// mover dead-letters messages as the runtimes do, with their provenance.
type mover struct{ m *deadletter.Mover }

// mustMover returns a mover to target's DLQ, failing t on error.
func mustMover(t testing.TB, client deadletter.MoveAPI, target Target, optFns ...func(*deadletter.Options)) mover {
	t.Helper()
	m, err := deadletter.NewMover(client, deadletter.Target(target), optFns...)
	if err != nil {
		t.Fatalf("NewMover: %v", err)
	}
	return mover{m}
}

// Move copies msg to the DLQ with provenance p, then deletes it.
func (m mover) Move(ctx context.Context, msg types.Message, p Provenance) error {
	return m.m.Move(ctx, msg, deadletter.Provenance(p))
}

func keys(m map[string]types.MessageAttributeValue) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
