//go:build unix

package plugin

import (
	"os"
	"os/signal"
	"syscall"
)

// stopTreeOnTerm makes SIGTERM take down the plugin's whole process group
// (the CLIs and other children it started), not just the plugin. The
// daemon starts every plugin as the leader of its own group and sends
// SIGTERM on a timeout, and the kernel sends it as the parent-death signal
// when the daemon dies (macOS: dieWithParent does), so no grandchild
// outlives either. A subreaper plugin first ends what left the group;
// where there is no parent-death signal, the groups of its children too.
func stopTreeOnTerm(subreaper bool) {
	if syscall.Getpgrp() != os.Getpid() {
		return // not a group leader: the group is not ours to kill
	}
	if subreaper || !parentDeathSignal {
		// A write to the stderr of a daemon that died (its log pipe) must
		// not end the process by SIGPIPE before it has ended its
		// descendants: the write fails instead.
		signal.Ignore(syscall.SIGPIPE)
	}
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGTERM)
	go func() {
		<-c
		if subreaper {
			endDescendants()
		}
		endChildGroups()
		_ = syscall.Kill(0, syscall.SIGKILL) // every member, this process last
	}()
}
