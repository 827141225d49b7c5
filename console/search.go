package console

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sqsworker/sqsworker/dlq"
)

// pageSize is how many messages a page of search results lists.
const pageSize = 100

// query is a search over a read of a dead-letter queue. Every condition
// set must hold. The page lists the read's messages that match, and its
// Redrive and Delete post the same fields, which build the same filter
// (filter below): what the page shows is what the action takes.
type query struct {
	IDs     []string // message IDs (any of them)
	Text    string   // in the body (as shown: after Options.Redact), any case
	Attr    string   // NAME=VALUE (exact), or NAME: the message has the attribute
	Error   string   // in the provenance error (exact case, as dlq.Filter.ErrorContains)
	Handler string   // the provenance handler, exactly
	Group   string   // a group's key, as the triage page groups
	// From and To bound when the message was dead-lettered
	// (Message.FailedAt): From ≤ FailedAt < To. Typed as UTC.
	From, To time.Time
	// Read, set by an action, is when the read the page showed began: a
	// message enqueued after it was not shown, and is not taken.
	Read time.Time
}

// parseQuery reads a query from form or URL values.
func parseQuery(v url.Values) (query, error) {
	q := query{
		IDs:  strings.Fields(strings.ReplaceAll(v.Get("id"), ",", " ")),
		Text: strings.TrimSpace(v.Get("text")), Attr: strings.TrimSpace(v.Get("attr")),
		Error: v.Get("error"), Handler: strings.TrimSpace(v.Get("handler")), Group: strings.TrimSpace(v.Get("group")),
	}
	var err error
	if q.From, err = parseUTC(v.Get("from")); err != nil {
		return q, fmt.Errorf("from: %w", err)
	}
	if q.To, err = parseUTC(v.Get("to")); err != nil {
		return q, fmt.Errorf("to: %w", err)
	}
	if !q.From.IsZero() && !q.To.IsZero() && !q.From.Before(q.To) {
		return q, errors.New("the time range is empty: from must be before to")
	}
	if r := v.Get("read"); r != "" {
		ms, err := strconv.ParseInt(r, 10, 64)
		if err != nil {
			return q, fmt.Errorf("read: %q is not a time in Unix milliseconds", r)
		}
		q.Read = time.UnixMilli(ms)
	}
	return q, nil
}

// parseUTC reads a time typed in a datetime-local field (UTC) or as RFC 3339.
func parseUTC(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	for _, layout := range []string{"2006-01-02T15:04", "2006-01-02T15:04:05", time.RFC3339, "2006-01-02 15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not a time: write 2006-01-02T15:04 (UTC) or RFC 3339", s)
}

// isZero reports whether the query sets no condition (Read is not one).
func (q query) isZero() bool {
	return len(q.IDs) == 0 && q.Text == "" && q.Attr == "" && q.Error == "" && q.Handler == "" && q.Group == "" && q.From.IsZero() && q.To.IsZero()
}

// values returns the query's form fields.
func (q query) values() url.Values {
	v := url.Values{}
	set := func(k, s string) {
		if s != "" {
			v.Set(k, s)
		}
	}
	set("id", strings.Join(q.IDs, " "))
	set("text", q.Text)
	set("attr", q.Attr)
	set("error", q.Error)
	set("handler", q.Handler)
	set("group", q.Group)
	if !q.From.IsZero() {
		v.Set("from", q.From.UTC().Format("2006-01-02T15:04:05"))
	}
	if !q.To.IsZero() {
		v.Set("to", q.To.UTC().Format("2006-01-02T15:04:05"))
	}
	return v
}

// describe says in words what the query selects.
func (q query) describe() string {
	var parts []string
	add := func(format string, a ...any) { parts = append(parts, fmt.Sprintf(format, a...)) }
	if len(q.IDs) > 0 {
		add("ID %s", strings.Join(q.IDs, " or "))
	}
	if q.Text != "" {
		add("body containing %q", q.Text)
	}
	if q.Attr != "" {
		add("attribute %s", q.Attr)
	}
	if q.Error != "" {
		add("error containing %q", q.Error)
	}
	if q.Handler != "" {
		add("handler %s", q.Handler)
	}
	if q.Group != "" {
		add("group %s", q.Group)
	}
	if !q.From.IsZero() {
		add("dead-lettered from %s", q.From.UTC().Format("2006-01-02 15:04:05Z"))
	}
	if !q.To.IsZero() {
		add("dead-lettered before %s", q.To.UTC().Format("2006-01-02 15:04:05Z"))
	}
	if !q.Read.IsZero() {
		add("enqueued before the read of %s", q.Read.UTC().Format("2006-01-02 15:04:05Z"))
	}
	if len(parts) == 0 {
		return "every message"
	}
	return "the messages with " + strings.Join(parts, ", ")
}

// filter is the query as a dlq.Filter, for the page and the actions alike.
func (h *handler) filter(q query, dlqURL string) dlq.Filter {
	f := dlq.Filter{ErrorContains: q.Error}
	attrName, attrValue, exact := strings.Cut(q.Attr, "=")
	if q.Attr != "" && exact {
		f.Attributes = map[string]string{attrName: attrValue}
	}
	text := strings.ToLower(q.Text)
	ids := map[string]bool{}
	for _, id := range q.IDs {
		ids[id] = true
	}
	f.Match = func(m dlq.Message) bool {
		if len(ids) > 0 && !ids[m.ID] {
			return false
		}
		if q.Attr != "" && !exact {
			if _, ok := m.Attributes[attrName]; !ok {
				return false
			}
		}
		if q.Handler != "" && m.Provenance.Handler != q.Handler {
			return false
		}
		if q.Group != "" && groupKey(m) != q.Group {
			return false
		}
		at := m.FailedAt()
		if !q.From.IsZero() && at.Before(q.From) {
			return false
		}
		if !q.To.IsZero() && !at.Before(q.To) {
			return false
		}
		if !q.Read.IsZero() && m.SentAt.After(q.Read) {
			return false
		}
		return text == "" || strings.Contains(strings.ToLower(h.body(dlqURL, m)), text)
	}
	return f
}

