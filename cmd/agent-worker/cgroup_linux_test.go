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
		if err := removeCgroup(dir); err != nil {
			t.Errorf("remove the test's cgroup: %v", err)
		}
	})
	return &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(f.Fd())}
}

// removeCgroup removes dir and the cgroups below it, deepest first, ending
// what is still in them: the test stopped its daemons, but the last may
// still be exiting, and one killed mid-run left its plugins' cgroups to the
// next.
func removeCgroup(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil // its daemon removed it meanwhile
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() {
			if err := removeCgroup(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	_ = os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0)
	// The kernel empties a killed cgroup as it reaps: no event to wait on.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		err := os.Remove(dir)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			return err
		}
	}
}
