package dlq

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/internal/awscall"
	"github.com/sqsworker/sqsworker/internal/deadletter"
	sched "github.com/sqsworker/sqsworker/internal/schedule"
	"github.com/sqsworker/sqsworker/internal/sqsbatch"
	"github.com/sqsworker/sqsworker/internal/sqserr"
	"github.com/sqsworker/sqsworker/internal/sqslimit"
	"github.com/sqsworker/sqsworker/queueref"
)

// The methods of RedriveOptions.Method (see there).
const (
	methodAuto     = "auto"
	methodMoveTask = "move-task"
	methodManual   = "manual"
)

// The actions RedriveOptions.OnMessage reports (see there).
const (
	actionMoved       = "moved"
	actionDuplicated  = "duplicated"
	actionWouldMove   = "would-move"
	actionSkipped     = "skipped"
	actionOtherSource = "other-source"
	actionFailed      = "failed"
	actionCameBack    = "came-back"
)

// Filter selects the messages a manual redrive moves. A message must meet
// every condition set; the zero Filter selects every message.
type Filter struct {
	// Attributes maps message attribute names to the exact string value
	// the message must have. Names can be the message's own attributes or
	// the provenance attributes ("sqsworker.dlq.handler",
	// "sqsworker.dlq.attempt", …: see the package doc), whichever form the
	// provenance is stored in.
	Attributes map[string]string
	// ErrorContains selects messages whose provenance error text contains
	// this text.
	ErrorContains string
	// OlderThan selects messages dead-lettered at least this long ago
	// (Message.FailedAt).
	OlderThan time.Duration
	// NewerThan selects messages dead-lettered less than this long ago.
	NewerThan time.Duration
	// Match, if set, must also accept the message.
	Match func(Message) bool
}

// IsZero reports whether the filter selects every message.
func (f Filter) IsZero() bool {
	return len(f.Attributes) == 0 && f.ErrorContains == "" && f.OlderThan == 0 && f.NewerThan == 0 && f.Match == nil
}

// Matches reports whether m meets every condition of f at time now.
func (f Filter) Matches(m Message, now time.Time) bool {
	for name, want := range f.Attributes {
		got, ok := m.attribute(name)
		if !ok || got != want {
			return false
		}
	}
	if f.ErrorContains != "" && !strings.Contains(m.Provenance.Error, f.ErrorContains) {
		return false
	}
	if f.OlderThan > 0 || f.NewerThan > 0 {
		at := m.FailedAt()
		if at.IsZero() {
			return false
		}
		age := now.Sub(at)
		if f.OlderThan > 0 && age < f.OlderThan {
			return false
		}
		if f.NewerThan > 0 && age >= f.NewerThan {
			return false
		}
	}
	return f.Match == nil || f.Match(m)
}

// attribute returns a message attribute's string value. Provenance
// attribute names also find provenance stored in the JSON form.
func (m Message) attribute(name string) (string, bool) {
	if v, ok := m.raw.MessageAttributes[name]; ok {
		if v.StringValue != nil {
			return *v.StringValue, true
		}
		return string(v.BinaryValue), true
	}
	if !m.HasProvenance {
		return "", false
	}
	p := m.Provenance
	switch name {
	case deadletter.AttrSourceQueue:
		return p.SourceQueue, p.SourceQueue != ""
	case deadletter.AttrError:
		return p.Error, p.Error != ""
	case deadletter.AttrAttempt:
		return strconv.Itoa(p.Attempt), p.Attempt > 0
	case deadletter.AttrFirstReceived:
		return deadletter.FormatTime(p.FirstReceived), !p.FirstReceived.IsZero()
	case deadletter.AttrFailedAt:
		return deadletter.FormatTime(p.FailedAt), !p.FailedAt.IsZero()
	case deadletter.AttrHandler:
		return p.Handler, p.Handler != ""
	}
	return "", false
}

// Progress is how far a redrive has got.
type Progress struct {
	// Method is the method in use: "move-task" or "manual".
	Method string `json:"method"`
	// Total is the approximate number of messages to go through: the
	// dead-letter queue's visible messages at the start, or the move task's
	// ApproximateNumberOfMessagesToMove.
	Total int `json:"total"`
	// Scanned is how many messages the manual move received and looked at.
	Scanned int `json:"scanned"`
	// Matched is how many matched the filter and came from the source (in
	// a dry run: how many would be moved).
	Matched int `json:"matched"`
	// Moved is how many were sent to the destination and deleted from the
	// dead-letter queue.
	Moved int `json:"moved"`
	// Duplicated is how many were sent but could not be deleted from the
	// dead-letter queue, so both queues hold them.
	Duplicated int `json:"duplicated"`
	// Skipped is how many were left in the dead-letter queue because they
	// did not match the filter or came from another source queue.
	Skipped int `json:"skipped"`
	// Failed is how many could not be sent and stay in the dead-letter queue.
	Failed int `json:"failed"`
	// CameBack is how many messages this redrive moved came back to the
	// dead-letter queue while it ran: they failed again. The manual move
	// tells them by their message IDs, not by time, and leaves them in the
	// dead-letter queue (they are not in Scanned's other counts); a
	// redrive moves only the messages that were there when it started.
	CameBack int `json:"cameBack,omitempty"`
	// Done reports the last report of a redrive that ran to its end: it
	// went through the whole dead-letter queue (or up to Max) and saw every
	// message it expected. It stays false when the redrive was interrupted,
	// stopped by an error, or did not see every message (RedriveResult.NotSeen).
	Done bool `json:"done"`
}

