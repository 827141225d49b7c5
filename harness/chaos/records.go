package chaos

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sqsworker/sqsworker/idempotency"
	"github.com/sqsworker/sqsworker/unique"
	"github.com/sqsworker/sqsworker/worker"
)

// The files each worker process writes in its directory, named after the
// process ("w7.runs.jsonl", …).
const (
	runsFile    = ".runs.jsonl"    // a RunRecord per handler start (write, no fsync)
	successFile = ".success.jsonl" // a RunRecord per success (fsynced before the handler returns nil)
	settledFile = ".settled.jsonl" // a SettledRecord per settlement the worker confirmed (OnSettled)
	exitFile    = ".exit.json"     // an ExitRecord when Run returned
	logFile     = ".log"           // the worker's own log (warnings and errors)
)

// RunRecord is one handler run (in the runs file) or one success (in the
// success file).
type RunRecord struct {
	Job     string    `json:"job"`
	Message string    `json:"msg"`
	Handle  string    `json:"rh"`
	Worker  string    `json:"w"`
	Time    time.Time `json:"t"`
	Receive int       `json:"n,omitempty"` // ApproximateReceiveCount
}

// SettledRecord is one settlement event (worker.Options.OnSettled).
type SettledRecord struct {
	Job     string    `json:"job"`
	Message string    `json:"msg"`
	Handle  string    `json:"rh"`
	Worker  string    `json:"w"`
	Outcome string    `json:"outcome"`
	Late    bool      `json:"late,omitempty"`
	Reason  string    `json:"reason,omitempty"`
	Attempt int       `json:"att,omitempty"`
	Time    time.Time `json:"t"`
	// Received is when the receive returned the message; Extensions are
	// when the heartbeat sent the extensions SQS confirmed.
	Received   time.Time   `json:"rcv"`
	Extensions []time.Time `json:"ext,omitempty"`
}

// lapsed reports whether the message's lease, as the record shows it (the
// receipt, then each confirmed extension, each for visibility), had run out
// before the settlement was confirmed, or before an extension went out,
// by more than tolerance.
func (s SettledRecord) lapsed(visibility, tolerance time.Duration) bool {
	if s.Received.IsZero() {
		return false
	}
	deadline := s.Received.Add(visibility)
	for _, t := range s.Extensions {
		if t.Sub(deadline) > tolerance {
			return true
		}
		deadline = t.Add(visibility)
	}
	return s.Time.Sub(deadline) > tolerance
}

// ExitRecord is what a worker process writes once Run has returned.
type ExitRecord struct {
	Worker string `json:"w"`
	PID    int    `json:"pid"`
	// Signal is when the process got SIGTERM (zero if it did not);
	// Returned is when Run returned.
	Signal   time.Time `json:"signal"`
	Returned time.Time `json:"returned"`
	Err      string    `json:"err,omitempty"`
	Stats    worker.Stats
	// LastReceiveEnd is when the worker's last ReceiveMessage call ended,
	// and ReceivesAfterSignal how many began after SIGTERM.
	LastReceiveEnd      time.Time `json:"lastReceiveEnd,omitzero"`
	ReceivesAfterSignal int       `json:"receivesAfterSignal,omitempty"`
	// Idempotency is the Guard's Stats (the idempotency variant).
	Idempotency *idempotency.Stats `json:"idempotency,omitempty"`
	// Unique is the Store's Stats (the unique variant).
	Unique *unique.Stats `json:"unique,omitempty"`
}

// ReceiveStop is how long the worker went on receiving after SIGTERM: from
// the signal to the end of its last receive call (zero when that ended
// before the signal, or without a signal).
func (e ExitRecord) ReceiveStop() time.Duration {
	if e.Signal.IsZero() || e.LastReceiveEnd.Before(e.Signal) {
		return 0
	}
	return e.LastReceiveEnd.Sub(e.Signal)
}

// RunAfterSignal is how long Run took to return after SIGTERM.
func (e ExitRecord) RunAfterSignal() time.Duration {
	if e.Signal.IsZero() {
		return 0
	}
	return e.Returned.Sub(e.Signal)
}

