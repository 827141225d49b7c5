package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/fanout"
	"github.com/sqsworker/sqsworker/internal/awscall"
	"github.com/sqsworker/sqsworker/internal/deadletter"
	"github.com/sqsworker/sqsworker/queueref"
)

// resolved is what a QUEUE argument of the dlq commands names: a
// dead-letter queue and the queue it serves.
type resolved struct {
	dlq.Target
	// byDLQ reports that QUEUE named the dead-letter queue itself.
	byDLQ bool
	// sources are the queues the dead-letter queue serves, when QUEUE named
	// the dead-letter queue (Target is the first one's).
	sources []string
	// sub is the SNS subscription whose dead-letter queue this is, for a
	// subscription's dead-letter queue (then Target.SourceURL is the
	// subscribed queue).
	sub *fanout.Subscription
}

// fanoutFlags are the flags that pick a subscription's dead-letter queue.
type fanoutFlags struct {
	fanout bool
	topic  string
}

func fanoutFlagsOn(fs *flag.FlagSet) *fanoutFlags {
	f := &fanoutFlags{}
	fs.BoolVar(&f.fanout, "fanout", false, "QUEUE is a subscribed queue: act on its SNS subscription's dead-letter queue instead of its own")
	fs.StringVar(&f.topic, "topic", "", "with --fanout: the topic whose subscription to take, when the queue has several (implies --fanout)")
	return f
}

// target resolves QUEUE (a queue's name, URL or ARN, or those of a
// dead-letter queue) to a dead-letter queue and the queue it serves. A
// queue without a RedrivePolicy that is the RedrivePolicy target of other
// queues is taken for their dead-letter queue; one that an SNS
// subscription's RedrivePolicy names, for that subscription's. With
// --fanout, QUEUE's subscription's dead-letter queue is taken.
func (a *app) target(ctx context.Context, conn *awsFlags, c client, queue string, ff *fanoutFlags) (resolved, error) {
	url, err := queueref.Resolve(ctx, c, queue)
	if err != nil {
		return resolved{}, err
	}
	if ff != nil && (ff.fanout || ff.topic != "") {
		sc, err := a.newSNS(ctx, *conn)
		if err != nil {
			return resolved{}, err
		}
		t, err := dlq.Discover(ctx, c, url)
		if err != nil && !errors.Is(err, dlq.ErrNoRedrivePolicy) {
			return resolved{}, err
		}
		sub, err := fanout.FindSubscription(ctx, sc, t.SourceARN, ff.topic)
		if err != nil {
			return resolved{}, err
		}
		ft, err := fanout.Target(ctx, c, sub)
		return resolved{Target: ft, sub: &sub}, err
	}
	t, err := dlq.Discover(ctx, c, url)
	if !errors.Is(err, dlq.ErrNoRedrivePolicy) {
		return resolved{Target: t}, err
	}
	sources, serr := dlq.SourcesOf(ctx, c, url)
	if serr == nil && len(sources) > 0 {
		st, err := dlq.Discover(ctx, c, sources[0])
		if err != nil {
			return resolved{}, err
		}
		return resolved{Target: st, byDLQ: true, sources: sources}, nil
	}
	// A subscription's dead-letter queue? Without SNS access, the
	// no-RedrivePolicy error stands.
	if ff != nil {
		if sc, serr := a.newSNS(ctx, *conn); serr == nil {
			if subs, serr := fanout.ServedBy(ctx, sc, t.SourceARN); serr == nil && len(subs) > 0 {
				ft, err := fanout.Target(ctx, c, subs[0])
				return resolved{Target: ft, sub: &subs[0], byDLQ: true}, err
			}
		}
	}
	return resolved{Target: t}, err // the no-RedrivePolicy error says what to do
}

// connectTarget makes the SQS client and resolves QUEUE to its DLQ,
// reporting a failure: the client and target, or the exit code and false.
func (a *app) connectTarget(ctx context.Context, cmd *command, conn *awsFlags, queue string, ff *fanoutFlags) (client, resolved, int, bool) {
	if !a.checkQueues(cmd, queue) {
		return nil, resolved{}, exitUsage, false
	}
	conn = queueConn(conn, queue)
	c, ok := a.connect(ctx, cmd, conn)
	if !ok {
		return nil, resolved{}, exitProblems, false
	}
	t, err := a.target(ctx, conn, c, queue, ff)
	if err != nil {
		return nil, resolved{}, a.fail(cmd, err), false
	}
	return c, t, 0, true
}