// RedriveResult is what a redrive did.
type RedriveResult struct {
	Progress
	// DryRun reports that nothing was moved.
	DryRun bool `json:"dryRun,omitempty"`
	// TaskHandle is the message move task's handle (method "move-task").
	TaskHandle string `json:"taskHandle,omitempty"`
	// NotSeen is how many of the messages the dead-letter queue held at the
	// start (visible or in flight) the manual move went through the queue
	// without receiving: another reader holds them, or a receive's response
	// was lost. They stay in the dead-letter queue, and Redrive returns a
	// *NotSeenError; a run after their visibility timeout moves them.
	NotSeen int `json:"notSeen,omitempty"`
}

// RedriveOptions configures Redrive. Every field's zero value is usable.
type RedriveOptions struct {
	// Destination is the queue to move the messages to: a name, URL or ARN
	// (resolved once per Redrive with queueref.Resolve). It must not be the
	// dead-letter queue itself. Zero value: back to the source queue
	// (Target.SourceURL). Either way only
	// messages that came from Target's source queue, or whose origin is
	// unknown, are moved — a dead-letter queue shared by several queues
	// keeps the others' (see AllSources).
	Destination string
	// AllSources moves every message of the dead-letter queue to
	// Destination, whatever queue it came from; it needs a Destination.
	// Zero value: only Target's source queue's messages move.
	AllSources bool
	// Method chooses how to move:
	//
	//   - "auto" uses a message move task when it can (no filter, no limit,
	//     no dry run, a dead-letter queue fed by this source only, and an
	//     endpoint that offers move tasks for the queue), else the manual
	//     move;
	//   - "move-task" uses SQS's StartMessageMoveTask only: SQS moves the
	//     messages server-side, as they are (provenance and relay
	//     attributes stay on them);
	//   - "manual" receives, sends and deletes the messages itself,
	//     rate-limited, filtered, with provenance removed, and as fresh
	//     jobs (see KeepProvenance).
	//
	// Zero value: "auto".
	Method string
	// Filter selects the messages to move (manual move only). Zero value:
	// every message.
	Filter Filter
	// DryRun lists what would be moved without moving anything (the
	// messages are received and released, like Inspect).
	DryRun bool
	// Max is the most messages to move (manual move only). Zero value: no
	// limit.
	Max int
	// Rate is the most messages moved per second. Zero value: 100 for the
	// manual move, SQS's own pace for a move task. Negative: no limit
	// (manual move).
	Rate float64
	// KeepProvenance keeps the provenance attributes on the moved messages.
	// Zero value: the manual move removes them, so the destination gets the
	// original message. (A move task cannot remove them.) Either way the
	// manual move removes the attributes the runtime adds to a snoozed job's
	// fresh copy ("sqsworker.attempts", "sqsworker.origin"): a redriven
	// job gets a whole retry budget again, under its new message ID. A move
	// task keeps them, so a job relayed before it failed counts on from the
	// attempts it had spent.
	KeepProvenance bool
	// Hold is how long the manual move keeps received messages hidden while
	// it works; the ones it does not move are released at the end. It is
	// raised to at least the time a batch of 10 takes at Rate plus 30
	// seconds, so that no message's hold ends while it is being moved (a
	// Rate too slow for SQS's 12-hour limit is refused). Zero value: one
	// minute.
	Hold time.Duration
	// PollInterval is how often a move task's progress is read. Zero value:
	// one second.
	PollInterval time.Duration
	// Progress, if set, is called after each batch (manual move) or status
	// read (move task), and once with Done set at the end.
	Progress func(Progress)
	// OnMessage, if set, is called for each message the manual move looks
	// at, with what it did (action):
	//
	//   - "moved": sent to the destination and deleted from the DLQ;
	//   - "duplicated": sent, but the delete from the DLQ failed, so both
	//     queues hold it (err says why);
	//   - "would-move": a dry run's message that matches and would be moved;
	//   - "skipped": it does not match the filter; left in the DLQ;
	//   - "other-source": it came from another source queue; left in the DLQ;
	//   - "failed": it could not be sent; left in the DLQ (err says why);
	//   - "came-back": this redrive moved it, it failed again and was
	//     dead-lettered anew; left in the DLQ (Progress.CameBack).
	OnMessage func(m Message, action string, err error)
	// Now is the clock for Filter's age conditions. Zero value: time.Now.
	Now func() time.Time
}

