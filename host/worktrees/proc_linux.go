package worktrees

import "syscall"

// checkProcAttr puts a check in a process group of its own, killed whole
// at its timeout, and has the kernel kill its shell if the daemon dies.
func checkProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