// of says whose dead-letter queue it is, for people.
func (r resolved) of() string {
	switch {
	case r.sub != nil:
		return fmt.Sprintf("the subscription of %s to topic %s", queueref.Name(r.sub.QueueARN), topicNameOf(r.sub.TopicARN))
	case r.byDLQ:
		return r.sourceNames()
	}
	return queueref.Name(r.SourceURL)
}

// sourceNames lists the queues a dead-letter queue serves, by name.
func (r resolved) sourceNames() string {
	names := make([]string, len(r.sources))
	for i, s := range r.sources {
		names[i] = queueref.Name(s)
	}
	return strings.Join(names, ", ")
}

// ---- dlq ls

func dlqLsCommand() *command {
	return &command{
		path:     "dlq ls",
		args:     "[QUEUE...]",
		synopsis: "list queues' dead-letter queues and how many messages they hold",
		help: `Shows each QUEUE's dead-letter queue, maxReceiveCount and the dead-letter
queue's approximate message counts, without receiving any message. With no
QUEUE, lists every queue (whose name starts with --prefix) that has a
RedrivePolicy. Messages in flight in a dead-letter queue are hidden (a reader
holds them, or a receive's response was lost): peek and redrive see them only
once their visibility timeout ends.

IAM: sqs:ListQueues (without QUEUE), sqs:GetQueueAttributes, sqs:GetQueueUrl.`,
		run: runDLQLs,
	}
}

type lsRow struct {
	Queue           string      `json:"queue"`
	QueueURL        string      `json:"queueUrl"`
	DLQ             string      `json:"dlq,omitempty"`
	DLQURL          string      `json:"dlqUrl,omitempty"`
	MaxReceiveCount int         `json:"maxReceiveCount,omitempty"`
	Messages        *dlq.Counts `json:"messages,omitempty"`
	Error           string      `json:"error,omitempty"`
}

