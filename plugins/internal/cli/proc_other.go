//go:build unix && !linux

package cli

import "syscall"

// childProcAttr puts a child in a process group of its own, so that its
// whole tree can be killed. There is no parent-death signal outside
// Linux: the sdk kills the groups of the plugin's children as the plugin
// stops (on the daemon's SIGTERM, or when it sees the daemon gone), but a
// plugin killed with SIGKILL leaves them running.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