// ErrNoMoveTask is wrapped by the error Redrive returns for the method
// "move-task" when a message move task cannot do the redrive: the endpoint
// does not offer move tasks (local emulators), the queue is a FIFO queue,
// or the dead-letter queue serves other queues too. The manual move can.
var ErrNoMoveTask = errors.New("dlq: a message move task cannot do this redrive")

// errNoMoveTask says why a move task cannot do this redrive.
type errNoMoveTask struct{ reason string }

func (e *errNoMoveTask) Error() string {
	return "a message move task cannot do this redrive: " + e.reason
}

// Is reports whether target is ErrNoMoveTask.
func (e *errNoMoveTask) Is(target error) bool { return target == ErrNoMoveTask }

// Redrive moves the messages of t's dead-letter queue back to the source
// queue, or to opts.Destination. It refuses a destination that is the
// dead-letter queue itself, and a Target whose queue is its own dead-letter
// queue, with an error wrapping ErrRedrivesToItself: such a move never ends.
//
// With a message move task (StartMessageMoveTask) SQS moves the messages
// server-side, at up to 500 per second, as they are; Redrive waits for the
// task, reporting progress, and cancels it if ctx ends first. Endpoints that
// do not offer move tasks (answering InvalidAction or UnsupportedOperation,
// as local emulators and FIFO queues may) make the method "auto" fall back
// to the manual move.
//
// The manual move receives up to ten messages at a time, sends the ones to
// move with SendMessageBatch (FIFO: same message group, a deduplication ID
// derived from the DLQ message ID), and deletes them from the dead-letter
// queue with DeleteMessageBatch only after the send succeeded. A crash or
// failure in between may leave a message in both queues, never in neither.
// Messages it does not move are released at the end.
//
// A redrive moves the messages that were in the dead-letter queue when it
// began, once. A job that fails again while the redrive runs comes back to
// the dead-letter queue as a new receive; the manual move tells these
// exactly, by message ID, not by time: SQS's own redrive keeps a message's
// ID, and the library's dead-letter copy (worker, Lambda adapter)
// records the ID the message had in its queue, which is the ID
// SendMessageBatch gave the copy this redrive sent. (A copy whose message
// has SQS's ten attributes of its own has no room for that ID; it is told
// by its body, group and attributes instead.) It leaves them in the
// dead-letter queue, counts them in Progress.CameBack and reports them as
// "came-back": a redrive of jobs that still fail ends, each job having
// run once more. A message move task is SQS's own: AWS documents that it
// counts the messages to move when it starts
// (ApproximateNumberOfMessagesToMove) and that a redriven message is a new
// message in the destination, with a new message ID and enqueue time; it
// does not document whether a message dead-lettered again while the task
// runs is moved again by the same task. Redrive reports the task's own
// counts (Total is that start count) and cannot tell the messages that came
// back: after a move task, what the dead-letter queue holds failed again or
// is new. Use the method "manual" to have them counted and left.
//
// A dead-letter queue may serve several queues. Redrive moves only the
// messages that came from t's source queue (by their provenance or their
// DeadLetterQueueSourceArn) or whose origin is unknown, with or without a
// Destination; the others stay ("other-source"). A move task cannot tell
// them apart, so it is used only when the dead-letter queue serves t's
// source alone ("move-task" is refused otherwise, and "auto" moves
// manually). opts.AllSources, with a Destination, moves every message.
//
// The manual move never ends short without saying so. It counts the
// dead-letter queue's messages (visible and in flight) first; when it went
// through the queue and received fewer, it returns a *NotSeenError
// (errors.Is ErrNotAllSeen) and sets RedriveResult.NotSeen. An interrupt
// (ctx ends) stops it without stranding messages: the receive, send or
// delete in flight runs to its end, bounded by its own timeout, rather than
// being abandoned after it may have taken effect, and every message received
// and not moved — including what that receive returned — is released at
// once (ChangeMessageVisibilityBatch, visibility 0). So a run right after an
// interrupt sees every message; only a response that never came (the
// network lost it) leaves its messages hidden until the hold ends.
//
// Redrive needs sqs:GetQueueAttributes, sqs:ReceiveMessage,
// sqs:ChangeMessageVisibility, sqs:DeleteMessage on the dead-letter queue
// and sqs:SendMessage on the destination; for a move task
// sqs:ListDeadLetterSourceQueues, sqs:StartMessageMoveTask,
// sqs:ListMessageMoveTasks and sqs:CancelMessageMoveTask.
func Redrive(ctx context.Context, client API, t Target, opts RedriveOptions) (RedriveResult, error) {
	if t.DLQURL == "" || t.SourceURL == "" {
		return RedriveResult{}, errors.New("redrive: the Target has no dead-letter queue or source URL; get it from Discover")
	}
	if opts.AllSources && opts.Destination == "" {
		return RedriveResult{}, errors.New("redrive: AllSources moves the messages of every queue the dead-letter queue serves; set Destination to the queue they all go to (or leave AllSources off to move this source's messages back to it)")
	}
	if t.SourceURL == t.DLQURL || (t.SourceARN != "" && t.SourceARN == t.DLQARN) {
		return RedriveResult{}, deadletter.Wrap(ErrRedrivesToItself, nil, "redrive: queue %s is its own dead-letter queue, so its messages would be sent back into the queue they are taken from, for ever; "+
			"give queue %s a dead-letter queue of its own (`sqsworker setup %s`)", queueref.Name(t.SourceURL), queueref.Name(t.SourceURL), queueref.Name(t.SourceURL))
	}
	if opts.Destination != "" {
		dest, err := queueref.Resolve(ctx, client, opts.Destination)
		if err != nil {
			return RedriveResult{}, fmt.Errorf("redrive: destination: %w", err)
		}
		if dest == t.DLQURL {
			return RedriveResult{}, deadletter.Wrap(ErrRedrivesToItself, nil, "redrive: the destination %s is the dead-letter queue the messages are taken from, so they would be received and sent back into it for ever; "+
				"leave the destination out to move them back to queue %s, or name another queue", opts.Destination, queueref.Name(t.SourceURL))
		}
		opts.Destination = dest
	}
	r := &redriver{client: client, t: t, opts: opts, dest: opts.Destination}
	if r.dest == "" {
		r.dest = t.SourceURL
	}
	if r.opts.Now == nil {
		r.opts.Now = time.Now
	}
	if r.opts.PollInterval <= 0 {
		r.opts.PollInterval = time.Second
	}
	manualOnly := !opts.Filter.IsZero() || opts.DryRun || opts.Max > 0
	switch opts.Method {
	case "", methodAuto:
		if !manualOnly {
			res, err := r.moveTask(ctx)
			var no *errNoMoveTask
			if !errors.As(err, &no) {
				return res, err
			}
		}
		return r.manual(ctx)
	case methodMoveTask:
		if manualOnly {
			return RedriveResult{}, errors.New("redrive: a message move task cannot filter, limit or dry-run; use the method \"manual\" (or \"auto\")")
		}
		return r.moveTask(ctx)
	case methodManual:
		return r.manual(ctx)
	}
	return RedriveResult{}, fmt.Errorf("redrive: unknown method %q; use %q, %q or %q", opts.Method, methodAuto, methodMoveTask, methodManual)
}

