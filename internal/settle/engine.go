package settle

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/internal/deadletter"
	"github.com/sqsworker/sqsworker/internal/schedule"
	"github.com/sqsworker/sqsworker/internal/sqserr"
	"github.com/sqsworker/sqsworker/internal/sqslimit"
	"github.com/sqsworker/sqsworker/retry"
)

// Port is how the Engine reaches SQS, and the runtime, for one message. The
// worker and the Lambda adapter each supply one (their per-message state
// implements it); the Engine decides every call, the Port only carries it.
//
// Delete, Change, Copy and Resend each carry j.Entry (the Engine has set
// its Handle, Timeout or Send, and its Owner, which is j): the Port adds
// what only the runtime knows (the lease, urgency) and makes the call —
// queued in a Batcher, or noted for the runtime's own response — and the
// entry's Owner must be told the call's Outcome exactly once (synchronously
// or later, from any goroutine).
type Port interface {
	// Delete deletes the message from its queue: after success (j.Want()
	// is Deleted), after a confirmed dead-letter copy (DeadLettered), after
	// a confirmed fresh copy of a job not due yet (Delayed).
	Delete(j *Job)
	// Change sets the message's visibility timeout to j.Entry.Timeout
	// seconds: a retry delay, a snooze, a wait, a release (0); or, when
	// Timeout is KeepVisibility, leaves it to end by itself.
	Change(j *Job)
	// Copy sends the dead-letter copy j.Entry.Send to the dead-letter queue
	// the Port's DLQ returned.
	Copy(j *Job)
	// Resend sends the fresh copy j.Entry.Send back to the message's queue.
	Resend(j *Job)
	// DLQ returns the dead-letter queue's Copier, or why there is none.
	DLQ() (*deadletter.Copier, error)
	// Queue returns what the schedule of delayed jobs needs to know of the
	// message's queue; it is asked only for a message that carries a due
	// time.
	Queue() Queue
	// Done is told the message's final settlement, once: the Engine is done
	// with j (the runtime accounts for it and may report j.Event).
	Done(j *Job, f Final)
}

// KeepVisibility is the Entry.Timeout of a Change that leaves the message's
// visibility to end by itself (the queue's visibility timeout).
const KeepVisibility int32 = -1

// Engine owns what becomes of a message once its handler has returned (or
// it was not due, or it was released unrun): it decides with Decide, then
// plans and carries out the calls through the message's Port, in order —
// delete; hide until the retry (capped by SQS's 12-hour limit); copy to the
// dead-letter queue with provenance, then delete, the source deleted only
// once the copy is confirmed; re-send, then delete; retry later instead of
// dead-lettering, with the reason; release — and tells the Port the final
// settlement. One Engine serves every message of a runtime; it is safe for
// concurrent use and its fields must not change once in use.
type Engine struct {
	// Name prefixes log lines: "sqsworker", "sqslambda".
	Name string
	// Log and Warn receive the Engine's logs. Zero: discarded.
	Log  *slog.Logger
	Warn *Warner
	// Policy decides retry delays and when a failing message is dead-lettered.
	Policy retry.Policy
	// Counter counts attempts (nil: retry.ReceiveCount); CallTimeout
	// bounds its calls (zero: none).
	Counter     retry.AttemptCounter
	CallTimeout time.Duration
	// HandlerName goes in the dead-letter copy's provenance.
	HandlerName string
	// Visibility is the queue's visibility timeout: how long a message
	// that should have been dead-lettered but cannot be now stays hidden
	// before it is tried again. Zero: unknown, the message's visibility is
	// left to end by itself (KeepVisibility).
	Visibility time.Duration
	// ReceiveSlack is how much earlier than Message.ReceivedAt SQS may have
	// counted the receive, for the 12-hour limit (see Queue.ReceiveSlack).
	ReceiveSlack time.Duration
	// Events: the runtime reports settlement events, so a message's event
	// shows it as received; the handler's copy then shares nothing with
	// the runtime's (see Detach).
	Events bool
}

// Job is one message in a runtime's hands, from its receipt until the
// Engine is done with it: the runtime's own copy of the message (settlement
// reads only this), the handler's run, and the settling call in flight.
// Runtimes embed it in their per-message state, which is also its Port, so
// that settling a message allocates nothing per call.
type Job struct {
	// Msg is the runtime's own copy of the message. The handler gets a copy
	// of its own (see Detach); Msg is shown to the settlement hook.
	Msg Message
	// Err is the handler's error (or why the message could not run).
	Err error
	// Started and Finished bound the handler's run (zero: it did not run).
	Started, Finished time.Time
	// Entry is the settling call in flight (one at a time).
	Entry Entry

	e     *Engine
	port  Port
	stage stage
	want  Result        // what a confirmed call means
	why   string        // the reason that goes with it
	delay time.Duration // the delay that goes with it
	due   schedule.Decision
	dlq   string // the dead-letter queue a copy goes to
	event Event
}

