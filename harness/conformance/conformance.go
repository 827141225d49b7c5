package conformance

import (
	"context"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// API is every SQS call the suite makes, with the SDK's exact method
// signatures, so a *sqs.Client and sqstest's fake both satisfy it.
type API interface {
	CreateQueue(ctx context.Context, params *sqs.CreateQueueInput, optFns ...func(*sqs.Options)) (*sqs.CreateQueueOutput, error)
	GetQueueUrl(ctx context.Context, params *sqs.GetQueueUrlInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
	GetQueueAttributes(ctx context.Context, params *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
	SetQueueAttributes(ctx context.Context, params *sqs.SetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.SetQueueAttributesOutput, error)
	SendMessage(ctx context.Context, params *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	SendMessageBatch(ctx context.Context, params *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
	ReceiveMessage(ctx context.Context, params *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessage(ctx context.Context, params *sqs.DeleteMessageInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
	DeleteMessageBatch(ctx context.Context, params *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
	ChangeMessageVisibility(ctx context.Context, params *sqs.ChangeMessageVisibilityInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error)
	ChangeMessageVisibilityBatch(ctx context.Context, params *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error)
	PurgeQueue(ctx context.Context, params *sqs.PurgeQueueInput, optFns ...func(*sqs.Options)) (*sqs.PurgeQueueOutput, error)
	DeleteQueue(ctx context.Context, params *sqs.DeleteQueueInput, optFns ...func(*sqs.Options)) (*sqs.DeleteQueueOutput, error)
	ListDeadLetterSourceQueues(ctx context.Context, params *sqs.ListDeadLetterSourceQueuesInput, optFns ...func(*sqs.Options)) (*sqs.ListDeadLetterSourceQueuesOutput, error)
	StartMessageMoveTask(ctx context.Context, params *sqs.StartMessageMoveTaskInput, optFns ...func(*sqs.Options)) (*sqs.StartMessageMoveTaskOutput, error)
	ListMessageMoveTasks(ctx context.Context, params *sqs.ListMessageMoveTasksInput, optFns ...func(*sqs.Options)) (*sqs.ListMessageMoveTasksOutput, error)
}

var _ API = (*sqs.Client)(nil)

// SlowEnv is the environment variable that, set to 1, runs the behaviours
// that need long real-time waits (message retention, the visibility cap
// counted from receipt) against backends whose time is real.
const SlowEnv = "SQSWORKER_CONFORMANCE_SLOW"

// Backend is one SQS implementation under test.
type Backend struct {
	// Name identifies the backend in subtest names and QUIRK lines, e.g.
	// "fauxqs", "localstack", "aws" or "sqstest". Required.
	Name string

	// NewClient returns the client one behaviour uses. It is called once per
	// behaviour, inside Wrap, so a fake can be built inside its synctest
	// bubble; a real backend returns its one shared client. Required.
	NewClient func(t *testing.T) API

	// Sleep waits d. Nil means time.Sleep, which is right both for real
	// backends and for a fake running inside a synctest bubble (where it is
	// virtual). The suite never sleeps any other way.
	Sleep func(d time.Duration)

	// Quirks are the declared ways this backend differs from real SQS; see
	// Quirk. Nil means none: the backend must behave as real SQS does.
	Quirks map[Quirk]bool

	// Wrap, when set, runs each behaviour's body, e.g. inside
	// synctest.Test. Nil runs it directly.
	Wrap func(t *testing.T, f func(t *testing.T))

	// Fast reports that the backend's time is virtual, so behaviours that
	// wait for minutes or hours are cheap and always run. False runs them
	// only with SlowEnv=1.
	Fast bool

	// LoseResponse, when set, makes the next call named op ("ReceiveMessage")
	// on api take effect and then fail as if its response were lost on the
	// way back. Nil means the suite does it at the HTTP layer, with a
	// per-call HTTP client that reads and drops the endpoint's response,
	// which works for an *sqs.Client against any endpoint; a fake sets it
	// (sqstest's fake injects an AfterEffect fault).
	LoseResponse func(api API, op string)
}

// behaviour is one named SQS behaviour the library relies on.
type behaviour struct {
	name string
	// slow marks a behaviour that waits a minute or more in real time.
	slow bool
	run  func(e *env)
}

// Run runs every behaviour of the suite against b, each as a subtest named
// b.Name/Behaviour with its own uniquely named queues.
//
// The behaviours run concurrently: each calls t.Run from its own goroutine
// rather than t.Parallel, because they spend their time waiting on SQS (or on
// virtual time), and t.Parallel would cap them at -parallel, which defaults
// to GOMAXPROCS (2 on the project's machines), serialising a suite that
// takes seconds into one that takes minutes.
func Run(t *testing.T, b Backend) {
	t.Helper()
	if b.Name == "" || b.NewClient == nil {
		t.Fatal("conformance.Run: Backend.Name and Backend.NewClient are required")
	}
	if b.Sleep == nil {
		b.Sleep = time.Sleep
	}
	slowOK := b.Fast || os.Getenv(SlowEnv) == "1"
	all := behaviours()
	var declared []string
	for q, on := range b.Quirks {
		if on {
			declared = append(declared, string(q))
		}
	}
	slices.Sort(declared)
	t.Logf("SQS conformance suite: %d behaviours against backend %q; declared quirks: %s; virtual time: %v; slow behaviours: %v",
		len(all), b.Name, orNone(declared), b.Fast, slowOK)

	t.Run(b.Name, func(t *testing.T) {
		var wg sync.WaitGroup
		for _, bh := range all {
			wg.Go(func() {
				t.Run(bh.name, func(t *testing.T) {
					if bh.slow && !slowOK {
						t.Skipf("SKIP (slow behaviour, the suite's one allowed skip): %s waits a minute or more of real time on backend %q; set %s=1 to run it (it always runs on virtual-time backends)",
							bh.name, b.Name, SlowEnv)
					}
					body := func(t *testing.T) {
						e := &env{t: t, b: b, api: b.NewClient(t), slow: slowOK}
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

func behaviours() []behaviour {
	var all []behaviour
	all = append(all, queueBehaviours()...)
	all = append(all, messageBehaviours()...)
	all = append(all, visibilityBehaviours()...)
	all = append(all, readBehaviours()...)
	all = append(all, batchBehaviours()...)
	all = append(all, delayAndPollBehaviours()...)
	all = append(all, dlqBehaviours()...)
	all = append(all, fifoBehaviours()...)
	all = append(all, fairQueueBehaviours()...)
	all = append(all, lifetimeBehaviours()...)
	return all
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