type redriver struct {
	client API
	t      Target
	opts   RedriveOptions
	dest   string
	res    RedriveResult

	// What the manual move sent, to tell its copies when they come back.
	sent    map[string]contentKey // message ID of each copy sent → its content
	back    map[string]bool       // the copies that came back
	pending map[contentKey]int    // copies sent and not back, by content
}

// contentKey identifies a message's content: body, group and own
// attributes (provenance and relay attributes left out, as a redrive sends
// it).
type contentKey [sha256.Size]byte

func keyOf(m Message) contentKey {
	h := sha256.New()
	write := func(s string) { // length-prefixed, so fields cannot run into each other
		h.Write(binary.AppendUvarint(nil, uint64(len(s))))
		h.Write([]byte(s))
	}
	write(m.Body)
	write(m.GroupID)
	attrs := deadletter.StripProvenance(sched.StripRelay(m.raw.MessageAttributes))
	names := make([]string, 0, len(attrs))
	for k := range attrs {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		v := attrs[k]
		write(k)
		write(aws.ToString(v.DataType))
		write(aws.ToString(v.StringValue))
		write(string(v.BinaryValue))
	}
	var k contentKey
	h.Sum(k[:0])
	return k
}

// sentCopy records that m was sent to the destination as message id.
func (r *redriver) sentCopy(m Message, id string) {
	if id == "" {
		return
	}
	if r.sent == nil {
		r.sent, r.back, r.pending = map[string]contentKey{}, map[string]bool{}, map[contentKey]int{}
	}
	k := keyOf(m)
	r.sent[id] = k
	r.pending[k]++
}

