package contract

import (
	"context"
	"errors"
	"time"

	"github.com/sqsworker/sqsworker/retry"
)

// handlerError is the text of every error the scenarios' handlers return;
// a DLQ copy's provenance must carry it.
const handlerError = "contract: the handler failed"

// AfterDelay is the delay the retry.After scenario asks for: distinct from
// RetryDelay and shorter than VisibilityTimeout.
const AfterDelay = 8 * time.Second

// The handlers' behaviours.
func succeed(context.Context, int) error { return nil }

func fail(context.Context, int) error { return errors.New(handlerError) }

func permanent(context.Context, int) error { return retry.Permanent(errors.New(handlerError)) }

// The fates most scenarios share.
var (
	deleted      = Fate{Kind: Deleted}
	retried      = Fate{Kind: BackAfter, Delay: RetryDelay}
	deadLettered = Fate{Kind: DeadLettered, Attempt: 1, Reason: "permanent"}
	comesBack    = Fate{Kind: ComesBack}
)

// mappingDeletes is the declared difference for a success whose delete
// fails: in Lambda the event source mapping (RunLocal) deletes successful
// records itself, with one DeleteMessageBatch call bounded by its own
// timeout, and does not retry it; the record is delivered again after the
// visibility timeout (a second run: at-least-once). The worker retries its
// delete while its lease holds the message.
var mappingDeletes = map[string]Difference{"lambda": {Want: comesBack,
	Why: "the event source mapping deletes successful records itself, once, without retrying a failed delete; the record comes back and runs again"}}

