//go:build !linux

package chaos

import "syscall"

// sysProcAttr has nothing to add outside Linux (no parent-death signal):
// an interrupted run's workers stop when their queue is gone or by hand.
func sysProcAttr() *syscall.SysProcAttr { return nil }