// stage is what the call of a job's entry does.
type stage uint8

const (
	stageDelete stage = iota // delete; then the job is settled
	stageChange              // visibility change; then the job is settled
	stageCopy                // dead-letter copy; then the delete
	stageResend              // a fresh copy of a job not yet due; then the delete
)

// Final is a message's settlement, as the Engine tells its Port's Done.
type Final struct {
	// Result is the message's fate: what was wanted when SQS confirmed it,
	// Lost or Abandoned when it could not.
	Result Result
	// Wanted is what the Engine asked for (Result unless it failed).
	Wanted Result
	// Confirmed: a call settled the message and SQS (or the runtime's
	// response) confirmed it. False for Lost and Abandoned, and for a
	// message that ended without a call (Drop).
	Confirmed bool
	// Called: the Engine made a settling call (false: Drop).
	Called bool
	// Late: SQS confirmed only after the message's visibility deadline.
	Late bool
	// Reason and Delay go with the Result (see Event).
	Reason string
	Delay  time.Duration
}

// GroupGoesOn reports whether the next message of the message's FIFO group
// may run: only after a confirmed delete or dead-letter move; otherwise the
// rest of the group is released, in order.
func (f Final) GroupGoesOn() bool {
	return f.Confirmed && (f.Result == Deleted || f.Result == DeadLettered)
}

// Track makes j the Engine's state of a received message: it parses raw,
// received from queueURL at receivedAt, into j.Msg; port (usually the
// runtime's state that embeds j) will carry its calls.
func (e *Engine) Track(j *Job, port Port, raw types.Message, queueURL string, receivedAt time.Time) {
	j.Msg = Parse(raw, queueURL, receivedAt)
	j.e, j.port = e, port
}

// Want is what the call in flight means once confirmed.
func (j *Job) Want() Result { return j.want }

// log returns the Engine's logger.
func (e *Engine) log() *slog.Logger {
	if e.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return e.Log
}

// Begin readies j's message for its handler at now, and reports whether
// it must wait instead: a message that carries a due time not reached yet
// (a job sent with a delay beyond SQS's 15 minutes), or one that cannot be
// read, does not run; the runtime then calls Wait, without running the
// handler or counting an attempt. Otherwise Begin counts the attempt (ctx
// bounds the counter's call) and the handler may run. A runtime that
// cannot make SQS calls (Queue.NoCalls) runs a message not due yet now,
// with a warning.
func (e *Engine) Begin(ctx context.Context, j *Job, now time.Time) (wait bool) {
	d, ok, err := Due(&j.Msg, now, j.port)
	switch {
	case err != nil:
		j.Err, j.due = err, schedule.Decision{}
		return true
	case ok && d.Action != schedule.Run && j.port.Queue().NoCalls:
		e.Warn.Warn("due-no-client", e.Name+": a message carries a due time (a delay beyond 15 minutes) but the runtime cannot make SQS calls to keep it waiting (no Options.Client); it runs now", "message", j.Msg.ID, "wait", d.String())
	case ok && d.Action != schedule.Run:
		j.due = d
		return true
	}
	CountAttempt(ctx, e.CallTimeout, e.counter(), &j.Msg, e.log())
	return false
}

// Wait settles a message Begin held back: one whose due time cannot be
// read goes to the dead-letter queue with that reason; one not due yet is
// hidden until it is, or re-sent as a fresh copy (then deleted) to wait.
func (e *Engine) Wait(j *Job) {
	switch {
	case j.Err != nil:
		e.deadLetter(j, "invalid due time")
	case j.due.Action == schedule.Hide:
		e.hide(j, Delayed, j.due.Delay, j.due.String())
	default:
		in := schedule.ResendInput(j.Msg.QueueURL, j.Msg.Raw, j.due.Delay)
		j.want, j.why, j.delay, j.stage = Delayed, j.due.String(), j.due.Delay, stageResend
		j.Entry = Entry{Send: SendEntry(in), Owner: j}
		j.port.Resend(j)
	}
}

