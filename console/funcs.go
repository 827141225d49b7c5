package console

import (
	"html/template"
	"time"
)

// moreFuncs are the template functions of the search, history, retention
// and actions pages.
func (h *handler) moreFuncs() template.FuncMap {
	return template.FuncMap{
		// when shows a past time relative ("3h ago") beside the absolute
		// UTC time, which is also its tooltip.
		"when": func(t time.Time) template.HTML {
			if t.IsZero() {
				return "—"
			}
			abs := t.UTC().Format("2006-01-02 15:04:05Z")
			return template.HTML(`<time datetime="` + t.UTC().Format(time.RFC3339) + `" title="` + abs + `">` + ago(h.opts.Now().Sub(t)) + `</time> <span class="abs">` + abs + `</span>`)
		},
		// expires says when a future time comes ("in 3 h 12 min"), with
		// the absolute UTC time as its tooltip.
		"expires": func(t time.Time) template.HTML {
			if t.IsZero() {
				return `<span class="sub">unknown</span>`
			}
			abs := t.UTC().Format("2006-01-02 15:04:05Z")
			cls := "expires"
			if t.Sub(h.opts.Now()) < expiringWindow {
				cls = "expires bad"
			}
			return template.HTML(`<time class="` + cls + `" datetime="` + t.UTC().Format(time.RFC3339) + `" title="` + abs + `">` + template.HTMLEscapeString(inHuman(t, h.opts.Now())) + `</time>`)
		},
		"span": span,
		"add":  func(a, b int) int { return a + b },
	}
}

// overviewRefresh is how often, in seconds, the Queues page reloads itself
// (a meta refresh: no script). It reads counts only, never a message.
const overviewRefresh = 30
