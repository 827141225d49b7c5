package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// console writes the demo's output: plain lines, timed events, and a
// progress line. On a terminal the progress line is one line redrawn in
// place with \r, and events are printed above it; elsewhere (CI, a pipe, a
// test's buffer) the progress line is printed as an ordinary line.
type console struct {
	mu     sync.Mutex
	w      io.Writer
	tty    bool
	start  time.Time
	status string // the progress line on screen, without its stamp (terminal only)
}

func newConsole(w io.Writer) *console {
	return &console{w: w, tty: isTerminal(w), start: time.Now()}
}

// isTerminal reports whether w is a character device such as a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// since is the time since the demo started, for event stamps.
func (c *console) since() time.Duration { return time.Since(c.start) }

// line writes text as whole lines, above the progress line on a terminal.
// With stamped set, the text is stamped with the time since the start,
// taken while the console is held, so stamps never go back in time down
// the output.
func (c *console) line(text string, stamped bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if stamped {
		text = c.stamped(text)
	}
	if c.tty && c.status != "" {
		io.WriteString(c.w, "\r\x1b[K") // clear the progress line
	}
	io.WriteString(c.w, text)
	if !strings.HasSuffix(text, "\n") {
		io.WriteString(c.w, "\n")
	}
	if c.tty && c.status != "" {
		io.WriteString(c.w, c.stamped(c.status)) // and draw it again below, as of now
	}
}

// stamped prefixes text with the time since the start. c.mu must be held.
func (c *console) stamped(text string) string {
	return fmt.Sprintf("%7s  %s", stamp(c.since()), text)
}

// Printf writes a plain line.
func (c *console) Printf(format string, args ...any) {
	c.line(fmt.Sprintf(format, args...), false)
}

// Eventf writes a line stamped with the time since the start.
func (c *console) Eventf(format string, args ...any) {
	c.line(fmt.Sprintf(format, args...), true)
}

// Status shows the progress line: redrawn in place on a terminal (and
// stamped afresh whenever it is redrawn), printed as a line elsewhere.
func (c *console) Status(s string) {
	if !c.tty {
		c.line(s, true)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.status = s
	io.WriteString(c.w, "\r\x1b[K"+c.stamped(s))
}

// EndStatus leaves the last progress line on screen as an ordinary line.
func (c *console) EndStatus() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tty && c.status != "" {
		io.WriteString(c.w, "\n")
	}
	c.status = ""
}

// logWriter returns a writer for the worker's logger: each write becomes a
// line above the progress line.
func (c *console) logWriter() io.Writer { return logWriter{c} }

type logWriter struct{ c *console }

func (l logWriter) Write(p []byte) (int, error) {
	l.c.line("         worker log: "+string(bytes.TrimRight(p, "\n")), false)
	return len(p), nil
}

// stamp formats a duration since the start as "+12.3s".
func stamp(d time.Duration) string {
	return fmt.Sprintf("+%.1fs", d.Seconds())
}