func (e *Engine) counter() retry.AttemptCounter {
	if e.Counter == nil {
		return retry.ReceiveCount()
	}
	return e.Counter
}

// Run calls h.Handle(ctx, m) for j, m being the handler's copy of j.Msg
// (see Detach), recording when it ran; a panic becomes an error wrapping
// ErrPanic.
func Run[M any](ctx context.Context, e *Engine, j *Job, h Handler[M], m M) error {
	j.Started = time.Now()
	err := Invoke(ctx, e.log(), j.Msg.ID, h, m)
	j.Finished = time.Now()
	return err
}

// Handled settles j's message after its handler returned herr (the runtime
// has added the cause its context ended with, if any): Decide, then the
// calls its fate needs. A snooze takes its attempt back (ctx bounds the
// counter's call).
func (e *Engine) Handled(ctx context.Context, j *Job, herr error) {
	j.Err = herr
	d := Decide(herr, j.Msg.Attempt, e.Policy)
	switch d.Action {
	case Delete:
		j.want, j.why, j.delay, j.stage = Deleted, "", 0, stageDelete
		j.Entry = Entry{Handle: j.Msg.ReceiptHandle, Owner: j}
		j.port.Delete(j)
	case Retry:
		if d.Snoozed {
			Uncount(ctx, e.CallTimeout, e.counter(), &j.Msg, e.log())
			e.snooze(j, d.Delay)
			return
		}
		e.hide(j, Retrying, d.Delay, "")
	case DeadLetter:
		e.deadLetter(j, d.Reason)
	}
}

// Release makes j's message visible again at once, unprocessed (shutdown,
// FIFO order, a deadline); reason, if any, says why.
func (e *Engine) Release(j *Job, reason string) {
	j.want, j.why, j.delay, j.stage = Released, reason, 0, stageChange
	j.Entry = Entry{Handle: j.Msg.ReceiptHandle, Timeout: 0, Owner: j}
	j.port.Change(j)
}

// Drop ends j without a settling call (the runtime lost the message, or
// cannot settle it): the Port is told result with reason.
func (e *Engine) Drop(j *Job, result Result, reason string) {
	j.port.Done(j, Final{Result: result, Wanted: result, Reason: reason})
}

// snooze settles a message its handler snoozed (retry.Snooze): waiting
// must never spend the queue's receive budget, or SQS would dead-letter a
// job that never failed once its snoozes reach maxReceiveCount. On a
// standard queue the message is relayed — a fresh copy, delayed by d and
// carrying the attempts spent so far (schedule.AttemptsAttribute), is sent,
// then the message is deleted once the copy is confirmed — when:
//
//   - attempts are counted by receives (retry.ReceiveCount()): every receive
//     of a copy then is an attempt, so a snooze must not be one, however
//     far the queue's maxReceiveCount is; or
//   - the next receive would come within schedule.Reserve of the queue's
//     maxReceiveCount (or the redrive policy is unknown): an exact counter
//     takes the snooze back, but SQS still counts the receive.
//
// Otherwise the message is hidden for d (one call, no copy). A FIFO
// message is always hidden (a copy would go to the end of its group, and
// FIFO queues take no per-message delay), as is a message whose copy could
// not carry the attributes (SQS allows 10 message attributes).
func (e *Engine) snooze(j *Job, d time.Duration) {
	q := j.port.Queue()
	byReceives := e.counter() == retry.ReceiveCount()
	nearDLQ := q.RedriveUnknown || q.MaxReceiveCount > 0 && j.Msg.ReceiveCount+1+schedule.Reserve > q.MaxReceiveCount
	if q.FIFO || q.NoCalls || !byReceives && !nearDLQ {
		e.hide(j, Snoozed, d, "")
		return
	}
	in, ok := relayInput(&j.Msg, d, time.Now())
	if !ok {
		e.Warn.Warn("relay-attributes", e.Name+": a snoozed message cannot be relayed as a fresh copy (the copy's three sqsworker attributes would take it past SQS's limit of 10 message attributes); it is hidden instead, and its receives count toward maxReceiveCount",
			"queue", j.Msg.QueueURL, "message", j.Msg.ID)
		e.hide(j, Snoozed, d, "")
		return
	}
	j.want, j.why, j.delay, j.stage = Snoozed, "relayed as a fresh copy", time.Duration(in.DelaySeconds)*time.Second, stageResend
	j.Entry = Entry{Send: SendEntry(in), Owner: j}
	j.port.Resend(j)
}

