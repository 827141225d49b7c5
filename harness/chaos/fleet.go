package chaos

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// proc is one worker process the orchestrator started.
type proc struct {
	name    string
	cmd     *exec.Cmd
	exited  chan struct{}
	waitErr error
	// longLived: never signalled during the chaos phase (a soak's watched
	// worker).
	longLived bool

	// guarded by fleet.mu
	signal     string
	signaledAt time.Time
	exitedAt   time.Time
	hung       bool
}

// fleet starts, signals and watches the worker processes. It only ever
// signals processes it started, by their PID.
type fleet struct {
	bin, config, dir string
	args             []string      // more arguments for each process (-produce)
	exitBound        time.Duration // after SIGTERM, alive longer than this = hung
	keep             int           // the first keep processes started are long-lived (Soak.LongLived)

	mu    sync.Mutex
	seq   int
	procs []*proc
	wg    sync.WaitGroup
}

// start starts one more worker process.
func (f *fleet) start() (*proc, error) {
	f.mu.Lock()
	f.seq++
	name := fmt.Sprintf("w%d", f.seq)
	longLived := f.seq <= f.keep
	f.mu.Unlock()
	out, err := os.Create(filepath.Join(f.dir, name+".out"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(f.bin, append([]string{"-config", f.config, "-name", name}, f.args...)...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = sysProcAttr()
	// A race-enabled worker would sleep 1 s at exit (TSan's default),
	// which the exit bound would count.
	cmd.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0")
	if err := cmd.Start(); err != nil {
		out.Close()
		return nil, fmt.Errorf("chaos: starting worker %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, exited: make(chan struct{}), longLived: longLived}
	f.mu.Lock()
	f.procs = append(f.procs, p)
	f.mu.Unlock()
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		p.waitErr = cmd.Wait()
		out.Close()
		f.mu.Lock()
		p.exitedAt = time.Now()
		f.mu.Unlock()
		close(p.exited)
	}()
	return p, nil
}

// running returns the processes not yet signalled and still running.
func (f *fleet) running() []*proc {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*proc
	for _, p := range f.procs {
		if p.signal == "" && p.exitedAt.IsZero() {
			out = append(out, p)
		}
	}
	return out
}

// kill sends SIGKILL.
func (f *fleet) kill(p *proc) {
	f.mu.Lock()
	if p.signal == "" {
		p.signal, p.signaledAt = "SIGKILL", time.Now()
	}
	f.mu.Unlock()
	p.cmd.Process.Signal(syscall.SIGKILL)
}

// terminate sends SIGTERM and watches the process: if it is still alive
// exitBound later it is hung: it gets SIGQUIT (the Go runtime writes every
// goroutine's stack to the process's .out file and exits), and SIGKILL if
// it is still there 2 s later.
func (f *fleet) terminate(p *proc) {
	f.mu.Lock()
	if p.signal != "" {
		f.mu.Unlock()
		return
	}
	p.signal, p.signaledAt = "SIGTERM", time.Now()
	f.mu.Unlock()
	p.cmd.Process.Signal(syscall.SIGTERM)
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		t := time.NewTimer(f.exitBound)
		defer t.Stop()
		select {
		case <-p.exited:
		case <-t.C:
			f.mu.Lock()
			p.hung = true
			f.mu.Unlock()
			p.cmd.Process.Signal(syscall.SIGQUIT)
			select {
			case <-p.exited:
			case <-time.After(2 * time.Second):
				p.cmd.Process.Signal(syscall.SIGKILL)
			}
		}
	}()
}

// stopAll sends SIGTERM to every running process and waits until every
// process started has exited.
func (f *fleet) stopAll() {
	for _, p := range f.running() {
		f.terminate(p)
	}
	f.wg.Wait()
}

// killAll sends SIGKILL to every process still running (when the run is
// cut short) and waits for them.
func (f *fleet) killAll() {
	f.mu.Lock()
	procs := append([]*proc(nil), f.procs...)
	f.mu.Unlock()
	for _, p := range procs {
		select {
		case <-p.exited:
		default:
			p.cmd.Process.Signal(syscall.SIGKILL)
		}
	}
	f.wg.Wait()
}

// crashed returns processes that exited without being signalled and were
// not yet reported, marking them reported.
func (f *fleet) crashed() []*proc {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*proc
	for _, p := range f.procs {
		if p.signal == "" && !p.exitedAt.IsZero() {
			p.signal = "crashed"
			out = append(out, p)
		}
	}
	return out
}

// info returns what the report needs of each process, and the longest a
// SIGTERMed process took to exit. Call it after stopAll.
func (f *fleet) info() (map[string]procInfo, []string, time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]procInfo, len(f.procs))
	names := make([]string, 0, len(f.procs))
	var exitMax time.Duration
	for _, p := range f.procs {
		names = append(names, p.name)
		pi := procInfo{Signal: p.signal, Hung: p.hung, SignaledAt: p.signaledAt}
		if out, err := os.ReadFile(filepath.Join(f.dir, p.name+".out")); err == nil {
			pi.Races = strings.Count(string(out), "WARNING: DATA RACE")
		}
		switch {
		case p.signal == "crashed":
			pi.Signal, pi.Crashed = "", true
		case p.signal == "SIGTERM" && !p.hung:
			exitMax = max(exitMax, p.exitedAt.Sub(p.signaledAt))
		}
		out[p.name] = pi
	}
	return out, names, exitMax
}
