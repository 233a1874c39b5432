package plugin

import (
	"sync"
	"time"
)

// What a plugin leaves behind when its daemon dies. On Linux the kernel
// does it all: the daemon starts each plugin with a parent-death signal
// (SIGTERM, which stopTreeOnTerm turns into the end of the plugin's
// process group) and the first-party plugins start their own children
// (the agent CLIs, workspace tools) with one too. macOS has no
// parent-death signal, so there a plugin built on the sdk watches its
// parent (watchParent) and, once the daemon is gone, stops as on its
// SIGTERM, killing the process groups of the children it started
// (childGroups) before its own. The files orphan_<os>.go say which half
// each system uses.

// watchParent calls gone, once, when the process that started this one
// has exited. It tells by getppid: an orphan is given another parent
// (launchd, pid 1, on macOS; init or a subreaper on Linux), and a parent
// already gone when the watch starts shows as pid 1. It looks every
// interval; stop ends the watch.
func watchParent(getppid func() int, every time.Duration, gone func()) (stop func()) {
	parent := getppid()
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			if p := getppid(); p != parent || p == 1 {
				gone()
				return
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(done) }) }
}

// proc is one process of the system's process table, as childGroups needs
// it.
type proc struct {
	pid, ppid, pgid int
}

// childGroups returns the process groups led by children of self other
// than self's own group: the agent CLIs and workspace tools a first-party
// plugin starts, each in a group of its own so that its whole tree can be
// killed. Killing them kills what they started, unless that left their
// group.
func childGroups(procs []proc, self, group int) []int {
	var out []int
	for _, p := range procs {
		if p.ppid == self && p.pgid == p.pid && p.pgid != group {
			out = append(out, p.pgid)
		}
	}
	return out
}
