package localstack

import (
	"bytes"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// with-aws.sh exits with its command's status when Ctrl-C interrupts the
// command: 0 for a program that handles the interrupt and ends cleanly (the
// console demo), 130 for one the interrupt kills; either way it stops the
// emulators it started. The test runs the script with stub start.sh and
// stop.sh, and interrupts its process group as a terminal's Ctrl-C does.
func TestWithAWSExitsWithTheInterruptedCommandsStatus(t *testing.T) {
	// Children get SIGINT's default action only if this process catches
	// it (a test run may start with SIGINT ignored, which bash could not
	// undo); the signal goes to the script's own process group only.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt)
	defer signal.Stop(sig)

	for _, tc := range []struct {
		name    string
		command string
		want    int
	}{
		{"handled", `trap 'echo stopped cleanly; exit 0' INT; echo ready; while :; do sleep 0.05; done`, 0},
		{"killed", `echo ready; exec sleep 30`, 130},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range []string{"with-aws.sh", "lib.sh"} {
				b, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, f), b, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			stub := map[string]string{
				"start.sh": "#!/usr/bin/env bash\necho 'export STUB_STARTED=1'\n",
				"stop.sh":  "#!/usr/bin/env bash\ntouch \"$(dirname \"$0\")/stopped\"\n",
			}
			for f, content := range stub {
				if err := os.WriteFile(filepath.Join(dir, f), []byte(content), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			cmd := exec.Command("bash", filepath.Join(dir, "with-aws.sh"), "bash", "-c", tc.command)
			var env []string
			for _, kv := range os.Environ() {
				if !strings.HasPrefix(kv, "AWS_ENDPOINT_URL") {
					env = append(env, kv)
				}
			}
			cmd.Env = append(env, "SQSWORKER_LOCAL_AWS_DIR="+filepath.Join(dir, "run"))
			var out syncBuffer
			cmd.Stdout, cmd.Stderr = &out, &out
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(10 * time.Second)
			for !strings.Contains(out.String(), "ready") {
				if time.Now().After(deadline) {
					_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
					t.Fatalf("the command never started:\n%s", out.String())
				}
				time.Sleep(20 * time.Millisecond)
			}
			if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				t.Fatalf("with-aws.sh did not end after the interrupt:\n%s", out.String())
			}
			if got := cmd.ProcessState.ExitCode(); got != tc.want {
				t.Errorf("exit status %d, want %d\n%s", got, tc.want, out.String())
			}
			if _, err := os.Stat(filepath.Join(dir, "stopped")); err != nil {
				t.Errorf("stop.sh did not run: %v\n%s", err, out.String())
			}
		})
	}
}

// syncBuffer is a bytes.Buffer safe for the command's writes and the
// test's reads at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