// cameBack reports whether m, received from the dead-letter queue, is a
// copy this redrive sent that failed again and was dead-lettered anew. It
// tells exactly, by message ID: SQS's own redrive keeps the message ID, the
// library's dead-letter copy names the ID the message had in its queue
// (deadletter.AttrMessageID), and a copy the runtime relayed (a snooze)
// names its job's first message ID (sched.OriginAttribute) — the ID
// this redrive's send gave it, since the redrive strips the relay
// attributes. Only a copy that had no attribute left for its ID (the
// message has SQS's ten) is told by its content instead: it came back if
// this redrive sent a message with the same body, group and attributes
// whose return it has not seen yet.
func (r *redriver) cameBack(m Message) bool {
	if len(r.sent) == 0 {
		return false
	}
	src := deadletter.SourceMessageID(m.raw.MessageAttributes)
	for _, id := range []string{m.ID, src, sched.Origin(m.raw.MessageAttributes)} {
		if k, ok := r.sent[id]; ok && id != "" {
			if !r.back[id] {
				r.back[id] = true
				if r.pending[k] > 0 {
					r.pending[k]--
				}
			}
			return true
		}
	}
	if src != "" || len(m.raw.MessageAttributes) < sqslimit.MaxMessageAttributes {
		return false
	}
	if k := keyOf(m); r.pending[k] > 0 {
		r.pending[k]--
		return true
	}
	return false
}

func (r *redriver) report() {
	if r.opts.Progress != nil {
		r.opts.Progress(r.res.Progress)
	}
}

func (r *redriver) on(m Message, a string, err error) {
	if r.opts.OnMessage != nil {
		r.opts.OnMessage(m, a, err)
	}
}

// moveTask redrives with StartMessageMoveTask. An error of type
// *errNoMoveTask means nothing was started.
func (r *redriver) moveTask(ctx context.Context) (RedriveResult, error) {
	r.res = RedriveResult{Progress: Progress{Method: methodMoveTask}}
	destARN := r.t.SourceARN
	if r.opts.Destination != "" {
		a, err := deadletter.GetAttributes(ctx, r.client, r.opts.Destination, deadletter.AttrQueueArn)
		if err != nil {
			return r.res, fmt.Errorf("redrive: reading destination queue %s: %w", queueref.Name(r.opts.Destination), err)
		}
		destARN = a[deadletter.AttrQueueArn]
	}
	if !r.opts.AllSources {
		// A move task moves every message of the DLQ to one destination
		// (SQS cannot send messages Move dead-lettered back to their source
		// otherwise), so make sure the DLQ serves this source only.
		sources, err := r.deadLetterSources(ctx)
		if err != nil {
			return r.res, err
		}
		for _, s := range sources {
			if queueref.Name(s) != queueref.Name(r.t.SourceURL) {
				return r.res, &errNoMoveTask{reason: fmt.Sprintf("dead-letter queue %s also serves queue %s, and a move task would move its messages too", queueref.Name(r.t.DLQURL), queueref.Name(s))}
			}
		}
	}
	in := &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(r.t.DLQARN), DestinationArn: aws.String(destARN)}
	if r.opts.Rate > 0 {
		in.MaxNumberOfMessagesPerSecond = aws.Int32(int32(min(max(r.opts.Rate, 1), 500)))
	}
	started := time.Now()
	out, err := awscall.SQS(ctx, awscall.Rule{}, r.client.StartMessageMoveTask, in)
	if err != nil {
		if sqserr.Unsupported(err) {
			return r.res, &errNoMoveTask{reason: err.Error()}
		}
		return r.res, fmt.Errorf("redrive: starting a message move task from %s: %w", queueref.Name(r.t.DLQURL), err)
	}
	r.res.TaskHandle = aws.ToString(out.TaskHandle)
	// The newest task of the source is ours: only one may run at a time. A
	// listing that lags behind the start may still show an older, finished
	// task; one that started well before ours is not taken for ours.
	seen := false
	for polls := 0; ; polls++ {
		st, err := awscall.SQS(ctx, awscall.Rule{}, r.client.ListMessageMoveTasks, &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(r.t.DLQARN), MaxResults: aws.Int32(1)})
		if err != nil {
			if ctx.Err() != nil {
				return r.res, r.cancelTask(ctx)
			}
			return r.res, fmt.Errorf("redrive: reading the progress of move task %s (it keeps running; cancel it with CancelMessageMoveTask if needed): %w", r.res.TaskHandle, err)
		}
		var e *types.ListMessageMoveTasksResultEntry
		if len(st.Results) > 0 {
			e = &st.Results[0]
			if aws.ToString(e.TaskHandle) == r.res.TaskHandle {
				seen = true
			} else if !seen && time.UnixMilli(e.StartedTimestamp).Before(started.Add(-time.Minute)) {
				e = nil // an older task
			}
		}
		if e == nil && polls >= 30 {
			return r.res, fmt.Errorf("redrive: started move task %s but SQS does not list it; check its progress with ListMessageMoveTasks on %s", r.res.TaskHandle, r.t.DLQARN)
		}
		if e != nil {
			r.res.Moved = int(e.ApproximateNumberOfMessagesMoved)
			if e.ApproximateNumberOfMessagesToMove != nil {
				r.res.Total = int(*e.ApproximateNumberOfMessagesToMove)
			}
			switch status := aws.ToString(e.Status); status {
			case "COMPLETED":
				r.res.Done = true
				r.report()
				return r.res, nil
			case "FAILED", "CANCELLED", "CANCELLING":
				r.res.Done = true
				r.report()
				return r.res, fmt.Errorf("redrive: move task from %s %s after moving %d messages: %s; the rest stay in the dead-letter queue, run the redrive again",
					queueref.Name(r.t.DLQURL), strings.ToLower(status), r.res.Moved, aws.ToString(e.FailureReason))
			}
		}
		r.report()
		if err := awscall.Sleep(ctx, r.opts.PollInterval); err != nil {
			return r.res, r.cancelTask(ctx)
		}
	}
}

