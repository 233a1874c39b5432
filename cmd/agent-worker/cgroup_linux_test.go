package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// privateCgroup makes a cgroup (v2) of the test's own beside the test
// process's, and returns how to start a daemon in it. A daemon that starts
// kills what the gone daemons of its own cgroup left (host/plugins'
// Cgroups.sweep), and the e2e tests start many daemons at once: a test
// that kills its daemon and expects the next one to clean up must keep the
// other tests' daemons away from what its runs left. It returns nil where
// there is no cgroup v2 to make one in (the test then says so itself).
func privateCgroup(t *testing.T) *syscall.SysProcAttr {
	t.Helper()
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil
	}
	var own string
	for line := range strings.Lines(string(b)) {
		if rel, ok := strings.CutPrefix(strings.TrimSpace(line), "0::"); ok {
			for _, mount := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
				if _, err := os.Stat(filepath.Join(mount, "cgroup.controllers")); err == nil {
					own = filepath.Join(mount, rel)
					break
				}
			}
		}
	}
	if own == "" {
		return nil
	}
	dir, err := os.MkdirTemp(own, "agent-worker-test-")
	if err != nil {
		if errors.Is(err, os.ErrPermission) || errors.Is(err, syscall.EROFS) {
			return nil // the daemon cannot make cgroups here either
		}
		t.Fatalf("make a private cgroup for the test's daemons: %v", err)
	}
	f, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		f.Close()
		// The test stopped its daemons; the last may still be exiting.
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if procs, err := os.ReadFile(filepath.Join(dir, "cgroup.procs")); err != nil || len(strings.TrimSpace(string(procs))) == 0 {
				break
			}
		}
		// Their cgroups were removed by them or by the next one's sweep;
		// what is left is empty.
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if e.IsDir() {
				_ = os.Remove(filepath.Join(dir, e.Name()))
			}
		}
		if err := os.Remove(dir); err != nil {
			t.Logf("remove the test's cgroup: %v", err)
		}
	})
	return &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(f.Fd())}
}
