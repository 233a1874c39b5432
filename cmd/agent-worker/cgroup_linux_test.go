package main

import (
	"os"
	"syscall"
	"testing"

	"github.com/agent-worker/agent-worker/host/runner"
)

// privateCgroup makes a cgroup (v2) of the test's own beside the test
// process's, and returns how to start a daemon in it. A daemon that starts
// kills what the gone daemons of its own cgroup left (host/runner's
// Cgroups.sweep), and the e2e tests start many daemons at once: a test
// that kills its daemon and expects the next one to clean up must keep the
// other tests' daemons away from what its runs left. It returns nil where
// no cgroup may be made (the daemon cannot make its own there either, and
// the test says so itself). The cgroup and what is left in it go with the
// test.
func privateCgroup(t *testing.T) *syscall.SysProcAttr {
	t.Helper()
	own, err := runner.OwnCgroup()
	if err != nil {
		return nil
	}
	dir, err := os.MkdirTemp(own, "agent-worker-test-")
	if err != nil {
		t.Fatalf("make a private cgroup for the test's daemons: %v", err)
	}
	f, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		f.Close()
		runner.KillCgroupTree(dir)
		if _, err := os.Stat(dir); err == nil {
			t.Errorf("the test's cgroup %s is left behind", dir)
		}
	})
	return &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(f.Fd())}
}
