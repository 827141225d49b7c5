package chaos

import "syscall"

// sysProcAttr makes a worker process die with the orchestrator, so an
// interrupted run leaves no worker behind.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