// searchSelection is the selection of an action posted from the search
// page (scope=search): the query's filter, at most the number of messages
// the page listed (max), none enqueued after the read the page showed.
func (h *handler) searchSelection(sel selection, f url.Values, dlqURL string) (selection, error) {
	q, err := parseQuery(f)
	if err != nil {
		return sel, err
	}
	if q.isZero() {
		return sel, errors.New("the search is empty: an action on every message is Redrive every message, or Purge")
	}
	for k, vs := range q.values() {
		sel.Fields[k] = vs
	}
	if r := f.Get("read"); r != "" {
		sel.Fields.Set("read", r)
	}
	if m := f.Get("max"); m != "" {
		n, err := strconv.Atoi(m)
		if err != nil || n <= 0 {
			return sel, fmt.Errorf("max: %q is not a positive count", m)
		}
		sel.Max = n
		sel.Fields.Set("max", m)
	}
	sel.Filter = h.filter(q, dlqURL)
	sel.Desc = q.describe()
	if sel.Max > 0 {
		sel.Desc += fmt.Sprintf(" (at most %d, as the search listed)", sel.Max)
	}
	return sel, nil
}

// result is one message in the search results.
type result struct {
	dlq.Message
	Preview string
	Expires time.Time
}

// search serves a search over the last read of a queue's dead-letter
// queue (read now if there is none, or when asked with fresh=1), with its
// results a page at a time.
func (h *handler) search(w http.ResponseWriter, r *http.Request) {
	queue := r.PathValue("queue")
	t, _, err := h.dlqOf(r)
	if err != nil {
		h.fail(w, r, http.StatusNotFound, err)
		return
	}
	v := r.URL.Query()
	q, qerr := parseQuery(v)
	q.Read = time.Time{} // the page always shows its own read
	s, fresh := h.snapshotOf(t.DLQURL), false
	if s == nil || v.Get("fresh") != "" {
		s, fresh = h.read(r.Context(), t.DLQURL), true
	}
	now := h.opts.Now()
	retention := h.retentionOf(r.Context(), t.DLQURL)
	var matched []dlq.Message
	if qerr == nil {
		f := h.filter(q, t.DLQURL)
		for _, m := range s.Messages {
			if f.Matches(m, now) {
				matched = append(matched, m)
			}
		}
	}
	pages := max(1, (len(matched)+pageSize-1)/pageSize)
	page, _ := strconv.Atoi(v.Get("page"))
	page = min(max(page, 1), pages)
	lo, hi := (page-1)*pageSize, min(page*pageSize, len(matched))
	results := make([]result, 0, hi-lo)
	for _, m := range matched[lo:hi] {
		results = append(results, result{Message: m, Preview: h.sample(t.DLQURL, m), Expires: expiresAt(m, retention)})
	}
	link := func(p int) string {
		lv := q.values()
		if p > 1 {
			lv.Set("page", strconv.Itoa(p))
		}
		return h.dlqBase(r) + "/search?" + lv.Encode()
	}
	data := map[string]any{
		"Queue": queue, "Target": t, "Snapshot": s, "Q": q, "QErr": errString(qerr), "Searched": !q.isZero(),
		"Matched": len(matched), "Results": results, "Page": page, "Pages": pages, "First": lo + 1, "Last": hi,
		"Expiry": expiryOf(matched, retention, now), "Desc": q.describe(), "Err": errString(s.Err),
		"ReadMS": s.ReadAt.UnixMilli(), "Fields": q.values(),
		"Fresh": fresh, "Kept": s.bytes <= keepBytes, "KeepFor": keepFor, "KeptUntil": s.ReadAt.Add(keepFor),
	}
	if page > 1 {
		data["Prev"] = link(page - 1)
	}
	if page < pages {
		data["Next"] = link(page + 1)
	}
	if q.From.IsZero() {
		data["FromValue"] = ""
	} else {
		data["FromValue"] = q.From.UTC().Format("2006-01-02T15:04:05")
	}
	if q.To.IsZero() {
		data["ToValue"] = ""
	} else {
		data["ToValue"] = q.To.UTC().Format("2006-01-02T15:04:05")
	}
	h.render(w, r, http.StatusOK, "search", "Search the dead-letter queue of "+queue, data)
}

// sample returns m's body for a table cell: indented JSON (or the body as
// it is), cut to sampleLines lines and sampleChars characters.
func (h *handler) sample(dlqURL string, m dlq.Message) string {
	const sampleLines, sampleChars = 8, 400
	b := pretty(h.body(dlqURL, m))
	cut := false
	if lines := strings.SplitN(b, "\n", sampleLines+1); len(lines) > sampleLines {
		b, cut = strings.Join(lines[:sampleLines], "\n"), true
	}
	if r := []rune(b); len(r) > sampleChars {
		b, cut = string(r[:sampleChars]), true
	}
	if cut {
		b += "\n…"
	}
	return b
}
