package contract

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/harness/conformance"
	"github.com/sqsworker/sqsworker/retry"
	"github.com/sqsworker/sqsworker/worker"
)

// The suite's fixed timings. Every runtime and backend gets the same.
const (
	// VisibilityTimeout is the source queue's VisibilityTimeout: a message
	// nobody settles comes back this long after its last visibility change.
	VisibilityTimeout = 10 * time.Second
	// RetryDelay is the delay the scenarios' retry policy gives every retry.
	// It, AfterDelay and VisibilityTimeout lie further apart than a
	// backend's Tolerance, so the check tells them apart, and RetryDelay
	// minus the Tolerance leaves a runtime time to stop before the
	// message's hiding is checked.
	RetryDelay = 5 * time.Second
	// HandlerTimeout is how long a handler may run: the worker's
	// Options.HandlerTimeout, and the time the Lambda adapter leaves a
	// handler before the invocation's deadline margin.
	HandlerTimeout = 4 * time.Second
	// CallTimeout bounds every SQS call of both runtimes, so a hung call
	// ends after it.
	CallTimeout = 2 * time.Second
	// maxReceiveCount is the source's redrive threshold: high enough that
	// SQS's own redrive never acts within a scenario, so every DLQ copy the
	// suite sees is the runtime's, with provenance.
	maxReceiveCount = 20
)

// Kind is what became of a message, as SQS shows it.
type Kind int

const (
	// Deleted: gone from the source, not in the DLQ.
	Deleted Kind = iota + 1
	// BackAfter: in the source, hidden, visible again Fate.Delay after it
	// was settled (its visibility was changed to the retry delay).
	BackAfter
	// DeadLettered: gone from the source; in the DLQ (Fate.Copies copies),
	// every copy with provenance (source, attempt, reason).
	DeadLettered
	// ComesBack: not deleted and not in the DLQ; visible again within the
	// queue's VisibilityTimeout of its settlement, to be tried again.
	ComesBack
	// Untouched: the handler never ran and nothing was settled within
	// UntouchedWait; the message waits, visible, in the source. Only a
	// declared Gap expects it.
	Untouched
)

// UntouchedWait is how long an Untouched fate is watched: long enough for
// any runtime whose calls have timeouts to receive, run and settle a
// message several times over.
const UntouchedWait = time.Minute

