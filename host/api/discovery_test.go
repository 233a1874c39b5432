package api

import (
	"os"
	"path/filepath"
	"testing"
)

// LockHolder reads the pid a daemon wrote in its lock file, and 0 for a
// home without one or with anything else in it.
func TestLockHolder(t *testing.T) {
	home := t.TempDir()
	if pid := LockHolder(home); pid != 0 {
		t.Errorf("no lock file: %d, want 0", pid)
	}
	for content, want := range map[string]int{"4242\n": 4242, "": 0, "not a pid\n": 0, "-3\n": 0} {
		if err := os.WriteFile(filepath.Join(home, LockFile), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if pid := LockHolder(home); pid != want {
			t.Errorf("lock file %q: %d, want %d", content, pid, want)
		}
	}
}
