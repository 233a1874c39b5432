//go:build !linux

package mergequeue

import "syscall"

// checkProcAttr puts a check in a process group of its own, killed whole
// at its timeout.
func checkProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// endLeftovers finds nothing: without /proc, what a check left when the
// daemon died cannot be told from other processes.
func endLeftovers(string) int { return 0 }
