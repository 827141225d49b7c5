package console

import (
	"bytes"
	"fmt"
	"html/template"
	"maps"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/sqsworker/sqsworker/dlq"
	"github.com/sqsworker/sqsworker/queueref"
)

// pageNames are the pages, each ui/NAME.html rendered inside ui/layout.html.
var pageNames = []string{"overview", "triage", "message", "confirm", "job", "workers", "fleet", "error", "search", "history", "actions"}

func (h *handler) parseTemplates() error {
	funcs := template.FuncMap{
		"path":      h.path,
		"queueName": queueref.Name,
		// topicName is the last part of an SNS topic ARN.
		"topicName": func(arn string) string { return arn[strings.LastIndexByte(arn, ':')+1:] },
		"esc":       url.PathEscape,
		"dash":      orDash,
		"time": func(t time.Time) string {
			if t.IsZero() {
				return "—"
			}
			return t.UTC().Format("2006-01-02 15:04:05Z")
		},
		"ago": func(t time.Time) string {
			if t.IsZero() {
				return "—"
			}
			return ago(h.opts.Now().Sub(t))
		},
		"severity": func(s dlq.Severity) string { return s.String() },
		"plural":   plural,
	}
	maps.Copy(funcs, h.moreFuncs())
	base, err := template.New("layout.html").Funcs(funcs).ParseFS(uiFS, "ui/layout.html")
	if err != nil {
		return fmt.Errorf("console: parsing the layout: %w", err)
	}
	h.pages = map[string]*template.Template{}
	for _, name := range pageNames {
		t, err := template.Must(base.Clone()).ParseFS(uiFS, "ui/"+name+".html")
		if err != nil {
			return fmt.Errorf("console: parsing page %s: %w", name, err)
		}
		h.pages[name] = t
	}
	return nil
}

// plural returns n with noun, in the plural unless n is 1: "1 message",
// "3 messages".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// ago says how long ago d was, in the largest unit that fits.
func ago(d time.Duration) string {
	switch {
	case d < 0:
		return "just now"
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d/time.Hour))
	}
	return fmt.Sprintf("%dd ago", int(d/(24*time.Hour)))
}

// render writes page name with data, inside the layout. The layout gets
// the user, whether actions are offered and the CSRF token besides.
func (h *handler) render(w http.ResponseWriter, r *http.Request, code int, name, title string, data map[string]any) {
	data["Title"] = title
	data["User"] = user(r)
	data["CanAct"] = h.canAct(r)
	data["ReadOnly"] = !h.opts.Actions
	data["HasWorkers"] = len(h.opts.Workers) > 0
	data["HasFleet"] = h.opts.Fleet != nil
	data["Base"] = h.dlqBase(r)
	data["HasSchedules"] = h.opts.Scheduler != nil
	if h.canAct(r) {
		data["CSRF"] = h.csrf.token(w, r)
	}
	var buf bytes.Buffer
	if err := h.pages[name].ExecuteTemplate(&buf, "layout.html", data); err != nil {
		// Never echo page data (it may hold message bodies) into the log.
		h.opts.Logger.Error("sqsworker/console: rendering a page failed", "page", name, "error", err.Error())
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}