// String returns the kind's name.
func (k Kind) String() string {
	switch k {
	case Deleted:
		return "deleted"
	case BackAfter:
		return "back after a delay"
	case DeadLettered:
		return "dead-lettered"
	case ComesBack:
		return "comes back"
	case Untouched:
		return "untouched"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Fate is the expected end of a scenario's message.
type Fate struct {
	Kind Kind
	// Delay is, for BackAfter, how long after its settlement the message
	// is visible again.
	Delay time.Duration
	// Attempt is, for DeadLettered, the attempt recorded in the provenance.
	Attempt int
	// Reason is, for DeadLettered, a word the provenance's error must
	// contain besides the handler's error ("permanent", "exhausted").
	Reason string
	// Copies is, for DeadLettered, how many copies the DLQ holds. Zero
	// value: 1.
	Copies int
	// Runs is how many times the handler ran, for all of the scenario's
	// messages. Zero value: once per settlement the scenario waits for.
	Runs int
}

// String describes the fate.
func (f Fate) String() string {
	switch f.Kind {
	case BackAfter:
		return fmt.Sprintf("%v (%v)", f.Kind, f.Delay)
	case DeadLettered:
		return fmt.Sprintf("%v (attempt %d, %q)", f.Kind, f.Attempt, f.Reason)
	}
	return f.Kind.String()
}

// Difference is a fate a runtime reaches instead of the scenario's: the
// suite asserts it as strictly as the common one, and logs Why.
type Difference struct {
	Want Fate
	Why  string
	// Gap marks a difference that is not by design but a known defect of
	// the runtime, kept visible here: the suite asserts the defect (so the
	// fix makes it fail) and logs it as a gap. Fixing the runtime means
	// deleting the Difference.
	Gap bool
}

// Scenario is one situation every runtime must end the same way (or with
// a declared Difference).
type Scenario struct {
	Name string
	// Handle is the handler's behaviour on its run-th call (1 for the
	// first). It must return when ctx ends.
	Handle func(ctx context.Context, run int) error
	// Retries is how many retries the retry policy allows (each after
	// RetryDelay) before the message goes to the DLQ. Zero value: 3.
	Retries int
	// Faults are injected once the runtime is built and the messages are
	// sent, before the runtime runs (so they never hit its start-up calls,
	// and do hit its first receive).
	Faults []Fault
	// Messages is how many messages the scenario sends at once, so that
	// they are received, and settled, in one batch: a failed entry must be
	// mapped back to its own message. Every message must reach the fate.
	// Zero value: 1.
	Messages int
	// Settlements is how many settlements per message (worker.Options.OnSettled
	// and sqslambda.Options.OnSettled events) to wait for before the
	// runtime is stopped and the fate read. Zero value: 1.
	Settlements int
	// Want is the fate every runtime must reach.
	Want Fate
	// Differs declares, by runtime name, a fate a runtime reaches instead
	// by design.
	Differs map[string]Difference
}

// FaultKind is a fault a backend can inject.
type FaultKind int

// The faults. A backend may inject only some of them (Backend.Cannot).
const (
	// Throttle fails the call with SQS's RequestThrottled.
	Throttle FaultKind = iota + 1
	// ServerError fails the call with HTTP 500 InternalError.
	ServerError
	// AccessDenied fails the call with AccessDenied (a role without the
	// permission).
	AccessDenied
	// KMSAccessDenied fails the call with the error SQS returns when the
	// queue's KMS key refuses the caller (KmsAccessDenied, whose
	// query-compatible code the SDK reports: KMS.AccessDeniedException).
	KMSAccessDenied
	// QueueDoesNotExist fails the call with QueueDoesNotExist.
	QueueDoesNotExist
	// EntryThrottle fails single entries of a batch call with
	// RequestThrottled, the call itself succeeding.
	EntryThrottle
	// EntryAccessDenied fails single entries of a batch call with
	// AccessDenied.
	EntryAccessDenied
	// EntryKMSAccessDenied fails single entries of a batch call with
	// KMS.AccessDeniedException, as SendMessageBatch reports a queue whose
	// KMS key refuses the caller.
	EntryKMSAccessDenied
	// EntryOmitted leaves single entries out of a batch call's response
	// (in neither its Successful nor its Failed list); they took no
	// effect, and the caller must count them as failed.
	EntryOmitted
	// LostResponse lets the call take effect and then loses its answer: the
	// caller sees a server error (the fake) or a reset connection (the
	// emulator).
	LostResponse
	// Hang never answers: the caller's call timeout ends the call.
	Hang
	// DLQDeleted deletes the dead-letter queue (API is ignored): the copy
	// finds no queue.
	DLQDeleted
)

// String returns the fault's name.
func (k FaultKind) String() string {
	names := [...]string{"", "throttle", "server-error", "access-denied", "kms-access-denied", "queue-does-not-exist",
		"entry-throttle", "entry-access-denied", "entry-kms-access-denied", "entry-omitted", "lost-response", "hang", "dlq-deleted"}
	if int(k) > 0 && int(k) < len(names) {
		return names[k]
	}
	return "FaultKind(" + strconv.Itoa(int(k)) + ")"
}

// Fault is one injected failure.
type Fault struct {
	// API is the SQS call to affect ("SendMessageBatch").
	API  string
	Kind FaultKind
	// Times is how many calls (entries, for the Entry kinds) fail; then
	// they succeed. Zero value: they fail for good.
	Times int
}

// String describes the fault.
func (f Fault) String() string {
	n := "for good"
	if f.Times > 0 {
		n = fmt.Sprintf("×%d", f.Times)
	}
	if f.Kind == DLQDeleted {
		return f.Kind.String()
	}
	return fmt.Sprintf("%s %s %s", f.API, f.Kind, n)
}

// Env is one scenario's queues on a backend.
type Env struct {
	// Client is what the runtime calls: injected faults apply to it.
	Client conformance.API
	// Observer sends the scenario's messages before the faults are
	// injected, and reads the queues for the fate once they are healed.
	Observer conformance.API
	// Source is the source queue's URL (VisibilityTimeout, a RedrivePolicy
	// to DLQ), DLQ the dead-letter queue's.
	Source, DLQ string
	// Inject injects a fault the backend can inject (see Backend.Cannot).
	Inject func(t *testing.T, f Fault)
	// Heal removes every injected fault (a deleted DLQ stays deleted).
	Heal func()
	// DLQGone reports whether a fault deleted the DLQ.
	DLQGone func() bool
}

// Backend is an SQS the suite runs on.
type Backend struct {
	Name string
	// Cannot returns why the backend cannot inject f, or "" when it can;
	// scenarios with a fault it cannot inject do not run on it (the suite
	// logs them and why).
	Cannot func(f Fault) string
	// Run runs fn as one scenario's test on one runtime: in a
	// testing/synctest bubble for the fake (time is virtual), as it is for
	// an emulator.
	Run func(t *testing.T, fn func(t *testing.T))
	// Parallel runs the scenarios and runtimes as parallel subtests: an
	// emulator's time is real, and most of it is spent waiting.
	Parallel bool
	// New creates a scenario's queues (see Env).
	New func(t *testing.T) *Env
	// Tolerance is how far from the expected moment a delay may end.
	Tolerance time.Duration
	// MaxWait bounds the wait for a scenario's settlements.
	MaxWait time.Duration
}

// Setup is what a runtime is built with for one scenario.
type Setup struct {
	// Client is the runtime's SQS client; the scenario's faults apply to
	// it.
	Client conformance.API
	// Source is the queue to consume, by URL.
	Source string
	// Handler runs each message: the scenario's behaviour.
	Handler worker.Handler
	// Policy is the retry policy: Scenario.Retries retries, RetryDelay
	// apart.
	Policy retry.Policy
	// OnSettled must receive every settlement event.
	OnSettled func(worker.Settlement)
}

// Runtime is a way of running handlers on an SQS queue.
type Runtime struct {
	Name string
	// New builds the runtime for s without receiving anything yet, and
	// returns the function that runs it until ctx ends.
	New func(t *testing.T, s Setup) (run func(ctx context.Context) error)
}

// Run runs every scenario through every runtime on b, each as its own
// subtest "<scenario>/<runtime>", and fails when a runtime's message does
// not reach the scenario's fate (or the runtime's declared Difference).
func Run(t *testing.T, b Backend, runtimes []Runtime, scenarios []Scenario) {
	for _, sc := range scenarios {
		var missing []string
		for _, f := range sc.Faults {
			if why := b.Cannot(f); why != "" {
				missing = append(missing, f.String()+": "+why)
			}
		}
		if len(missing) > 0 {
			t.Logf("NOT ON %s: %s (%s)", b.Name, sc.Name, strings.Join(missing, "; "))
			continue
		}
		t.Run(sc.Name, func(t *testing.T) {
			if b.Parallel {
				t.Parallel()
			}
			for _, rt := range runtimes {
				t.Run(rt.Name, func(t *testing.T) {
					if b.Parallel {
						t.Parallel()
					}
					b.Run(t, func(t *testing.T) { runScenario(t, b, rt, sc) })
				})
			}
		})
	}
}

// runScenario takes one message through sc on rt and checks its fate.
func runScenario(t *testing.T, b Backend, rt Runtime, sc Scenario) {
	want := sc.Want
	if d, ok := sc.Differs[rt.Name]; ok {
		if d.Gap {
			t.Logf("KNOWN GAP (not by design; once fixed, delete the declaration): %s ends %v instead of %v: %s", rt.Name, d.Want, sc.Want, d.Why)
		} else {
			t.Logf("DECLARED DIFFERENCE: %s ends %v instead of %v: %s", rt.Name, d.Want, sc.Want, d.Why)
		}
		want = d.Want
	}
	n := max(sc.Messages, 1)
	settlements := n * max(sc.Settlements, 1)
	if want.Kind == Untouched {
		settlements = 0
	} else if want.Runs == 0 {
		want.Runs = settlements
	}
	env := b.New(t)
	var runs atomic.Int64
	settled := make(chan worker.Settlement, 64)
	retries := sc.Retries
	if retries == 0 {
		retries = 3
	}
	run := rt.New(t, Setup{
		Client: env.Client,
		Source: env.Source,
		Handler: worker.HandlerFunc(func(ctx context.Context, m *worker.Message) error {
			return sc.Handle(ctx, int(runs.Add(1)))
		}),
		Policy: retry.PolicyFunc(func(attempt int) (time.Duration, bool) {
			return RetryDelay, attempt <= retries
		}),
		OnSettled: func(s worker.Settlement) {
			select {
			case settled <- s:
			default: // far more than a scenario awaits; never block the runtime
			}
		},
	})
	bodies := make([]string, n)
	in := &sqs.SendMessageBatchInput{QueueUrl: aws.String(env.Source)}
	for i := range bodies {
		bodies[i] = fmt.Sprintf("job %s #%d", sc.Name, i+1)
		in.Entries = append(in.Entries, types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(bodies[i])})
	}
	if out, err := env.Observer.SendMessageBatch(t.Context(), in); err != nil || len(out.Successful) != n {
		t.Fatalf("sending the scenario's messages: %v", err)
	}
	for _, f := range sc.Faults {
		env.Inject(t, f)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	var events []string
	var at []time.Time // when each event came
	wait := b.MaxWait
	if want.Kind == Untouched {
		wait = UntouchedWait
	}
	limit := time.NewTimer(wait)
	for timedOut := false; !timedOut && (want.Kind == Untouched || len(events) < settlements); {
		select {
		case s := <-settled:
			events = append(events, fmt.Sprintf("%v attempt %d %s", s.Outcome, s.Attempt, s.Reason))
			at = append(at, time.Now())
		case <-limit.C:
			timedOut = true
		}
	}
	limit.Stop()
	if len(events) != settlements {
		cancel()
		<-done
		t.Fatalf("%s: %d settlements within %v (%v); want %d, %v", rt.Name, len(events), wait, events, settlements, want)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("%s returned %v", rt.Name, err)
	}
	env.Heal()
	t.Logf("%s settled: %s", rt.Name, strings.Join(events, "; "))
	if n := runs.Load(); n != int64(want.Runs) {
		t.Errorf("%s ran the handler %d times, want %d", rt.Name, n, want.Runs)
	}
	var first, last time.Time // the last round's settlements, one per message
	if len(at) > 0 {
		first, last = at[len(at)-n], at[len(at)-1]
	}
	check(t, b, env, rt.Name, bodies, want, first, last)
}

// check reads what became of the messages in SQS and compares it with
// want. first and last are when the first and the last message's final
// settlement were reported.
func check(t *testing.T, b Backend, env *Env, runtime string, bodies []string, want Fate, first, last time.Time) {
	t.Helper()
	n := len(bodies)
	src := countIn(t, env.Observer, env.Source)
	dlqCopies := 0
	if !env.DLQGone() {
		dlqCopies = countIn(t, env.Observer, env.DLQ)
	}
	if want.Kind != DeadLettered && dlqCopies != 0 {
		t.Fatalf("%s: %d copies in the DLQ; want %v", runtime, dlqCopies, want)
	}
	switch want.Kind {
	case Deleted:
		if src != 0 {
			t.Fatalf("%s: %d of %d messages still in the source queue; want them deleted", runtime, src, n)
		}
	case DeadLettered:
		if src != 0 {
			t.Fatalf("%s: %d of %d messages still in the source queue; want them deleted after their DLQ copies", runtime, src, n)
		}
		copies := receiveAll(t, env.Observer, env.DLQ)
		perBody := map[string]int{}
		for _, m := range copies {
			perBody[aws.ToString(m.Body)]++
			checkProvenance(t, runtime, env.Source, m, want)
		}
		for _, body := range bodies {
			if got, n := perBody[body], max(want.Copies, 1); got != n {
				t.Errorf("%s: %d copies of %q in the DLQ; want %d, with provenance", runtime, got, body, n)
			}
		}
		if len(copies) != len(bodies)*max(want.Copies, 1) {
			t.Errorf("%s: %d copies in the DLQ; want %d of each of %q", runtime, len(copies), max(want.Copies, 1), bodies)
		}
	case BackAfter:
		if src != n {
			t.Fatalf("%s: %d messages in the source queue; want all %d there, hidden for %v", runtime, src, n, want.Delay)
		}
		early := first.Add(want.Delay - b.Tolerance)
		if time.Now().After(early) {
			t.Fatalf("%s: the runtime stopped %v after the settlement, too late to see the messages still hidden %v after it", runtime, time.Since(first), want.Delay-b.Tolerance)
		}
		time.Sleep(time.Until(early))
		if got := receive(t, env.Observer, env.Source, 0); len(got) != 0 {
			t.Fatalf("%s: %d messages visible again %v after their settlement; want them hidden for %v", runtime, len(got), time.Since(first), want.Delay)
		}
		if got := receiveN(t, env.Observer, env.Source, n, last.Add(want.Delay+b.Tolerance)); got != n {
			t.Fatalf("%s: %d of %d messages visible %v after their settlement; want them back after %v", runtime, got, n, time.Since(last), want.Delay)
		}
	case ComesBack:
		if src != n {
			t.Fatalf("%s: %d messages in the source queue; want all %d there (not deleted), to come back within the visibility timeout", runtime, src, n)
		}
		if got := receiveN(t, env.Observer, env.Source, n, last.Add(VisibilityTimeout+b.Tolerance)); got != n {
			t.Fatalf("%s: %d of %d messages came back within %v of their settlement", runtime, got, n, VisibilityTimeout+b.Tolerance)
		}
	case Untouched:
		if got := receive(t, env.Observer, env.Source, 0); len(got) != n {
			t.Fatalf("%s: %d messages visible in the source; want all %d there, never received", runtime, len(got), n)
		}
	default:
		t.Fatalf("scenario has no fate")
	}
}

// checkProvenance checks the provenance the runtime wrote on one DLQ copy.
func checkProvenance(t *testing.T, runtime, source string, m types.Message, want Fate) {
	t.Helper()
	p, ok := dlq.ParseProvenance(m.MessageAttributes)
	if !ok {
		t.Fatalf("%s: DLQ copy has no provenance attributes (%v)", runtime, slices.Sorted(maps.Keys(m.MessageAttributes)))
	}
	if p.SourceQueue != source {
		t.Errorf("%s: provenance source %q, want %q", runtime, p.SourceQueue, source)
	}
	if p.Attempt != want.Attempt {
		t.Errorf("%s: provenance attempt %d, want %d", runtime, p.Attempt, want.Attempt)
	}
	if !strings.Contains(p.Error, want.Reason) || !strings.Contains(p.Error, handlerError) {
		t.Errorf("%s: provenance error %q, want the reason (%q) and the handler's error (%q)", runtime, p.Error, want.Reason, handlerError)
	}
}

// countIn returns how many messages a queue holds: visible, in flight and
// delayed.
func countIn(t *testing.T, api conformance.API, url string) int {
	t.Helper()
	out, err := api.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(url),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages,
			types.QueueAttributeNameApproximateNumberOfMessagesNotVisible, types.QueueAttributeNameApproximateNumberOfMessagesDelayed},
	})
	if err != nil {
		t.Fatalf("reading queue %s: %v", url, err)
	}
	n := 0
	for _, v := range out.Attributes {
		k, _ := strconv.Atoi(v)
		n += k
	}
	return n
}

// receive receives once from url, long-polling for wait.
func receive(t *testing.T, api conformance.API, url string, wait time.Duration) []types.Message {
	t.Helper()
	out, err := api.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: int32(wait / time.Second),
		MessageAttributeNames: []string{"All"}, MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
	})
	if err != nil {
		t.Fatalf("receiving from %s: %v", url, err)
	}
	return out.Messages
}

// receiveN polls url until it has received n messages or deadline
// passes, and returns how many it received. (Short polls, so a message is
// seen when it turns visible, whatever the backend's long polling does.)
func receiveN(t *testing.T, api conformance.API, url string, n int, deadline time.Time) int {
	t.Helper()
	got := 0
	for {
		got += len(receive(t, api, url, 0))
		left := time.Until(deadline)
		if got >= n || left <= 0 {
			return got
		}
		time.Sleep(min(left, 250*time.Millisecond))
	}
}

// receiveAll receives every message of url (all visible now).
func receiveAll(t *testing.T, api conformance.API, url string) []types.Message {
	t.Helper()
	var all []types.Message
	for {
		got := receive(t, api, url, time.Second)
		if len(got) == 0 {
			return all
		}
		all = append(all, got...)
	}
}