// Scenarios returns every scenario of the contract.
func Scenarios() []Scenario {
	return []Scenario{
		// Handler outcomes.
		{Name: "success", Handle: succeed, Want: deleted},
		{Name: "error-retries-after-policy-delay", Handle: fail, Want: retried},
		{Name: "retry-after", Handle: func(context.Context, int) error {
			return retry.After(AfterDelay, errors.New(handlerError))
		}, Want: Fate{Kind: BackAfter, Delay: AfterDelay}},
		{Name: "permanent-to-dlq", Handle: permanent, Want: deadLettered},
		{Name: "attempts-exhausted-to-dlq", Handle: fail, Retries: 1, Settlements: 2,
			Want: Fate{Kind: DeadLettered, Attempt: 2, Reason: "exhausted"}},
		{Name: "panic-retries", Handle: func(context.Context, int) error { panic(handlerError) }, Want: retried},
		{Name: "timeout-retries", Handle: func(ctx context.Context, _ int) error {
			<-ctx.Done()
			return context.Cause(ctx)
		}, Want: retried},

		// The DLQ copy fails, then succeeds: still dead-lettered.
		{Name: "dlq-copy-throttled-then-ok", Handle: permanent, Want: deadLettered,
			Faults: []Fault{{API: "SendMessageBatch", Kind: Throttle, Times: 2}}},
		{Name: "dlq-copy-5xx-then-ok", Handle: permanent, Want: deadLettered,
			Faults: []Fault{{API: "SendMessageBatch", Kind: ServerError, Times: 2}}},
		{Name: "dlq-copy-entry-throttled-then-ok", Messages: 3, Handle: permanent, Want: deadLettered,
			Faults: []Fault{{API: "SendMessageBatch", Kind: EntryThrottle, Times: 1}}},

		// The DLQ copy fails for good: never deleted without a copy.
		{Name: "dlq-copy-access-denied", Handle: permanent, Want: comesBack,
			Faults: []Fault{{API: "SendMessageBatch", Kind: AccessDenied}}},
		{Name: "dlq-copy-kms-access-denied", Handle: permanent, Want: comesBack,
			Faults: []Fault{{API: "SendMessageBatch", Kind: KMSAccessDenied}}},
		{Name: "dlq-copy-entry-kms-access-denied", Messages: 3, Handle: permanent, Want: comesBack,
			Faults: []Fault{{API: "SendMessageBatch", Kind: EntryKMSAccessDenied}}},
		{Name: "dlq-copy-queue-does-not-exist", Handle: permanent, Want: comesBack,
			Faults: []Fault{{API: "SendMessageBatch", Kind: QueueDoesNotExist}}},
		{Name: "dlq-deleted", Handle: permanent, Want: comesBack,
			Faults: []Fault{{Kind: DLQDeleted}}},
		{Name: "exhausted-dlq-copy-access-denied", Handle: fail, Retries: 1, Settlements: 2, Want: comesBack,
			Faults: []Fault{{API: "SendMessageBatch", Kind: AccessDenied}}},

		// Failed batch entries.
		{Name: "delete-entry-throttled", Handle: succeed, Want: deleted, Differs: mappingDeletes,
			Faults: []Fault{{API: "DeleteMessageBatch", Kind: EntryThrottle, Times: 1}}},
		{Name: "change-visibility-entry-throttled", Messages: 3, Handle: fail, Want: retried,
			Faults: []Fault{{API: "ChangeMessageVisibilityBatch", Kind: EntryThrottle, Times: 1}}},
		{Name: "change-visibility-entry-access-denied", Messages: 3, Handle: fail, Want: comesBack,
			Faults: []Fault{{API: "ChangeMessageVisibilityBatch", Kind: EntryAccessDenied}}},
		{Name: "dlq-source-delete-entry-throttled", Messages: 3, Handle: permanent, Want: deadLettered,
			Faults: []Fault{{API: "DeleteMessageBatch", Kind: EntryThrottle, Times: 1}}},

		// Entries missing from a batch response count as failed.
		{Name: "dlq-copy-result-missing", Messages: 3, Handle: permanent, Want: deadLettered,
			Faults: []Fault{{API: "SendMessageBatch", Kind: EntryOmitted, Times: 1}}},
		{Name: "change-visibility-result-missing", Messages: 3, Handle: fail, Want: retried,
			Faults: []Fault{{API: "ChangeMessageVisibilityBatch", Kind: EntryOmitted, Times: 1}}},
		{Name: "delete-result-missing", Handle: succeed, Want: deleted, Differs: mappingDeletes,
			Faults: []Fault{{API: "DeleteMessageBatch", Kind: EntryOmitted, Times: 1}}},
		{Name: "dlq-source-delete-result-missing", Messages: 3, Handle: permanent, Want: deadLettered,
			Faults: []Fault{{API: "DeleteMessageBatch", Kind: EntryOmitted, Times: 1}}},

		// Lost responses: the call took effect, its answer did not come.
		{Name: "lost-receive", Handle: succeed, Want: deleted,
			Faults: []Fault{{API: "ReceiveMessage", Kind: LostResponse, Times: 1}}},
		{Name: "lost-delete", Handle: succeed, Want: deleted,
			Faults: []Fault{{API: "DeleteMessageBatch", Kind: LostResponse, Times: 1}}},
		{Name: "lost-change-visibility", Handle: fail, Want: retried,
			Faults: []Fault{{API: "ChangeMessageVisibilityBatch", Kind: LostResponse, Times: 1}}},
		// A copy whose answer was lost is sent again: SQS cannot tell the
		// retry from a new message, so the DLQ holds two copies (a copy is
		// at-least-once; never none).
		{Name: "lost-dlq-copy", Handle: permanent, Want: Fate{Kind: DeadLettered, Attempt: 1, Reason: "permanent", Copies: 2},
			Faults: []Fault{{API: "SendMessageBatch", Kind: LostResponse, Times: 1}}},

		// Hung calls, ended by the call timeout.
		{Name: "hung-receive", Handle: succeed, Want: deleted,
			Faults: []Fault{{API: "ReceiveMessage", Kind: Hang, Times: 1}},
			Differs: map[string]Difference{"lambda": {Want: Fate{Kind: Untouched}, Gap: true,
				Why: "sqslambda.RunLocal's ReceiveMessage has no call timeout of its own (only its caller's context), so one receive that never answers stops its poller for good; the design wants every SQS call bounded"}}},
		{Name: "hung-change-visibility", Handle: fail, Want: retried,
			Faults: []Fault{{API: "ChangeMessageVisibilityBatch", Kind: Hang, Times: 1}}},
		{Name: "hung-dlq-copy", Handle: permanent, Want: deadLettered,
			Faults: []Fault{{API: "SendMessageBatch", Kind: Hang, Times: 1}}},
		{Name: "hung-delete", Handle: succeed, Want: deleted, Differs: mappingDeletes,
			Faults: []Fault{{API: "DeleteMessageBatch", Kind: Hang, Times: 1}}},
	}
}