// cancelTask cancels the running move task after ctx ended.
func (r *redriver) cancelTask(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	out, err := awscall.SQS(cctx, awscall.Rule{}, r.client.CancelMessageMoveTask, &sqs.CancelMessageMoveTaskInput{TaskHandle: aws.String(r.res.TaskHandle)})
	if err != nil {
		return fmt.Errorf("redrive interrupted (%w), and cancelling move task %s failed, so it may still be running: %v", context.Cause(ctx), r.res.TaskHandle, err)
	}
	r.res.Moved = int(out.ApproximateNumberOfMessagesMoved)
	return fmt.Errorf("redrive interrupted (%w): move task cancelled after moving about %d messages; the rest stay in the dead-letter queue", context.Cause(ctx), r.res.Moved)
}

// deadLetterSources lists the queues whose RedrivePolicy names t's DLQ.
func (r *redriver) deadLetterSources(ctx context.Context) ([]string, error) {
	var urls []string
	in := &sqs.ListDeadLetterSourceQueuesInput{QueueUrl: aws.String(r.t.DLQURL), MaxResults: aws.Int32(1000)}
	for {
		out, err := awscall.SQS(ctx, awscall.Rule{}, r.client.ListDeadLetterSourceQueues, in)
		if err != nil {
			if sqserr.Unsupported(err) {
				return nil, &errNoMoveTask{reason: err.Error()}
			}
			return nil, fmt.Errorf("redrive: listing the source queues of dead-letter queue %s: %w", queueref.Name(r.t.DLQURL), err)
		}
		urls = append(urls, out.QueueUrls...)
		if aws.ToString(out.NextToken) == "" {
			return urls, nil
		}
		in.NextToken = out.NextToken
	}
}

// holdMargin is how much longer than a batch's wait for the rate limit
// the manual move's hold lasts at least: room for the batch's send and
// delete.
const holdMargin = 30 * time.Second

// maxHold is the longest SQS keeps a received message hidden.
const maxHold = 12 * time.Hour

// manualHold returns the hold of a manual move at rate messages per second:
// hold (one minute when zero), raised so that a batch's wait for the rate
// limit and its calls fit in it — a message whose hold ran out could be
// received by another reader, and deleting it with this move's old receipt
// handle would then succeed without deleting it. It fails when no hold SQS
// allows is long enough.
func manualHold(hold time.Duration, rate float64) (time.Duration, error) {
	if hold <= 0 {
		hold = deadletter.DefaultHold
	}
	if rate <= 0 { // no limit
		return hold, nil
	}
	batch := time.Duration(float64(maxBatch) / rate * float64(time.Second))
	if batch+holdMargin > maxHold {
		least := math.Ceil(float64(maxBatch)/(maxHold-holdMargin).Seconds()*1e5) / 1e5
		return 0, fmt.Errorf("redrive: Rate %g messages per second is too slow: a batch of %d would take %s, and SQS keeps received messages hidden for 12 hours at most; use a Rate of at least %g (about %.0f a day)",
			rate, maxBatch, deadletter.HumanDuration(batch), least, math.Ceil(least*24*time.Hour.Seconds()))
	}
	return max(hold, batch+holdMargin), nil
}

