package console

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/internal/uniqueattr"
	"github.com/sqsworker/sqsworker/queueref"
)

// target resolves the queue named in the request path to its dead-letter
// queue. With Options.Queues set, only those queues are served.
func (h *handler) target(ctx context.Context, queue string) (dlq.Target, error) {
	url, err := h.shownQueue(ctx, queue)
	if err != nil {
		return dlq.Target{}, err
	}
	return dlq.Discover(ctx, h.client, url)
}

// shownQueue resolves queue, one of the console's queues, to its URL.
func (h *handler) shownQueue(ctx context.Context, queue string) (string, error) {
	if len(h.opts.Queues) > 0 && !slices.ContainsFunc(h.opts.Queues, func(q string) bool { return queueref.Name(q) == queue }) {
		return "", fmt.Errorf("queue %s is not one of the console's queues (Options.Queues / --queues)", queue)
	}
	return queueref.Resolve(ctx, h.client, queue)
}

// fail renders the error page with status code.
func (h *handler) fail(w http.ResponseWriter, r *http.Request, code int, err error) {
	h.render(w, r, code, "error", "Error", map[string]any{"Err": err.Error()})
}

// triage serves a queue's dead-letter queue, grouped by failure reason. It
// reads the queue afresh each time, and says what the read did.
func (h *handler) triage(w http.ResponseWriter, r *http.Request) {
	queue := r.PathValue("queue")
	t, sub, err := h.dlqOf(r)
	if err != nil {
		h.fail(w, r, http.StatusNotFound, err)
		return
	}
	s := h.read(r.Context(), t.DLQURL)
	gs := groups(s.Messages)
	for _, g := range gs {
		if sub != nil && g.Reason == noProvenanceSent {
			g.Reason = subscriptionReason(queue)
		}
	}
	retention := h.retentionOf(r.Context(), t.DLQURL)
	views := make([]groupView, len(gs))
	for i, g := range gs {
		views[i] = groupView{group: g, SampleBody: h.sample(t.DLQURL, g.Sample), Expires: expiryOf(g.Messages, retention, h.opts.Now()).Soonest}
		if len(g.Messages) > 100 {
			views[i].More = len(g.Messages) - 100
			g.Messages = g.Messages[:100]
		}
	}
	title := "Dead-letter queue of " + queue
	if sub != nil {
		title = "Subscription dead-letter queue of " + queue + " (SNS topic " + queueref.Name(sub.TopicARN) + ")"
	}
	h.render(w, r, http.StatusOK, "triage", title, map[string]any{
		"Queue": queue, "Target": t, "Snapshot": s, "Groups": views, "HoldNote": s.describeHold(),
		"Err": errString(s.Err), "Notice": r.URL.Query().Get("notice"),
		"Expiry": expiryOf(s.Messages, retention, h.opts.Now()), "Sub": sub,
	})
}

// groupView is a group as the triage page shows it.
type groupView struct {
	*group
	SampleBody string
	More       int // messages not listed
	// Expires is the soonest expiry of the group's messages.
	Expires time.Time
}

// body returns the body to show for m (through Options.Redact).
func (h *handler) body(dlqURL string, m dlq.Message) string {
	if h.opts.Redact != nil {
		return h.opts.Redact(dlqURL, m)
	}
	return m.Body
}

// pretty indents a JSON body; other bodies are returned as they are.
func pretty(body string) string {
	var buf bytes.Buffer
	if json.Valid([]byte(body)) && json.Indent(&buf, []byte(body), "", "  ") == nil {
		return buf.String()
	}
	return body
}

// attribute is one message attribute as the message page lists it.
type attribute struct{ Name, Type, Value string }

func attributes(attrs map[string]types.MessageAttributeValue) []attribute {
	var out []attribute
	for name, v := range attrs {
		val := aws.ToString(v.StringValue)
		if v.StringValue == nil && v.BinaryValue != nil {
			val = strconv.Itoa(len(v.BinaryValue)) + " bytes (binary)"
		}
		out = append(out, attribute{Name: name, Type: aws.ToString(v.DataType), Value: val})
	}
	slices.SortFunc(out, func(a, b attribute) int { return compareStrings(a.Name, b.Name) })
	return out
}

// message serves one dead-lettered message from the last read of its
// queue: SQS cannot fetch a message by ID, so the page says when it was read.
func (h *handler) message(w http.ResponseWriter, r *http.Request) {
	queue, id := r.PathValue("queue"), r.PathValue("id")
	t, sub, err := h.dlqOf(r)
	if err != nil {
		h.fail(w, r, http.StatusNotFound, err)
		return
	}
	s := h.snapshotOf(t.DLQURL)
	if s == nil {
		s = h.read(r.Context(), t.DLQURL)
	}
	i := slices.IndexFunc(s.Messages, func(m dlq.Message) bool { return m.ID == id })
	if i < 0 {
		h.fail(w, r, http.StatusNotFound, fmt.Errorf("message %s was not in the dead-letter queue of %s when it was last read; it may have been redriven or deleted since: go back to the queue and read it again", id, queue))
		return
	}
	m := s.Messages[i]
	h.render(w, r, http.StatusOK, "message", "Message "+id, map[string]any{
		"Queue": queue, "Target": t, "Snapshot": s, "M": m, "Body": pretty(h.body(t.DLQURL, m)),
		"Attributes": attributes(m.Attributes), "Group": groupKey(m), "CanEdit": h.opts.Redact == nil && sub == nil, "Sub": sub,
		"UniqueKey": uniqueattr.Describe(m.Attributes, m.Body),
	})
}
