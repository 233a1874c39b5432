//go:build unix

package host

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/agent-worker/agent-worker/host/api"
)

// lockHome takes the exclusive lock that makes a daemon the only one on its
// home. The kernel releases a flock when its holder dies, so a killed daemon
// never leaves a lock behind; the file also names the holder's pid so the
// loser can say who holds it.
func lockHome(home string) (*os.File, error) {
	path := filepath.Join(home, api.LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, alreadyRunning(home)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}

func alreadyRunning(home string) error {
	pid := "unknown pid"
	if n := api.LockHolder(home); n != 0 {
		pid = "pid " + strconv.Itoa(n)
	}
	where := ""
	if d, err := api.ReadDaemonInfo(home); err == nil {
		where = " at " + d.URL()
	}
	return api.Errorf(api.CodeConflict, "another agent-worker daemon (%s%s) already uses home %s: stop it with `agent-worker stop --all` or pick another --home", pid, where, home)
}

// unlockHome releases the lock taken by lockHome.
func unlockHome(f *os.File) error {
	if f == nil {
		return nil
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return f.Close()
}