// manual redrives by receiving, sending and deleting.
func (r *redriver) manual(ctx context.Context) (res RedriveResult, err error) {
	r.res = RedriveResult{Progress: Progress{Method: methodManual}, DryRun: r.opts.DryRun}
	rate := r.opts.Rate
	if rate == 0 {
		rate = deadletter.DefaultRate
	}
	hold, err := manualHold(r.opts.Hold, rate)
	if err != nil {
		return r.res, err
	}
	start, err := count(ctx, r.client, r.t.DLQURL)
	if err != nil {
		return r.res, fmt.Errorf("redrive: %w", err)
	}
	r.res.Total = start.Visible
	s := newScanner(r.client, r.t.DLQURL, start, hold, 0)
	defer func() {
		if rerr := s.releaseAll(ctx); rerr != nil {
			err = errors.Join(err, rerr)
		}
		res = r.res
	}()
	lim := newLimiter(rate)
	var firstFailure, notSeen error
	for r.opts.Max <= 0 || r.res.Matched < r.opts.Max {
		// Wait for the rate before receiving, not after: received
		// messages then wait at most for their own batch's earlier
		// chunks, which the hold covers.
		if err := lim.ready(ctx); err != nil {
			r.report()
			return r.res, fmt.Errorf("redrive: %w", interrupted(ctx))
		}
		batch, err := s.next(ctx, maxBatch)
		if err != nil {
			r.report()
			return r.res, fmt.Errorf("redrive: %w", err)
		}
		if len(batch) == 0 {
			notSeen = s.notSeen() // went through the whole queue
			break
		}
		var move []Message
		for _, raw := range batch {
			m := newMessage(raw)
			r.res.Scanned++
			switch {
			case r.cameBack(m):
				// A copy this redrive sent, dead-lettered again: it
				// was not in the queue when the redrive started.
				s.hold(raw)
				s.extra++
				r.res.CameBack++
				r.on(m, actionCameBack, nil)
			case !r.opts.AllSources && m.Origin() != "" && queueref.Name(m.Origin()) != queueref.Name(r.t.SourceURL):
				s.hold(raw)
				r.res.Skipped++
				r.on(m, actionOtherSource, nil)
			case !r.opts.Filter.Matches(m, r.opts.Now()):
				s.hold(raw)
				r.res.Skipped++
				r.on(m, actionSkipped, nil)
			case r.opts.Max > 0 && r.res.Matched >= r.opts.Max:
				s.hold(raw) // beyond the limit: released untouched
			case r.opts.DryRun:
				s.hold(raw)
				r.res.Matched++
				r.on(m, actionWouldMove, nil)
			default:
				r.res.Matched++
				move = append(move, m)
			}
		}
		if len(move) > 0 {
			failure, err := r.send(ctx, s, lim, move)
			if firstFailure == nil {
				firstFailure = failure
			}
			if err != nil {
				r.report()
				return r.res, err
			}
		}
		r.report()
	}
	var ns *NotSeenError
	if errors.As(notSeen, &ns) {
		r.res.NotSeen = ns.NotSeen()
		notSeen = fmt.Errorf("redrive: %w", notSeen)
	}
	r.res.Done = notSeen == nil
	r.report()
	if r.res.Failed > 0 || r.res.Duplicated > 0 {
		return r.res, errors.Join(fmt.Errorf("redrive: %d messages could not be moved and stay in dead-letter queue %s, and %d were sent but not deleted from it (both queues hold them); run the redrive again after fixing the cause: %w",
			r.res.Failed, queueref.Name(r.t.DLQURL), r.res.Duplicated, firstFailure), notSeen)
	}
	return r.res, notSeen
}