// relayInput is the fresh copy of m that carries a snooze of d sent at now:
// body and attributes as received, the job's first message ID, the attempts
// spent so far (the snoozed receive not among them), and the delay — natively up to SQS's 15 minutes,
// beyond that as a due time (schedule.Attribute) the copy waits for like
// any delayed job. ok is false when the copy would carry more message
// attributes than SQS allows.
func relayInput(m *Message, d time.Duration, now time.Time) (*sqs.SendMessageInput, bool) {
	attrs := make(map[string]types.MessageAttributeValue, len(m.MessageAttributes)+3)
	maps.Copy(attrs, m.MessageAttributes)
	attrs[schedule.AttemptsAttribute] = schedule.AttemptsValue(m.Attempt - 1)
	attrs[schedule.OriginAttribute] = schedule.OriginValue(m.ID)
	delay, due := schedule.Send(now.Add(d), now)
	if due {
		attrs[schedule.Attribute] = schedule.Value(now.Add(d))
	}
	if len(attrs) > sqslimit.MaxMessageAttributes {
		return nil, false
	}
	raw := m.dlqSource()
	raw.MessageAttributes = attrs
	return schedule.ResendInput(m.QueueURL, raw, delay), true
}

// hide hides the message for d (capped by what is left of SQS's 12-hour
// limit counted from its receive), after which it is delivered again: a
// retry delay, a snooze, a wait for its due time.
func (e *Engine) hide(j *Job, result Result, d time.Duration, reason string) {
	d = CapDelay(d, j.Msg.ReceivedAt.Add(-e.ReceiveSlack), time.Now())
	e.log().Debug(e.Name+": retry scheduled", "message", j.Msg.ID, "attempt", j.Msg.Attempt, "delay", d, "outcome", result.String(), "err", j.Err)
	j.want, j.why, j.delay, j.stage = result, reason, d, stageChange
	j.Entry = Entry{Handle: j.Msg.ReceiptHandle, Timeout: sqslimit.VisibilitySeconds(d), Owner: j}
	j.port.Change(j)
}

// later leaves a message in the queue to be tried again after the queue's
// visibility timeout (result, reason): a dead-letter move that cannot be
// made now, a fresh copy that failed.
func (e *Engine) later(j *Job, result Result, reason string) {
	j.want, j.why, j.stage = result, reason, stageChange
	j.Entry = Entry{Handle: j.Msg.ReceiptHandle, Timeout: KeepVisibility, Owner: j}
	if e.Visibility > 0 {
		j.delay = CapDelay(e.Visibility, j.Msg.ReceivedAt.Add(-e.ReceiveSlack), time.Now())
		j.Entry.Timeout = sqslimit.VisibilitySeconds(j.delay)
	}
	j.port.Change(j)
}

// retryLater leaves a message that should go to the dead-letter queue but
// cannot now in the queue: it comes back after the visibility timeout. It
// is never deleted without a confirmed copy.
func (e *Engine) retryLater(j *Job, reason, why string, problem error) {
	e.Warn.Warn("dlq-"+why, e.Name+": the message should go to the dead-letter queue but cannot now; it stays in the queue and will be tried again",
		"message", j.Msg.ID, "reason", reason, "problem", problem, "err", j.Err)
	e.later(j, Retrying, fmt.Sprintf("%s (not dead-lettered: %v); it comes back after the visibility timeout", reason, problem))
}

// deadLetter copies the message to the dead-letter queue with provenance;
// its delete follows once the copy is confirmed (Settled).
func (e *Engine) deadLetter(j *Job, reason string) {
	c, err := j.port.DLQ()
	if err != nil {
		e.retryLater(j, reason, "none", err)
		return
	}
	in, err := c.Input(j.Msg.dlqSource(), deadletter.Provenance{
		SourceQueue:   j.Msg.QueueURL,
		Error:         fmt.Sprintf("%s: %v", reason, j.Err),
		Attempt:       j.Msg.Attempt,
		FirstReceived: j.Msg.FirstReceivedAt,
		FailedAt:      time.Now(),
		Handler:       e.HandlerName,
	})
	if err != nil {
		e.retryLater(j, reason, "copy", err)
		return
	}
	j.want, j.why, j.delay, j.stage, j.dlq = DeadLettered, reason, 0, stageCopy, c.Target().DLQURL
	j.Entry = Entry{Send: SendEntry(in), Owner: j}
	j.port.Copy(j)
}