// appender appends JSON lines to a file with one write each: what it
// wrote survives the process being killed (not the machine crashing).
type appender struct {
	mu sync.Mutex
	f  *os.File
}

func openAppender(path string) (*appender, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &appender{f: f}, nil
}

func (a *appender) write(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	_, err = a.f.Write(append(b, '\n'))
	return err
}

func (a *appender) close() error { return a.f.Close() }

// journal appends JSON lines durably: commit returns once its line is
// written and fsynced. Lines committed together share one fsync (group
// commit), so durability costs little when many handlers finish at once.
type journal struct {
	f    *os.File
	reqs chan journalReq
	done chan struct{}
}

type journalReq struct {
	line []byte
	errc chan error
}

func openJournal(path string) (*journal, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	j := &journal{f: f, reqs: make(chan journalReq, 1024), done: make(chan struct{})}
	go j.loop()
	return j, nil
}

func (j *journal) loop() {
	defer close(j.done)
	var batch []journalReq
	var buf []byte
	for first := range j.reqs {
		batch, buf = append(batch[:0], first), append(buf[:0], first.line...)
	more:
		for len(batch) < 512 {
			select {
			case r, ok := <-j.reqs:
				if !ok {
					break more
				}
				batch, buf = append(batch, r), append(buf, r.line...)
			default:
				break more
			}
		}
		_, err := j.f.Write(buf)
		if err == nil {
			err = j.f.Sync()
		}
		for _, r := range batch {
			r.errc <- err
		}
	}
}

// commit writes v as one line and returns once it is on disk.
func (j *journal) commit(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	errc := make(chan error, 1)
	j.reqs <- journalReq{line: append(b, '\n'), errc: errc}
	return <-errc
}

// close waits for pending commits and closes the file. No commit may be
// called after it.
func (j *journal) close() error {
	close(j.reqs)
	<-j.done
	return j.f.Close()
}

// readLines decodes every complete JSON line of a file into T; a torn last
// line (the writer was killed mid-write) is skipped. A missing file reads
// as empty.
func readLines[T any](path string) ([]T, error) {
	var out []T
	err := eachLine(path, func(v T) { out = append(out, v) })
	return out, err
}

// eachLine decodes the complete JSON lines of a file one at a time, as
// readLines does, and calls fn with each: a file too big to hold (a
// million-job run's proxy log) is read in constant memory.
func eachLine[T any](path string, fn func(T)) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	for n := 1; ; n++ {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 && line[len(line)-1] == '\n' {
			var v T
			if jerr := json.Unmarshal(line, &v); jerr != nil {
				return fmt.Errorf("%s line %d: %w", path, n, jerr)
			}
			fn(v)
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// workerFiles is what all worker processes of a run wrote.
type workerFiles struct {
	Runs, Successes []RunRecord
	Settled         []SettledRecord
	Exits           map[string]ExitRecord
}

// readWorkerFiles reads the files of the named worker processes in dir.
func readWorkerFiles(dir string, names []string) (workerFiles, error) {
	wf := workerFiles{Exits: map[string]ExitRecord{}}
	sort.Strings(names)
	for _, name := range names {
		base := filepath.Join(dir, name)
		// Each record goes straight into the run's slices: a million-job
		// run's records are held once, not once per file and again.
		if err := eachLine(base+runsFile, func(r RunRecord) { wf.Runs = append(wf.Runs, r) }); err != nil {
			return wf, err
		}
		if err := eachLine(base+successFile, func(r RunRecord) { wf.Successes = append(wf.Successes, r) }); err != nil {
			return wf, err
		}
		if err := eachLine(base+settledFile, func(s SettledRecord) { wf.Settled = append(wf.Settled, s) }); err != nil {
			return wf, err
		}
		data, err := os.ReadFile(base + exitFile)
		switch {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			return wf, err
		default:
			var e ExitRecord
			if err := json.Unmarshal(data, &e); err != nil {
				return wf, fmt.Errorf("%s%s: %w", base, exitFile, err)
			}
			wf.Exits[name] = e
		}
	}
	return wf, nil
}

// lastLines returns up to n last lines of a file, for error messages.
func lastLines(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