// send moves msgs: batch send, then batch delete of what was sent, both
// through the one batch layer (internal/sqsbatch), which retries failed
// calls and entries by its one rule. Only the messages whose send SQS
// confirmed are deleted from the dead-letter queue: one whose send failed
// — for good, or retryably until the attempts ran out — stays there. It
// returns the first per-message failure and, separately, an error that
// must stop the redrive (a whole call failed, or ctx ended).
func (r *redriver) send(ctx context.Context, s *scanner, lim *limiter, msgs []Message) (failure, fatal error) {
	destFIFO := queueref.FIFO(r.dest)
	fail := func(m Message, err error) {
		s.hold(m.raw)
		r.res.Failed++
		r.on(m, actionFailed, err)
		if failure == nil {
			failure = err
		}
	}
	var (
		ready   []Message
		entries []sqsbatch.Entry
	)
	for _, m := range msgs {
		e, err := r.entry(m, destFIFO)
		if err != nil {
			fail(m, err)
			continue
		}
		ready = append(ready, m)
		entries = append(entries, sqsbatch.Entry{Send: e})
	}
	if len(entries) == 0 {
		return failure, nil
	}
	// Like the receive, a send is not abandoned in flight when ctx ends
	// (Detach): a send that took effect unseen would leave its messages in
	// both queues. ctx's end stops the retries and the rate limit's wait.
	sent := sqsbatch.NewSender(r.client, r.dest).Run(ctx, entries, sqsbatch.Policy{
		CallTimeout: callTimeout,
		Detach:      true,
		Gate: func(ctx context.Context, n int) (func(), error) {
			return func() {}, lim.wait(ctx, n)
		},
	})
	var (
		del     []sqsbatch.Entry
		delMsgs []Message
		whole   error
		stopped bool
	)
	for i, res := range sent {
		m := ready[i]
		switch {
		case res.OK:
			r.sentCopy(m, res.MessageID)
			del = append(del, sqsbatch.Entry{Handle: s.handle(m.ID, m.raw)})
			delMsgs = append(delMsgs, m)
		case res.Class == sqserr.Canceled && ctx.Err() != nil:
			s.hold(m.raw) // interrupted before it was sent again: left in the DLQ
			stopped = true
		default:
			fail(m, fmt.Errorf("sending message %s to %s failed after %d attempts: %w", m.ID, queueref.Name(r.dest), res.Attempts, res.Err))
			if res.Whole && whole == nil {
				whole = res.Err
			}
		}
	}
	if len(del) > 0 {
		// The copies are sent: finish the move even if ctx was cancelled
		// meanwhile, or an interrupt leaves them in both queues.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), callTimeout)
		deleted := sqsbatch.NewDeleter(r.client, r.t.DLQURL).Run(dctx, del, sqsbatch.Policy{CallTimeout: callTimeout})
		cancel()
		var delWhole error
		dup := 0
		for i, res := range deleted {
			m := delMsgs[i]
			if res.OK {
				s.forget(m.ID)
				r.res.Moved++
				r.on(m, actionMoved, nil)
				continue
			}
			s.hold(m.raw)
			r.res.Duplicated++
			dup++
			err := fmt.Errorf("deleting message %s from %s after sending it to %s: %w", m.ID, queueref.Name(r.t.DLQURL), queueref.Name(r.dest), res.Err)
			r.on(m, actionDuplicated, err)
			if res.Whole && delWhole == nil {
				delWhole = res.Err
			} else if failure == nil {
				failure = err
			}
		}
		if delWhole != nil {
			return failure, fmt.Errorf("redrive: %d messages were sent to %s but deleting them from dead-letter queue %s failed, so both queues hold them: %w",
				dup, queueref.Name(r.dest), queueref.Name(r.t.DLQURL), delWhole)
		}
	}
	switch {
	case whole != nil:
		return failure, fmt.Errorf("redrive: sending messages to %s failed; they stay in dead-letter queue %s: %w", queueref.Name(r.dest), queueref.Name(r.t.DLQURL), whole)
	case stopped:
		return failure, fmt.Errorf("redrive: %w", interrupted(ctx))
	}
	return failure, nil
}

// entry builds the SendMessageBatch entry that moves m to the destination.
func (r *redriver) entry(m Message, destFIFO bool) (types.SendMessageBatchRequestEntry, error) {
	e := types.SendMessageBatchRequestEntry{MessageBody: aws.String(m.Body)}
	// A redriven job starts afresh: the attempts it spent and the first
	// message ID of a job the runtime relayed (a snooze) go, so it has a
	// whole retry budget again, under the ID this send gives it.
	attrs := sched.StripRelay(m.raw.MessageAttributes)
	if !r.opts.KeepProvenance {
		attrs = deadletter.StripProvenance(attrs)
	}
	if len(attrs) > 0 {
		e.MessageAttributes = attrs
	}
	if trace := m.raw.Attributes[string(types.MessageSystemAttributeNameAWSTraceHeader)]; trace != "" {
		e.MessageSystemAttributes = map[string]types.MessageSystemAttributeValue{
			string(types.MessageSystemAttributeNameForSendsAWSTraceHeader): {DataType: aws.String("String"), StringValue: aws.String(trace)},
		}
	}
	if destFIFO {
		if m.GroupID == "" {
			return e, fmt.Errorf("message %s has no MessageGroupId, which FIFO queue %s needs; redrive it to a standard queue instead", m.ID, queueref.Name(r.dest))
		}
		e.MessageGroupId = aws.String(m.GroupID)
		sum := sha256.Sum256([]byte("sqsworker/dlq/redrive\x00" + r.t.DLQARN + "\x00" + m.ID))
		e.MessageDeduplicationId = aws.String(hex.EncodeToString(sum[:]))
	}
	return e, nil
}

// limiter spaces out work to a rate: each unit of work reserves 1/rate of
// a second, and a caller waits until its reservation starts.
type limiter struct {
	every time.Duration
	next  time.Time
}

// newLimiter returns a limiter for rate units per second; nil (no limit)
// for a rate that is not positive.
func newLimiter(rate float64) *limiter {
	if rate <= 0 {
		return nil
	}
	return &limiter{every: time.Duration(float64(time.Second) / rate)}
}

// ready waits until a reservation made now would start at once.
func (l *limiter) ready(ctx context.Context) error {
	if l == nil {
		return ctx.Err()
	}
	return awscall.Sleep(ctx, time.Until(l.next))
}

// wait reserves n units and waits until the reservation starts.
func (l *limiter) wait(ctx context.Context, n int) error {
	if l == nil {
		return ctx.Err()
	}
	now := time.Now()
	if l.next.Before(now) {
		l.next = now
	}
	start := l.next
	l.next = l.next.Add(time.Duration(n) * l.every)
	return awscall.Sleep(ctx, start.Sub(now))
}