func runDLQLs(a *app, ctx context.Context, cmd *command, args []string) int {
	fs := a.flags(cmd)
	conn := awsFlagsOn(fs)
	out := outputFlag(fs)
	prefix := fs.String("prefix", "", "with no QUEUE: only queues whose name starts with this")
	ls := fanoutFlagsOn(fs)
	queues, code, ok := a.parseWithOutput(cmd, fs, args, 0, -1, out)
	if !ok {
		return code
	}
	if !a.checkQueues(cmd, queues...) {
		return exitUsage
	}
	clients := a.regionClients(cmd, conn)
	c, ok := clients.sqsFor(ctx, "")
	if !ok {
		return exitProblems
	}
	listed := len(queues) == 0
	if listed {
		in := &sqs.ListQueuesInput{MaxResults: aws.Int32(1000)}
		if *prefix != "" {
			in.QueueNamePrefix = aws.String(*prefix)
		}
		for {
			page, err := awscall.SQS(ctx, awscall.Rule{}, c.ListQueues, in)
			if err != nil {
				return a.fail(cmd, fmt.Errorf("listing queues: %w", err))
			}
			queues = append(queues, page.QueueUrls...)
			if aws.ToString(page.NextToken) == "" {
				break
			}
			in.NextToken = page.NextToken
		}
	}
	exit := exitOK
	rows := []lsRow{}
	for _, q := range queues {
		row := lsRow{Queue: queueref.Name(q)}
		c, ok := clients.sqsFor(ctx, q)
		if !ok {
			return exitProblems
		}
		var t resolved
		var err error
		if listed {
			t.Target, err = dlq.Discover(ctx, c, q) // a listing shows dead-letter queues beside their sources
		} else {
			t, err = a.target(ctx, queueConn(conn, q), c, q, ls)
		}
		row.Queue, row.QueueURL = queueref.Name(t.SourceURL), t.SourceURL
		if row.Queue == "" {
			row.Queue = queueref.Name(q)
		}
		if err == nil {
			row.DLQ, row.DLQURL, row.MaxReceiveCount = queueref.Name(t.DLQURL), t.DLQURL, t.MaxReceiveCount
			var n dlq.Counts
			n, err = dlq.Count(ctx, c, t.DLQURL)
			row.Messages = &n
		}
		if err != nil {
			if listed && errors.Is(err, dlq.ErrNoRedrivePolicy) {
				continue // listing: only queues with a DLQ
			}
			if abortsAll(ctx, err) {
				return a.fail(cmd, err)
			}
			row.Error, row.Messages = err.Error(), nil
			exit = exitProblems
		}
		rows = append(rows, row)
	}
	if *out == "json" {
		a.writeJSON(rows)
		return exit
	}
	if len(rows) == 0 {
		fmt.Fprintln(a.stdout, "no queue with a RedrivePolicy found")
		return exit
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "QUEUE\tDLQ\tMAX RECEIVES\tVISIBLE\tIN FLIGHT\tDELAYED")
	for _, r := range rows {
		if r.Error != "" {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t-\n", r.Queue)
			continue
		}
		maxReceives := "-" // a subscription's dead-letter queue: SNS moves there, not SQS after receives
		if r.MaxReceiveCount > 0 {
			maxReceives = strconv.Itoa(r.MaxReceiveCount)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\n", r.Queue, r.DLQ, maxReceives, r.Messages.Visible, r.Messages.InFlight, r.Messages.Delayed)
	}
	tw.Flush()
	for _, r := range rows {
		if r.Messages != nil && r.Messages.InFlight > 0 {
			fmt.Fprintf(a.stdout, "note: %s of %s are in flight (held by a reader, or by a receive whose response was lost); dlq peek and dlq redrive see them once their visibility timeout ends\n",
				count(r.Messages.InFlight, "message"), r.DLQ)
		}
	}
	for _, r := range rows {
		if r.Error != "" {
			fmt.Fprintf(a.stderr, "sqsworker dlq ls: %s\n", r.Error)
		}
	}
	return exit
}

// ---- dlq peek

func dlqPeekCommand() *command {
	return &command{
		path:     "dlq peek",
		args:     "QUEUE",
		synopsis: "show dead-lettered messages and why they failed, without consuming them",
		help: `Lists messages of QUEUE's dead-letter queue with their provenance (source,
error, attempt, times, handler), without deleting any: it receives them, keeps
them hidden while it lists, then releases them all at once. Receiving is the
only way SQS shows a message, so each shown message's receive count goes up by
one, and other consumers of the dead-letter queue do not see the messages for
up to --hold.

When the listing goes through the whole dead-letter queue (fewer than -n
messages) and sees fewer messages than it held at the start, visible or in
flight, it says how many it did not see (hidden by another reader or by a
receive whose response was lost) and exits with status 1.

IAM: sqs:GetQueueAttributes, sqs:GetQueueUrl, sqs:ReceiveMessage,
sqs:ChangeMessageVisibility.`,
		run: runDLQPeek,
	}
}

// messageOut is a dead-lettered message in -o json output.
type messageOut struct {
	ID            string            `json:"id"`
	Body          string            `json:"body"`
	Attributes    map[string]string `json:"attributes,omitempty"`
	SentAt        time.Time         `json:"sentAt"`
	ReceiveCount  int               `json:"receiveCount"`
	GroupID       string            `json:"groupId,omitempty"`
	Origin        string            `json:"origin,omitempty"`
	Provenance    *provenanceOut    `json:"provenance,omitempty"`
	Action        string            `json:"action,omitempty"`
	ActionFailure string            `json:"actionError,omitempty"`
}

type provenanceOut struct {
	SourceQueue   string     `json:"sourceQueue,omitempty"`
	Error         string     `json:"error,omitempty"`
	Attempt       int        `json:"attempt,omitempty"`
	FirstReceived *time.Time `json:"firstReceived,omitempty"`
	FailedAt      *time.Time `json:"failedAt,omitempty"`
	Handler       string     `json:"handler,omitempty"`
}

func messageJSON(m dlq.Message) messageOut {
	o := messageOut{ID: m.ID, Body: m.Body, SentAt: m.SentAt.UTC(), ReceiveCount: m.ReceiveCount, GroupID: m.GroupID, Origin: m.Origin()}
	if len(m.Attributes) > 0 {
		o.Attributes = map[string]string{}
		for k, v := range m.Attributes {
			o.Attributes[k] = attrString(v)
		}
	}
	if m.HasProvenance {
		p := m.Provenance
		o.Provenance = &provenanceOut{SourceQueue: p.SourceQueue, Error: p.Error, Attempt: p.Attempt, Handler: p.Handler}
		if !p.FirstReceived.IsZero() {
			t := p.FirstReceived.UTC()
			o.Provenance.FirstReceived = &t
		}
		if !p.FailedAt.IsZero() {
			t := p.FailedAt.UTC()
			o.Provenance.FailedAt = &t
		}
	}
	return o
}

func attrString(v types.MessageAttributeValue) string {
	if v.StringValue != nil {
		return *v.StringValue
	}
	return fmt.Sprintf("(%s, %d bytes)", aws.ToString(v.DataType), len(v.BinaryValue))
}

func runDLQPeek(a *app, ctx context.Context, cmd *command, args []string) int {
	fs := a.flags(cmd)
	conn := awsFlagsOn(fs)
	out := outputFlag(fs)
	n := fs.Int("n", 10, "how many messages to show (0: all)")
	ff := fanoutFlagsOn(fs)
	hold := deadletter.DefaultHold
	fs.Var(durationValue{&hold}, "hold", "how long the listed messages stay hidden at most (they are released as soon as the listing ends)")
	fullBody := fs.Bool("body", false, "show whole bodies (default: the first 200 characters)")
	pos, code, ok := a.parseWithOutput(cmd, fs, args, 1, 1, out)
	if !ok {
		return code
	}
	c, t, code, ok := a.connectTarget(ctx, cmd, conn, pos[0], ff)
	if !ok {
		return code
	}
	counts, err := dlq.Count(ctx, c, t.DLQURL)
	if err != nil {
		return a.fail(cmd, err)
	}
	msgs, err := dlq.Inspect(ctx, c, t.DLQURL, dlq.InspectOptions{Max: *n, Hold: hold})
	var notSeen *dlq.NotSeenError
	if err != nil && !errors.As(err, &notSeen) {
		return a.fail(cmd, err)
	}
	// Not all seen: list what was seen, then say what was not (exit 1).
	exit := exitOK
	if *out == "json" {
		list := make([]messageOut, len(msgs))
		for i, m := range msgs {
			list[i] = messageJSON(m)
		}
		var missed int
		if notSeen != nil {
			missed = notSeen.NotSeen()
		}
		a.writeJSON(struct {
			DLQ          string               `json:"dlq"`
			Subscription *fanout.Subscription `json:"subscription,omitempty"`
			Counts       dlq.Counts           `json:"approximateCounts"`
			Messages     []messageOut         `json:"messages"`
			NotSeen      int                  `json:"notSeen,omitempty"`
			Error        string               `json:"error,omitempty"`
		}{queueref.Name(t.DLQURL), t.sub, counts, list, missed, errText(err)})
		if err != nil {
			exit = a.fail(cmd, err)
		}
		return exit
	}
	inFlight := ""
	if counts.InFlight > 0 {
		inFlight = fmt.Sprintf(" and %d in flight", counts.InFlight)
	}
	fmt.Fprintf(a.stdout, "dead-letter queue %s of %s: about %s%s; showing %d\n",
		queueref.Name(t.DLQURL), t.of(), count(counts.Visible, "message"), inFlight, len(msgs))
	if t.sub != nil {
		fmt.Fprintf(a.stdout, "(messages SNS could not deliver; subscription %s; `sqsworker dlq redrive` moves them to %s, not back to the topic)\n",
			t.sub.ARN, queueref.Name(t.sub.QueueARN))
	}
	for i, m := range msgs {
		fmt.Fprintln(a.stdout)
		a.printMessage(a.stdout, i+1, m, *fullBody)
	}
	if len(msgs) > 0 {
		fmt.Fprintln(a.stdout, "\n(listing received each message once: their receive counts went up by one)")
	}
	if err != nil {
		exit = a.fail(cmd, err)
	}
	return exit
}

// printMessage writes one dead-lettered message for people.
func (a *app) printMessage(w io.Writer, i int, m dlq.Message, fullBody bool) {
	fmt.Fprintf(w, "%d. %s\n", i, m.ID)
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	if m.HasProvenance {
		p := m.Provenance
		if p.Error != "" {
			fmt.Fprintf(tw, "   error:\t%s\n", oneLine(p.Error))
		}
		var facts []string
		if p.Attempt > 0 {
			facts = append(facts, fmt.Sprintf("attempt %d", p.Attempt))
		}
		if p.Handler != "" {
			facts = append(facts, "handler "+p.Handler)
		}
		if p.SourceQueue != "" {
			facts = append(facts, "from "+queueref.Name(p.SourceQueue))
		}
		if len(facts) > 0 {
			fmt.Fprintf(tw, "   failed:\t%s\n", strings.Join(facts, ", "))
		}
		if !p.FailedAt.IsZero() {
			fmt.Fprintf(tw, "   failed at:\t%s (%s ago)\n", p.FailedAt.UTC().Format(time.RFC3339), formatDuration(a.now().Sub(p.FailedAt).Round(time.Second)))
		}
		if !p.FirstReceived.IsZero() {
			fmt.Fprintf(tw, "   first try:\t%s\n", p.FirstReceived.UTC().Format(time.RFC3339))
		}
	} else {
		origin := "unknown"
		if m.DeadLetterSourceARN != "" {
			origin = queueref.Name(m.DeadLetterSourceARN) + " (moved by SQS after maxReceiveCount receives)"
		}
		fmt.Fprintf(tw, "   no provenance:\tfrom %s\n", origin)
	}
	fmt.Fprintf(tw, "   sent:\t%s, received %s\n", m.SentAt.UTC().Format(time.RFC3339), count(m.ReceiveCount, "time"))
	if m.GroupID != "" {
		fmt.Fprintf(tw, "   group:\t%s\n", m.GroupID)
	}
	for _, k := range sortedKeys(m.Attributes) {
		fmt.Fprintf(tw, "   attribute:\t%s = %s\n", k, attrString(m.Attributes[k]))
	}
	body := m.Body
	if !fullBody {
		body = oneLine(clip(body, 200))
	}
	fmt.Fprintf(tw, "   body:\t%s\n", body)
	tw.Flush()
}

// clip shortens s to n characters, marking the cut.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}

// oneLine folds line breaks so a value fits a row.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// ---- dlq redrive

func dlqRedriveCommand() *command {
	return &command{
		path:     "dlq redrive",
		args:     "QUEUE",
		synopsis: "move dead-lettered messages back to their queue (or elsewhere)",
		help: `Moves the messages of QUEUE's dead-letter queue back to QUEUE, or to --to.

With no filter, limit or dry run, and when the endpoint offers it, SQS moves
them server-side with a message move task (StartMessageMoveTask); otherwise —
local emulators, FIFO queues, a dead-letter queue shared by several queues,
or --method manual — they are moved here: received, sent in batches at --rate
messages per second, and deleted from the dead-letter queue only after the
send succeeded (the messages stay hidden meanwhile for --hold, which a slow
--rate raises to cover a batch). An interruption can leave a message in both
queues, never in neither. The manual move removes sqsworker's provenance
attributes (unless --keep-provenance), so the queue gets the original
message; a move task cannot.

A redrive moves the messages that were in the dead-letter queue when it
began, once. Jobs that fail again meanwhile come back to it: the manual move
knows the copies it sent by their message IDs, leaves the ones that come
back in the dead-letter queue and says how many ("3 messages came back (they
failed again)"). A move task reports SQS's own counts.

A dead-letter queue shared by several queues: only the messages that came
from QUEUE are moved, also with --to, and always by the manual move (a move
task would move every queue's messages; --method move-task is refused).
Naming the shared dead-letter queue itself is refused: name the queue whose
messages to move, or give --to X --all-sources to move every message,
whatever queue it came from, to X.

Filters (manual move): --error-contains, --attr NAME=VALUE (repeatable; user
attributes or provenance attributes such as sqsworker.dlq.handler),
--older-than and --newer-than (time since the message was dead-lettered).
--dry-run lists what would move.

Exit status: 0 when everything selected was moved, 1 when some messages could
not be moved (they stay in the dead-letter queue), when the manual move went
through the dead-letter queue and did not see every message it held at the
start (hidden by another reader or by a receive whose response was lost; run
again once their visibility timeout ends), or when the redrive failed. An
interrupt (Ctrl-C) lets the call in flight finish and releases every message
received and not moved, so a run right after it sees them all.

IAM: sqs:GetQueueAttributes, sqs:GetQueueUrl, sqs:ReceiveMessage,
sqs:ChangeMessageVisibility, sqs:DeleteMessage (dead-letter queue),
sqs:SendMessage (destination); for move tasks also
sqs:ListDeadLetterSourceQueues, sqs:StartMessageMoveTask,
sqs:ListMessageMoveTasks, sqs:CancelMessageMoveTask.`,
		run: runDLQRedrive,
	}
}

func runDLQRedrive(a *app, ctx context.Context, cmd *command, args []string) int {
	fs := a.flags(cmd)
	conn := awsFlagsOn(fs)
	out := outputFlag(fs)
	var o dlq.RedriveOptions
	ff := fanoutFlagsOn(fs)
	to := fs.String("to", "", "destination queue (name, URL or ARN); default: QUEUE (for a subscription's dead-letter queue: the subscribed queue)")
	method := fs.String("method", "auto", "auto, move-task or manual")
	fs.BoolVar(&o.DryRun, "dry-run", false, "list what would be moved; move nothing")
	fs.IntVar(&o.Max, "max", 0, "move at most this many messages (manual move; 0: all)")
	fs.Float64Var(&o.Rate, "rate", 0, fmt.Sprintf("messages per second (default: %d for the manual move, SQS's pace for a move task)", deadletter.DefaultRate))
	fs.StringVar(&o.Filter.ErrorContains, "error-contains", "", "only messages whose recorded error contains this text")
	var attrs multiFlag
	fs.Var(&attrs, "attr", "only messages with attribute NAME equal to VALUE (NAME=VALUE; repeatable)")
	fs.Var(durationValue{&o.Filter.OlderThan}, "older-than", "only messages dead-lettered at least this long ago, e.g. 2h")
	fs.Var(durationValue{&o.Filter.NewerThan}, "newer-than", "only messages dead-lettered less than this long ago")
	fs.BoolVar(&o.KeepProvenance, "keep-provenance", false, "keep the provenance attributes on moved messages")
	fs.BoolVar(&o.AllSources, "all-sources", false, "with --to: move every message, whatever queue it came from (default: only QUEUE's messages of a shared dead-letter queue)")
	fs.Var(durationValue{&o.Hold}, "hold", "how long messages being worked on stay hidden at most (default 1m; raised to a batch of 10 at --rate plus 30s)")
	quiet := fs.Bool("quiet", false, "no progress display")
	pos, code, ok := a.parseWithOutput(cmd, fs, args, 1, 1, out)
	if !ok {
		return code
	}
	o.Method = *method
	switch o.Method {
	case "auto", "move-task", "manual":
	default:
		fmt.Fprintf(a.stderr, "sqsworker %s: --method %q: use auto, move-task or manual\n", cmd.path, *method)
		return exitUsage
	}
	for _, kv := range attrs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			fmt.Fprintf(a.stderr, "sqsworker %s: --attr %q: use NAME=VALUE\n", cmd.path, kv)
			return exitUsage
		}
		if o.Filter.Attributes == nil {
			o.Filter.Attributes = map[string]string{}
		}
		o.Filter.Attributes[k] = v
	}
	if o.Method == "move-task" && (!o.Filter.IsZero() || o.DryRun || o.Max > 0) {
		fmt.Fprintf(a.stderr, "sqsworker %s: --method move-task cannot filter, limit or dry-run (SQS's move task moves every message as it is); use --method manual, or leave --method out\n", cmd.path)
		return exitUsage
	}
	if o.AllSources && *to == "" {
		fmt.Fprintf(a.stderr, "sqsworker %s: --all-sources needs --to: it moves other queues' messages too, so name the queue they all go to\n", cmd.path)
		return exitUsage
	}
	c, t, code, ok := a.connectTarget(ctx, cmd, conn, pos[0], ff)
	if !ok {
		return code
	}
	if len(t.sources) > 1 && !o.AllSources {
		fmt.Fprintf(a.stderr, "sqsworker %s: dead-letter queue %s serves queues %s; name the queue whose messages to move (e.g. sqsworker dlq redrive %s: only the messages that came from it move, to it or to --to), or give --to QUEUE --all-sources to move every message there\n",
			cmd.path, queueref.Name(t.DLQURL), t.sourceNames(), queueref.Name(t.sources[0]))
		return exitUsage
	}
	dest := t.SourceURL
	if *to != "" {
		if !a.checkQueues(cmd, *to) {
			return exitUsage
		}
		if toARN, err := queueref.ParseARN(*to); err == nil {
			if fromARN, err := queueref.ParseARN(t.DLQARN); err == nil && fromARN.Region != toARN.Region {
				fmt.Fprintf(a.stderr, "sqsworker %s: --to %s is in region %s but dead-letter queue %s is in %s; redrive moves messages within one region: redrive to a queue of %s\n",
					cmd.path, *to, toARN.Region, queueref.Name(t.DLQURL), fromARN.Region, fromARN.Region)
				return exitUsage
			}
		}
		var err error
		if dest, err = queueref.Resolve(ctx, c, *to); err != nil {
			return a.fail(cmd, err)
		}
		if dest == t.DLQURL {
			fmt.Fprintf(a.stderr, "sqsworker %s: --to %s is dead-letter queue %s itself, the queue the messages are taken from; they would be moved back into it for ever. "+
				"Leave --to out to move them back to %s, or name another queue\n", cmd.path, *to, queueref.Name(t.DLQURL), t.of())
			return exitUsage
		}
		o.Destination = dest
		// A FIFO queue takes only messages with a group, and a standard
		// dead-letter queue's messages have none: refuse before receiving.
		if destFIFO, err := isFIFOQueue(ctx, c, dest); err != nil {
			return a.fail(cmd, err)
		} else if destFIFO != t.FIFO {
			fmt.Fprintf(a.stderr, "sqsworker %s: --to %s is %s but dead-letter queue %s is %s; redrive to a queue of the same type\n",
				cmd.path, queueref.Name(dest), kind(destFIFO), queueref.Name(t.DLQURL), kind(t.FIFO))
			return exitUsage
		}
	}

	var listed []messageOut
	o.OnMessage = func(m dlq.Message, act string, err error) {
		if act == "skipped" || act == "other-source" {
			return
		}
		mo := messageJSON(m)
		mo.Action = act
		if err != nil {
			mo.ActionFailure = err.Error()
		}
		listed = append(listed, mo)
	}
	prog := &progress{w: a.stderr, tty: a.isTerminal(a.stderr), now: a.now,
		what: fmt.Sprintf("%s → %s", queueref.Name(t.DLQURL), queueref.Name(dest))}
	if !*quiet && *out == "text" && !o.DryRun {
		o.Progress = prog.update
	}
	var res dlq.RedriveResult
	var err error
	if t.sub != nil {
		res, err = fanout.Redrive(ctx, c, *t.sub, o)
	} else {
		res, err = dlq.Redrive(ctx, c, t.Target, o)
	}
	prog.finish()

	exit := exitOK
	switch {
	case errors.Is(err, fanout.ErrMoveTaskUnsupported):
		// The method asked for cannot be used here: a usage error, with
		// the flag that works.
		err = errors.New("message move tasks cannot redrive a subscription's dead-letter queue; use --method manual, or leave --method out")
		fmt.Fprintf(a.stderr, "sqsworker %s: %v\n", cmd.path, err)
		exit = exitUsage
	case errors.Is(err, dlq.ErrNoMoveTask):
		err = fmt.Errorf("%s; use --method manual, or leave --method out (auto falls back to it)", trimPrefix(err.Error(), cmd))
		fmt.Fprintf(a.stderr, "sqsworker %s: %v\n", cmd.path, err)
		exit = exitUsage
	case err != nil:
		exit = a.fail(cmd, err)
	}
	if exit == exitUsage && *out != "json" {
		return exit
	}
	if *out == "json" {
		a.writeJSON(struct {
			DLQ         string `json:"dlq"`
			Destination string `json:"destination"`
			dlq.RedriveResult
			Messages []messageOut `json:"messages,omitempty"`
			Error    string       `json:"error,omitempty"`
		}{queueref.Name(t.DLQURL), queueref.Name(dest), res, listed, errText(err)})
		return exit
	}
	if o.DryRun {
		for i, m := range listed {
			errText := ""
			if m.Provenance != nil && m.Provenance.Error != "" {
				errText = "  " + oneLine(clip(m.Provenance.Error, 80))
			}
			fmt.Fprintf(a.stdout, "%3d. %s%s\n", i+1, m.ID, errText)
		}
		fmt.Fprintf(a.stdout, "dry run: %s of %d scanned would move from %s to %s; nothing was moved\n",
			count(res.Matched, "message"), res.Scanned, queueref.Name(t.DLQURL), queueref.Name(dest))
		return exit
	}
	fmt.Fprintf(a.stdout, "moved %s from %s to %s (%s)", count(res.Moved, "message"), queueref.Name(t.DLQURL), queueref.Name(dest), res.Method)
	if res.Skipped > 0 {
		fmt.Fprintf(a.stdout, "; %d left in place (filtered out or from another queue)", res.Skipped)
	}
	if res.Failed > 0 {
		fmt.Fprintf(a.stdout, "; %d failed and stay in the dead-letter queue", res.Failed)
	}
	if res.Duplicated > 0 {
		fmt.Fprintf(a.stdout, "; %d are in both queues (the delete failed)", res.Duplicated)
	}
	if res.NotSeen > 0 {
		fmt.Fprintf(a.stdout, "; %d not seen (hidden: they stay in the dead-letter queue)", res.NotSeen)
	}
	if res.CameBack > 0 {
		fmt.Fprintf(a.stdout, "; %s came back (they failed again) and stay in the dead-letter queue", count(res.CameBack, "message"))
	}
	fmt.Fprintln(a.stdout)
	return exit
}

