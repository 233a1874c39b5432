package plugin

import (
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// parentDeathSignal: macOS has none (orphan.go).
const parentDeathSignal = false

// parentWatchEvery is how often a plugin looks for its daemon: how long a
// plugin outlives a daemon killed with SIGKILL, at most.
const parentWatchEvery = time.Second

// dieWithParent watches the daemon for the life of the process and sends
// the process SIGTERM when it is gone, which stopTreeOnTerm turns into the
// end of its children's groups and its own, as a parent-death signal
// would on Linux.
func dieWithParent() {
	watchParent(os.Getppid, parentWatchEvery, func() {
		_ = syscall.Kill(os.Getpid(), syscall.SIGTERM)
	})
}

// endChildGroups kills the process groups of the children this process
// started in groups of their own (childGroups), which no parent-death
// signal ends here.
func endChildGroups() {
	all, err := unix.SysctlKinfoProcSlice("kern.proc.all")
	if err != nil {
		return
	}
	procs := make([]proc, 0, len(all))
	for _, k := range all {
		procs = append(procs, proc{pid: int(k.Proc.P_pid), ppid: int(k.Eproc.Ppid), pgid: int(k.Eproc.Pgid)})
	}
	for _, g := range childGroups(procs, os.Getpid(), syscall.Getpgrp()) {
		_ = syscall.Kill(-g, syscall.SIGKILL)
	}
}