// dlqSource is the message as received, for its dead-letter copy: body,
// the sender's attributes, group ID and trace header.
func (m *Message) dlqSource() types.Message {
	raw := types.Message{MessageId: &m.ID, Body: &m.Body, ReceiptHandle: &m.ReceiptHandle, MessageAttributes: m.MessageAttributes}
	if m.GroupID != "" || m.TraceHeader != "" {
		raw.Attributes = make(map[string]string, 2)
		if m.GroupID != "" {
			raw.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)] = m.GroupID
		}
		if m.TraceHeader != "" {
			raw.Attributes[string(types.MessageSystemAttributeNameAWSTraceHeader)] = m.TraceHeader
		}
	}
	return raw
}

// Settled is the outcome of j's call in flight (Owner): the next call of
// the plan, or the final settlement.
func (j *Job) Settled(_ *Entry, o Outcome) {
	e := j.e
	switch j.stage {
	case stageResend:
		if !o.OK && j.want == Snoozed {
			// Not relayed: the message itself waits out the snooze, and
			// its next receive counts toward maxReceiveCount.
			e.Warn.Warn("relay", e.Name+": relaying a snoozed message as a fresh copy failed; the message itself is hidden for the snooze instead", "message", j.Msg.ID, "err", o.Err)
			e.hide(j, Snoozed, j.delay, j.why)
			return
		}
		if !o.OK {
			// Not re-sent: it waits a visibility timeout and is tried again.
			e.Warn.Warn("resend", e.Name+": re-sending a job that is not due yet failed; it is tried again after the visibility timeout", "message", j.Msg.ID, "err", o.Err)
			e.later(j, Delayed, j.why)
			return
		}
		j.stage = stageDelete
		j.Entry = Entry{Handle: j.Msg.ReceiptHandle, Owner: j}
		j.port.Delete(j)
		return
	case stageCopy:
		if !o.OK {
			e.retryLater(j, j.why, "send", o.Err)
			return
		}
		e.log().Info(e.Name+": message copied to the dead-letter queue; deleting it from the source", "message", j.Msg.ID, "dlq", j.dlq, "copy", o.MessageID, "reason", j.why, "err", j.Err)
		j.stage = stageDelete
		j.Entry = Entry{Handle: j.Msg.ReceiptHandle, Owner: j}
		j.port.Delete(j)
		return
	}
	f := Final{Result: j.want, Wanted: j.want, Called: true, Confirmed: o.OK, Late: o.Late, Reason: j.why, Delay: j.delay}
	switch {
	case o.OK:
		if o.Late {
			e.Warn.Warn("late", e.Name+": SQS confirmed a settlement only after the message's visibility deadline; another consumer may have received the message meanwhile (a duplicate is likely)",
				"queue", j.Msg.QueueURL, "message", j.Msg.ID, "outcome", j.want.String())
		}
	case o.Class == sqserr.Stale:
		f.Result, f.Reason = Lost, errText(o.Err)
		e.Warn.Warn("lost", e.Name+": the message's receipt handle is no longer valid (its visibility ended or another consumer has it); SQS will deliver it again",
			"queue", j.Msg.QueueURL, "message", j.Msg.ID, "wanted", j.want.String(), "err", o.Err)
	default:
		f.Result, f.Reason = Abandoned, errText(o.Err)
		e.Warn.Warn("abandoned-"+j.want.String(), e.Name+": settlement abandoned; SQS will deliver the message again",
			"queue", j.Msg.QueueURL, "message", j.Msg.ID, "wanted", j.want.String(), "attempts", o.Attempts, "err", o.Err)
	}
	j.port.Done(j, f)
}

func errText(err error) string {
	if err == nil {
		return "not confirmed"
	}
	return err.Error()
}

// Event returns j's settlement event for f, with the heartbeat's
// extensions (nil without), settled at now. The event is j's own (no
// allocation); its Message is j.Msg, which nothing else holds.
func (j *Job) Event(f Final, extensions []time.Time, now time.Time) *Event {
	attempt := j.Msg.Attempt
	if j.Started.IsZero() {
		attempt = 0
	}
	j.event = Event{
		Message: &j.Msg, Result: f.Result, Attempt: attempt, Delay: f.Delay, Reason: f.Reason, Err: j.Err, Late: f.Late, Extensions: extensions,
		ReceivedAt: j.Msg.ReceivedAt, Started: j.Started, Finished: j.Finished, Settled: now,
	}
	return &j.event
}

// ErrNoDLQ is the problem of a message that should be dead-lettered on a
// queue without a dead-letter queue.
var ErrNoDLQ = errors.New("the queue has no dead-letter queue (AllowNoDLQ): it is retried until retention deletes it")
