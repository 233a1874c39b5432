package cli

import "syscall"

// childProcAttr puts a child in a process group of its own, so that its
// whole tree can be killed, and has the kernel kill it when the plugin
// dies, however it dies.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