// isFIFOQueue reads whether the queue at url is a FIFO queue.
func isFIFOQueue(ctx context.Context, c client, url string) (bool, error) {
	out, err := awscall.SQS(ctx, awscall.Rule{}, c.GetQueueAttributes, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameFifoQueue}})
	if err != nil {
		return false, fmt.Errorf("reading queue %s: %w", queueref.Name(url), err)
	}
	return out.Attributes[string(types.QueueAttributeNameFifoQueue)] == "true", nil
}

func kind(fifo bool) string {
	if fifo {
		return "a FIFO queue"
	}
	return "a standard queue"
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// progress shows a redrive's progress on stderr: one line rewritten in
// place on a terminal, a line every few seconds otherwise.
type progress struct {
	w     io.Writer
	tty   bool
	now   func() time.Time
	what  string
	last  time.Time
	shown bool
	line  string
}

const progressEvery = 5 * time.Second

func (p *progress) update(pr dlq.Progress) {
	line := p.what + ": " + progressText(pr)
	if p.tty {
		fmt.Fprintf(p.w, "\r%-*s", len(p.line), line)
		p.line, p.shown = line, true
		return
	}
	if now := p.now(); pr.Done || now.Sub(p.last) >= progressEvery {
		if line != p.line {
			fmt.Fprintln(p.w, line)
		}
		p.line, p.last = line, now
	}
}

func (p *progress) finish() {
	if p.tty && p.shown {
		fmt.Fprintln(p.w)
	}
}

func progressText(pr dlq.Progress) string {
	var b strings.Builder
	switch {
	case pr.Total > 0:
		fmt.Fprintf(&b, "%d/%d moved (%d%%)", pr.Moved, pr.Total, min(100, 100*pr.Moved/pr.Total))
	default:
		fmt.Fprintf(&b, "%d moved", pr.Moved)
	}
	if pr.Method == "manual" {
		fmt.Fprintf(&b, ", %d scanned", pr.Scanned)
	}
	if pr.Skipped > 0 {
		fmt.Fprintf(&b, ", %d skipped", pr.Skipped)
	}
	if pr.Failed > 0 {
		fmt.Fprintf(&b, ", %d failed", pr.Failed)
	}
	if pr.Duplicated > 0 {
		fmt.Fprintf(&b, ", %d duplicated", pr.Duplicated)
	}
	if pr.CameBack > 0 {
		fmt.Fprintf(&b, ", %d came back (failed again)", pr.CameBack)
	}
	if pr.Done {
		b.WriteString(", done")
	}
	return b.String()
}

// ---- dlq purge

func dlqPurgeCommand() *command {
	return &command{
		path:     "dlq purge",
		args:     "QUEUE",
		synopsis: "delete every message of a queue's dead-letter queue",
		help: `Deletes every message in QUEUE's dead-letter queue with PurgeQueue. This cannot
be undone. It asks you to type the dead-letter queue's name first; pass --yes
to skip the question (for scripts). Without a terminal to ask on and without
--yes, it refuses (exit status 3). SQS allows one purge per queue every 60
seconds, and messages sent during the purge may be deleted too.

IAM: sqs:GetQueueAttributes, sqs:GetQueueUrl, sqs:PurgeQueue.`,
		run: runDLQPurge,
	}
}

func runDLQPurge(a *app, ctx context.Context, cmd *command, args []string) int {
	fs := a.flags(cmd)
	conn := awsFlagsOn(fs)
	out := outputFlag(fs)
	ff := fanoutFlagsOn(fs)
	yes := fs.Bool("yes", false, "do not ask for confirmation")
	pos, code, ok := a.parseWithOutput(cmd, fs, args, 1, 1, out)
	if !ok {
		return code
	}
	c, t, code, ok := a.connectTarget(ctx, cmd, conn, pos[0], ff)
	if !ok {
		return code
	}
	name := queueref.Name(t.DLQURL)
	counts, err := dlq.Count(ctx, c, t.DLQURL)
	if err != nil {
		return a.fail(cmd, err)
	}
	if !*yes {
		if !a.isTerminal(a.stdin) {
			fmt.Fprintf(a.stderr, "sqsworker %s: refusing to purge %s (about %s) without confirmation: no terminal to ask on; pass --yes\n",
				cmd.path, name, count(counts.Total(), "message"))
			return exitNotConfirm
		}
		fmt.Fprintf(a.stderr, "Delete all %s of dead-letter queue %s? This cannot be undone.\nType the queue name to confirm: ",
			count(counts.Total(), "message"), name)
		answer, _ := bufio.NewReader(a.stdin).ReadString('\n')
		if strings.TrimSpace(answer) != name {
			fmt.Fprintf(a.stderr, "not confirmed; nothing was deleted\n")
			return exitNotConfirm
		}
	}
	if _, err := awscall.SQS(ctx, awscall.Rule{}, c.PurgeQueue, &sqs.PurgeQueueInput{QueueUrl: aws.String(t.DLQURL)}); err != nil {
		return a.fail(cmd, fmt.Errorf("purging %s: %w", name, err))
	}
	if *out == "json" {
		a.writeJSON(struct {
			DLQ    string `json:"dlq"`
			Purged int    `json:"approximatelyPurged"`
		}{name, counts.Total()})
		return exitOK
	}
	fmt.Fprintf(a.stdout, "purged %s (about %s)\n", name, count(counts.Total(), "message"))
	return exitOK
}
